-- pgq.prune_history(older_than, at, batch)
-- Contract: deletes up to `batch` history rows that finished before at - older_than and returns
--   how many it deleted; call it until it returns less than `batch` (the worker's maintenance
--   step does). Keeps the history table bounded. at NULL means now().
-- Locking: row locks on the deleted history rows (SKIP LOCKED: two pruners never wait).
-- Errors: PQ008 older_than negative or NULL, batch outside 1..100000.
CREATE OR REPLACE FUNCTION pgq.prune_history(
    older_than  interval,
    at          timestamptz DEFAULT NULL,
    batch       int         DEFAULT 10000
)
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
    IF prune_history.older_than IS NULL OR prune_history.older_than < interval '0' THEN
        RAISE EXCEPTION 'older_than must be a non-negative interval, got %', coalesce(prune_history.older_than::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    PERFORM pgq._check_interval(prune_history.older_than, 'older_than', interval '0', interval '36500 days');
    PERFORM pgq._check_time(prune_history.at, 'at');
    IF prune_history.batch IS NULL OR prune_history.batch NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION 'batch must be between 1 and 100000, got %', coalesce(prune_history.batch::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    DELETE FROM pgq.job_history h
     WHERE h.id IN (SELECT o.id
                      FROM pgq.job_history o
                     WHERE o.finished_at < coalesce(prune_history.at, now()) - prune_history.older_than
                     ORDER BY o.finished_at
                     LIMIT prune_history.batch
                       FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq.prune_history(interval, timestamptz, int) IS
    'Deletes up to batch history rows finished more than older_than ago; returns how many. Call until it returns less than batch.';
