-- Moved here from sql/010_derived_provider_keys.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- The refund's provider key, derived from the charge it refunds (common/payments/provider_key.hpp),
-- stored on the ride before the refund is sent, so the column shows the key the provider saw
-- (the random default of 005 is never sent any more). Fenced by the caller's transaction.
-- With it, the first cancel request to get here leaves its Idempotency-Key and parameters
-- (sql/016), and every attempt of the refund, by any cancel request, sends those as the refund's
-- metadata: the provider refuses a replayed key whose parameters differ. Returns them.
CREATE OR REPLACE FUNCTION rides_store_refund_key(p_ride_id bigint, p_user_id bigint, p_refund_idempotency_key text,
                                                  p_request_key text, p_request_params jsonb)
RETURNS TABLE (refund_request_key text, refund_request_params text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    -- Nothing is written when both are there already (every retry of the refund).
    UPDATE rides r SET refund_idempotency_key = p_refund_idempotency_key,
                       refund_request_key = COALESCE(r.refund_request_key, p_request_key),
                       refund_request_params = COALESCE(r.refund_request_params, p_request_params)
    WHERE r.id = p_ride_id AND r.user_id = p_user_id
      AND (r.refund_idempotency_key IS DISTINCT FROM p_refund_idempotency_key OR r.refund_request_key IS NULL);
    RETURN QUERY
    SELECT r.refund_request_key, r.refund_request_params::text FROM rides r
    WHERE r.id = p_ride_id AND r.user_id = p_user_id;
END;
$$;
