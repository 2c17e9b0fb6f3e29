-- The ride of a key as a response shows it (rides_view_of); no row when the key has no ride. For a
-- resumed charge, whose metadata names the ride (common/payments/provider_metadata.hpp).
CREATE OR REPLACE FUNCTION rides_view_of_key(p_key_id bigint)
RETURNS TABLE (id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text, cancelled_at text, stripe_refund_id text)
LANGUAGE sql STABLE AS $$
    SELECT v.* FROM rides r CROSS JOIN LATERAL rides_view_of(r.id) v WHERE r.idempotency_key_id = p_key_id;
$$;
