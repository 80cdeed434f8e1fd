-- pgq.next_run_at(entrypoints, at)
-- Contract: the earliest run_at after `at` among waiting (scheduled) jobs of the given entrypoints, or NULL
--   when none is waiting (nor any rate limit, below). An idle worker sleeps until then (or until a notification) instead of
--   polling at a fixed interval. Jobs already due are not considered: claim takes those.
--   For an entrypoint with a rate limit (pgq.configure rate_limit) whose window holds starts,
--   the time its budget next grows counts like a due time (pgq._rate_due): a worker whose claim
--   came back short because of the limit sleeps until the next start is allowed.
--   at NULL means now().
--   Reads jobs_scheduled through jobs_scheduled_idx, one probe per entrypoint.
-- Locking: none (reads only).
-- Errors: PQ001 NULL or empty entrypoints.
CREATE OR REPLACE FUNCTION pgq.next_run_at(entrypoints text[], at timestamptz DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(next_run_at.entrypoints, 'entrypoints');
    PERFORM pgq._check_time(next_run_at.at, 'at');
    IF coalesce(cardinality(next_run_at.entrypoints), 0) = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(next_run_at.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    -- One probe of jobs_scheduled_idx per entrypoint (slot 4 is jobs_scheduled alone: the ring's
    -- partitions are not visited), instead of reading every scheduled job of these entrypoints.
    RETURN least((SELECT min(f.run_at)
                    FROM unnest(next_run_at.entrypoints) AS e(name)
                   CROSS JOIN LATERAL (
                         SELECT j.run_at
                           FROM pgq.jobs j
                          WHERE j.slot = 4
                            AND j.entrypoint = e.name
                            AND j.status = 'scheduled' AND j.slot = 4
                            AND j.run_at > coalesce(next_run_at.at, now())
                          ORDER BY j.run_at
                          LIMIT 1) AS f),
                 -- Rate-limited entrypoints: when their budget grows again.
                 (SELECT min(pgq._rate_due(c.entrypoint, c.rate_limit, c.rate_period, c.rate_per_key,
                                           coalesce(next_run_at.at, now())))
                    FROM pgq.entrypoints c
                   WHERE c.entrypoint = ANY (next_run_at.entrypoints)
                     AND c.rate_limit IS NOT NULL
                     AND c.paused_at IS NULL));
END
$$;
COMMENT ON FUNCTION pgq.next_run_at(text[], timestamptz) IS
    'Earliest run_at after at among scheduled jobs of these entrypoints, or when a rate limit''s budget next grows (NULL if neither): how long an idle worker may sleep.';
