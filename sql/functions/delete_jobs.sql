-- pgq.delete_jobs(ids)
-- Contract: deletes finished jobs by id: their rows of pgq.job_history, whatever the final
--   status. Live jobs (queued or running) and unknown ids are left alone: cancel a live job
--   first. Rows locked by a concurrent requeue or prune are skipped, never waited for. Returns
--   the ids deleted. The by-id side of pgq.delete_history (a dashboard's "delete selected").
-- Locking: row locks on the history rows it deletes (SKIP LOCKED).
-- Errors: PQ009 NULL ids or a NULL element; PQ002 more than 10000 ids.
CREATE OR REPLACE FUNCTION pgq.delete_jobs(ids bigint[])
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(delete_jobs.ids, 'ids');
    IF delete_jobs.ids IS NULL OR array_position(delete_jobs.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(delete_jobs.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF cardinality(delete_jobs.ids) > 10000 THEN
        RAISE EXCEPTION 'ids must hold at most 10000 ids, got %', cardinality(delete_jobs.ids)
            USING ERRCODE = 'PQ002';
    END IF;
    RETURN QUERY
    DELETE FROM pgq.job_history h
     WHERE h.id IN (SELECT l.id
                      FROM pgq.job_history l
                     WHERE l.id = ANY (delete_jobs.ids)
                       FOR UPDATE SKIP LOCKED)
    RETURNING h.id;
END
$$;
COMMENT ON FUNCTION pgq.delete_jobs(bigint[]) IS
    'Deletes finished jobs (history rows) by id, skipping live jobs, unknown ids and rows locked right now; returns the ids deleted.';
