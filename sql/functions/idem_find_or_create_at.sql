-- Moved here from sql/006_one_round_trip_phases.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- idem_find_or_create, inserting a new key at `p_recovery_point` instead of 'started': a creating
-- call that does its first phase's work in the same statement inserts the key where that phase
-- leaves it, rather than inserting it at 'started' and updating it again (a second row version of
-- the key in every new-key transaction). 003's idem_find_or_create is this at 'started'.
-- A finished key stored without its body (sql/013) is rendered back by the renderer it names
-- (idem_stored_answer, sql/019), for those keys only (COALESCE stops at a body).
CREATE OR REPLACE FUNCTION idem_find_or_create_at(p_user_id bigint, p_idempotency_key text, p_method text, p_path text,
                                       p_params jsonb, p_origin_ip text, p_lock_token uuid, p_lock_timeout float8,
                                       p_recovery_point text)
RETURNS TABLE (inserted boolean, id bigint, user_id bigint, recovery_point text, lock_token text,
               request_params text, origin_ip text, payment_idempotency_key text, response_code int,
               response_body text, same_request boolean, locked boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH existing AS (
        SELECT k.id, k.user_id, k.recovery_point, k.lock_token::text, k.request_params::text,
               COALESCE(host(k.origin_ip), ''), k.payment_idempotency_key, k.response_code,
               COALESCE(k.response_body, CASE WHEN k.response_code IS NOT NULL
                                              THEN idem_stored_answer(k.id, k.response_renderer) END),
               k.request_method = p_method AND k.request_path = p_path AND k.request_params = p_params,
               k.locked_at IS NOT NULL AND k.locked_at >= now() - make_interval(secs => p_lock_timeout)
        FROM idempotency_keys k
        WHERE k.user_id = p_user_id AND k.idempotency_key = p_idempotency_key
    ), created AS (
        INSERT INTO idempotency_keys AS k (user_id, idempotency_key, request_method, request_path, request_params,
                                           origin_ip, recovery_point, locked_at, lock_token)
        SELECT p_user_id, p_idempotency_key, p_method, p_path, p_params, NULLIF(p_origin_ip, '')::inet,
               p_recovery_point, now(), p_lock_token
        WHERE NOT EXISTS (SELECT 1 FROM existing)
        ON CONFLICT (user_id, idempotency_key) DO NOTHING
        RETURNING k.id, k.user_id, k.recovery_point, k.lock_token::text, k.request_params::text,
                  COALESCE(host(k.origin_ip), ''), k.payment_idempotency_key, k.response_code, k.response_body
    )
    SELECT true, created.*, true, false FROM created
    UNION ALL
    SELECT false, existing.* FROM existing;
END;
$$;
