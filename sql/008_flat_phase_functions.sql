-- The two phases of a new key as one statement each (issue 14): PostgreSQL's CPU per new key.
--
-- 006 built rides_create_with_key and rides_record_charge_and_finish out of the functions before
-- them, each a PL/pgSQL call running a statement of its own: four nested calls for the first
-- phase, five for the second. Measured with pg_stat_statements (track = all) under pgbench, every
-- leaf statement cost what the minimum SQL's does (bench/minimum_sql.sql), and the layers around
-- them about 40 % more: each call is a function-call setup, a portal and an executor start and end.
-- Here each phase is one statement, the minimum SQL's chain of data-modifying CTEs, inside one
-- PL/pgSQL function (PL/pgSQL keeps its plan for the session; a plain SQL statement sent by the
-- API in simple-query mode would be planned again on every call, and PgBouncer 1.18 in
-- transaction mode cannot keep a prepared statement).
--
-- Same names, arguments, results and errors as 006, so the API and the bench's pgbench scripts
-- call them unchanged. The functions of 003, 005 and 006 stay for the resumed-key paths and for
-- binaries built before this migration.

-- The ride flow's first phase with the key's creation: the key found, or created at ride_created
-- together with its ride and the ride's audit record. A new ride is shown from what its INSERT
-- returned (the statement's later parts cannot read a row it inserted), with rides_view_of's
-- expressions, so that it equals GET /rides/{id} to the byte.
CREATE OR REPLACE FUNCTION rides_create_with_key(p_user_id bigint, p_idempotency_key text, p_method text, p_path text,
                                                 p_params jsonb, p_origin_ip text, p_lock_token uuid,
                                                 p_lock_timeout float8, p_origin_lat numeric, p_origin_lon numeric,
                                                 p_target_lat numeric, p_target_lon numeric)
RETURNS TABLE (inserted boolean, id bigint, user_id bigint, recovery_point text, lock_token text,
               request_params text, origin_ip text, payment_idempotency_key text, response_code int,
               response_body text, same_request boolean, locked boolean,
               ride_id bigint, ride_origin_lat text, ride_origin_lon text, ride_target_lat text,
               ride_target_lon text, ride_stripe_charge_id text, ride_created_at text, ride_cancelled_at text,
               ride_stripe_refund_id text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    -- The insert first, as the minimum SQL does: a new key, the common case, costs no lookup
    -- before it. A key that exists makes it do nothing (after waiting for the transaction that
    -- inserted it, if that one is still running).
    RETURN QUERY
    WITH created AS (
        INSERT INTO idempotency_keys AS k (user_id, idempotency_key, request_method, request_path, request_params,
                                           origin_ip, recovery_point, locked_at, lock_token)
        VALUES (p_user_id, p_idempotency_key, p_method, p_path, p_params, NULLIF(p_origin_ip, '')::inet,
                'ride_created', now(), p_lock_token)
        ON CONFLICT (user_id, idempotency_key) DO NOTHING
        RETURNING k.id, k.user_id, k.recovery_point, k.lock_token::text AS lock_token,
                  k.request_params::text AS request_params, COALESCE(host(k.origin_ip), '') AS origin_ip,
                  k.payment_idempotency_key, k.response_code, k.response_body
    ), ride AS (
        INSERT INTO rides AS r (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id)
        SELECT created.id, p_origin_lat, p_origin_lon, p_target_lat, p_target_lon, p_user_id FROM created
        RETURNING r.id, r.idempotency_key_id, r.origin_lat, r.origin_lon, r.target_lat, r.target_lon,
                  r.stripe_charge_id, r.created_at, r.cancelled_at, r.stripe_refund_id
    ), audit AS (
        -- Runs although nothing reads it: a data-modifying CTE always runs to completion.
        INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id)
        SELECT 'create_ride', p_params, COALESCE(NULLIF(p_origin_ip, ''), '0.0.0.0')::cidr, ride.id, 'ride',
               p_user_id
        FROM ride
    )
    SELECT true, c.id, c.user_id, c.recovery_point, c.lock_token, c.request_params, c.origin_ip,
           c.payment_idempotency_key, c.response_code, c.response_body, true, false,
           r.id, r.origin_lat::float8::text, r.origin_lon::float8::text, r.target_lat::float8::text,
           r.target_lon::float8::text, r.stripe_charge_id,
           to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
           to_char(r.cancelled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), r.stripe_refund_id
    FROM created c JOIN ride r ON r.idempotency_key_id = c.id;
    IF FOUND THEN
        RETURN;
    END IF;
    -- The key exists: this statement's snapshot is newer than the insert's (READ COMMITTED), so it
    -- sees the row the insert conflicted with. No row: that row was deleted meanwhile (the reaper,
    -- or a rolled-back insert); the caller asks again.
    RETURN QUERY
    SELECT false, k.id, k.user_id, k.recovery_point, k.lock_token::text, k.request_params::text,
           COALESCE(host(k.origin_ip), ''), k.payment_idempotency_key, k.response_code, k.response_body,
           k.request_method = p_method AND k.request_path = p_path AND k.request_params = p_params,
           k.locked_at IS NOT NULL AND k.locked_at >= now() - make_interval(secs => p_lock_timeout),
           NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text,
           NULL::text
    FROM idempotency_keys k
    WHERE k.user_id = p_user_id AND k.idempotency_key = p_idempotency_key;
END;
$$;

-- The charge phase after a successful charge: the 201 stored and the key finished (fenced by the
-- lock token), the charge recorded on the key's ride and its receipt staged, in one statement.
-- Its parts see one snapshot, so they are chained by what they return: no finish, no ride update;
-- no ride update, no job. The checks come after it and roll all of it back: RR001 when the lock is
-- no longer ours (nothing was written), RR002 when the key has no ride.
CREATE OR REPLACE FUNCTION rides_record_charge_and_finish(p_key_id bigint, p_lock_token uuid, p_charge_id text,
                                                          p_amount bigint, p_currency text, p_user_id bigint,
                                                          p_response_code int, p_response_body text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_finished bigint;
    v_charged bigint;
BEGIN
    WITH finished AS (
        UPDATE idempotency_keys k
        SET recovery_point = 'finished', response_code = p_response_code, response_body = p_response_body,
            locked_at = NULL, lock_token = NULL, last_run_at = now()
        WHERE k.id = p_key_id AND k.lock_token = p_lock_token
        RETURNING k.id
    ), charged AS (
        UPDATE rides r SET stripe_charge_id = p_charge_id
        FROM finished
        WHERE r.idempotency_key_id = finished.id
        RETURNING r.id
    ), receipt AS (
        INSERT INTO staged_jobs (job_name, job_args)
        SELECT 'send_ride_receipt', jsonb_build_array(jsonb_build_object(
            'amount', p_amount, 'currency', p_currency, 'user_id', p_user_id, 'ride_id', charged.id))
        FROM charged
    )
    SELECT (SELECT count(*) FROM finished), (SELECT count(*) FROM charged) INTO v_finished, v_charged;
    IF v_finished = 0 THEN
        RAISE EXCEPTION 'lock on idempotency key % was taken over', p_key_id USING ERRCODE = 'RR001';
    END IF;
    IF v_charged = 0 THEN
        RAISE EXCEPTION 'no ride for idempotency key %', p_key_id USING ERRCODE = 'RR002';
    END IF;
END;
$$;
