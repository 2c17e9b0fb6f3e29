-- Moved here from sql/003_request_functions.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- The fence that also moves the key to its next recovery point.
CREATE OR REPLACE FUNCTION idem_move_recovery_point(p_key_id bigint, p_lock_token uuid, p_recovery_point text)
RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    UPDATE idempotency_keys k SET recovery_point = p_recovery_point, last_run_at = now()
    WHERE k.id = p_key_id AND k.lock_token = p_lock_token RETURNING k.id;
END;
$$;
