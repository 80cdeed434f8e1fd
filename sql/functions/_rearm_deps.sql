-- pgq._rearm_deps(ids, at)
-- Contract: for pgq.requeue: the jobs just requeued (ids) whose failure canceled waiting jobs
--   (edges in state 'failed') get that part of their workflow back: each job that was canceled
--   because of them (in history as canceled with details.error 'dependency failed', and every
--   failed edge into it from a job requeued or brought back here) returns from history as
--   'waiting' (same id, payload, dedupe key; attempt 0, errors kept), level by level through
--   its own failed edges; every failed edge from a requeued or returned job is pending again
--   (its next end settles it), and each returned job counts its pending edges
--   (pgq.job_waits); so do the requeued jobs that pgq.requeue made wait (requeued with a
--   parent whose failure canceled them). When the requeued parents succeed,
--   the children are released as on a first run. Returns the ids brought back.
-- Locking: the history rows it moves (FOR UPDATE, id order); the dedupe keys it takes back;
--   the edges into the jobs it brings back are already locked by pgq._requeue (its caller).
-- Errors: PQ007 when a live job holds a returned job's dedupe key (the caller's whole call is
--   undone).
CREATE OR REPLACE FUNCTION pgq._rearm_deps(ids bigint[], at timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_set   bigint[] := _rearm_deps.ids;   -- requeued or brought back
    v_more  bigint[];
    v_back  bigint[] := '{}';
    v_wait  bigint[];
BEGIN
    -- Requeued jobs that pgq.requeue made wait (a parent of theirs was requeued with them).
    v_wait := ARRAY(SELECT j.id FROM pgq.jobs j
                     WHERE j.id = ANY (_rearm_deps.ids) AND j.status = 'waiting' AND j.slot = 4);
    LOOP
        v_more := ARRAY(
            SELECT DISTINCT d.child_id
              FROM pgq.job_deps d
              JOIN pgq.job_history h ON h.id = d.child_id
             WHERE d.parent_id = ANY (v_set)
               AND d.state = 'failed'
               AND d.child_id <> ALL (v_set)
               AND h.status = 'canceled'
               AND h.details ->> 'error' = 'dependency failed'
               AND NOT EXISTS (SELECT 1 FROM pgq.job_deps o
                                WHERE o.child_id = d.child_id AND o.state = 'failed'
                                  AND o.parent_id <> ALL (v_set))
             ORDER BY 1);
        EXIT WHEN cardinality(v_more) = 0;
        v_set := v_set || v_more;
        v_back := v_back || v_more;
    END LOOP;
    -- The requeued and returned jobs are live again: every edge their failure marked failed is
    -- pending, so that their next end settles it (into the returned and waiting jobs: counted
    -- below; into a job left in history: a later requeue of it sees the parent's new end, not
    -- a stale failure).
    UPDATE pgq.job_deps d SET state = 'pending'
     WHERE d.parent_id = ANY (v_set) AND d.state = 'failed';
    IF cardinality(v_back) + cardinality(v_wait) = 0 THEN
        RETURN v_back;
    END IF;
    IF cardinality(v_back) > 0 THEN  -- (with none, a plan for an empty list may walk an index)
        PERFORM 1 FROM pgq.job_history h WHERE h.id = ANY (v_back) ORDER BY h.id FOR UPDATE;
        PERFORM pgq._revive(v_back, _rearm_deps.at, v_back, false);
    END IF;
    INSERT INTO pgq.job_waits (child_id, pending)
    SELECT d.child_id, count(*) FILTER (WHERE d.state = 'pending')
      FROM pgq.job_deps d
     WHERE d.child_id = ANY (v_back || v_wait)
     GROUP BY d.child_id
        ON CONFLICT (child_id) DO UPDATE SET pending = excluded.pending;
    RETURN v_back;
END
$$;
COMMENT ON FUNCTION pgq._rearm_deps(bigint[], timestamptz) IS
    'Private. For pgq.requeue: brings back as waiting the jobs a requeued job''s failure canceled, with their edges pending again.';
