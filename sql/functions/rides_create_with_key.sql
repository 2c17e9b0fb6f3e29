-- Moved here from sql/010_derived_provider_keys.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- The ride flow's first phase with the key's creation: the key found, or created at ride_created
-- together with its ride and the ride's audit record, in one statement. A new ride is shown from
-- what its INSERT returned (the statement's later parts cannot read a row it inserted), with
-- rides_view_of's expressions, so that it equals GET /rides/{id} to the byte. The key stores
-- p_payment_idempotency_key, the charge's provider key derived by the API (010).
CREATE OR REPLACE FUNCTION rides_create_with_key(p_user_id bigint, p_idempotency_key text, p_method text, p_path text,
                                                 p_params jsonb, p_origin_ip text, p_lock_token uuid,
                                                 p_lock_timeout float8, p_origin_lat numeric, p_origin_lon numeric,
                                                 p_target_lat numeric, p_target_lon numeric,
                                                 p_payment_idempotency_key text)
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
                                           origin_ip, recovery_point, locked_at, lock_token, payment_idempotency_key)
        VALUES (p_user_id, p_idempotency_key, p_method, p_path, p_params, NULLIF(p_origin_ip, '')::inet,
                'ride_created', now(), p_lock_token, p_payment_idempotency_key)
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
        SELECT a.* FROM ride, rides_created_audit(p_params, p_origin_ip, ride.id, p_user_id) a
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
    -- or a rolled-back insert); the caller asks again. A finished 201 stored without its body
    -- (sql/013) is rendered back by the renderer the key names (idem_stored_answer, sql/019), the
    -- one lookup only such a replay pays.
    RETURN QUERY
    SELECT false, k.id, k.user_id, k.recovery_point, k.lock_token::text, k.request_params::text,
           COALESCE(host(k.origin_ip), ''), k.payment_idempotency_key, k.response_code,
           COALESCE(k.response_body, CASE WHEN k.response_code IS NOT NULL
                                          THEN idem_stored_answer(k.id, k.response_renderer) END),
           k.request_method = p_method AND k.request_path = p_path AND k.request_params = p_params,
           k.locked_at IS NOT NULL AND k.locked_at >= now() - make_interval(secs => p_lock_timeout),
           NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text,
           NULL::text
    FROM idempotency_keys k
    WHERE k.user_id = p_user_id AND k.idempotency_key = p_idempotency_key;
END;
$$;
