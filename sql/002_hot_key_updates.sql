-- Cheaper phase commits. A request moves its key through recovery points with UPDATEs;
-- PostgreSQL can make those "heap-only" (no new entry in any index, far less WAL) only when no
-- indexed column and no column of an index predicate changes, and the new row version fits on
-- the same page. The completer's index used to cover last_run_at under a recovery_point
-- predicate, so every phase rewrote all five of the key's index entries.

-- Unfinished keys, by id (the completer's order). response_code is set exactly when the key
-- finishes (see the CHECK on idempotency_keys), so only the final UPDATE touches this index.
DROP INDEX idempotency_keys_unfinished;
CREATE INDEX idempotency_keys_unfinished ON idempotency_keys (id) WHERE response_code IS NULL;

-- Room on each page for the row versions a request's phases write.
ALTER TABLE idempotency_keys SET (fillfactor = 70);

-- The index above relies on response_code being NULL exactly while a key is unfinished; the
-- CHECK of 001 ties 'finished' to code AND body, which alone would allow an unfinished key with a
-- code, invisible to the completer. No code writes one; the schema now refuses it too.
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_code_iff_finished
    CHECK ((response_code IS NULL) = (recovery_point <> 'finished'));
