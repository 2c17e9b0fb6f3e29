-- Moved here from sql/005_cancel_rides.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- For keys that stopped at charge_created: stages the receipt for the already charged ride;
-- returns the ride as the response shows it, or no row when the key has no ride.
CREATE OR REPLACE FUNCTION rides_stage_receipt_for_key_v2(p_key_id bigint, p_amount bigint, p_currency text, p_user_id bigint)
RETURNS TABLE (id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text, cancelled_at text, stripe_refund_id text)
LANGUAGE plpgsql AS $$
DECLARE
    v_ride bigint;
BEGIN
    SELECT r.id INTO v_ride FROM rides r WHERE r.idempotency_key_id = p_key_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM rides_stage_ride_receipt(v_ride, p_amount, p_currency, p_user_id);
    RETURN QUERY SELECT * FROM rides_view_of(v_ride);
END;
$$;
