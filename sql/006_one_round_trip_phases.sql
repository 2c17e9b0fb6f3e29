-- One round trip per phase (issue 14). A new key used to cost nine round trips: BEGIN, the key,
-- the ride, the recovery point, COMMIT; then BEGIN, the charge, the response, COMMIT. Each of
-- them is a wait for the API's thread and a wake-up for PostgreSQL's backend. The functions below
-- do a whole phase, fence included, in one statement, which the API sends as
--   SET LOCAL statement_timeout = N; SELECT * FROM <function>(...)
-- in one simple query: PostgreSQL runs a multi-statement query string as one implicit
-- transaction, so the phase commits or rolls back as a whole, and SET LOCAL bounds the call and
-- ends with it (nothing stays in the session: it works as is through a transaction-pooling
-- PgBouncer).
--
-- The API sees the results only after the commit, so nothing can be rolled back once it looks at
-- them: every check a phase needs (is the lock still ours, is there a ride) raises inside the
-- function, which aborts the implicit transaction. The errors are ours, SQLSTATE class RR:
--   RR001  the lock on the key was taken over (the runner's LockLost)
--   RR002  the row the phase works on is missing (a broken invariant: the runner's failure path)

-- idem_finish of sql/003 (a row while the lock is ours), raising instead of answering with no row.
-- Called on its own, it is a phase that only stores a result (a declined card).
CREATE FUNCTION idem_finish_or_raise(p_key_id bigint, p_lock_token uuid, p_response_code int, p_response_body text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM idem_finish(p_key_id, p_lock_token, p_response_code, p_response_body)) THEN
        RAISE EXCEPTION 'lock on idempotency key % was taken over', p_key_id USING ERRCODE = 'RR001';
    END IF;
END;
$$;

-- idem_find_or_create, inserting a new key at `p_recovery_point` instead of 'started': a creating
-- call that does its first phase's work in the same statement inserts the key where that phase
-- leaves it, rather than inserting it at 'started' and updating it again (a second row version of
-- the key in every new-key transaction). 003's idem_find_or_create is this at 'started'.
CREATE FUNCTION idem_find_or_create_at(p_user_id bigint, p_idempotency_key text, p_method text, p_path text,
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
               COALESCE(host(k.origin_ip), ''), k.payment_idempotency_key, k.response_code, k.response_body,
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

-- The same behaviour as before, one copy of the SQL.
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

-- The ride flow's first phase with the key's creation, in one statement: finds the key, or creates
-- it at ride_created together with the ride and its audit record. Returns idem_find_or_create's
-- row, followed by the new ride as a response shows it (NULLs when nothing was created).
-- No row: a concurrent insert of the same key won; the caller asks again.
CREATE FUNCTION rides_create_with_key(p_user_id bigint, p_idempotency_key text, p_method text, p_path text,
                                      p_params jsonb, p_origin_ip text, p_lock_token uuid, p_lock_timeout float8,
                                      p_origin_lat numeric, p_origin_lon numeric, p_target_lat numeric,
                                      p_target_lon numeric)
RETURNS TABLE (inserted boolean, id bigint, user_id bigint, recovery_point text, lock_token text,
               request_params text, origin_ip text, payment_idempotency_key text, response_code int,
               response_body text, same_request boolean, locked boolean,
               ride_id bigint, ride_origin_lat text, ride_origin_lon text, ride_target_lat text,
               ride_target_lon text, ride_stripe_charge_id text, ride_created_at text, ride_cancelled_at text,
               ride_stripe_refund_id text)
LANGUAGE plpgsql AS $$
DECLARE
    v_key record;
    v_ride bigint;
BEGIN
    -- A new key is inserted at ride_created: its ride follows in this same implicit transaction.
    SELECT * INTO v_key FROM idem_find_or_create_at(p_user_id, p_idempotency_key, p_method, p_path, p_params,
                                                    p_origin_ip, p_lock_token, p_lock_timeout, 'ride_created');
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF NOT v_key.inserted THEN
        RETURN QUERY SELECT v_key.inserted, v_key.id, v_key.user_id, v_key.recovery_point, v_key.lock_token,
                            v_key.request_params, v_key.origin_ip, v_key.payment_idempotency_key,
                            v_key.response_code, v_key.response_body, v_key.same_request, v_key.locked,
                            NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text,
                            NULL::text, NULL::text;
        RETURN;
    END IF;
    SELECT r INTO STRICT v_ride
    FROM rides_insert_with_audit(v_key.id, p_origin_lat, p_origin_lon, p_target_lat, p_target_lon, p_user_id,
                                 p_params, COALESCE(NULLIF(p_origin_ip, ''), '0.0.0.0')) AS r;
    RETURN QUERY SELECT v_key.inserted, v_key.id, v_key.user_id, v_key.recovery_point, v_key.lock_token,
                        v_key.request_params, v_key.origin_ip, v_key.payment_idempotency_key,
                        v_key.response_code, v_key.response_body, v_key.same_request, v_key.locked, v.*
                 FROM rides_view_of(v_ride) v;
END;
$$;

-- The charge phase after a successful charge, in one statement: records the charge on the key's
-- ride, stages its receipt and stores the response the API rendered from the ride it created (the
-- ride cannot change in between: the key's lock is ours). Raises RR002 when the key has no ride and
-- RR001 when the lock is no longer ours; either way nothing is written.
CREATE FUNCTION rides_record_charge_and_finish(p_key_id bigint, p_lock_token uuid, p_charge_id text, p_amount bigint,
                                               p_currency text, p_user_id bigint, p_response_code int,
                                               p_response_body text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_ride bigint;
BEGIN
    PERFORM idem_finish_or_raise(p_key_id, p_lock_token, p_response_code, p_response_body);
    UPDATE rides r SET stripe_charge_id = p_charge_id WHERE r.idempotency_key_id = p_key_id RETURNING r.id INTO v_ride;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no ride for idempotency key %', p_key_id USING ERRCODE = 'RR002';
    END IF;
    PERFORM rides_stage_ride_receipt(v_ride, p_amount, p_currency, p_user_id);
END;
$$;
