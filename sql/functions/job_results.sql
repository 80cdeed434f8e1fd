-- pgq.job_results(ids)
-- Contract: what a producer needs to wait for its jobs: one row per id, in input order:
--   status (scheduled, queued, running, successful, failed, canceled, or unknown for an id that is not
--   there: never enqueued, or pruned from history), finished (the job is in history), result
--   (what a successful handler returned: details->'result'), error (the details of the final
--   failure or cancellation), attempt and finished_at. No payload or headers. A caller that
--   waits polls it with a growing pause (see docs/sql-api.md): finished jobs never change back
--   unless requeued. Any id may be read: see the isolation note in docs/sql-api.md.
-- Locking: none (reads only).
-- Errors: PQ009 NULL ids or a NULL element, more than 10000 ids.
CREATE OR REPLACE FUNCTION pgq.job_results(ids bigint[])
RETURNS TABLE (id bigint, status text, finished boolean, result jsonb, error jsonb, attempt int,
               finished_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(job_results.ids, 'ids');
    IF job_results.ids IS NULL OR array_position(job_results.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(job_results.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF cardinality(job_results.ids) > 10000 THEN
        RAISE EXCEPTION 'at most 10000 ids per call, got %', cardinality(job_results.ids)
            USING ERRCODE = 'PQ009';
    END IF;
    RETURN QUERY
    SELECT u.id,
           coalesce(h.status, j.status, 'unknown'),
           h.id IS NOT NULL,
           CASE WHEN h.status = 'successful' AND jsonb_typeof(h.details) = 'object' THEN h.details -> 'result' END,
           CASE WHEN h.status IN ('failed', 'canceled') THEN h.details END,
           coalesce(h.attempt, j.attempt),
           h.finished_at
      FROM unnest(job_results.ids) WITH ORDINALITY AS u(id, ord)
      LEFT JOIN pgq.jobs j ON j.id = u.id
      LEFT JOIN pgq.job_history h ON h.id = u.id
     ORDER BY u.ord;
END
$$;
COMMENT ON FUNCTION pgq.job_results(bigint[]) IS
    'Status and result of jobs by id, for producers waiting on them: one row per id (unknown when absent); result of successful jobs, error details of failed or canceled ones; no payload.';
