-- pgq.entrypoint_config(entrypoints)
-- Contract: the stored policy of entrypoints (rows of pgq.entrypoints: concurrency limit,
--   attempts, backoff, heartbeat timeout, when it changed, whether and by whom it is paused),
--   for the given names (NULL: every one), ordered by entrypoint. A name without a row is left
--   out: the defaults apply to it. The table is owner only; this is its read side for readers
--   and operators (a dashboard's entrypoint page).
-- Locking: none (reads only).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq.entrypoint_config(entrypoints text[] DEFAULT NULL)
RETURNS SETOF pgq.entrypoints
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(entrypoint_config.entrypoints, 'entrypoints');
    RETURN QUERY
        SELECT c.*
          FROM pgq.entrypoints c
         WHERE entrypoint_config.entrypoints IS NULL
            OR c.entrypoint = ANY (entrypoint_config.entrypoints)
         ORDER BY c.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.entrypoint_config(text[]) IS
    'The stored policy rows of entrypoints (NULL: all), by entrypoint; names never configured or enqueued are left out.';
