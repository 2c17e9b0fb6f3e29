-- Provider idempotency keys derived from the client's request: the API computes the
-- charge's key as HMAC-SHA256 of the user and the client's Idempotency-Key under the deployment's
-- PROVIDER_KEY_SECRET (common/payments/provider_key.hpp) and stores it on the key when it creates
-- it, in place of the random default. A request whose first commit a failover lost, retried by its
-- client, makes a new key row with the same provider key, and the provider replays its one charge.
-- The charge phase keeps reading the stored column, so keys created before this migration keep
-- the random key the provider may already have seen.
--
-- rides_create_with_key of 008 with one argument more, the key to store; the 12-argument function
-- stays for binaries built before this migration.

-- The column's UNIQUE goes. A derived key is unique because (user_id, idempotency_key) is, so the
-- constraint no longer guards against anything, and it breaks a race: two first requests with the
-- same key both pass the ON CONFLICT (user_id, idempotency_key) pre-check, one commits, and the
-- other's insert then meets the same derived key in this index (checked before the arbiter's, it
-- is older) and fails with a unique violation instead of doing nothing (the fault suite's flood
-- got 500s from it). One index fewer to write per new key, too.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_payment_idempotency_key_key;

-- Since 011 the functions this migration created or replaced (rides_create_with_key,
-- rides_store_refund_key) are defined once each in sql/functions/, and `migrate` (re)creates them
-- after the numbered migrations: their bodies were taken out of here (migrate never re-reads a
-- migration it applied).
