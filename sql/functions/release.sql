-- pgq.release(worker_id, ids, leases)
-- Contract: gives back claimed jobs that never started (a shutting-down worker): each job this
--   worker still owns under that lease returns to queued with a new ready number (the back of
--   its lane: run_at unchanged, but claims take it after the jobs that became runnable before
--   the release) and its attempt count is restored (a release is not an attempt). A job whose cancellation was
--   requested moves to history as canceled instead. Returns one row per job given back: id and
--   status, 'queued' (back in the queue) or 'canceled' (in history); a stale lease is ignored.
--   The call writes no job times, but a canceled job's finished_at = at (NULL means now()).
--   A job carried to another slot of the ring while the call waited for it
--   (pgq.maintain) is found again by a second look.
-- Locking: row locks on the released jobs; the ready-number fence (pgq._ready_lock) of their
--   entrypoints until commit.
-- Errors: PQ009, PQ003 (see pgq._check_batch); PQ009 at out of range (pgq._check_time).
CREATE OR REPLACE FUNCTION pgq.release(
    worker_id  uuid,
    ids        bigint[],
    leases     bigint[],
    at         timestamptz DEFAULT NULL
)
RETURNS TABLE (id bigint, status text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans: planning these statements on every call cost more than running them. No JIT:
-- a generic plan's estimates (unknown LIMIT, large backlog) would compile it on every call.
SET plan_cache_mode = force_generic_plan
SET jit = off
-- Index scans by id (jobs_id_idx): a generic plan made while a partition was empty would
-- otherwise scan it sequentially once per job after it has filled.
SET enable_seqscan = off
-- The input arrays meet pgq.jobs in hash joins only (docs/decisions/0007): one scan by id per
-- partition, whatever the statistics; a nested loop would probe every partition once per job.
SET enable_nestloop = off
SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
    v_done     bigint[] := '{}';
    v_canceled bigint[];
    v_back     bigint[];
    v_eps      text[];
    v_look    int;
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution settings).
    c_running  constant text := 'running';
BEGIN
    IF release.at IS NOT NULL THEN
        PERFORM pgq._check_time(release.at, 'at');
    END IF;
    PERFORM pgq._check_batch(release.worker_id, release.ids, release.leases);

    -- A stale lease misses twice.
    FOR v_look IN 1..2 LOOP  -- look twice: docs/architecture.md#look-twice
        SELECT array_agg(l.id ORDER BY l.id) FILTER (WHERE l.cancel_requested),
               array_agg(l.id ORDER BY l.id) FILTER (WHERE NOT l.cancel_requested),
               array_agg(DISTINCT l.entrypoint) FILTER (WHERE NOT l.cancel_requested)
          INTO v_canceled, v_back, v_eps
          FROM (SELECT j.id, j.entrypoint, j.cancel_requested
                  FROM pgq.jobs j
                  JOIN unnest(release.ids, release.leases) AS u(id, lease) ON j.id = u.id AND j.lease = u.lease
                 WHERE j.id = ANY (release.ids)
                   AND j.status = c_running AND j.slot <> 4
                   AND j.worker_id = release.worker_id
                   AND j.id <> ALL (v_done)
                 ORDER BY j.id
                   FOR UPDATE OF j) AS l;

        -- A job whose cancellation was requested is not queued again: it ends as canceled.
        IF v_canceled IS NOT NULL THEN
            RETURN QUERY SELECT a.id, a.status
                           FROM pgq._archive(v_canceled, array_fill('released'::text, ARRAY[cardinality(v_canceled)]),
                                             NULL, coalesce(release.at, now())) AS a;
            v_done := v_done || v_canceled;
        END IF;

        -- The others go back to queued with a new ready number, behind the fence: the back of
        -- their lane (a claim's cursor may have passed their old place).
        IF v_back IS NOT NULL THEN
            PERFORM pgq._ready_lock(v_eps);
            RETURN QUERY
            UPDATE pgq.jobs j
               SET status = 'queued',
                   ready_seq = u.seq,
                   attempt = j.attempt - 1,
                   lease = NULL,
                   worker_id = NULL,
                   started_at = NULL,
                   heartbeat_at = NULL,
                   claim_request = NULL
              -- The ready numbers drawn here, in id order (after the sort), whatever the join.
              FROM (SELECT u.id, nextval('pgq.ready_seq') AS seq
                      FROM unnest(v_back) WITH ORDINALITY AS u(id, ord) ORDER BY u.ord) AS u
             WHERE j.id = u.id
               AND j.id = ANY (v_back)
               AND j.status = c_running AND j.slot <> 4
            RETURNING j.id, j.status;
            v_done := v_done || v_back;
        END IF;
        EXIT WHEN cardinality(v_done) >= cardinality(release.ids);
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgq.release(uuid, bigint[], bigint[], timestamptz) IS
    'Returns claimed, never-started jobs to the queue without counting an attempt (a job whose cancel was requested ends canceled); returns id and status per job.';
