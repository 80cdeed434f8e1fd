-- pgq.pause(entrypoints, at)
-- Contract: pauses entrypoints for every worker: from the next claim on, no job of a paused
--   entrypoint starts running, neither a queued one nor a stale re-claim (the stale job stays
--   running-and-stale, visible as stale, until the entrypoint is resumed). Enqueueing goes on:
--   jobs pile up and run after pgq.resume. Jobs already running finish normally. The rest of
--   the policy (concurrency_limit, attempts, backoff, timeouts) is not touched, so pgq.resume
--   restores exactly what was configured. An entrypoint never seen before gets its policy row
--   (with the defaults), so it can be paused before its first job. Pausing a paused entrypoint
--   keeps its paused_at. Records paused_at = at and paused_by = the session user. Returns the
--   policy rows, ordered by entrypoint. at NULL means now().
-- Locking: the entrypoints' policy rows until commit (waits for a claim of a limited
--   entrypoint that holds one at this instant).
-- Errors: PQ001 NULL or empty array, or a bad entrypoint name.
CREATE OR REPLACE FUNCTION pgq.pause(entrypoints text[], at timestamptz DEFAULT NULL)
RETURNS SETOF pgq.entrypoints
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_name text;
BEGIN
    PERFORM pgq._check_dims(pause.entrypoints, 'entrypoints');
    PERFORM pgq._check_time(pause.at, 'at');
    IF coalesce(cardinality(pause.entrypoints), 0) = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(pause.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    FOREACH v_name IN ARRAY pause.entrypoints LOOP
        PERFORM pgq._check_name(v_name, 'entrypoint', 'PQ001');
    END LOOP;

    INSERT INTO pgq.entrypoints (entrypoint)
    SELECT DISTINCT u.e FROM unnest(pause.entrypoints) AS u(e) ORDER BY u.e
        ON CONFLICT (entrypoint) DO NOTHING;
    RETURN QUERY
    WITH paused AS (
        UPDATE pgq.entrypoints e
           SET paused_at = coalesce(e.paused_at, coalesce(pause.at, now())),
               paused_by = CASE WHEN e.paused_at IS NULL THEN session_user::text ELSE e.paused_by END,
               updated_at = now()
         WHERE e.entrypoint = ANY (pause.entrypoints)
        RETURNING e.*
    )
    SELECT p.* FROM paused p ORDER BY p.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.pause(text[], timestamptz) IS
    'Pauses entrypoints for every worker (no queued job or stale re-claim starts) without touching their policy; enqueueing goes on. Returns the policy rows.';
