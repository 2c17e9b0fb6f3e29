-- Room for a whole batch's finishing updates on the page its keys share.
-- rides_create_with_keys inserts a batch's keys and rides in one statement on one session, so
-- they land together on one page (per table); the batch of their finishes then updates them in one
-- transaction, and an old version cannot be pruned to make room before that transaction ends. A
-- heap-only (HOT) update needs its new version on the same page: with 70 % (keys) and 90 % (rides)
-- of a page filled by inserts, a page had room for the new versions of only a part of its rows,
-- and a quick bench run measured 0.66 and 0.58 of the updates HOT. Half a page left free holds a
-- new version for every row inserted there (a finished key's row is no longer than its first;
-- a ride's grows by its charge id, which half a page of rows inserted at about 100 bytes holds).
-- The tables take about twice the pages while their rows live (72 h, the reaper's bound).
-- New pages only: no rewrite, and SET (fillfactor) takes SHARE UPDATE EXCLUSIVE, which lets reads
-- and writes go on; the lock wait is bounded all the same.
DO $$
BEGIN
    SET LOCAL lock_timeout = '1s';
    ALTER TABLE idempotency_keys SET (fillfactor = 50);
    ALTER TABLE rides SET (fillfactor = 50);
END;
$$;
