-- A finished ride-creation 201 may be stored without its body: the finished key row
-- was 482 bytes against the article's 296, most of it the 201's copy of the ride's JSON, and the
-- key's final UPDATE writes its whole new row version to WAL and needs room for it on the page
-- to stay heap-only. rides_record_charge_and_finish stores NULL when the body it is given equals
-- rides_created_body of the ride (any other body as given), and every reader of a finished key's
-- body renders a NULL 201 back from the key's ride (sql/functions/).
--
-- 001's CHECK tied 'finished' to a code AND a body; this one allows a finished 201 without one.
-- Replaced online: dropping a CHECK and adding one NOT VALID only touch the catalog (a moment
-- under the table's ACCESS EXCLUSIVE lock, no scan); new rows are checked from here on. The scan
-- that validates the rows already there is 014, in a transaction of its own: VALIDATE CONSTRAINT
-- takes a lock that lets reads and writes go on, but in this transaction it would scan under the
-- ACCESS EXCLUSIVE lock taken here (`migrate` runs each file in one transaction), stopping every
-- request for as long as the table takes to read.
-- 002's idempotency_keys_code_iff_finished still ties the code to 'finished'.
-- lock_timeout: waiting behind a long transaction for that lock would queue every request behind
-- the wait; `migrate` runs the file again a second later instead (common/db/migrations.cpp).
SET LOCAL lock_timeout = '1s';
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_finished_has_response
    CHECK ((recovery_point = 'finished') = (response_code IS NOT NULL AND (response_body IS NOT NULL OR response_code = 201)))
    NOT VALID;
