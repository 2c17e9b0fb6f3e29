-- Moved here from sql/005_cancel_rides.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- A ride as a response shows it, for every function that returns one
-- (the columns of RR_RIDE_VIEW_COLUMNS in common/rides/ride_response.hpp).
CREATE OR REPLACE FUNCTION rides_view_of(p_ride_id bigint)
RETURNS TABLE (id bigint, origin_lat text, origin_lon text, target_lat text, target_lon text,
               stripe_charge_id text, created_at text, cancelled_at text, stripe_refund_id text)
LANGUAGE sql STABLE AS $$
    SELECT r.id, r.origin_lat::float8::text, r.origin_lon::float8::text, r.target_lat::float8::text,
           r.target_lon::float8::text, r.stripe_charge_id,
           to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
           to_char(r.cancelled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), r.stripe_refund_id
    FROM rides r WHERE r.id = p_ride_id;
$$;
