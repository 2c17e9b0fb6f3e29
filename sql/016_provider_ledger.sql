-- The provider's charges and refunds, one row each, written only by INSERT: uniqueness back in the
-- database without costing the finishing updates their heap-only (HOT) form. 012 dropped the
-- unique indexes on rides.stripe_charge_id and stripe_refund_id because an UPDATE that sets a
-- column an index covers can never be HOT; what must be unique is now written where an insert
-- writes it, in the same statement that sets the ride's column (sql/functions/
-- rides_record_charge_and_finish.sql, rides_record_charges_and_finish.sql,
-- rides_record_charge_and_stage_receipt_v2.sql, rides_mark_cancelled.sql). An insert pays for its
-- index entries once; the rides' updates stay heap-only.
--   provider_charges: one charge per ride (ride_id UNIQUE), one ride per charge (the primary key).
--   provider_refunds: one refund per charge and per ride, one ride per refund.
-- A second charge id for a ride, or a charge id already recorded for another ride, is a unique
-- violation (23505) that rolls the finishing statement back: the caller's failure path, as for the
-- functions' RR001/RR002. Reconciliation matches the provider's records against these tables.
--
-- Insert-only: a trigger refuses UPDATE and DELETE with restrict_violation (23001; TRUNCATE stays
-- a table owner's act, as a restore's). A test that simulates a lost commit deletes rows with SET
-- LOCAL session_replication_role = replica, which skips ordinary triggers, as a replica applying
-- the primary's changes would.
--
-- The rows already there are backfilled from the rides, at the one price a ride has ever had
-- (kRideAmountCents, kRideCurrency in common/rides/ride_flow.hpp). In one transaction, ordered so
-- that writers of rides wait only for an instant: the tables are created and filled first, which
-- reads rides under a lock that lets reads and writes go on; only then are the foreign key to
-- rides and the two columns added, which lock rides until the commit right after them (the wait
-- for those locks is bounded by lock_timeout; `migrate` then runs the file again a second later,
-- common/db/migrations.cpp). The foreign key is added NOT VALID, which skips the scan that would
-- check the rows already there (they were just copied from rides, in this transaction); new rows
-- are checked, and a ride with a ledger row cannot be deleted.
-- `migrate` recreates the functions that write the ledger after this file, in a transaction of its
-- own: a ride finished by the previous functions in between (a moment, within one `migrate`) has
-- no ledger row. The backfill statements are safe to run again and fill those in; reconciliation
-- reports any ride whose charge the ledger lacks.
SET LOCAL lock_timeout = '1s';

CREATE TABLE IF NOT EXISTS provider_charges (
    stripe_charge_id  TEXT        PRIMARY KEY CHECK (char_length(stripe_charge_id) <= 255),
    ride_id           BIGINT      NOT NULL UNIQUE,  -- REFERENCES rides ON DELETE RESTRICT, added below
    user_id           BIGINT      NOT NULL,
    amount            BIGINT      NOT NULL CHECK (amount > 0),
    currency          TEXT        NOT NULL,
    recorded_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS provider_refunds (
    stripe_refund_id  TEXT        PRIMARY KEY CHECK (char_length(stripe_refund_id) <= 255),
    stripe_charge_id  TEXT        NOT NULL UNIQUE REFERENCES provider_charges,
    ride_id           BIGINT      NOT NULL UNIQUE,
    user_id           BIGINT      NOT NULL,
    amount            BIGINT      NOT NULL,
    currency          TEXT        NOT NULL,
    recorded_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE OR REPLACE FUNCTION provider_ledger_refuse_change()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is insert-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation', HINT = 'A correction is a new row (a refund), never an edit of a recorded one.';
END;
$$;

DROP TRIGGER IF EXISTS provider_charges_insert_only ON provider_charges;
CREATE TRIGGER provider_charges_insert_only BEFORE UPDATE OR DELETE ON provider_charges
    FOR EACH ROW EXECUTE FUNCTION provider_ledger_refuse_change();
DROP TRIGGER IF EXISTS provider_refunds_insert_only ON provider_refunds;
CREATE TRIGGER provider_refunds_insert_only BEFORE UPDATE OR DELETE ON provider_refunds
    FOR EACH ROW EXECUTE FUNCTION provider_ledger_refuse_change();

-- Rides finished before this migration. recorded_at is the ride's created_at (its cancelled_at for
-- a refund): when the charge was recorded was not kept, and it follows the ride's creation within
-- the request. A charge id that two rides carry (what the ledger now refuses) is recorded for the
-- first of them only, and a warning names how many were left out.
DO $$
DECLARE
    v_left_out bigint;
BEGIN
    INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency, recorded_at)
    SELECT r.stripe_charge_id, r.id, r.user_id, 2000, 'usd', r.created_at
    FROM rides r
    WHERE r.stripe_charge_id IS NOT NULL
    ORDER BY r.id
    ON CONFLICT DO NOTHING;
    INSERT INTO provider_refunds (stripe_refund_id, stripe_charge_id, ride_id, user_id, amount, currency, recorded_at)
    SELECT r.stripe_refund_id, r.stripe_charge_id, r.id, r.user_id, 2000, 'usd', r.cancelled_at
    FROM rides r JOIN provider_charges c ON c.ride_id = r.id
    WHERE r.stripe_refund_id IS NOT NULL
    ORDER BY r.id
    ON CONFLICT DO NOTHING;
    SELECT count(*) INTO v_left_out FROM rides r
    WHERE (r.stripe_charge_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM provider_charges c WHERE c.ride_id = r.id))
       OR (r.stripe_refund_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM provider_refunds f WHERE f.ride_id = r.id));
    IF v_left_out > 0 THEN
        RAISE WARNING '% rides carry a charge or refund id another ride already has; the ledger records the first', v_left_out;
    END IF;
END;
$$;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'provider_charges_ride_id_fkey') THEN
        ALTER TABLE provider_charges ADD CONSTRAINT provider_charges_ride_id_fkey
            FOREIGN KEY (ride_id) REFERENCES rides ON DELETE RESTRICT NOT VALID;
    END IF;
END;
$$;

-- The cancel request that first reached the refund, kept with the refund's provider key
-- (rides_store_refund_key): every attempt of that refund, by any cancel request, sends its key and
-- parameters as the refund's metadata, and the provider refuses a replayed key whose parameters
-- differ. Nullable without a default: no rewrite, and only set by an update of a column no index
-- covers (heap-only).
ALTER TABLE rides ADD COLUMN IF NOT EXISTS refund_request_key TEXT,
    ADD COLUMN IF NOT EXISTS refund_request_params JSONB;
