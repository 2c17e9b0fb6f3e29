-- The first phases of many new-key requests in one statement and one commit (coalesced commits:
-- fewer commits for the same keys under load; the API's db::CoalescedCalls calls it with the arguments of concurrent
-- rides_create_with_key calls as arrays, one element per request, in order). For each request, what
-- rides_create_with_key does for one: its key created at ride_created, locked with its token, with
-- its ride and the ride's audit record; or, when the key exists, the key as it is. One row per
-- answered request: its ordinal (1-based, the arrays' order), failed_sqlstate (always NULL: nothing
-- here fails for one request alone) and rides_create_with_key's columns.
--
-- One statement, so one snapshot: a key that existed before it is read here; a request gets no row
-- when its key was committed by another transaction after the snapshot (the insert waited for it
-- and did nothing) or was inserted by an earlier request of this same batch (a key named twice).
-- The caller runs those requests again one by one through rides_create_with_key, whose second
-- statement sees such a key; both cases need two requests for one key at the same moment.
-- The keys are inserted in (user_id, idempotency_key) order, so that two batches naming the same
-- keys (two API processes) wait for each other in one order and never deadlock.
-- No subtransaction: a row a CHECK refuses fails the whole statement, and the caller then runs
-- every request of the batch on its own, so that only that request gets the error.
CREATE OR REPLACE FUNCTION rides_create_with_keys(p_user_ids bigint[], p_idempotency_keys text[], p_methods text[],
                                                  p_paths text[], p_params jsonb[], p_origin_ips text[],
                                                  p_lock_tokens uuid[], p_lock_timeouts float8[],
                                                  p_origin_lats numeric[], p_origin_lons numeric[],
                                                  p_target_lats numeric[], p_target_lons numeric[],
                                                  p_payment_idempotency_keys text[])
RETURNS TABLE (ordinal int, failed_sqlstate text, inserted boolean, id bigint, user_id bigint, recovery_point text, lock_token text,
               request_params text, origin_ip text, payment_idempotency_key text, response_code int,
               response_body text, same_request boolean, locked boolean,
               ride_id bigint, ride_origin_lat text, ride_origin_lon text, ride_target_lat text,
               ride_target_lon text, ride_stripe_charge_id text, ride_created_at text, ride_cancelled_at text,
               ride_stripe_refund_id text)
LANGUAGE plpgsql
-- A batch touches a handful of rows, each through a unique index, so no plan that reads a whole
-- table is ever right for it. The planner alone would choose one on a database whose statistics
-- were never gathered (estimates for tiny tables) and keep it in the session's cached plan while
-- the tables grow, until the first autoanalyze: a sequential scan of idempotency_keys for every
-- batch (the join that reads keys that already existed). These settings hold for this function's
-- statements only.
-- One generic plan per session, made once. Otherwise, on a database with some history, PL/pgSQL's
-- plan cache finds the custom plan for a small batch cheaper than the generic one every time and
-- plans the whole statement again at every call (20 calls of one element on 20,000 analyzed keys:
-- 21 plans; about 0.6 ms of PostgreSQL's CPU a call, more than half of a batch of one). The
-- settings above make the generic plan the one a custom plan would be, index probes whatever the
-- sizes.
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH request AS (
        SELECT *
        FROM unnest(p_user_ids, p_idempotency_keys, p_methods, p_paths, p_params, p_origin_ips, p_lock_tokens,
                    p_lock_timeouts, p_origin_lats, p_origin_lons, p_target_lats, p_target_lons,
                    p_payment_idempotency_keys)
             WITH ORDINALITY
             AS q(user_id, idempotency_key, method, path, params, origin_ip, lock_token, lock_timeout, origin_lat,
                  origin_lon, target_lat, target_lon, payment_idempotency_key, ordinal)
    ), created AS (
        INSERT INTO idempotency_keys AS k (user_id, idempotency_key, request_method, request_path, request_params,
                                           origin_ip, recovery_point, locked_at, lock_token, payment_idempotency_key)
        SELECT q.user_id, q.idempotency_key, q.method, q.path, q.params, NULLIF(q.origin_ip, '')::inet,
               'ride_created', now(), q.lock_token, q.payment_idempotency_key
        FROM request q ORDER BY q.user_id, q.idempotency_key
        ON CONFLICT (user_id, idempotency_key) DO NOTHING
        RETURNING k.id, k.user_id, k.idempotency_key, k.recovery_point, k.lock_token, k.request_params,
                  k.origin_ip, k.payment_idempotency_key, k.response_code, k.response_body
    ), mine AS (
        -- The request that created each key: the one carrying its lock token.
        SELECT c.*, q.ordinal, q.params, q.origin_ip AS request_origin_ip, q.origin_lat, q.origin_lon,
               q.target_lat, q.target_lon
        FROM created c JOIN request q ON q.user_id = c.user_id AND q.idempotency_key = c.idempotency_key
                                     AND q.lock_token = c.lock_token
    ), ride AS (
        INSERT INTO rides AS r (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id)
        SELECT m.id, m.origin_lat, m.origin_lon, m.target_lat, m.target_lon, m.user_id FROM mine m
        RETURNING r.id, r.idempotency_key_id, r.origin_lat, r.origin_lon, r.target_lat, r.target_lon,
                  r.stripe_charge_id, r.created_at, r.cancelled_at, r.stripe_refund_id
    ), audit AS (
        INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id)
        SELECT a.*
        FROM mine m JOIN ride r ON r.idempotency_key_id = m.id,
             rides_created_audit(m.params, m.request_origin_ip, r.id, m.user_id) a
    )
    SELECT m.ordinal::int, NULL::text, true, m.id, m.user_id, m.recovery_point, m.lock_token::text, m.request_params::text,
           COALESCE(host(m.origin_ip), ''), m.payment_idempotency_key, m.response_code, m.response_body, true, false,
           r.id, r.origin_lat::float8::text, r.origin_lon::float8::text, r.target_lat::float8::text,
           r.target_lon::float8::text, r.stripe_charge_id,
           to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
           to_char(r.cancelled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), r.stripe_refund_id
    FROM mine m JOIN ride r ON r.idempotency_key_id = m.id
    UNION ALL
    -- Keys that existed before this statement, as rides_create_with_key's second branch reads them.
    SELECT q.ordinal::int, NULL::text, false, k.id, k.user_id, k.recovery_point, k.lock_token::text, k.request_params::text,
           COALESCE(host(k.origin_ip), ''), k.payment_idempotency_key, k.response_code,
           COALESCE(k.response_body, CASE WHEN k.response_code IS NOT NULL
                                          THEN idem_stored_answer(k.id, k.response_renderer) END),
           k.request_method = q.method AND k.request_path = q.path AND k.request_params = q.params,
           k.locked_at IS NOT NULL AND k.locked_at >= now() - make_interval(secs => q.lock_timeout),
           NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text,
           NULL::text
    FROM request q JOIN idempotency_keys k ON k.user_id = q.user_id AND k.idempotency_key = q.idempotency_key;
END;
$$;
