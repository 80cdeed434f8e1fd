-- pgq.rate_stats(entrypoints, at)
-- Contract: the state of the rate limits of the given entrypoints (NULL: every entrypoint with a
--   rate limit), for dashboards, the CLI and the exporter: per rate-limited entrypoint, its
--   rate_limit, rate_period and rate_per_key; started, the starts (claimed jobs and tokens
--   taken) in the window (later than at - rate_period); remaining, what the window has
--   left (the whole-entrypoint budget; NULL with rate_per_key); budgets, the budgets that have
--   starts in the window (with rate_per_key: keys, the jobs without a key counting as one);
--   budgets_used_up, those with no room left; next_start_at, when the budget next grows
--   (pgq._rate_due; NULL when nothing started within the period). at NULL means now().
--   Read-only; reads the window's starts once per entrypoint (at most rate_limit per budget).
-- Locking: none (reads only).
-- Errors: PQ009 a multi-dimensional entrypoints array, at out of range.
CREATE OR REPLACE FUNCTION pgq.rate_stats(entrypoints text[] DEFAULT NULL, at timestamptz DEFAULT NULL)
RETURNS TABLE (entrypoint text, rate_limit int, rate_period interval, rate_per_key boolean,
               started bigint, remaining bigint, budgets bigint, budgets_used_up bigint,
               next_start_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(pgq._check_time(rate_stats.at, 'at'), now());
BEGIN
    PERFORM pgq._check_dims(rate_stats.entrypoints, 'entrypoints');
    RETURN QUERY
    SELECT e.entrypoint, e.rate_limit, e.rate_period, e.rate_per_key,
           coalesce(sum(b.n), 0)::bigint,
           CASE WHEN NOT e.rate_per_key THEN greatest(e.rate_limit - coalesce(sum(b.n), 0), 0)::bigint END,
           count(b.n),
           count(b.n) FILTER (WHERE b.n >= e.rate_limit),
           pgq._rate_due(e.entrypoint, e.rate_limit, e.rate_period, e.rate_per_key, v_now)
      FROM pgq.entrypoints e
      LEFT JOIN LATERAL (
           SELECT s.key_hash, sum(s.tokens) AS n
             FROM pgq.rate_starts s
            WHERE s.entrypoint = e.entrypoint
              AND s.started_at > v_now - e.rate_period
            GROUP BY s.key_hash) b ON true
     WHERE e.rate_limit IS NOT NULL
       AND (rate_stats.entrypoints IS NULL OR e.entrypoint = ANY (rate_stats.entrypoints))
     GROUP BY e.entrypoint, e.rate_limit, e.rate_period, e.rate_per_key
     ORDER BY e.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.rate_stats(text[], timestamptz) IS
    'The rate limits of these entrypoints (NULL: all): starts in the window, what is left, budgets (keys) with starts and those used up, and when the budget next grows.';
