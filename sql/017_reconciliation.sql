-- Reconciliation against the payment provider: the breaks a pass finds (and what it did about
-- each), the write fences a restore closes until a pass has covered the restored window, and the
-- lease that lets one pass run at a time across completers and operators.

-- One row per discrepancy and action. A second pass over the same window finds the same
-- discrepancy again and adds nothing: the unique index names it by kind, provider object, ride
-- and action. A charge waiting out its grace and later refunded is two rows (two actions).
CREATE TABLE reconciliation_breaks (
    id                  BIGSERIAL   PRIMARY KEY,
    found_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    kind                TEXT        NOT NULL CHECK (char_length(kind) <= 50),
    provider_object_id  TEXT        CHECK (char_length(provider_object_id) <= 255),
    ride_id             BIGINT,
    action              TEXT        NOT NULL CHECK (char_length(action) <= 50),
    details             JSONB       NOT NULL
);
CREATE UNIQUE INDEX reconciliation_breaks_once
    ON reconciliation_breaks (kind, COALESCE(provider_object_id, ''), COALESCE(ride_id, 0), action);
CREATE INDEX reconciliation_breaks_found_at ON reconciliation_breaks (found_at);

-- An open fence (reopened_at IS NULL) closes the API to writes until a pass has covered
-- [reconcile_since, now]; the restore inserts it, the pass that covers it sets reopened_at.
CREATE TABLE write_fences (
    id               BIGSERIAL   PRIMARY KEY,
    closed_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    reason           TEXT        NOT NULL CHECK (char_length(reason) <= 500),
    reconcile_since  TIMESTAMPTZ NOT NULL,
    reopened_at      TIMESTAMPTZ
);
CREATE INDEX write_fences_open ON write_fences (id) WHERE reopened_at IS NULL;

-- One pass at a time: a lease row rather than an advisory lock, because a session lock does not
-- survive a transaction-pooling PgBouncer. covered_until is the newest window end a pass finished
-- (the lag metric reads it, whichever completer ran the pass).
CREATE TABLE reconciliation_lease (
    id             INT         PRIMARY KEY CHECK (id = 1),
    holder         TEXT,
    expires_at     TIMESTAMPTZ,
    covered_until  TIMESTAMPTZ
);
INSERT INTO reconciliation_lease (id) VALUES (1);
