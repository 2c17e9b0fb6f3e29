-- Released renderer 1 of the ride-creation 201 (sql/019), frozen: this file never changes
-- (tests/golden/released_renderers.sha256). The stored answer of a finished POST /rides key whose
-- body is NULL, rendered back from the key's ride by rides_created_body_v1, for
-- idem_stored_answer. NULL when the key has no ride.
CREATE OR REPLACE FUNCTION rides_created_answer_v1(p_key_id bigint)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT rides_created_body_v1(r.id, r.origin_lat, r.origin_lon, r.target_lat, r.target_lon, r.stripe_charge_id,
                                 r.created_at)
    FROM rides r
    WHERE r.idempotency_key_id = p_key_id
$$;
