-- Cancelling a ride and refunding its charge, exactly once (issue 15). A ride gains when it was
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

-- A ride as a response shows it, for every function below that returns one.
CREATE FUNCTION rides_view_of(p_ride_id bigint)
RETURNS TABLE (id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text, cancelled_at text, stripe_refund_id text)
LANGUAGE sql STABLE AS $$
    SELECT r.id, r.origin_lat::float8::text, r.origin_lon::float8::text, r.target_lat::float8::text,
           r.target_lon::float8::text, r.stripe_charge_id,
           to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
           to_char(r.cancelled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), r.stripe_refund_id
    FROM rides r WHERE r.id = p_ride_id;
$$;

-- Stages a ride's receipt job.
CREATE FUNCTION rides_stage_ride_receipt(p_ride_id bigint, p_amount bigint, p_currency text, p_user_id bigint)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO staged_jobs (job_name, job_args)
    VALUES ('send_ride_receipt', jsonb_build_array(jsonb_build_object(
        'amount', p_amount, 'currency', p_currency, 'user_id', p_user_id, 'ride_id', p_ride_id)));
END;
$$;

CREATE FUNCTION rides_record_charge_and_stage_receipt_v2(p_key_id bigint, p_charge_id text, p_amount bigint,
                                                         p_currency text, p_user_id bigint)
RETURNS TABLE (id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text, cancelled_at text, stripe_refund_id text)
LANGUAGE plpgsql AS $$
DECLARE
    v_ride bigint;
BEGIN
    UPDATE rides r SET stripe_charge_id = p_charge_id WHERE r.idempotency_key_id = p_key_id RETURNING r.id INTO v_ride;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM rides_stage_ride_receipt(v_ride, p_amount, p_currency, p_user_id);
    RETURN QUERY SELECT * FROM rides_view_of(v_ride);
END;
$$;

CREATE FUNCTION rides_stage_receipt_for_key_v2(p_key_id bigint, p_amount bigint, p_currency text, p_user_id bigint)
RETURNS TABLE (id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text, cancelled_at text, stripe_refund_id text)
LANGUAGE plpgsql AS $$
DECLARE
    v_ride bigint;
BEGIN
    SELECT r.id INTO v_ride FROM rides r WHERE r.idempotency_key_id = p_key_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM rides_stage_ride_receipt(v_ride, p_amount, p_currency, p_user_id);
    RETURN QUERY SELECT * FROM rides_view_of(v_ride);
END;
$$;

-- Marks the (locked) ride cancelled with its refund, if it is not cancelled yet, and then only
-- stages the cancellation receipt and the audit record: the first cancellation wins, later ones
-- change nothing. Returns whether this call cancelled it.
CREATE FUNCTION rides_mark_cancelled(p_ride_id bigint, p_user_id bigint, p_refund_id text, p_reason text,
                                     p_amount bigint, p_currency text, p_audit_data jsonb, p_origin_ip text)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE rides r SET cancelled_at = now(), stripe_refund_id = p_refund_id, cancel_reason = p_reason
    WHERE r.id = p_ride_id AND r.user_id = p_user_id AND r.cancelled_at IS NULL;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO staged_jobs (job_name, job_args)
    VALUES ('send_cancellation_receipt', jsonb_build_array(jsonb_build_object(
        'amount', p_amount, 'currency', p_currency, 'user_id', p_user_id, 'ride_id', p_ride_id,
        'refund_id', p_refund_id)));
    INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id)
    VALUES ('cancel_ride', p_audit_data, p_origin_ip::cidr, p_ride_id, 'ride', p_user_id);
    RETURN true;
END;
$$;

-- The first step of a cancellation: where the user's ride stands, as `state`, with the ride.
--   no row       no such ride, or another user's
--   cancelled    already cancelled (by any key): nothing to do
--   charged      its charge is recorded: refund it next
--   pending      no charge yet and its own request has not finished: it may still be charged
--   uncharged    no charge and its request finished without one (declined) or was reaped: this
--                call cancelled it, with no refund
-- The ride's row is locked (FOR UPDATE), so the state cannot change under the rest of the
-- transaction; a finished request never changes again.
CREATE FUNCTION rides_cancel_begin(p_ride_id bigint, p_user_id bigint, p_reason text, p_currency text,
                                   p_audit_data jsonb, p_origin_ip text)
RETURNS TABLE (state text, id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text, cancelled_at text, stripe_refund_id text)
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
BEGIN
    SELECT CASE
               WHEN r.cancelled_at IS NOT NULL THEN 'cancelled'
               WHEN r.stripe_charge_id IS NOT NULL THEN 'charged'
               WHEN k.id IS NOT NULL AND k.response_code IS NULL THEN 'pending'
               ELSE 'uncharged'
           END
    INTO v_state
    FROM rides r LEFT JOIN idempotency_keys k ON k.id = r.idempotency_key_id
    WHERE r.id = p_ride_id AND r.user_id = p_user_id
    FOR UPDATE OF r;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_state = 'uncharged' THEN
        PERFORM rides_mark_cancelled(p_ride_id, p_user_id, NULL, p_reason, 0, p_currency, p_audit_data, p_origin_ip);
    END IF;
    RETURN QUERY SELECT v_state, v.* FROM rides_view_of(p_ride_id) v;
END;
$$;

-- What the refund needs: the ride's own charge and its refund idempotency key; no row when the
-- ride is not the user's or has no charge.
CREATE FUNCTION rides_refund_target(p_ride_id bigint, p_user_id bigint)
RETURNS TABLE (stripe_charge_id text, refund_idempotency_key text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT r.stripe_charge_id, r.refund_idempotency_key FROM rides r
    WHERE r.id = p_ride_id AND r.user_id = p_user_id AND r.stripe_charge_id IS NOT NULL;
END;
$$;

-- Records the refund: the ride is cancelled with it unless another request cancelled it first
-- (with the same refund: one provider key per ride), and the receipt is staged once. Returns the
-- ride as it now is.
CREATE FUNCTION rides_record_refund(p_ride_id bigint, p_user_id bigint, p_refund_id text, p_reason text,
                                    p_amount bigint, p_currency text, p_audit_data jsonb, p_origin_ip text)
RETURNS TABLE (id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text, cancelled_at text, stripe_refund_id text)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM rides r WHERE r.id = p_ride_id AND r.user_id = p_user_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM rides_mark_cancelled(p_ride_id, p_user_id, p_refund_id, p_reason, p_amount, p_currency, p_audit_data,
                                 p_origin_ip);
    RETURN QUERY SELECT * FROM rides_view_of(p_ride_id);
END;
$$;
