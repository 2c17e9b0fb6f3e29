-- Moved here from sql/006_one_round_trip_phases.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- idem_finish of sql/003 (a row while the lock is ours), raising instead of answering with no row.
-- Called on its own, it is a phase that only stores a result (a declined card).
CREATE OR REPLACE FUNCTION idem_finish_or_raise(p_key_id bigint, p_lock_token uuid, p_response_code int, p_response_body text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM idem_finish(p_key_id, p_lock_token, p_response_code, p_response_body)) THEN
        RAISE EXCEPTION 'lock on idempotency key % was taken over', p_key_id USING ERRCODE = 'RR001';
    END IF;
END;
$$;
