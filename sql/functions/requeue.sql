-- pgq.requeue(ids, at)
-- Contract: puts finished jobs that failed (dead) or were canceled back in the queue: each
--   leaves pgq.job_history and becomes a queued job again with the same id, payload, headers,
--   priority and dedupe key, attempt 0, due at `at`, and its error list kept. Due now: queued
--   with a new ready number (the back of its lane); due later: scheduled. Successful jobs
--   and unknown ids are ignored. Returns the ids requeued. at NULL means now(). A requeued job
--   whose failure canceled jobs waiting for it (workflows) brings them back as waiting
--   (pgq._rearm_deps): they run again once it (and their other parents) succeeded. A job
--   requeued in the same call as a parent whose failure canceled it is 'waiting' for that
--   parent again (not queued), as is one with a parent that has not ended (canceled while it
--   waited); requeued without its failed parent, it runs (an explicit requeue overrides a
--   failed parent).
-- Locking: row locks on the history rows (in id order, by one read that also decides which
--   jobs come back), then on the workflow edges into them (pgq.job_deps, FOR UPDATE); inserts into pgq.jobs (fires the enqueue notice) and
--   the jobs' dedupe keys into pgq.live_keys; when due, the ready-number fence
--   (pgq._ready_lock) of their entrypoints until commit.
-- Errors: PQ009 NULL ids or NULL element; PQ007 when a live job already holds the dedupe key
--   of a job to requeue or to bring back (nothing is requeued).
CREATE OR REPLACE FUNCTION pgq.requeue(ids bigint[], at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_time(requeue.at, 'at');
    RETURN QUERY SELECT unnest(pgq._requeue(requeue.ids, requeue.at, false));
END
$$;
COMMENT ON FUNCTION pgq.requeue(bigint[], timestamptz) IS
    'Puts failed (dead) or canceled jobs from history back in the queue with attempt 0; returns the ids requeued.';
