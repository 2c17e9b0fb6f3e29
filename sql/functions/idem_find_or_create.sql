-- Moved here from sql/006_one_round_trip_phases.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- Reads the existing key and, only when there is none, inserts it already locked by us. A
-- concurrent insert of the same key makes ours DO NOTHING while our snapshot cannot see theirs:
-- both halves come back empty and the caller simply asks again. idem_find_or_create_at at 'started'.
CREATE OR REPLACE FUNCTION idem_find_or_create(p_user_id bigint, p_idempotency_key text, p_method text, p_path text,
                                               p_params jsonb, p_origin_ip text, p_lock_token uuid,
                                               p_lock_timeout float8)
RETURNS TABLE (inserted boolean, id bigint, user_id bigint, recovery_point text, lock_token text,
               request_params text, origin_ip text, payment_idempotency_key text, response_code int,
               response_body text, same_request boolean, locked boolean)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY SELECT * FROM idem_find_or_create_at(p_user_id, p_idempotency_key, p_method, p_path, p_params,
                                                      p_origin_ip, p_lock_token, p_lock_timeout, 'started');
END;
$$;
