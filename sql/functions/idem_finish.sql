-- Moved here from sql/003_request_functions.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- The fence that stores the response, finishes the key and releases its lock.
CREATE OR REPLACE FUNCTION idem_finish(p_key_id bigint, p_lock_token uuid, p_response_code int, p_response_body text)
RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    UPDATE idempotency_keys k
    SET recovery_point = 'finished', response_code = p_response_code, response_body = p_response_body,
        locked_at = NULL, lock_token = NULL, last_run_at = now()
    WHERE k.id = p_key_id AND k.lock_token = p_lock_token RETURNING k.id;
END;
$$;
