-- pgq.compact_jobs (prototype "ring"): the maintenance step ThinWorker already calls every 5 s
-- (same signature and result; max_rows, max_bytes and lock_wait are not used: the ring has its
-- own bounds below). One maintainer at a time (advisory try-lock). In order:
--   1. sweep stale running jobs, promote due scheduled jobs (../keyset/02_lanes.sql);
--   2. carry forward: the next slot of the ring (the one to be reused) must be empty; if it
--      holds at most c_carry live rows (stragglers: long-running, scheduled or retrying jobs,
--      the tail of a backlog), they move to the current slot (DELETE + INSERT of the same row:
--      same id, lease, ready number; rows locked by someone are skipped and moved next time).
--      A slot holding more (a backlog) is left alone: the ring stops rotating and the current
--      slot grows until the backlog drains;
--   3. TRUNCATE at most one slot other than the current one that has pages but no live row:
--      the next slot first, else the oldest. The lock is waited for at most 5 ms (claims and
--      enqueues queue behind the request meanwhile), the emptiness is checked again under it;
--   4. rotate (the next slot becomes current) when the next slot is empty and the current one
--      has been current for at least c_period.
-- Returns compacted = a slot was truncated, reason = what happened, rows = live rows carried,
-- bytes_before / bytes_after = the ring's total size (heap, TOAST, indexes). Each truncation is
-- also logged in pgq.maintenance_log (how long the lock was waited for and held until the end
-- of the function; the commit adds its WAL flush), for the benchmarks.
CREATE TABLE pgq.maintenance_log (
    at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    slot     int         NOT NULL,
    wait_ms  float8      NOT NULL,
    held_ms  float8      NOT NULL
);
CREATE OR REPLACE FUNCTION pgq.compact_jobs(
    max_rows   int         DEFAULT 20000,
    max_bytes  bigint      DEFAULT 67108864,
    lock_wait  interval    DEFAULT interval '100 milliseconds',
    at         timestamptz DEFAULT NULL
)
RETURNS TABLE (compacted boolean, reason text, rows bigint, bytes_before bigint, bytes_after bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    c_slots      constant int := 4;
    c_carry      constant int := 1000;
    c_period_ms  constant bigint := 2000;
    v_now        timestamptz := coalesce(compact_jobs.at, now());
    v_now_ms     bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    v_cur        int;
    v_next       int;
    v_slot       int;
    v_n          bigint;
    v_moved      bigint := 0;
    v_before     bigint;
    v_truncated  int;
    v_empty      boolean;
    v_old_wait   text;
    v_reason     text := '';
    v_t0         timestamptz;
    v_t1         timestamptz;
BEGIN
    IF NOT pg_try_advisory_xact_lock('pgq.jobs'::regclass::oid::int, 0) THEN
        RETURN QUERY SELECT false, 'busy', NULL::bigint, NULL::bigint, NULL::bigint;
        RETURN;
    END IF;
    SELECT sum(pg_total_relation_size(i.inhrelid)) INTO v_before
      FROM pg_inherits i WHERE i.inhparent = 'pgq.jobs'::regclass;

    -- 1.
    PERFORM pgq._sweep(v_now);
    PERFORM pgq._promote(NULL, v_now, 10000);

    -- 2.
    v_cur := (SELECT last_value FROM pgq.ring_seq) % c_slots;
    v_next := (v_cur + 1) % c_slots;
    SELECT count(*) INTO v_n FROM (SELECT 1 FROM pgq.jobs j WHERE j.slot = v_next LIMIT c_carry + 1) s;
    IF v_n BETWEEN 1 AND c_carry THEN
        WITH moved AS (
            DELETE FROM pgq.jobs j
             WHERE j.slot = v_next
               AND j.id IN (SELECT m.id FROM pgq.jobs m WHERE m.slot = v_next FOR UPDATE SKIP LOCKED)
            RETURNING j.*
        )
        INSERT INTO pgq.jobs (id, entrypoint, status, priority, run_at, enqueued_at, attempt, payload,
                              headers, dedupe_key, lease, worker_id, started_at, heartbeat_at,
                              cancel_requested, errors, ready_seq, slot)
        SELECT m.id, m.entrypoint, m.status, m.priority, m.run_at, m.enqueued_at, m.attempt, m.payload,
               m.headers, m.dedupe_key, m.lease, m.worker_id, m.started_at, m.heartbeat_at,
               m.cancel_requested, m.errors, m.ready_seq, v_cur
          FROM moved m;
        GET DIAGNOSTICS v_moved = ROW_COUNT;
        v_reason := v_reason || format('carried %s from jobs_%s; ', v_moved, v_next);
    ELSIF v_n > c_carry THEN
        v_reason := v_reason || format('jobs_%s holds a backlog; ', v_next);
    END IF;

    -- 3. One truncation per call: the lock is held until commit, and every statement on
    --    pgq.jobs (a generic plan locks every partition) waits for it.
    v_old_wait := current_setting('lock_timeout');
    FOR v_slot IN SELECT (v_cur + k) % c_slots FROM generate_series(1, c_slots - 1) AS k ORDER BY k LOOP
        CONTINUE WHEN pg_relation_size(format('pgq.jobs_%s', v_slot)::regclass) = 0;
        EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM pgq.jobs_%s)', v_slot) INTO v_empty;
        CONTINUE WHEN NOT v_empty;
        BEGIN
            PERFORM set_config('lock_timeout', '5ms', true);
            v_t0 := clock_timestamp();
            EXECUTE format('LOCK TABLE pgq.jobs_%s IN ACCESS EXCLUSIVE MODE', v_slot);
            v_t1 := clock_timestamp();
            PERFORM set_config('lock_timeout', v_old_wait, true);
            EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM pgq.jobs_%s)', v_slot) INTO v_empty;
            IF v_empty THEN
                EXECUTE format('TRUNCATE pgq.jobs_%s', v_slot);
                v_truncated := v_slot;
                v_reason := v_reason || format('truncated jobs_%s; ', v_slot);
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            v_reason := v_reason || format('jobs_%s busy; ', v_slot);
        END;
        EXIT;
    END LOOP;

    -- 4.
    IF pg_relation_size(format('pgq.jobs_%s', v_next)::regclass) = 0
       AND v_now_ms - (SELECT last_value FROM pgq.ring_rotated_at) >= c_period_ms THEN
        PERFORM nextval('pgq.ring_seq');
        PERFORM setval('pgq.ring_rotated_at', v_now_ms);
        v_reason := v_reason || format('rotated to jobs_%s', v_next);
    END IF;

    IF v_t1 IS NOT NULL THEN
        INSERT INTO pgq.maintenance_log (slot, wait_ms, held_ms)
        VALUES (coalesce(v_truncated, -1), extract(epoch FROM v_t1 - v_t0) * 1000,
                extract(epoch FROM clock_timestamp() - v_t1) * 1000);
    END IF;
    RETURN QUERY
    SELECT v_truncated IS NOT NULL, rtrim(v_reason, '; '), v_moved, v_before,
           (SELECT sum(pg_total_relation_size(i.inhrelid))::bigint
              FROM pg_inherits i WHERE i.inhparent = 'pgq.jobs'::regclass);
END
$$;
GRANT EXECUTE ON FUNCTION pgq.compact_jobs(int, bigint, interval, timestamptz) TO pgq_worker;
