-- Moved here from sql/008_flat_phase_functions.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- The charge phase after a successful charge: the 201 stored and the key finished (fenced by the
-- lock token), the charge recorded on the key's ride and in the provider ledger (sql/016: unique
-- there, so a second charge id for the ride or this charge id on another ride is a unique
-- violation that rolls all of it back) and its receipt staged, in one statement.
-- Its parts see one snapshot, so they are chained by what they return: no finish, no ride update;
-- no ride update, no job. The checks come after it and roll all of it back: RR001 when the lock is
-- no longer ours (nothing was written), RR002 when the key has no ride.
-- The 201 is stored as NULL when it is exactly rides_created_body_v1 of the ride charged here (a
-- smaller final row version), with renderer 1 (sql/019: the one registered for that
-- function), which the readers of a finished key's body render it back with. Any other body, or
-- any other code, is stored as given. The ride is read by its key in the same snapshot,
-- before the charge id is set on it: the rendering takes p_charge_id, which the chain sets.
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
        SET recovery_point = 'finished', response_code = p_response_code,
            (response_body, response_renderer) = (
                SELECT CASE WHEN m.rendered THEN NULL ELSE p_response_body END, CASE WHEN m.rendered THEN 1::smallint END
                FROM (SELECT p_response_code = 201 AND p_response_body = (
                                 SELECT rides_created_body_v1(r.id, r.origin_lat, r.origin_lon, r.target_lat,
                                                              r.target_lon, p_charge_id, r.created_at)
                                 FROM rides r
                                 WHERE r.idempotency_key_id = p_key_id) AS rendered) m),
            locked_at = NULL, lock_token = NULL, last_run_at = now()
        WHERE k.id = p_key_id AND k.lock_token = p_lock_token
        RETURNING k.id
    ), charged AS (
        UPDATE rides r SET stripe_charge_id = p_charge_id
        FROM finished
        WHERE r.idempotency_key_id = finished.id
        RETURNING r.id
    ), ledger AS (
        INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency)
        SELECT p_charge_id, charged.id, p_user_id, p_amount, p_currency FROM charged
    ), receipt AS (
        INSERT INTO staged_jobs (job_name, job_args)
        SELECT j.* FROM charged, rides_receipt_job(charged.id, p_amount, p_currency, p_user_id) j
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
