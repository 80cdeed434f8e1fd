-- pgq.cancel_workflow(job_id, at)
-- Contract: cancels every job of a workflow (pgq.workflow: job_id is its id or any of its
--   jobs) that has not ended, as pgq.cancel does: waiting,
--   scheduled and queued jobs move to history as canceled at once, running ones are asked to
--   stop. Returns the ids canceled or flagged (one column, id). Jobs that ended are left as they
--   are; a job without dependencies is a workflow of none (nothing is canceled).
-- Locking: as pgq.cancel (row locks in id order).
-- Errors: PQ009 NULL job_id, at out of range.
CREATE OR REPLACE FUNCTION pgq.cancel_workflow(job_id bigint, at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT c.id
      FROM pgq.cancel(ARRAY(SELECT w.id FROM pgq.workflow(cancel_workflow.job_id) w
                             WHERE w.state IN ('waiting', 'scheduled', 'queued', 'running')
                             ORDER BY w.id),
                      cancel_workflow.at) c;
END
$$;
COMMENT ON FUNCTION pgq.cancel_workflow(bigint, timestamptz) IS
    'Cancels every job of job_id''s workflow that has not ended (as pgq.cancel); returns the ids canceled or flagged.';
