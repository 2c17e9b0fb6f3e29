-- A new ride's audit record, the one definition of its columns for every statement that creates a
-- ride (rides_create_with_key, rides_create_with_keys, rides_insert_with_audit), so that a ride
-- created by a single call, in a batch or by a resumed key is audited alike: action create_ride on
-- resource ride, the request's parameters as data, the client's address ('' or none: 0.0.0.0).
-- One SELECT in SQL, not STRICT, not VOLATILE, no SET: the planner inlines it into the calling
-- statement (`INSERT ... SELECT a.* FROM ..., rides_created_audit(...) a`), so sharing it costs
-- no call (coalesced_phases_test looks at the plan).
CREATE OR REPLACE FUNCTION rides_created_audit(p_params jsonb, p_origin_ip text, p_ride_id bigint, p_user_id bigint)
RETURNS TABLE (action text, data jsonb, origin_ip cidr, resource_id bigint, resource_type text, user_id bigint)
LANGUAGE sql STABLE AS $$
    SELECT 'create_ride'::text, p_params, COALESCE(NULLIF(p_origin_ip, ''), '0.0.0.0')::cidr, p_ride_id, 'ride'::text,
           p_user_id
$$;
