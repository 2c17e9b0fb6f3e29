-- Moved here from sql/009_rider_sessions.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- Signs a rider in, in one round trip: finds the API token's user, deletes that user's expired
-- sessions and the oldest live ones beyond p_max_per_user - 1, and inserts the new session. The
-- user's row is locked first (FOR NO KEY UPDATE, which rides' and keys' foreign-key checks do not
-- wait for), so concurrent sign-ins of one user take turns and a client signing in in a loop
-- never holds more than p_max_per_user sessions. No row: the token is not one of ours.
CREATE OR REPLACE FUNCTION rider_session_sign_in(p_token_hash BYTEA, p_api_token_hash BYTEA, p_csrf_token TEXT,
                                      p_ttl_seconds DOUBLE PRECISION, p_max_per_user INT)
RETURNS TABLE (user_id BIGINT, email TEXT, stripe_customer_id TEXT) LANGUAGE plpgsql AS $$
DECLARE
    found_user users%ROWTYPE;
BEGIN
    SELECT u.* INTO found_user FROM api_tokens t JOIN users u ON u.id = t.user_id
    WHERE t.token_hash = p_api_token_hash FOR NO KEY UPDATE OF u;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    DELETE FROM rider_sessions s
    WHERE s.user_id = found_user.id
      AND (s.expires_at <= now()
           OR s.token_hash IN (SELECT o.token_hash FROM rider_sessions o
                               WHERE o.user_id = found_user.id AND o.expires_at > now()
                               ORDER BY o.created_at DESC, o.token_hash
                               OFFSET greatest(p_max_per_user - 1, 0)));
    INSERT INTO rider_sessions (token_hash, user_id, api_token_hash, csrf_token, expires_at)
    VALUES (p_token_hash, found_user.id, p_api_token_hash, p_csrf_token, now() + make_interval(secs => p_ttl_seconds));
    RETURN QUERY SELECT found_user.id, found_user.email, found_user.stripe_customer_id;
END;
$$;
