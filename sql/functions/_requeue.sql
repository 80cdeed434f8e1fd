-- pgq._requeue(ids, at, hold)
-- Contract: pgq.requeue (see there), returning the ids requeued as an array. With hold (for
--   pgq.requeue_workflow), a job with a failed parent that is not requeued in the same call
--   (it ended after the caller read the workflow) is left in history, and so is every job that
--   would wait for one left: it never runs ahead of a failed parent nor waits for one that
--   will not end. Without hold (pgq.requeue), such a parent is overridden: the job runs.
-- Locking: as pgq.requeue: the history rows (id order), the fence, then the workflow edges into
--   the requeued jobs and the jobs below them through failed edges (one pass, in (parent,
--   child) order, as pgq._settle_deps locks them).
-- Errors: as pgq.requeue.
CREATE OR REPLACE FUNCTION pgq._requeue(ids bigint[], at timestamptz, hold boolean)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_ids   bigint[];
    v_back  bigint[];
    v_due   boolean;
    v_wait  bigint[] := '{}';
    v_skip  bigint[];
BEGIN
    PERFORM pgq._check_dims(_requeue.ids, 'ids');
    PERFORM pgq._check_time(_requeue.at, 'at');
    IF _requeue.ids IS NULL OR array_position(_requeue.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(_requeue.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;

    -- One locked read decides which jobs come back: only those are moved below (pgq._revive,
    -- which takes the fence of their entrypoints before it draws a ready number; a job that
    -- failed or was canceled after this read stays in history). Locked in id order.
    SELECT array_agg(h.id ORDER BY h.id)
      INTO v_back
      FROM (SELECT h.id
              FROM pgq.job_history h
             WHERE h.id = ANY (_requeue.ids)
               AND h.status IN ('failed', 'canceled')
             ORDER BY h.id
               FOR UPDATE) AS h;
    IF v_back IS NULL THEN
        RETURN '{}';
    END IF;
    -- Due now: queued with ready numbers, behind the fence of their entrypoints (pgq._revive
    -- takes it before it draws a number). Not due yet: scheduled, in jobs_scheduled (slot 4).
    v_due := _requeue.at IS NULL OR _requeue.at <= now();

    -- Workflows: a job requeued with a parent whose failure canceled it waits for it again, and
    -- so does one whose parent has not ended (it was canceled while it waited). The edges into
    -- the requeued jobs and into every job below them through failed edges (what
    -- pgq._rearm_deps may bring back) are locked first, in one ordered pass (a settlement
    -- locks its edges in the same order): a parent ending meanwhile has settled its edge (and
    -- found no waiting child to count down) before they are read, or settles it after this
    -- commits (and counts the child down).
    IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL THEN
        PERFORM 1 FROM pgq.job_deps d
         WHERE d.child_id = ANY (ARRAY(
                   WITH RECURSIVE below (id) AS (
                       SELECT unnest(v_back)
                       UNION
                       SELECT e.child_id FROM below b JOIN pgq.job_deps e ON e.parent_id = b.id AND e.state = 'failed'
                   )
                   SELECT b.id FROM below b))
         ORDER BY d.parent_id, d.child_id
           FOR UPDATE;
        -- With hold, a job whose failed parent does not come back (it ended after the caller
        -- read the workflow) is not requeued either, nor what would wait for it: it stays as
        -- it is (never waiting for a parent that will not end, never ahead of it).
        IF _requeue.hold THEN
            LOOP
                v_skip := ARRAY(SELECT DISTINCT d.child_id FROM pgq.job_deps d
                                 WHERE d.child_id = ANY (v_back) AND d.state = 'failed'
                                   AND d.parent_id <> ALL (v_back));
                EXIT WHEN cardinality(v_skip) = 0;
                v_back := ARRAY(SELECT b FROM unnest(v_back) AS b WHERE b <> ALL (v_skip) ORDER BY b);
            END LOOP;
            IF cardinality(v_back) = 0 THEN
                RETURN '{}';
            END IF;
        END IF;
        v_wait := ARRAY(SELECT DISTINCT d.child_id FROM pgq.job_deps d
                         WHERE d.child_id = ANY (v_back)
                           AND (d.state = 'pending' OR (d.state = 'failed' AND d.parent_id = ANY (v_back))));
    END IF;

    -- Back into pgq.jobs (dedupe keys taken again first: PQ007 when one is held by a live job).
    v_ids := pgq._revive(v_back, coalesce(_requeue.at, now()), v_wait, v_due);
    -- Workflows: what these jobs' failure canceled comes back, waiting for them again.
    IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL AND cardinality(v_ids) > 0 THEN
        PERFORM pgq._rearm_deps(v_ids, coalesce(_requeue.at, now()));
    END IF;
    RETURN v_ids;
END
$$;
COMMENT ON FUNCTION pgq._requeue(bigint[], timestamptz, boolean) IS
    'Private. pgq.requeue''s body; with hold (pgq.requeue_workflow), a job whose failed parent is not requeued with it is left in history.';
