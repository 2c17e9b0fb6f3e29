-- Moved here from sql/003_request_functions.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- Locks an unfinished key whose lock is free or expired, with a fresh token. The key row, then the
-- client's Idempotency-Key (a resumed charge or refund sends it to the provider as metadata).
CREATE OR REPLACE FUNCTION idem_lock_by_id(p_key_id bigint, p_lock_token uuid, p_lock_timeout float8)
RETURNS TABLE (id bigint, user_id bigint, recovery_point text, lock_token text, request_params text,
               origin_ip text, payment_idempotency_key text, response_code int, response_body text,
               idempotency_key text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE idempotency_keys k SET locked_at = now(), lock_token = p_lock_token, last_run_at = now()
    WHERE k.id = p_key_id AND k.recovery_point <> 'finished'
      AND (k.locked_at IS NULL OR k.locked_at < now() - make_interval(secs => p_lock_timeout))
    RETURNING k.id, k.user_id, k.recovery_point, k.lock_token::text, k.request_params::text,
              COALESCE(host(k.origin_ip), ''), k.payment_idempotency_key, k.response_code, k.response_body,
              k.idempotency_key;
END;
$$;
