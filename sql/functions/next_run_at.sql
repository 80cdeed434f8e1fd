-- pgq.next_run_at(entrypoints, at)
-- Contract: the earliest run_at after `at` among waiting (scheduled) jobs of the given entrypoints, or NULL
--   when none is waiting. An idle worker sleeps until then (or until a notification) instead of
--   polling at a fixed interval. Jobs already due are not considered: claim takes those.
--   at NULL means now().
-- Locking: none (reads only).
-- Errors: PQ001 NULL or empty entrypoints.
CREATE OR REPLACE FUNCTION pgq.next_run_at(entrypoints text[], at timestamptz DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(next_run_at.entrypoints, 'entrypoints');
    PERFORM pgq._check_time(next_run_at.at, 'at');
    IF coalesce(cardinality(next_run_at.entrypoints), 0) = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(next_run_at.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    RETURN (SELECT min(j.run_at)
              FROM pgq.jobs j
             WHERE j.entrypoint = ANY (next_run_at.entrypoints)
               AND j.status = 'scheduled'
               AND j.run_at > coalesce(next_run_at.at, now()));
END
$$;
COMMENT ON FUNCTION pgq.next_run_at(text[], timestamptz) IS
    'Earliest run_at after at among queued jobs of these entrypoints (NULL if none): how long an idle worker may sleep.';
