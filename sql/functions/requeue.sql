-- pgq.requeue(ids, at)
-- Contract: puts finished jobs that failed (dead) or were canceled back in the queue: each
--   leaves pgq.job_history and becomes a queued job again with the same id, payload, headers,
--   priority and dedupe key, attempt 0, due at `at`, and its error list kept. Due now: queued
--   with a new ready number (the back of its lane); due later: scheduled. Successful jobs
--   and unknown ids are ignored. Returns the ids requeued. at NULL means now(). A requeued job
--   whose failure canceled jobs waiting for it (workflows) brings them back as waiting
--   (pgq._rearm_deps): they run again once it (and their other parents) succeeded. A job
--   requeued in the same call as a parent whose failure canceled it is 'waiting' for that
--   parent again (not queued), as is one with a parent that has not ended (canceled while it
--   waited); requeued without its failed parent, it runs (an explicit requeue overrides a
--   failed parent).
-- Locking: row locks on the history rows (in id order, by one read that also decides which
--   jobs come back), then on the workflow edges into them (pgq.job_deps, FOR UPDATE); inserts into pgq.jobs (fires the enqueue notice) and
--   the jobs' dedupe keys into pgq.live_keys; when due, the ready-number fence
--   (pgq._ready_lock) of their entrypoints until commit.
-- Errors: PQ009 NULL ids or NULL element; PQ007 when a live job already holds the dedupe key
--   of a job to requeue or to bring back (nothing is requeued).
CREATE OR REPLACE FUNCTION pgq.requeue(ids bigint[], at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_ids   bigint[];
    v_back  bigint[];
    v_eps   text[];
    v_clash text;
    v_due   boolean;
    v_wait  bigint[] := '{}';
BEGIN
    PERFORM pgq._check_dims(requeue.ids, 'ids');
    PERFORM pgq._check_time(requeue.at, 'at');
    IF requeue.ids IS NULL OR array_position(requeue.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(requeue.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;

    -- One locked read decides which jobs come back: only those are deleted below, so every
    -- job that gets a ready number is one whose entrypoint's fence was taken first (a job that
    -- failed or was canceled after this read stays in history: a claim may already have moved
    -- its lane's cursor past a number drawn without the fence). Locked in id order.
    SELECT array_agg(h.id ORDER BY h.id), array_agg(DISTINCT h.entrypoint)
      INTO v_back, v_eps
      FROM (SELECT h.id, h.entrypoint
              FROM pgq.job_history h
             WHERE h.id = ANY (requeue.ids)
               AND h.status IN ('failed', 'canceled')
             ORDER BY h.id
               FOR UPDATE) AS h;
    IF v_back IS NULL THEN
        RETURN;
    END IF;
    -- Due now: queued with ready numbers, behind the fence of their entrypoints (taken before
    -- any number is drawn). Not due yet: scheduled, in jobs_scheduled (slot 4).
    v_due := requeue.at IS NULL OR requeue.at <= now();
    -- Workflows: a job requeued with a parent whose failure canceled it waits for it again, and
    -- so does one whose parent has not ended (it was canceled while it waited). The edges into
    -- the requeued jobs are locked first: a parent ending meanwhile has settled its edge (and
    -- found no waiting child to count down) before they are read, or settles it after this
    -- commits (and counts the child down).
    IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL THEN
        PERFORM 1 FROM pgq.job_deps d WHERE d.child_id = ANY (v_back)
         ORDER BY d.parent_id, d.child_id FOR UPDATE;
        v_wait := ARRAY(SELECT DISTINCT d.child_id FROM pgq.job_deps d
                         WHERE d.child_id = ANY (v_back)
                           AND (d.state = 'pending' OR (d.state = 'failed' AND d.parent_id = ANY (v_back))));
    END IF;
    IF v_due THEN
        PERFORM pgq._ready_lock(v_eps);
    END IF;

    -- Dedupe keys are taken in pgq.live_keys first; a job whose key is held is not inserted.
    WITH back AS (
        DELETE FROM pgq.job_history h
         WHERE h.id = ANY (v_back)
        RETURNING h.*
    ), keys AS (
        INSERT INTO pgq.live_keys (dedupe_key, job_id)
        SELECT b.dedupe_key, b.id
          FROM back b
         WHERE b.dedupe_key IS NOT NULL
         ORDER BY b.id
            ON CONFLICT (dedupe_key) DO NOTHING
        RETURNING job_id
    ), ins AS (
        INSERT INTO pgq.jobs (id, entrypoint, priority, run_at, enqueued_at, payload, headers,
                              dedupe_key, errors, timeout, status, ready_seq, slot, group_key)
        SELECT b.id, b.entrypoint, b.priority, coalesce(requeue.at, now()), b.enqueued_at,
               b.payload, b.headers, b.dedupe_key, b.errors, b.timeout,
               CASE WHEN b.id = ANY (v_wait) THEN 'waiting' WHEN v_due THEN 'queued' ELSE 'scheduled' END,
               CASE WHEN v_due AND b.id <> ALL (v_wait) THEN nextval('pgq.ready_seq') END,
               CASE WHEN v_due AND b.id <> ALL (v_wait) THEN pgq._slot() ELSE 4 END, b.group_key
          FROM (SELECT b.* FROM back b
                 WHERE b.dedupe_key IS NULL OR b.id IN (SELECT k.job_id FROM keys k)
                 ORDER BY b.id) AS b
        RETURNING id
    )
    SELECT array_agg(b.id ORDER BY b.id) FILTER (WHERE ins.id IS NOT NULL),
           (array_agg(b.dedupe_key ORDER BY b.id) FILTER (WHERE ins.id IS NULL))[1]
      INTO v_ids, v_clash
      FROM back b
      LEFT JOIN ins ON ins.id = b.id;

    IF v_clash IS NOT NULL THEN
        -- Raising undoes the whole call: no history row is lost, nothing is requeued.
        RAISE EXCEPTION 'cannot requeue: dedupe key % is held by a live job', quote_literal(v_clash)
            USING ERRCODE = 'PQ007';
    END IF;
    -- Workflows: what these jobs' failure canceled comes back, waiting for them again.
    IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL AND v_ids IS NOT NULL THEN
        PERFORM pgq._rearm_deps(v_ids, coalesce(requeue.at, now()));
    END IF;
    RETURN QUERY SELECT unnest(v_ids);
END
$$;
COMMENT ON FUNCTION pgq.requeue(bigint[], timestamptz) IS
    'Puts failed (dead) or canceled jobs from history back in the queue with attempt 0; returns the ids requeued.';
