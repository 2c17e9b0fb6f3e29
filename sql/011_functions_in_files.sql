-- One definition per function: from here on the functions live in
-- sql/functions/<name>.sql and `migrate` (re)creates them after the numbered migrations, so the
-- numbered files keep tables, indexes, constraints and data moves. This drops what no binary of
-- this version calls:
--   rides_record_charge_and_stage_receipt, rides_stage_receipt_for_key (003): superseded by their
--     _v2 in 005, called by binaries built before 005 only;
--   the 12-argument rides_create_with_key (008): superseded by the 13-argument one of 010, called
--     by binaries built before 010 only. A deployment still running such a binary upgrades to the
--     010 release first.
DROP FUNCTION IF EXISTS rides_record_charge_and_stage_receipt(bigint, text, bigint, text, bigint);
DROP FUNCTION IF EXISTS rides_stage_receipt_for_key(bigint, bigint, text, bigint);
DROP FUNCTION IF EXISTS rides_create_with_key(bigint, text, text, text, jsonb, text, uuid, float8, numeric, numeric,
                                             numeric, numeric);

