-- The body of a finished key stored as NULL (sql/013), rendered by the renderer the key names
-- (sql/019): the function each flow registered for it in stored_answer_renderers, called with the
-- key's id. The one way back from a NULL body to its bytes for every reader of a finished key, so
-- none of them, and nothing of the idempotency layer, knows which flow's rows the answer comes from.
-- A renderer number with no registered function is an error (RR004), never a guess: a replay that
-- is not the original bytes must not be sent.
-- Called only for finished keys whose body is NULL: replays read from the database, which the
-- in-memory finished responses spare most retries.
CREATE OR REPLACE FUNCTION idem_stored_answer(p_key_id bigint, p_renderer smallint)
RETURNS text
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_function text;
    v_body text;
BEGIN
    SELECT s.function_name INTO v_function FROM stored_answer_renderers s WHERE s.renderer = p_renderer;
    IF v_function IS NULL THEN
        RAISE EXCEPTION 'idempotency key % names stored-answer renderer %, which is not registered', p_key_id,
            COALESCE(p_renderer::text, 'NULL') USING ERRCODE = 'RR004';
    END IF;
    EXECUTE format('SELECT %I($1)', v_function) INTO v_body USING p_key_id;
    RETURN v_body;
END;
$$;
