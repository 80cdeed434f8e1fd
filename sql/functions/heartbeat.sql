-- pgq.heartbeat(worker_id, ids, leases, at)
-- Contract: refreshes heartbeat_at = at for each job this worker still owns under that lease,
--   and answers one row per input id, in input order: state 'ok', 'cancel_requested' (still
--   owned, but pgq.cancel asked it to stop), 'timed_out' (the attempt was past its deadline:
--   this call ended it as a failed attempt, pgq._time_out, or the sweep did before under this
--   lease and worker, so the worker stops the handler and writes no result) or 'lost'
--   (re-claimed by another worker, finished or gone). A lost job is
--   never touched. at NULL means now(). Also refreshes the worker's
--   row in the workers registry (pgq.register_worker), once per call, also for empty arrays:
--   an idle worker stays visible by calling it with no jobs. A job carried to another slot of
--   the ring while the call waited for it (pgq.maintain) is found again by a second look.
-- Locking: row locks on the owned jobs (in id order) and the worker's registry row (both updates are HOT:
--   heartbeat_at and last_seen_at are in no index).
-- Errors: PQ009, PQ003 (see pgq._check_batch).
CREATE OR REPLACE FUNCTION pgq.heartbeat(
    worker_id  uuid,
    ids        bigint[],
    leases     bigint[],
    at         timestamptz DEFAULT NULL
)
RETURNS TABLE (id bigint, state text)
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
AS $$
#variable_conflict use_column
DECLARE
    v_now    timestamptz := coalesce(heartbeat.at, now());
    v_ok     bigint[];
    v_cancel bigint[];
    v_late   bigint[];
    v_look  int;
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution settings).
    c_running constant text := 'running';
BEGIN
    IF heartbeat.at IS NOT NULL THEN
        PERFORM pgq._check_time(heartbeat.at, 'at');
    END IF;
    PERFORM pgq._check_batch(heartbeat.worker_id, heartbeat.ids, heartbeat.leases);
    UPDATE pgq.workers w SET last_seen_at = v_now WHERE w.worker_id = heartbeat.worker_id;
    -- A stale lease misses twice.
    v_ok := '{}';
    v_cancel := '{}';
    v_late := '{}';
    FOR v_look IN 1..2 LOOP  -- look twice: docs/architecture.md#look-twice
        -- Several jobs: locked first in id order (every function that locks several jobs takes
        -- them in id order, so two of them never deadlock; the UPDATE would lock in the order
        -- of its plan).
        IF cardinality(heartbeat.ids) > 1 THEN
            PERFORM 1
               FROM (SELECT j.id
                       FROM pgq.jobs j
                       JOIN unnest(heartbeat.ids, heartbeat.leases) AS i(id, lease)
                            ON j.id = i.id AND j.lease = i.lease
                      WHERE j.id = ANY (heartbeat.ids)
                        AND j.status = c_running AND j.slot <> 4
                        AND j.worker_id = heartbeat.worker_id
                        AND i.id <> ALL (v_ok)
                      ORDER BY j.id
                        FOR UPDATE OF j) AS l;
        END IF;
        WITH beat AS (
            UPDATE pgq.jobs j
               SET heartbeat_at = v_now
              FROM unnest(heartbeat.ids, heartbeat.leases) AS i(id, lease)
             WHERE j.id = i.id
               AND j.id = ANY (heartbeat.ids)
               AND j.lease = i.lease
               AND j.status = c_running AND j.slot <> 4
               AND j.worker_id = heartbeat.worker_id
               AND i.id <> ALL (v_ok)
            RETURNING j.id, j.cancel_requested, j.deadline_at <= v_now AS late
        )
        SELECT v_ok || coalesce(array_agg(b.id), '{}'),
               v_cancel || coalesce(array_agg(b.id) FILTER (WHERE b.cancel_requested), '{}'),
               v_late || coalesce(array_agg(b.id) FILTER (WHERE b.late), '{}')
          INTO v_ok, v_cancel, v_late
          FROM beat b;
        EXIT WHEN cardinality(v_ok) = cardinality(heartbeat.ids);
    END LOOP;
    -- Past the deadline: ended here (the worker may be the only one calling for a while).
    IF cardinality(v_late) > 0 THEN
        v_late := pgq._time_out(v_late, v_now);
    END IF;
    -- Not owned any more: timed out under this lease by the sweep, before this call? Its error
    -- entry says so (the time-out writes the lease and worker with it). Only for lost ids.
    IF cardinality(v_ok) < cardinality(heartbeat.ids) THEN
        SELECT v_late || coalesce(array_agg(i.id), '{}') INTO v_late
          FROM unnest(heartbeat.ids, heartbeat.leases) AS i(id, lease)
         WHERE i.id <> ALL (v_ok)
           AND EXISTS (SELECT 1
                         FROM (SELECT j.errors FROM pgq.jobs j WHERE j.id = i.id
                               UNION ALL
                               SELECT h.errors FROM pgq.job_history h WHERE h.id = i.id) AS o,
                              jsonb_array_elements(o.errors) AS e(value)
                        WHERE e.value -> 'lease' = to_jsonb(i.lease)
                          AND e.value ->> 'worker_id' = heartbeat.worker_id::text
                          AND e.value -> 'details' ->> 'error' = 'timed out');
    END IF;

    RETURN QUERY
    SELECT i.id,
           CASE WHEN i.id = ANY (v_late) THEN 'timed_out'
                WHEN i.id <> ALL (v_ok) THEN 'lost'
                WHEN i.id = ANY (v_cancel) THEN 'cancel_requested'
                ELSE 'ok' END
      FROM unnest(heartbeat.ids) WITH ORDINALITY AS i(id, ord)
     ORDER BY i.ord;
END
$$;
COMMENT ON FUNCTION pgq.heartbeat(uuid, bigint[], bigint[], timestamptz) IS
    'Refreshes the heartbeat of jobs this lease still owns; one row per id: ok, cancel_requested, timed_out (ended as a failed attempt past its time limit) or lost.';
