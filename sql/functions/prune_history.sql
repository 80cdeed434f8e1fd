-- pgq.prune_history(older_than, at, batch)
-- Contract: deletes up to `batch` history rows that finished before at - older_than and returns
--   how many it deleted; call it until it returns less than `batch` (the worker's maintenance
--   step does). Keeps the history table bounded. at NULL means now(). A workflow's edges
--   (pgq.job_deps) are deleted with the last of its jobs (none live, none left in history):
--   until then pgq.workflow shows the pruned ones as 'pruned'.
-- Locking: row locks on the deleted history rows (SKIP LOCKED: two pruners never wait) and on
--   the edges of the workflows that ended with them.
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
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_n    bigint;
    v_gone bigint[];
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
    WITH gone AS (
        DELETE FROM pgq.job_history h
         WHERE h.id IN (SELECT o.id
                          FROM pgq.job_history o
                         WHERE o.finished_at < coalesce(prune_history.at, now()) - prune_history.older_than
                         ORDER BY o.finished_at
                         LIMIT prune_history.batch
                           FOR UPDATE SKIP LOCKED)
        RETURNING h.id
    )
    SELECT count(*), array_agg(g.id) INTO v_n, v_gone FROM gone g;
    -- Workflows: a workflow's edges go with the last of its jobs.
    IF v_n > 0 AND pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL THEN
        DELETE FROM pgq.job_deps d
         WHERE d.workflow_id = ANY (ARRAY(
                   SELECT w.workflow_id
                     FROM (SELECT e.workflow_id FROM pgq.job_deps e WHERE e.child_id = ANY (v_gone)
                           UNION
                           SELECT e.workflow_id FROM pgq.job_deps e WHERE e.parent_id = ANY (v_gone)) w
                    WHERE NOT EXISTS (
                              SELECT 1 FROM pgq.job_deps e
                               WHERE e.workflow_id = w.workflow_id
                                 AND (EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.id = e.child_id)
                                      OR EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.id = e.parent_id)
                                      OR EXISTS (SELECT 1 FROM pgq.job_history o WHERE o.id = e.child_id)
                                      OR EXISTS (SELECT 1 FROM pgq.job_history o WHERE o.id = e.parent_id)))));
    END IF;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq.prune_history(interval, timestamptz, int) IS
    'Deletes up to batch history rows finished more than older_than ago; returns how many. Call until it returns less than batch.';
