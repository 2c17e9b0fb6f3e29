-- Moved here from sql/005_cancel_rides.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- Marks the (locked) ride cancelled with its refund, if it is not cancelled yet, and then only
-- stages the cancellation receipt and the audit record: the first cancellation wins, later ones
-- change nothing. Returns whether this call cancelled it. A refund is recorded in the provider
-- ledger too (sql/016), with the ride's charge and the amount given: a second refund id for the
-- ride or its charge, or this refund id on another ride, is a unique violation. A cancellation
-- without a refund (nothing was charged, or the provider had refunded it already) records none.
CREATE OR REPLACE FUNCTION rides_mark_cancelled(p_ride_id bigint, p_user_id bigint, p_refund_id text, p_reason text,
                                     p_amount bigint, p_currency text, p_audit_data jsonb, p_origin_ip text)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE rides r SET cancelled_at = now(), stripe_refund_id = p_refund_id, cancel_reason = p_reason
    WHERE r.id = p_ride_id AND r.user_id = p_user_id AND r.cancelled_at IS NULL;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF p_refund_id IS NOT NULL THEN
        INSERT INTO provider_refunds (stripe_refund_id, stripe_charge_id, ride_id, user_id, amount, currency)
        SELECT p_refund_id, r.stripe_charge_id, r.id, p_user_id, p_amount, p_currency
        FROM rides r WHERE r.id = p_ride_id;
    END IF;
    INSERT INTO staged_jobs (job_name, job_args)
    VALUES ('send_cancellation_receipt', jsonb_build_array(jsonb_build_object(
        'amount', p_amount, 'currency', p_currency, 'user_id', p_user_id, 'ride_id', p_ride_id,
        'refund_id', p_refund_id)));
    INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id)
    VALUES ('cancel_ride', p_audit_data, p_origin_ip::cidr, p_ride_id, 'ride', p_user_id);
    RETURN true;
END;
$$;
