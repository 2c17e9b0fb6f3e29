-- A stored answer that is rendered rather than stored (a finished key whose body is NULL, sql/013)
-- names the renderer that made it, and a replay renders it with that renderer for as long as the
-- key lives: "replayed byte for byte" must hold whatever later code does. A renderer is released
-- once and frozen (its function file never changes; tests/golden/released_renderers.sha256); a
-- changed rendering is a new renderer with a new number beside the old, and keys finished before
-- it keep replaying through the old one.
--
-- Renderers are registered per flow in stored_answer_renderers: idem_stored_answer (the generic
-- key readers' one way back to a body) calls the registered function with the key's id, so the
-- idempotency layer knows no flow's tables; the flow's function finds its own rows by key.
--
-- rides_created_body, what renderer 1 was called before it was released, is left where it exists:
-- binaries older than this migration still call it during a rolling upgrade; nothing newer does.
--
-- Every row already here reads 1 from the new column, without a table rewrite: a column added
-- with a constant default is a catalog entry (PostgreSQL 11+), which the rows written before it
-- read as their value. 1 is the renderer that made every NULL body stored so far
-- (rides_created_body_v1 is that function's body, unchanged), so existing keys replay exactly as
-- before. The default stays: code that names no renderer is code older than this file, whose
-- NULL bodies are renderer 1's (a finish between this migration's commit and the functions step
-- that replaces the finishing functions, an older binary's reconciliation during a rolling
-- upgrade). A later renderer's migration leaves it at 1; the finishes name their renderer
-- explicitly (NULL when they store the body as given). The column is read only for a NULL body.
-- The column is a fixed-width smallint with no index on it: the finishing update that writes it
-- stays heap-only (sql/012).
-- lock_timeout: as sql/013, waiting for the table's lock behind a long transaction would queue
-- every request behind the wait; `migrate` runs the file again a second later instead.
SET LOCAL lock_timeout = '1s';
ALTER TABLE idempotency_keys ADD COLUMN response_renderer SMALLINT DEFAULT 1;
-- A NULL body must be renderable: refuses a writer that names no renderer for it explicitly.
-- New and updated rows only (NOT VALID: no scan under this file's lock); every row already here
-- passes, as it reads 1.
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_rendered_answer_has_renderer
    CHECK (response_body IS NOT NULL OR response_code IS NULL OR response_renderer IS NOT NULL) NOT VALID;

CREATE TABLE stored_answer_renderers (
    renderer       SMALLINT    PRIMARY KEY CHECK (renderer > 0),
    -- The registered flow whose answers it renders (common/flows/flow_registry.cpp), for readers.
    flow           TEXT        NOT NULL CHECK (char_length(flow) <= 50),
    -- A function of sql/functions/ taking the key's id and returning the body (a name, not a
    -- regproc: the function files are applied after the numbered migrations).
    function_name  TEXT        NOT NULL UNIQUE CHECK (function_name ~ '^[a-z_][a-z0-9_]*$'),
    released_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO stored_answer_renderers (renderer, flow, function_name)
VALUES (1, 'create_ride', 'rides_created_answer_v1');
