-- The rider's pages: a browser signs in once with its API token and then carries only a
-- session cookie. Only the SHA-256 of the cookie's 32 random bytes is stored (a leaked table
-- grants nothing), with the token the rider signed in with, so revoking that token ends its
-- sessions, and a CSRF token the pages' forms must echo. The reaper deletes expired rows.
CREATE TABLE rider_sessions (
    token_hash      BYTEA       PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    user_id         BIGINT      NOT NULL REFERENCES users ON DELETE CASCADE,
    api_token_hash  BYTEA       NOT NULL REFERENCES api_tokens (token_hash) ON DELETE CASCADE,
    csrf_token      TEXT        NOT NULL CHECK (csrf_token ~ '^[0-9a-f]{64}$'),
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at      TIMESTAMPTZ NOT NULL,
    CHECK (expires_at > created_at)
);
-- The reaper walks expired sessions; a sign-in prunes its user's oldest; revocation cascades.
CREATE INDEX rider_sessions_expires_at ON rider_sessions (expires_at);
CREATE INDEX rider_sessions_user_id_created_at ON rider_sessions (user_id, created_at);
CREATE INDEX rider_sessions_api_token_hash ON rider_sessions (api_token_hash);

-- Since 011 the functions this migration created or replaced (rider_session_sign_in) are defined
-- once each in sql/functions/, and `migrate` (re)creates them after the numbered migrations: their
-- bodies were taken out of here (migrate never re-reads a migration it applied).
