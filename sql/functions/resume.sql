-- pgq.resume(entrypoints)
-- Contract: undoes pgq.pause: the entrypoints are claimed again at the next claim, with the
--   policy exactly as configured before the pause (pause never changed it). Sends
--   {"kind": "enqueued", "entrypoints": [...]} for the entrypoints it resumed, so idle workers
--   claim at once. Resuming an entrypoint that is not paused changes nothing. Returns the policy
--   rows of the known entrypoints among those given (unknown names are ignored), ordered by
--   entrypoint. The next claim sweeps stale jobs whatever the time of the last sweep (the
--   sweep left those of paused entrypoints running; see pgq._sweep).
-- Locking: the entrypoints' policy rows until commit.
-- Errors: PQ001 NULL or empty array, or a bad entrypoint name.
CREATE OR REPLACE FUNCTION pgq.resume(entrypoints text[])
RETURNS SETOF pgq.entrypoints
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_name    text;
    v_resumed jsonb;
BEGIN
    PERFORM pgq._check_dims(resume.entrypoints, 'entrypoints');
    IF coalesce(cardinality(resume.entrypoints), 0) = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(resume.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    FOREACH v_name IN ARRAY resume.entrypoints LOOP
        PERFORM pgq._check_name(v_name, 'entrypoint', 'PQ001');
    END LOOP;

    WITH resumed AS (
        UPDATE pgq.entrypoints e
           SET paused_at = NULL,
               paused_by = NULL,
               updated_at = now()
         WHERE e.entrypoint = ANY (resume.entrypoints)
           AND e.paused_at IS NOT NULL
        RETURNING e.entrypoint
    )
    SELECT jsonb_agg(r.entrypoint ORDER BY r.entrypoint) INTO v_resumed FROM resumed r;
    PERFORM pgq._notify('enqueued', 'entrypoints', v_resumed);

    PERFORM setval('pgq.swept_at', 0);
    RETURN QUERY
    SELECT e.* FROM pgq.entrypoints e WHERE e.entrypoint = ANY (resume.entrypoints) ORDER BY e.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.resume(text[]) IS
    'Resumes paused entrypoints with their policy as configured, and wakes idle workers; returns the policy rows of the known ones.';
