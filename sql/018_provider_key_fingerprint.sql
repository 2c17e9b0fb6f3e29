-- The fingerprint of the PROVIDER_KEY_SECRET this deployment derives its provider idempotency keys
-- with (common/payments/provider_key_fingerprint.hpp): an HMAC-SHA256 of a fixed label under the
-- secret, never the secret. Every process that derives provider keys compares its own with this
-- row at start and refuses to start on a difference: two processes with different secrets derive
-- different provider keys for the same request, and a retry after a lost commit driven by the other
-- one would reach the provider as a new charge.
-- One row at most (the primary key is a boolean that can only be true). The first process on an
-- empty table records its fingerprint with INSERT ... ON CONFLICT DO NOTHING and then reads the
-- row, so two that start at once agree on the one that won. Only `rocket-rides-api
-- rotate-provider-key` changes it afterwards.
CREATE TABLE provider_key_fingerprint (
    only_row     BOOLEAN     PRIMARY KEY DEFAULT true CHECK (only_row),
    fingerprint  TEXT        NOT NULL CHECK (char_length(fingerprint) = 64),
    recorded_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Who wrote it: "first start" or "rotation".
    recorded_by  TEXT        NOT NULL CHECK (recorded_by IN ('first start', 'rotation'))
);
