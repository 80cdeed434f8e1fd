-- pgq.delete_history(entrypoint, statuses, since, until, error, max_jobs)
-- Contract: bulk delete by filter (the filter of pgq.find_history; failed jobs by default):
--   deletes up to max_jobs matching history rows, newest first, and returns how many. Call it
--   again until it returns fewer than max_jobs. Rows being requeued or pruned at the same
--   moment are skipped.
-- Locking: row locks on the deleted rows (SKIP LOCKED).
-- Errors: PQ001 bad entrypoint; PQ009 bad statuses, since after until; PQ002 max_jobs outside
--   1..10000.
CREATE OR REPLACE FUNCTION pgq.delete_history(
    entrypoint  text        DEFAULT NULL,
    statuses    text[]      DEFAULT '{failed}',
    since       timestamptz DEFAULT NULL,
    until       timestamptz DEFAULT NULL,
    error       text        DEFAULT NULL,
    max_jobs    int         DEFAULT 1000
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_n bigint;
BEGIN
    PERFORM pgq._check_history_filter(delete_history.entrypoint, delete_history.statuses, delete_history.since,
                                      delete_history.until, delete_history.max_jobs, 10000, 'max_jobs');
    DELETE FROM pgq.job_history d
     WHERE d.id IN (SELECT l.id
                      FROM pgq.job_history l
                     WHERE l.id IN (SELECT h.id
                                      FROM pgq._find_history(delete_history.entrypoint, delete_history.statuses,
                                                             delete_history.since, delete_history.until,
                                                             delete_history.error, NULL, NULL,
                                                             delete_history.max_jobs, false) AS h)
                       FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq.delete_history(text, text[], timestamptz, timestamptz, text, int) IS
    'Bulk delete of history rows matching entrypoint, statuses (failed by default), finish time and error text, up to max_jobs per call; returns how many.';
