-- pgq.prune_workers(at)
-- Contract: the maintenance step for the workers registry: deletes the rows of workers that
--   have been gone (silent past their timeout) for more than 15 minutes and hold no running
--   job; a gone worker that still holds jobs stays visible until they are re-claimed or
--   finished. Returns how many rows it deleted. Cheap: the registry has one row per worker.
--   at NULL means now().
-- Locking: row locks on the deleted rows (SKIP LOCKED: a worker registering or heartbeating
--   right now is left alone).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq.prune_workers(at timestamptz DEFAULT NULL)
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
    PERFORM pgq._check_time(prune_workers.at, 'at');
    DELETE FROM pgq.workers w
     WHERE w.worker_id IN (
               SELECT g.worker_id
                 FROM pgq.workers g
                WHERE g.last_seen_at < coalesce(prune_workers.at, now()) - g.timeout - interval '15 minutes'
                  AND NOT EXISTS (SELECT 1 FROM pgq.jobs j
                                   WHERE j.worker_id = g.worker_id AND j.status = 'running')
                  FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq.prune_workers(timestamptz) IS
    'Deletes registry rows of workers gone for over 15 minutes that hold no running job; returns how many.';
