-- pgq.rate_waits(entrypoints, at)
-- Contract: among the given entrypoints, those whose rate limit covers the whole entrypoint
--   (rate_per_key false) and whose budget is used up at `at`, with next_start_at, when one more
--   start fits (pgq._rate_due). No job of such an entrypoint can start before then, so a worker
--   may ignore its enqueue notifications until that time (a claim would find nothing). An
--   entrypoint with a rate limit per key is never listed (a job of a new key may start at
--   once). at NULL means now(). One probe of the policy and two of the window's starts
--   (pgq._rate_window) per rate-limited entrypoint.
-- Locking: none (reads only).
-- Errors: PQ001 NULL or empty entrypoints; PQ009 a multi-dimensional array, at out of range.
CREATE OR REPLACE FUNCTION pgq.rate_waits(entrypoints text[], at timestamptz DEFAULT NULL)
RETURNS TABLE (entrypoint text, next_start_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    c_whole constant bigint := -9223372036854775808;
    v_now   timestamptz := coalesce(pgq._check_time(rate_waits.at, 'at'), now());
BEGIN
    PERFORM pgq._check_dims(rate_waits.entrypoints, 'entrypoints');
    IF coalesce(cardinality(rate_waits.entrypoints), 0) = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(rate_waits.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    RETURN QUERY
    SELECT e.entrypoint, pgq._rate_due(e.entrypoint, e.rate_limit, e.rate_period, false, v_now)
      FROM pgq.entrypoints e
     WHERE e.entrypoint = ANY (rate_waits.entrypoints)
       AND e.rate_limit IS NOT NULL
       AND NOT e.rate_per_key
       AND coalesce((SELECT w.used
                       FROM pgq._rate_window(e.entrypoint, c_whole, v_now - e.rate_period) AS w), 0)
           >= e.rate_limit
     ORDER BY e.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.rate_waits(text[], timestamptz) IS
    'The entrypoints among these whose whole-entrypoint rate limit is used up, and when one more start fits: a worker ignores their enqueue notifications until then.';
