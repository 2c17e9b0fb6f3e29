-- Moved here from sql/005_cancel_rides.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- Records the refund: the ride is cancelled with it unless another request cancelled it first
-- (with the same refund: one provider key per ride), and the receipt is staged once. Returns the
-- ride as it now is.
CREATE OR REPLACE FUNCTION rides_record_refund(p_ride_id bigint, p_user_id bigint, p_refund_id text, p_reason text,
                                    p_amount bigint, p_currency text, p_audit_data jsonb, p_origin_ip text)
RETURNS TABLE (id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text, cancelled_at text, stripe_refund_id text)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM rides r WHERE r.id = p_ride_id AND r.user_id = p_user_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM rides_mark_cancelled(p_ride_id, p_user_id, p_refund_id, p_reason, p_amount, p_currency, p_audit_data,
                                 p_origin_ip);
    RETURN QUERY SELECT * FROM rides_view_of(p_ride_id);
END;
$$;
