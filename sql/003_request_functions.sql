-- The SQL of a request's phases as PL/pgSQL functions (issue 12). PostgreSQL caches the plans of
-- a PL/pgSQL function's statements for the life of the server session, whoever calls it. Behind a
-- transaction-pooling PgBouncer the API cannot prepare statements (DATABASE_PREPARED_STATEMENTS=off
-- sends them unnamed), and PostgreSQL then parsed and planned these CTEs anew at every call: 2.1 ms
-- of its CPU per new key instead of 1.2 ms with prepared statements (pgbench straight to
-- PostgreSQL, same SQL: -M extended ran at 0.59-0.62 of -M prepared). Called through these
-- functions, an unnamed statement is a one-line call that is cheap to plan, and the statements
-- inside keep their cached plans across transactions, on whichever server session PgBouncer picks.
-- With prepared statements on, the API calls the same functions: one copy of the SQL.
--
-- Each function is named after the db::Statement that calls it (common/idempotency/key_statements.hpp,
-- common/rides/ride_statements.hpp); its result columns are the ones that statement's readers
-- take, in that order. A binary calls the functions of the schema it was built for, so during a
-- rolling upgrade old and new binaries run side by side against one schema: a later migration
-- that changes what a function does gives it a new name and keeps the old one until no released
-- binary calls it.
--
-- `#variable_conflict use_column`: a result column (id, user_id, ...) is also a PL/pgSQL variable;
-- a bare name inside a statement means the table's column, as it did in the plain SQL.

-- Reads the existing key and, only when there is none, inserts it already locked by us. A
-- concurrent insert of the same key makes ours DO NOTHING while our snapshot cannot see theirs:
-- both halves come back empty and the caller simply asks again.
CREATE FUNCTION idem_find_or_create(p_user_id bigint, p_idempotency_key text, p_method text, p_path text,
                                    p_params jsonb, p_origin_ip text, p_lock_token uuid, p_lock_timeout float8)
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
        SELECT p_user_id, p_idempotency_key, p_method, p_path, p_params, NULLIF(p_origin_ip, '')::inet, 'started',
               now(), p_lock_token
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

-- Locks an unfinished key whose lock is free or expired, with a fresh token.
CREATE FUNCTION idem_lock_by_id(p_key_id bigint, p_lock_token uuid, p_lock_timeout float8)
RETURNS TABLE (id bigint, user_id bigint, recovery_point text, lock_token text, request_params text,
               origin_ip text, payment_idempotency_key text, response_code int, response_body text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE idempotency_keys k SET locked_at = now(), lock_token = p_lock_token, last_run_at = now()
    WHERE k.id = p_key_id AND k.recovery_point <> 'finished'
      AND (k.locked_at IS NULL OR k.locked_at < now() - make_interval(secs => p_lock_timeout))
    RETURNING k.id, k.user_id, k.recovery_point, k.lock_token::text, k.request_params::text,
              COALESCE(host(k.origin_ip), ''), k.payment_idempotency_key, k.response_code, k.response_body;
END;
$$;

-- Releases our lock; a row only while the token is still ours.
CREATE FUNCTION idem_unlock(p_key_id bigint, p_lock_token uuid) RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    UPDATE idempotency_keys k SET locked_at = NULL, lock_token = NULL
    WHERE k.id = p_key_id AND k.lock_token = p_lock_token RETURNING k.id;
END;
$$;

-- The fence that ends every phase transaction: a row only while the lock is still ours. Under
-- READ COMMITTED the UPDATE re-checks the token on the newest row version.
CREATE FUNCTION idem_fence(p_key_id bigint, p_lock_token uuid) RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    UPDATE idempotency_keys k SET last_run_at = now()
    WHERE k.id = p_key_id AND k.lock_token = p_lock_token RETURNING k.id;
END;
$$;

-- The fence that also moves the key to its next recovery point.
CREATE FUNCTION idem_move_recovery_point(p_key_id bigint, p_lock_token uuid, p_recovery_point text)
RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    UPDATE idempotency_keys k SET recovery_point = p_recovery_point, last_run_at = now()
    WHERE k.id = p_key_id AND k.lock_token = p_lock_token RETURNING k.id;
END;
$$;

-- The fence that stores the response, finishes the key and releases its lock.
CREATE FUNCTION idem_finish(p_key_id bigint, p_lock_token uuid, p_response_code int, p_response_body text)
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

-- The ride and its audit record in one statement; returns the ride's id.
CREATE FUNCTION rides_insert_with_audit(p_key_id bigint, p_origin_lat numeric, p_origin_lon numeric,
                                        p_target_lat numeric, p_target_lon numeric, p_user_id bigint,
                                        p_audit_data jsonb, p_origin_ip text)
RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH ride AS (
        INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id)
        VALUES (p_key_id, p_origin_lat, p_origin_lon, p_target_lat, p_target_lon, p_user_id)
        RETURNING rides.id
    )
    INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id)
    SELECT 'create_ride', p_audit_data, p_origin_ip::cidr, ride.id, 'ride', p_user_id FROM ride
    RETURNING audit_records.resource_id;
END;
$$;

-- A ride as a response shows it (the columns of RR_RIDE_VIEW_COLUMNS, in common/rides/ride_response.hpp,
-- which GET /rides reads with the same expressions, so that both answers agree to the byte).

-- Records the charge on the key's ride and stages its receipt job; returns the ride. No row: no
-- ride for the key.
CREATE FUNCTION rides_record_charge_and_stage_receipt(p_key_id bigint, p_charge_id text, p_amount bigint,
                                                      p_currency text, p_user_id bigint)
RETURNS TABLE (id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH ride AS (
        UPDATE rides r SET stripe_charge_id = p_charge_id WHERE r.idempotency_key_id = p_key_id
        RETURNING r.id, r.origin_lat::float8::text, r.origin_lon::float8::text, r.target_lat::float8::text,
                  r.target_lon::float8::text, r.stripe_charge_id,
                  to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    ), job AS (
        INSERT INTO staged_jobs (job_name, job_args)
        SELECT 'send_ride_receipt', jsonb_build_array(jsonb_build_object(
            'amount', p_amount, 'currency', p_currency, 'user_id', p_user_id, 'ride_id', ride.id))
        FROM ride
    )
    SELECT * FROM ride;
END;
$$;

-- For keys that stopped at charge_created: stages the receipt for the already charged ride.
CREATE FUNCTION rides_stage_receipt_for_key(p_key_id bigint, p_amount bigint, p_currency text, p_user_id bigint)
RETURNS TABLE (id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH ride AS (
        SELECT r.id, r.origin_lat::float8::text, r.origin_lon::float8::text, r.target_lat::float8::text,
               r.target_lon::float8::text, r.stripe_charge_id,
               to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
        FROM rides r WHERE r.idempotency_key_id = p_key_id
    ), job AS (
        INSERT INTO staged_jobs (job_name, job_args)
        SELECT 'send_ride_receipt', jsonb_build_array(jsonb_build_object(
            'amount', p_amount, 'currency', p_currency, 'user_id', p_user_id, 'ride_id', ride.id))
        FROM ride
    )
    SELECT * FROM ride;
END;
$$;
