-- The design's tables (users, idempotency_keys, rides, audit_records, staged_jobs) plus what the
-- product needs: hashed API tokens, fenced locks, a payment idempotency key per request, verbatim
-- stored responses, stable Sidekiq jids and an archive of requests reaped unfinished.

CREATE TABLE users (
    id                  BIGSERIAL   PRIMARY KEY,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    email               TEXT        NOT NULL UNIQUE CHECK (char_length(email) BETWEEN 3 AND 255),
    stripe_customer_id  TEXT        NOT NULL CHECK (char_length(stripe_customer_id) BETWEEN 1 AND 255)
);

-- Only the SHA-256 of a bearer token is stored; a leaked table grants nothing.
CREATE TABLE api_tokens (
    token_hash  BYTEA       PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    user_id     BIGINT      NOT NULL REFERENCES users ON DELETE CASCADE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX api_tokens_user_id ON api_tokens (user_id);

CREATE TABLE idempotency_keys (
    id                       BIGSERIAL   PRIMARY KEY,
    created_at               TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- 20 to 255 printable ASCII characters: the same bound the API enforces (Stripe's limit).
    idempotency_key          TEXT        NOT NULL
        CHECK (char_length(idempotency_key) BETWEEN 20 AND 255 AND idempotency_key ~ '^[\x20-\x7e]+$'),
    last_run_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    locked_at                TIMESTAMPTZ DEFAULT now(),
    -- Fencing token: a fresh one per lock acquisition; every phase commits only while it matches.
    lock_token               UUID,
    request_method           TEXT        NOT NULL CHECK (char_length(request_method) <= 10),
    request_params           JSONB       NOT NULL,
    request_path             TEXT        NOT NULL CHECK (char_length(request_path) <= 100),
    -- The client's address, kept so that a phase re-driven by the completer can still audit it.
    origin_ip                INET,
    response_code            INT         CHECK (response_code BETWEEN 100 AND 599),
    -- TEXT, not JSONB: a replay must return the stored bytes, and JSONB reorders keys.
    response_body            TEXT        CHECK (octet_length(response_body) <= 65536),
    recovery_point           TEXT        NOT NULL CHECK (char_length(recovery_point) <= 50),
    -- Sent to the payment provider on every attempt of the charge; fixed when the key is created.
    payment_idempotency_key  TEXT        NOT NULL UNIQUE DEFAULT ('rr-' || gen_random_uuid()::text)
        CHECK (char_length(payment_idempotency_key) <= 255),
    -- Background re-drives (the completer) record what happened so operators can see it.
    attempts                 INT         NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error               TEXT        CHECK (char_length(last_error) <= 1000),
    user_id                  BIGINT      NOT NULL REFERENCES users ON DELETE RESTRICT,
    CHECK ((recovery_point = 'finished') = (response_code IS NOT NULL AND response_body IS NOT NULL)),
    CHECK (recovery_point = 'finished' OR locked_at IS NOT NULL OR lock_token IS NULL)
);
CREATE UNIQUE INDEX idempotency_keys_user_id_idempotency_key ON idempotency_keys (user_id, idempotency_key);
-- The completer scans unfinished keys by age; finished ones (nearly all) stay out of the index.
CREATE INDEX idempotency_keys_unfinished ON idempotency_keys (last_run_at) WHERE recovery_point <> 'finished';
-- The reaper walks keys by age.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

CREATE TABLE rides (
    id                  BIGSERIAL       PRIMARY KEY,
    created_at          TIMESTAMPTZ     NOT NULL DEFAULT now(),
    -- A ride outlives its key: the reaper deletes keys after 72 hours.
    idempotency_key_id  BIGINT          UNIQUE REFERENCES idempotency_keys ON DELETE SET NULL,
    origin_lat          NUMERIC(13, 10) NOT NULL CHECK (origin_lat BETWEEN -90 AND 90),
    origin_lon          NUMERIC(13, 10) NOT NULL CHECK (origin_lon BETWEEN -180 AND 180),
    target_lat          NUMERIC(13, 10) NOT NULL CHECK (target_lat BETWEEN -90 AND 90),
    target_lon          NUMERIC(13, 10) NOT NULL CHECK (target_lon BETWEEN -180 AND 180),
    stripe_charge_id    TEXT            UNIQUE CHECK (char_length(stripe_charge_id) <= 255),
    user_id             BIGINT          NOT NULL REFERENCES users ON DELETE RESTRICT
);
CREATE INDEX rides_user_id_id ON rides (user_id, id DESC);

CREATE TABLE audit_records (
    id             BIGSERIAL   PRIMARY KEY,
    action         TEXT        NOT NULL CHECK (char_length(action) <= 50),
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    data           JSONB       NOT NULL,
    origin_ip      CIDR        NOT NULL,
    resource_id    BIGINT      NOT NULL,
    resource_type  TEXT        NOT NULL CHECK (char_length(resource_type) <= 50),
    user_id        BIGINT      NOT NULL REFERENCES users ON DELETE RESTRICT
);
CREATE INDEX audit_records_user_id ON audit_records (user_id);

CREATE TABLE staged_jobs (
    id          BIGSERIAL   PRIMARY KEY,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    job_name    TEXT        NOT NULL CHECK (char_length(job_name) BETWEEN 1 AND 100),
    job_args    JSONB       NOT NULL CHECK (jsonb_typeof(job_args) = 'array'),
    -- Sidekiq's job id, fixed at staging so a re-push after a failed commit carries the same jid.
    jid         TEXT        NOT NULL UNIQUE
        DEFAULT substr(replace(gen_random_uuid()::text, '-', ''), 1, 24) CHECK (jid ~ '^[0-9a-f]{24}$')
);

-- Wakes the enqueuer when a staging transaction commits (NOTIFY is delivered at commit).
CREATE FUNCTION staged_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('staged_jobs', '');
    RETURN NULL;
END;
$$;
CREATE TRIGGER staged_jobs_notify AFTER INSERT ON staged_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION staged_jobs_notify();

-- What a human needs to act on a request that the reaper removed before it ever finished.
CREATE TABLE idempotency_keys_archive (
    id                       BIGINT      PRIMARY KEY,
    archived_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    created_at               TIMESTAMPTZ NOT NULL,
    last_run_at              TIMESTAMPTZ NOT NULL,
    locked_at                TIMESTAMPTZ,
    idempotency_key          TEXT        NOT NULL,
    request_method           TEXT        NOT NULL,
    request_path             TEXT        NOT NULL,
    request_params           JSONB       NOT NULL,
    origin_ip                INET,
    recovery_point           TEXT        NOT NULL,
    payment_idempotency_key  TEXT        NOT NULL,
    attempts                 INT         NOT NULL,
    last_error               TEXT,
    user_id                  BIGINT      NOT NULL REFERENCES users ON DELETE RESTRICT
);
