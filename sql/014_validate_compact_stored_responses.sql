-- The rows already there checked against 013's CHECK, without stopping requests: VALIDATE
-- CONSTRAINT scans under SHARE UPDATE EXCLUSIVE, which lets reads and writes go on. Its own file
-- so that the scan runs in a transaction of its own, not under 013's ACCESS EXCLUSIVE lock. Every
-- row passes: 001's CHECK, which held until 013, implies this one.
ALTER TABLE idempotency_keys VALIDATE CONSTRAINT idempotency_keys_finished_has_response;
