-- Where the completer looks for abandoned keys this pass (sql/012): the key ids it walks in the
-- primary key, in place of a partial index on unfinished keys that made every finish a non-HOT
-- update. Returns, and moves the shared state (idempotency_keys_scan) to:
--   floor_id, boundary_id: walk [floor_id, boundary_id). Every key below floor_id is finished or
--     has failed an attempt (attempts > 0: the partial index idempotency_keys_retried lists those);
--     boundary_id is the first key younger than p_min_age, which the completer does not want yet.
--   sweep_from, sweep_to: a slice below the floor to look at again, p_sweep_size ids a pass,
--     wrapping around when it reaches the floor.
--
-- Why the floor cannot skip a key: it moves up only over keys this statement sees finished or
-- with attempts > 0 (neither ever goes back), and only up to the first key younger than p_min_age.
-- A key not yet visible here has a smaller id than that first young key only if its transaction
-- took its id before that key's, that is more than p_min_age ago, and still has not committed:
-- a commit held up for minutes (a synchronous standby lost without a failover). The sweep finds
-- such a key later; a client that retries it finds it at once.
--
-- The row lock serializes completers; the walk costs the keys created since the previous pass.
CREATE OR REPLACE FUNCTION completer_advance_scan(p_min_age float8, p_sweep_size bigint)
RETURNS TABLE (floor_id bigint, boundary_id bigint, sweep_from bigint, sweep_to bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_floor bigint;
    v_sweep bigint;
    v_boundary bigint;
    v_stuck bigint;
    v_sweep_to bigint;
BEGIN
    SELECT s.floor_id, s.sweep_id INTO v_floor, v_sweep FROM idempotency_keys_scan s WHERE s.only_row FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'idempotency_keys_scan has no row (sql/012 inserts it)' USING ERRCODE = 'RR002';
    END IF;
    SELECT k.id INTO v_boundary FROM idempotency_keys k
    WHERE k.id >= v_floor AND k.created_at >= now() - make_interval(secs => p_min_age)
    ORDER BY k.id LIMIT 1;
    IF v_boundary IS NULL THEN
        SELECT COALESCE(max(k.id) + 1, v_floor) INTO v_boundary FROM idempotency_keys k WHERE k.id >= v_floor;
    END IF;
    SELECT k.id INTO v_stuck FROM idempotency_keys k
    WHERE k.id >= v_floor AND k.id < v_boundary AND k.response_code IS NULL AND k.attempts = 0
    ORDER BY k.id LIMIT 1;
    v_floor := COALESCE(v_stuck, v_boundary);

    -- The sweep skips the ids the reaper emptied, and starts over at the oldest key past the floor.
    IF v_sweep >= v_floor THEN
        v_sweep := 0;
    END IF;
    SELECT COALESCE(min(k.id), v_floor) INTO v_sweep FROM idempotency_keys k WHERE k.id >= v_sweep AND k.id < v_floor;
    v_sweep_to := LEAST(v_sweep + p_sweep_size, v_floor);

    UPDATE idempotency_keys_scan s SET floor_id = v_floor, sweep_id = v_sweep_to, updated_at = now()
    WHERE s.only_row;
    RETURN QUERY SELECT v_floor, v_boundary, v_sweep, v_sweep_to;
END;
$$;
