-- Moved here from sql/010_derived_provider_keys.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- The refund's provider key, derived from the charge it refunds (common/payments/provider_key.hpp),
-- stored on the ride before the refund is sent, so the column shows the key the provider saw
-- (the random default of 005 is never sent any more). Fenced by the caller's transaction.
CREATE OR REPLACE FUNCTION rides_store_refund_key(p_ride_id bigint, p_user_id bigint, p_refund_idempotency_key text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    -- Nothing is written when the key is already there (every retry of the refund).
    UPDATE rides SET refund_idempotency_key = p_refund_idempotency_key
    WHERE id = p_ride_id AND user_id = p_user_id AND refund_idempotency_key IS DISTINCT FROM p_refund_idempotency_key;
END;
$$;
