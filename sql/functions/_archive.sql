-- pgq._archive(ids, statuses, details, at): move live jobs to pgq.job_history.
-- Contract: deletes the given jobs from pgq.jobs and writes one history row each with the final
--   status (successful, failed or canceled), details and finished_at = at. Returns the ids moved.
--   Callers validate input and must already hold the row locks (or accept that a vanished row is
--   skipped). A failed job's details are also appended to its error list.
-- Locking: row locks on the deleted jobs.
-- Errors: none of its own; the history CHECK constraint rejects an unknown status.
CREATE OR REPLACE FUNCTION pgq._archive(ids bigint[], statuses text[], details jsonb[], at timestamptz)
RETURNS SETOF bigint
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    WITH input AS (
        SELECT u.id, u.status, u.details
          FROM unnest(_archive.ids, _archive.statuses, _archive.details) AS u(id, status, details)
    ), gone AS (
        DELETE FROM pgq.jobs j
         USING input i
         WHERE j.id = i.id
        RETURNING j.*, i.status AS final_status, i.details AS final_details
    )
    INSERT INTO pgq.job_history (id, entrypoint, status, priority, attempt, payload, headers,
                                 dedupe_key, enqueued_at, started_at, finished_at, worker_id,
                                 details, errors)
    SELECT g.id, g.entrypoint, g.final_status, g.priority, g.attempt, g.payload, g.headers,
           g.dedupe_key, g.enqueued_at, g.started_at, _archive.at, g.worker_id,
           g.final_details,
           CASE WHEN g.final_status = 'failed'
                THEN g.errors || jsonb_build_array(jsonb_build_object(
                         'attempt', g.attempt, 'at', _archive.at, 'details', g.final_details))
                ELSE g.errors END
      FROM gone g
    RETURNING id;
$$;
COMMENT ON FUNCTION pgq._archive(bigint[], text[], jsonb[], timestamptz) IS
    'Private. Moves jobs from pgq.jobs to pgq.job_history with their final status; returns the ids moved.';
