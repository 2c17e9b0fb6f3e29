-- Released renderer 1 of the ride-creation 201 (sql/019), frozen: this file never changes, as a
-- change would change the replay of every key finished with it (tests/golden/rides_created_v1
-- holds its bytes, tests/golden/released_renderers.sha256 this file's checksum). A different
-- rendering is a new file, rides_created_body_v2, registered as a new renderer beside this one.
-- Byte for byte what common/rides/ride_response.cpp's ride_created_body wrote when it was released,
-- for a ride not yet cancelled nor refunded, from the ride's columns with rides_view_of's
-- expressions. The finish stores a NULL body instead of the 201 when the body it is given equals
-- this rendering of the ride it charged; a body that differs (another binary's rendering, a
-- session whose float output differs) is stored verbatim, so a replay never depends on this
-- function being right, only on it being the same at the finish and at every later read.
--
-- That is why extra_float_digits is pinned: float8 text follows the session's setting (any value
-- above 0 gives the shortest exact digits, PostgreSQL's default since 12; 0 or less rounds), and a
-- reader's session may not be the finishing one's. A finish under another setting compares
-- against this rendering, differs, and stores its body.
--
-- JSON strings as RapidJSON's Writer escapes them: '"', '\' and the control characters, with
-- \b \t \n \f \r by name and the others as \u00XX in upper-case hex (to_json writes lower-case,
-- so a charge id holding one of those is escaped a character at a time; the common one is not).
CREATE OR REPLACE FUNCTION rides_created_body_v1(p_id bigint, p_origin_lat numeric, p_origin_lon numeric,
                                                 p_target_lat numeric, p_target_lon numeric, p_stripe_charge_id text,
                                                 p_created_at timestamptz)
RETURNS text
LANGUAGE plpgsql STABLE
SET extra_float_digits = 1
AS $$
DECLARE
    v_charge text;
BEGIN
    IF p_stripe_charge_id IS NULL THEN
        v_charge := 'null';
    ELSIF p_stripe_charge_id !~ '[\x01-\x1f]' THEN
        v_charge := to_json(p_stripe_charge_id)::text;
    ELSE
        SELECT '"' || string_agg(CASE WHEN ascii(c.ch) < 32 AND ascii(c.ch) NOT IN (8, 9, 10, 12, 13)
                                      THEN '\u00' || upper(lpad(to_hex(ascii(c.ch)), 2, '0'))
                                      ELSE substr(to_json(c.ch)::text, 2, length(to_json(c.ch)::text) - 2) END,
                                 '' ORDER BY c.n) || '"'
        INTO v_charge
        FROM regexp_split_to_table(p_stripe_charge_id, '') WITH ORDINALITY AS c(ch, n);
    END IF;
    RETURN '{"message":"Ride created and charged.","ride":{"id":' || p_id
        || ',"origin_lat":' || p_origin_lat::float8::text || ',"origin_lon":' || p_origin_lon::float8::text
        || ',"target_lat":' || p_target_lat::float8::text || ',"target_lon":' || p_target_lon::float8::text
        || ',"stripe_charge_id":' || v_charge
        || ',"created_at":"' || to_char(p_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
        || '","cancelled_at":null,"stripe_refund_id":null}}';
END;
$$;
