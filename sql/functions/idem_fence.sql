-- Moved here from sql/003_request_functions.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- The fence that ends every phase transaction: a row only while the lock is still ours. Under
-- READ COMMITTED the UPDATE re-checks the token on the newest row version.
CREATE OR REPLACE FUNCTION idem_fence(p_key_id bigint, p_lock_token uuid) RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    UPDATE idempotency_keys k SET last_run_at = now()
    WHERE k.id = p_key_id AND k.lock_token = p_lock_token RETURNING k.id;
END;
$$;
