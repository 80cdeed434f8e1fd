-- pgq.parent_results(job_id)
-- Contract: the jobs job_id depends on (pgq.job_deps), each with its final status and result
--   (what a successful handler returned, details -> 'result' of its history row, as
--   pgq.job_results reads it; NULL while it has not ended, when it did not succeed, or when it
--   returned nothing), ordered by parent id: what a fan-in job merges, in one
--   call.
-- Locking: none (reads only).
-- Errors: PQ009 NULL job_id.
CREATE OR REPLACE FUNCTION pgq.parent_results(job_id bigint)
RETURNS TABLE (parent_id bigint, status text, result jsonb)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    IF parent_results.job_id IS NULL THEN
        RAISE EXCEPTION 'job_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    RETURN QUERY
    SELECT d.parent_id, coalesce(h.status, j.status),
           CASE WHEN h.status = 'successful' AND jsonb_typeof(h.details) = 'object' THEN h.details -> 'result' END
      FROM pgq.job_deps d
      LEFT JOIN pgq.job_history h ON h.id = d.parent_id
      LEFT JOIN pgq.jobs j ON j.id = d.parent_id
     WHERE d.child_id = parent_results.job_id
     ORDER BY d.parent_id;
END
$$;
COMMENT ON FUNCTION pgq.parent_results(bigint) IS
    'The jobs job_id depends on, with their final status and result (details.result): what a fan-in job merges.';
