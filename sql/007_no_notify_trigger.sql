-- No NOTIFY per staging commit. A transaction that has run NOTIFY takes a database-wide
-- lock while it commits (the notification queue's), so every commit that notifies waits for the
-- one before it: the statement-level trigger of 001 made each staging transaction of every API and
-- completer queue behind each other at commit. The processes that stage jobs now wake the enqueuer
-- themselves after their commit, debounced to at most one NOTIFY per interval from a connection of
-- their own (common/jobs/enqueuer_wakeup.hpp, ENQUEUER_WAKEUP_DEBOUNCE). A row staged by anything
-- else (a manual INSERT) is found by the enqueuer's fallback poll, ENQUEUER_IDLE_SLEEP.
DROP TRIGGER IF EXISTS staged_jobs_notify ON staged_jobs;
DROP FUNCTION IF EXISTS staged_jobs_notify();
