-- A staged job's Sidekiq jid (sql/012): the stored one for a row staged before 012, else the
-- database's random prefix and the row's id in hex, 24 hex digits like Sidekiq's own. Unique by
-- construction (the id is) and the same on every re-push of the row, with no unique index for
-- each staging to write. The enqueuer and the tests read jids through this one definition.
CREATE OR REPLACE FUNCTION staged_jobs_jid(p_id bigint, p_jid text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(p_jid, (SELECT prefix FROM staged_jobs_jid_prefix) || lpad(to_hex(p_id), 16, '0'));
$$;
