-- Moved here from sql/003_request_functions.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- Releases our lock; a row only while the token is still ours.
CREATE OR REPLACE FUNCTION idem_unlock(p_key_id bigint, p_lock_token uuid) RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    UPDATE idempotency_keys k SET locked_at = NULL, lock_token = NULL
    WHERE k.id = p_key_id AND k.lock_token = p_lock_token RETURNING k.id;
END;
$$;
