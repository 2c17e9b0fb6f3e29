-- Moved here from sql/005_cancel_rides.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- The first step of a cancellation: where the user's ride stands, as `state`, with the ride.
--   no row       no such ride, or another user's
--   cancelled    already cancelled (by any key): nothing to do
--   charged      its charge is recorded: refund it next
--   pending      no charge yet and its own request has not finished: it may still be charged
--   uncharged    no charge and its request finished without one (declined) or was reaped: this
--                call cancelled it, with no refund
-- The ride's row is locked (FOR UPDATE), so the state cannot change under the rest of the
-- transaction; a finished request never changes again.
CREATE OR REPLACE FUNCTION rides_cancel_begin(p_ride_id bigint, p_user_id bigint, p_reason text, p_currency text,
                                   p_audit_data jsonb, p_origin_ip text)
RETURNS TABLE (state text, id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text, cancelled_at text, stripe_refund_id text)
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
BEGIN
    SELECT CASE
               WHEN r.cancelled_at IS NOT NULL THEN 'cancelled'
               WHEN r.stripe_charge_id IS NOT NULL THEN 'charged'
               WHEN k.id IS NOT NULL AND k.response_code IS NULL THEN 'pending'
               ELSE 'uncharged'
           END
    INTO v_state
    FROM rides r LEFT JOIN idempotency_keys k ON k.id = r.idempotency_key_id
    WHERE r.id = p_ride_id AND r.user_id = p_user_id
    FOR UPDATE OF r;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_state = 'uncharged' THEN
        PERFORM rides_mark_cancelled(p_ride_id, p_user_id, NULL, p_reason, 0, p_currency, p_audit_data, p_origin_ip);
    END IF;
    RETURN QUERY SELECT v_state, v.* FROM rides_view_of(p_ride_id) v;
END;
$$;
