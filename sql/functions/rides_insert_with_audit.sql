-- Moved here from sql/003_request_functions.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- The ride and its audit record in one statement; returns the ride's id.
CREATE OR REPLACE FUNCTION rides_insert_with_audit(p_key_id bigint, p_origin_lat numeric, p_origin_lon numeric,
                                        p_target_lat numeric, p_target_lon numeric, p_user_id bigint,
                                        p_audit_data jsonb, p_origin_ip text)
RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH ride AS (
        INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id)
        VALUES (p_key_id, p_origin_lat, p_origin_lon, p_target_lat, p_target_lon, p_user_id)
        RETURNING rides.id
    )
    INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id)
    SELECT a.* FROM ride, rides_created_audit(p_audit_data, p_origin_ip, ride.id, p_user_id) a
    RETURNING audit_records.resource_id;
END;
$$;
