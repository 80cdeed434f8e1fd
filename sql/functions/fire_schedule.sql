-- pgq.fire_schedule(worker_id, name, lease, next_after_due, next_after_now, at)
-- Contract: fires the tick this worker claimed with pgq.claim_schedules and stores the next
--   run. The caller computes two cron times: the first tick after the one being fired
--   (next_after_due) and the first tick after the clock claim_schedules returned
--   (next_after_now). While the schedule keeps up (next_after_due is within misfire_grace of
--   now) every tick fires in turn; after a longer gap (downtime) the missed ticks collapse and
--   the schedule moves on to next_after_now. Both must lie after the tick being fired; a NULL
--   next_after_now means next_after_due is used either way. Firing enqueues an
--   ordinary job of the schedule's entrypoint, payload, priority and headers (plus
--   "pgq_schedule" and "pgq_due_at" headers) whose dedupe key is "pgq:schedule:<name>@<due>",
--   so a tick can never produce two live jobs. A tick older than misfire_grace is fired once
--   when catch_up is 'once' and dropped when it is 'skip'. Everything happens in one statement
--   under the schedule's row lock and only while the lease holds: a scheduler that lost its
--   lease (taken over after fire_timeout) fires nothing. Returns one row: state 'fired' (with
--   the job id), 'skipped' or 'lost'. at NULL means now().
-- Locking: the schedule row; inserts the job.
-- Errors: PQ009 NULL argument or a time out of range (pgq._check_time), PQ011 a next run time
--   not after the tick being fired.
CREATE OR REPLACE FUNCTION pgq.fire_schedule(
    worker_id    uuid,
    name            text,
    lease           bigint,
    next_after_due  timestamptz,
    next_after_now  timestamptz DEFAULT NULL,
    at              timestamptz DEFAULT NULL
)
RETURNS TABLE (state text, job_id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(pgq._check_time(fire_schedule.at, 'at'), now());
    v_row pgq.schedules;
    v_job bigint;
    v_next timestamptz;
BEGIN
    IF fire_schedule.worker_id IS NULL OR fire_schedule.name IS NULL OR fire_schedule.lease IS NULL
       OR fire_schedule.next_after_due IS NULL THEN
        RAISE EXCEPTION 'worker_id, name, lease and next_after_due must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    PERFORM pgq._check_time(fire_schedule.next_after_due, 'next_after_due');
    PERFORM pgq._check_time(fire_schedule.next_after_now, 'next_after_now');
    SELECT * INTO v_row
      FROM pgq.schedules s
     WHERE s.name = fire_schedule.name
       AND s.lease = fire_schedule.lease
       AND s.worker_id = fire_schedule.worker_id
       AND s.state = 'firing'
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'lost'::text, NULL::bigint;
        RETURN;
    END IF;
    IF fire_schedule.next_after_due <= v_row.next_run_at OR fire_schedule.next_after_now <= v_row.next_run_at THEN
        RAISE EXCEPTION 'next run times (% and %) must be after the tick being fired (%)',
            fire_schedule.next_after_due, coalesce(fire_schedule.next_after_now::text, 'NULL'), v_row.next_run_at
            USING ERRCODE = 'PQ011';
    END IF;
    v_next := CASE WHEN fire_schedule.next_after_due < v_now - v_row.misfire_grace
                   THEN coalesce(fire_schedule.next_after_now, fire_schedule.next_after_due)
                   ELSE fire_schedule.next_after_due END;

    IF v_row.catch_up = 'once' OR v_row.next_run_at >= v_now - v_row.misfire_grace THEN
        v_job := pgq.enqueue(
            v_row.entrypoint, v_row.payload, v_row.priority, NULL,
            'pgq:schedule:' || v_row.name || '@' || to_char(v_row.next_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            coalesce(v_row.headers, '{}'::jsonb)
                || jsonb_build_object('pgq_schedule', v_row.name, 'pgq_due_at', v_row.next_run_at),
            'existing');
    END IF;

    UPDATE pgq.schedules s
       SET state = 'idle',
           worker_id = NULL,
           lease = NULL,
           heartbeat_at = NULL,
           last_run_at = v_row.next_run_at,
           last_job_id = coalesce(v_job, s.last_job_id),
           retry_at = NULL,
           last_error = NULL,
           next_run_at = v_next,
           updated_at = v_now
     WHERE s.name = v_row.name;
    RETURN QUERY SELECT CASE WHEN v_job IS NULL THEN 'skipped' ELSE 'fired' END, v_job;
END
$$;
COMMENT ON FUNCTION pgq.fire_schedule(uuid, text, bigint, timestamptz, timestamptz, timestamptz) IS
    'Fires a claimed tick as a job deduplicated by schedule and due time (or skips a missed tick under catch_up skip) and stores the next run; lease-guarded: returns fired, skipped or lost.';
