-- pgq.requeue_workflow(job_id, at)
-- Contract: requeues the failed part of the workflow job_id belongs to (pgq.workflow: its id or
--   any of its jobs): every job of it that ended failed (dead) or canceled goes back as
--   pgq.requeue does, in one call, except that a job never runs ahead of a failed parent: each
--   job with a parent that failed or has not ended waits for it ('waiting'), and the others are
--   queued (due at `at`). Returns the ids requeued. A job of it that ends failed while this
--   runs is not requeued, and neither is what depends on it (left as it is): requeue again.
--   Successful and live jobs are left as they are; a job outside any workflow is a workflow of
--   none (nothing is requeued).
-- Locking: as pgq.requeue.
-- Errors: PQ009 NULL job_id, at out of range; PQ007 when a live job holds the dedupe key of a
--   job to requeue (nothing is requeued).
CREATE OR REPLACE FUNCTION pgq.requeue_workflow(job_id bigint, at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_time(requeue_workflow.at, 'at');
    RETURN QUERY
    SELECT unnest(pgq._requeue(ARRAY(SELECT w.id FROM pgq.workflow(requeue_workflow.job_id) w
                                      WHERE w.state IN ('failed', 'canceled')
                                      ORDER BY w.id),
                               requeue_workflow.at, true)) AS id
     ORDER BY 1;
END
$$;
COMMENT ON FUNCTION pgq.requeue_workflow(bigint, timestamptz) IS
    'Requeues every job of job_id''s workflow that ended failed or canceled (as pgq.requeue, in one call: a job comes back waiting for a parent that comes back with it); returns the ids requeued.';
