-- Revoking a leaked token by its first characters (`user token --email E --revoke rr_1a2b3c4d`).
-- Only a token's SHA-256 was stored, which no prefix can be matched against; keep its
-- first 11 characters too ("rr_" and 8 hex digits: 32 of its 256 random bits, so the table still
-- grants nothing). Tokens issued before this migration have none and are revoked by the whole token.
ALTER TABLE api_tokens ADD COLUMN token_prefix TEXT CHECK (token_prefix ~ '^rr_[0-9a-f]{8}$');
