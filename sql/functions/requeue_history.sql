-- pgq.requeue_history(entrypoint, statuses, since, until, error, max_jobs, at)
-- Contract: bulk redrive by filter (the filter of pgq.find_history): puts up to max_jobs
--   matching finished jobs back in the queue, newest first, exactly as pgq.requeue does (same
--   id, attempt 0, due at `at`, error list kept). Only failed (default) and canceled jobs can
--   be requeued. Jobs whose dedupe key a live job holds are left out (they stay in history).
--   Returns the ids requeued; call it again until it returns fewer than max_jobs (each call
--   takes the newest rows still matching). at NULL means now().
-- Locking: as pgq.requeue.
-- Errors: PQ001 bad entrypoint; PQ009 statuses not among failed, canceled, since after until;
--   PQ002 max_jobs outside 1..10000; PQ007 only in the race where a live job takes a dedupe
--   key during the call (nothing is requeued; call again).
CREATE OR REPLACE FUNCTION pgq.requeue_history(
    entrypoint  text        DEFAULT NULL,
    statuses    text[]      DEFAULT '{failed}',
    since       timestamptz DEFAULT NULL,
    until       timestamptz DEFAULT NULL,
    error       text        DEFAULT NULL,
    max_jobs    int         DEFAULT 1000,
    at          timestamptz DEFAULT NULL
)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
BEGIN
    PERFORM pgq._check_time(requeue_history.at, 'at');
    PERFORM pgq._check_history_filter(requeue_history.entrypoint, requeue_history.statuses, requeue_history.since,
                                      requeue_history.until, requeue_history.max_jobs, 10000, 'max_jobs');
    IF 'successful' = ANY (requeue_history.statuses) THEN
        RAISE EXCEPTION 'only failed and canceled jobs can be requeued, got statuses %', requeue_history.statuses
            USING ERRCODE = 'PQ009';
    END IF;
    SELECT array_agg(h.id) INTO v_ids
      FROM pgq._find_history(requeue_history.entrypoint, requeue_history.statuses, requeue_history.since,
                             requeue_history.until, requeue_history.error, NULL, NULL,
                             requeue_history.max_jobs, true) AS h;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT r.id FROM pgq.requeue(v_ids, requeue_history.at) AS r(id);
END
$$;
COMMENT ON FUNCTION pgq.requeue_history(text, text[], timestamptz, timestamptz, text, int, timestamptz) IS
    'Bulk requeue of failed (or canceled) jobs matching entrypoint, finish time and error text, up to max_jobs per call, skipping jobs whose dedupe key is held; returns the ids requeued.';
