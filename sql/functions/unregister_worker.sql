-- pgq.unregister_worker(worker_id)
-- Contract: a worker that stops cleanly removes its registry row; returns true if it existed.
--   Jobs it still holds are not touched (release or complete them first).
-- Locking: the registry row.
-- Errors: PQ009 NULL worker_id.
CREATE OR REPLACE FUNCTION pgq.unregister_worker(worker_id uuid)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    IF unregister_worker.worker_id IS NULL THEN
        RAISE EXCEPTION 'worker_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    DELETE FROM pgq.workers w WHERE w.worker_id = unregister_worker.worker_id;
    RETURN FOUND;
END
$$;
COMMENT ON FUNCTION pgq.unregister_worker(uuid) IS
    'Removes a worker from the registry (clean stop); returns true if it was registered.';
