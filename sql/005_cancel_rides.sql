-- Cancelling a ride and refunding its charge, exactly once. A ride gains when it was
-- cancelled, the provider's refund, the rider's reason, and the idempotency key its refund is sent
-- with: fixed by the ride (not by the request), so however many requests, keys, retries and
-- completers ask for the refund, the provider makes one. Like the charge's payment_idempotency_key
-- it is unique across deployments (a random UUID, not a sequence), so two databases never send the
-- provider the same key for different rides.
--
-- Adding a column with a volatile default rewrites the table once; each existing ride gets a key
-- of its own.
ALTER TABLE rides
    ADD COLUMN cancelled_at            TIMESTAMPTZ,
    ADD COLUMN stripe_refund_id        TEXT UNIQUE CHECK (char_length(stripe_refund_id) <= 255),
    ADD COLUMN cancel_reason           TEXT CHECK (octet_length(cancel_reason) <= 500),
    ADD COLUMN refund_idempotency_key  TEXT NOT NULL UNIQUE DEFAULT ('rr-refund-' || gen_random_uuid()::text)
        CHECK (char_length(refund_idempotency_key) <= 255),
    -- A refund is only recorded on a cancelled ride, and only a charged ride has one.
    ADD CONSTRAINT rides_refund_only_when_cancelled
        CHECK (stripe_refund_id IS NULL OR (cancelled_at IS NOT NULL AND stripe_charge_id IS NOT NULL));

-- A ride as a response shows it now ends with cancelled_at and stripe_refund_id (RR_RIDE_VIEW_COLUMNS
-- in common/rides/ride_response.hpp). The functions of 003 that return a ride keep their shape for
-- binaries built before this migration (003's header says why); these are their successors.

-- Since 011 the functions this migration created or replaced (rides_view_of,
-- rides_stage_ride_receipt, rides_record_charge_and_stage_receipt_v2,
-- rides_stage_receipt_for_key_v2, rides_mark_cancelled, rides_cancel_begin, rides_refund_target,
-- rides_record_refund) are defined once each in sql/functions/, and `migrate` (re)creates them
-- after the numbered migrations: their bodies were taken out of here (migrate never re-reads a
-- migration it applied).
