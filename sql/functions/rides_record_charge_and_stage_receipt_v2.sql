-- Moved here from sql/005_cancel_rides.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- Records the charge on the key's ride and in the provider ledger (sql/016: a second charge id for
-- the ride, or this one on another ride, is a unique violation) and stages its receipt; returns
-- the ride as the response shows it, or no row when the key has no ride.
CREATE OR REPLACE FUNCTION rides_record_charge_and_stage_receipt_v2(p_key_id bigint, p_charge_id text, p_amount bigint,
                                                         p_currency text, p_user_id bigint)
RETURNS TABLE (id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text, cancelled_at text, stripe_refund_id text)
LANGUAGE plpgsql AS $$
DECLARE
    v_ride bigint;
BEGIN
    UPDATE rides r SET stripe_charge_id = p_charge_id WHERE r.idempotency_key_id = p_key_id RETURNING r.id INTO v_ride;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency)
    VALUES (p_charge_id, v_ride, p_user_id, p_amount, p_currency);
    PERFORM rides_stage_ride_receipt(v_ride, p_amount, p_currency, p_user_id);
    RETURN QUERY SELECT * FROM rides_view_of(v_ride);
END;
$$;
