-- migrate: outside a transaction
-- A new key's finishing updates become heap-only. PostgreSQL writes an UPDATE as a
-- "HOT" update (a new row version on the same page, no new entry in any index, far less WAL) only
-- when no column that an index covers or that an index predicate reads changes. The finishing
-- phase changes response_code, recovery_point, locked_at and lock_token on the key and
-- stripe_charge_id on the ride, so every finish wrote a new entry into each of the key's four
-- indexes and the ride's six. Measured with pgbench on the minimum SQL of one new key (32
-- clients, fsync on): 0 % of those updates were HOT before this migration, 100 % after, and the
-- pair ran about 10 % faster on about 10 % less PostgreSQL CPU.
--
-- What each index served, and what serves it now:
--   idempotency_keys_unfinished (id) WHERE response_code IS NULL: the completer's and
--     `keys list --unfinished`' scan. Its predicate reads response_code, which the finish sets.
--     Now the completer walks the primary key from a floor kept in idempotency_keys_scan (every
--     key below it is finished or has failed a completer attempt), and the keys that failed an
--     attempt are in the small partial index idempotency_keys_retried (attempts only changes on a
--     failed attempt, never on a finish). sql/functions/completer_advance_scan.sql says how the
--     floor moves and why it cannot skip a key.
--   idempotency_keys_created_at: the reaper's walk by age. Keys are numbered in the order they are
--     created, so the reaper now walks the primary key from the oldest and stops at the first key
--     younger than REAPER_MAX_AGE.
--   rides.stripe_charge_id, stripe_refund_id UNIQUE: nothing looks a ride up by them, and they are
--     unique by construction: the provider makes one charge per provider key, derived from one
--     client key (sql/010), and one refund per charge (the refund's key derives from the charge).
--   rides.refund_idempotency_key UNIQUE with a random default: never sent since 010 (the key sent
--     derives from the charge and is stored before the refund); new rides leave it NULL until then.
--   staged_jobs.jid UNIQUE with a random default: the jid now derives from the row's id and a
--     random prefix drawn once per database (staged_jobs_jid_prefix), unique by construction and
--     still the same on every re-push of a row. Rows staged before keep their stored jid.
--   audit_records_user_id: nothing reads audit records by user.
--
-- Online: this file runs outside a transaction, one statement at a time (common/db/migrations.cpp),
-- so the new index is built CONCURRENTLY (writes go on) and the old ones are dropped
-- CONCURRENTLY; the ALTERs take their table's lock for an instant. Every statement can run again:
-- an interrupted run is finished by the next `migrate`. Timed on 1,000,000 keys in
-- docs/operations.md.

-- A CREATE INDEX CONCURRENTLY that was interrupted leaves an invalid index which IF NOT EXISTS
-- would keep; drop it so the next statement builds it again. (No other migrator is building it at
-- this moment: one migrator at a time runs this file, common/db/migration_file_lock.hpp.)
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('idempotency_keys_retried') AND NOT indisvalid) THEN
        DROP INDEX idempotency_keys_retried;
    END IF;
END;
$$;
CREATE INDEX CONCURRENTLY IF NOT EXISTS idempotency_keys_retried ON idempotency_keys (id) WHERE attempts > 0;

-- The completer's floor; one row. Starting at 0, the first pass walks the whole table once.
CREATE TABLE IF NOT EXISTS idempotency_keys_scan (
    only_row    BOOLEAN     PRIMARY KEY DEFAULT true CHECK (only_row),
    -- Every key with a smaller id is finished or has attempts > 0 (then idempotency_keys_retried
    -- lists it), except one whose first commit came more than COMPLETER_MIN_AGE after its
    -- transaction began: the sweep finds those.
    floor_id    BIGINT      NOT NULL DEFAULT 0 CHECK (floor_id >= 0),
    -- Where the sweep below the floor goes on at the next pass.
    sweep_id    BIGINT      NOT NULL DEFAULT 0 CHECK (sweep_id >= 0),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO idempotency_keys_scan (only_row) VALUES (true) ON CONFLICT (only_row) DO NOTHING;

DROP INDEX CONCURRENTLY IF EXISTS idempotency_keys_unfinished;
DROP INDEX CONCURRENTLY IF EXISTS idempotency_keys_created_at;
DROP INDEX CONCURRENTLY IF EXISTS audit_records_user_id;

-- A constraint's index goes with the constraint, and these ALTERs need their table's lock for an
-- instant. lock_timeout keeps one from waiting behind a long transaction while every request
-- queues behind it; the migrator tries such a statement again (common/db/migrations.cpp).
DO $$
BEGIN
    SET LOCAL lock_timeout = '1s';
    ALTER TABLE rides DROP CONSTRAINT IF EXISTS rides_stripe_charge_id_key,
        DROP CONSTRAINT IF EXISTS rides_stripe_refund_id_key,
        DROP CONSTRAINT IF EXISTS rides_refund_idempotency_key_key,
        ALTER COLUMN refund_idempotency_key DROP NOT NULL,
        ALTER COLUMN refund_idempotency_key DROP DEFAULT;
    -- Room on each page for the charge id the finish adds to a ride (new pages; no rewrite).
    ALTER TABLE rides SET (fillfactor = 90);
END;
$$;

CREATE TABLE IF NOT EXISTS staged_jobs_jid_prefix (
    only_row  BOOLEAN PRIMARY KEY DEFAULT true CHECK (only_row),
    prefix    TEXT    NOT NULL CHECK (prefix ~ '^[0-9a-f]{8}$')
);
INSERT INTO staged_jobs_jid_prefix (prefix) VALUES (substr(md5(gen_random_uuid()::text), 1, 8))
    ON CONFLICT (only_row) DO NOTHING;
DO $$
BEGIN
    SET LOCAL lock_timeout = '1s';
    ALTER TABLE staged_jobs DROP CONSTRAINT IF EXISTS staged_jobs_jid_key,
        ALTER COLUMN jid DROP NOT NULL,
        ALTER COLUMN jid DROP DEFAULT;
END;
$$;

-- Last: a CREATE INDEX CONCURRENTLY chosen as a deadlock's victim leaves the index invalid, and
-- the IF NOT EXISTS above would have kept it. RR003 makes the migrator run
-- this file again from the top, whose first statement drops it.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('idempotency_keys_retried') AND NOT indisvalid) THEN
        RAISE EXCEPTION 'index idempotency_keys_retried is invalid (an interrupted CREATE INDEX CONCURRENTLY)'
            USING ERRCODE = 'RR003';
    END IF;
END;
$$;
