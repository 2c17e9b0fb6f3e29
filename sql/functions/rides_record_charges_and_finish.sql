-- The finishing phases of many new keys in one statement and one commit (coalesced commits: fewer
-- commits for the same keys under load). Each request is what rides_record_charge_and_finish does for one: its 201
-- stored (NULL with renderer 1 when it is rides_created_body_v1 of its ride) and its key finished and unlocked,
-- fenced by its lock token, its ride's charge recorded on the ride and in the provider ledger
-- (sql/016) and its receipt staged. Where the single
-- function raises after writing and rolls back, this one checks each request before writing and
-- writes nothing for a request that fails, so the others commit: the result is one row per
-- request, its ordinal (1-based, the arrays' order) and the SQLSTATE the single function would
-- have raised for it, NULL when it finished. RR001: its lock is no longer its own (checked on the
-- newest row version by the UPDATE itself, as the single function's); RR002: its key has no
-- ride; 23505: the ledger already has a charge for its ride or its charge id for another ride, or
-- an earlier request of the batch names the same charge id (the single function's unique
-- violation). No subtransaction, no exception per row: a conflict committed after this
-- statement's snapshot still meets the ledger's unique indexes, which refuse the whole batch, and
-- the caller then runs each request alone (common/db/coalesced_calls.cpp).
--
-- The arrays have one element per request, in the same order. A key named twice is finished once,
-- for its first request; the others answer RR001 (their token cannot still be the key's).
CREATE OR REPLACE FUNCTION rides_record_charges_and_finish(p_key_ids bigint[], p_lock_tokens uuid[],
                                                           p_charge_ids text[], p_amounts bigint[],
                                                           p_currencies text[], p_user_ids bigint[],
                                                           p_response_codes int[], p_response_bodies text[])
RETURNS TABLE (ordinal int, failed_sqlstate text)
LANGUAGE plpgsql
-- A batch touches a handful of rows, each through a unique index, so no plan that reads a whole
-- table is ever right for it. The planner alone would choose one on a database whose statistics
-- were never gathered (estimates for tiny tables) and keep it in the session's cached plan while
-- the tables grow, until the first autoanalyze: a sequential scan of idempotency_keys and rides and
-- two of the ledger for every batch. These settings hold for this function's statements only
-- (they do not stop a hashed subplan from reading a whole table through its index: see below).
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
        SELECT DISTINCT ON (i.key_id) i.*
        FROM unnest(p_key_ids, p_lock_tokens, p_charge_ids, p_amounts, p_currencies, p_user_ids, p_response_codes,
                    p_response_bodies) WITH ORDINALITY
             AS i(key_id, lock_token, charge_id, amount, currency, user_id, response_code, response_body, ordinal)
        ORDER BY i.key_id, i.ordinal
    ), target AS (
        -- Each request's ride, read by its key in this snapshot before the charge id is set on it,
        -- and whether the ledger would refuse its charge.
        -- The ledger is probed per request (LATERAL, LIMIT 1): as two EXISTS under an OR the
        -- planner may hash each whole ledger once a batch, and no setting forbids that.
        SELECT q.*, r.id AS ride_id,
               CASE WHEN m.rendered THEN NULL ELSE q.response_body END AS stored_body,
               CASE WHEN m.rendered THEN 1::smallint END AS stored_renderer,
               by_charge.ride_id IS NOT NULL OR by_ride.ride_id IS NOT NULL
                   OR row_number() OVER (PARTITION BY q.charge_id ORDER BY q.ordinal) > 1 AS refused
        FROM request q JOIN rides r ON r.idempotency_key_id = q.key_id
        LEFT JOIN LATERAL (SELECT c.ride_id FROM provider_charges c WHERE c.stripe_charge_id = q.charge_id LIMIT 1)
            by_charge ON true
        LEFT JOIN LATERAL (SELECT c.ride_id FROM provider_charges c WHERE c.ride_id = r.id LIMIT 1) by_ride ON true
        CROSS JOIN LATERAL (SELECT q.response_code = 201 AND q.response_body = rides_created_body_v1(
                                r.id, r.origin_lat, r.origin_lon, r.target_lat, r.target_lon, q.charge_id, r.created_at)
                                AS rendered) m
    ), finished AS (
        UPDATE idempotency_keys k
        SET recovery_point = 'finished', response_code = t.response_code, response_body = t.stored_body,
            response_renderer = t.stored_renderer,
            locked_at = NULL, lock_token = NULL, last_run_at = now()
        FROM target t
        WHERE k.id = t.key_id AND k.lock_token = t.lock_token AND NOT t.refused
        RETURNING k.id
    ), charged AS (
        UPDATE rides r SET stripe_charge_id = t.charge_id
        FROM target t JOIN finished f ON f.id = t.key_id
        WHERE r.id = t.ride_id
        RETURNING r.id, t.charge_id, t.amount, t.currency, t.user_id
    ), ledger AS (
        INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency)
        SELECT c.charge_id, c.id, c.user_id, c.amount, c.currency FROM charged c
    ), receipt AS (
        INSERT INTO staged_jobs (job_name, job_args)
        SELECT j.* FROM charged c, rides_receipt_job(c.id, c.amount, c.currency, c.user_id) j
    )
    SELECT i.ordinal::int,
           CASE WHEN f.id IS NOT NULL THEN NULL
                WHEN q.key_id IS NULL THEN 'RR001'  -- a second request for a key
                -- The ledger refuses its charge; the single function's order, a lock no longer ours
                -- first (the single function's UPDATE finds no row, and then writes nothing).
                WHEN EXISTS (SELECT 1 FROM target t WHERE t.key_id = q.key_id AND t.refused) THEN
                    CASE WHEN EXISTS (SELECT 1 FROM idempotency_keys k
                                      WHERE k.id = q.key_id AND k.lock_token = q.lock_token) THEN '23505'
                         ELSE 'RR001' END
                -- It has a ride, so the fenced UPDATE found the token no longer its own (perhaps
                -- changed after this statement's snapshot: the UPDATE checks the newest version).
                WHEN EXISTS (SELECT 1 FROM target t WHERE t.key_id = q.key_id) THEN 'RR001'
                -- No ride: the single function's order, a lock no longer ours first.
                WHEN NOT EXISTS (SELECT 1 FROM idempotency_keys k
                                 WHERE k.id = q.key_id AND k.lock_token = q.lock_token) THEN 'RR001'
                ELSE 'RR002' END
    FROM unnest(p_key_ids) WITH ORDINALITY AS i(key_id, ordinal)
    LEFT JOIN request q ON q.ordinal = i.ordinal
    LEFT JOIN finished f ON f.id = q.key_id
    ORDER BY i.ordinal;
END;
$$;
