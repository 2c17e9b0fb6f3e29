-- Moved here from sql/005_cancel_rides.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- What the refund needs: the ride's own charge and its refund idempotency key; no row when the
-- ride is not the user's or has no charge.
CREATE OR REPLACE FUNCTION rides_refund_target(p_ride_id bigint, p_user_id bigint)
RETURNS TABLE (stripe_charge_id text, refund_idempotency_key text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT r.stripe_charge_id, r.refund_idempotency_key FROM rides r
    WHERE r.id = p_ride_id AND r.user_id = p_user_id AND r.stripe_charge_id IS NOT NULL;
END;
$$;
