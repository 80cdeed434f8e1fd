-- pgq.fire_schedule_now(name, at)
-- Contract: fires a schedule once, now, outside its cron rhythm (an operator's "run it now"):
--   enqueues the job a tick would (the schedule's entrypoint, payload, priority and headers,
--   plus "pgq_schedule" and "pgq_due_at" = at) with dedupe key "pgq:schedule:<name>@<at>", and
--   records it as the schedule's last job. The next run and the cron state are not touched:
--   the regular ticks go on as before. Firing twice at the same `at` gives the same job
--   (on_conflict 'existing'). Returns the job id. at NULL means now().
-- Locking: the schedule row (waits for a scheduler firing it right now); inserts the job.
-- Errors: PQ009 NULL name or at out of range; PQ011 no schedule of that name.
CREATE OR REPLACE FUNCTION pgq.fire_schedule_now(name text, at timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(pgq._check_time(fire_schedule_now.at, 'at'), now());
    v_row pgq.schedules;
    v_job bigint;
BEGIN
    IF fire_schedule_now.name IS NULL THEN
        RAISE EXCEPTION 'name must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    SELECT * INTO v_row FROM pgq.schedules s WHERE s.name = fire_schedule_now.name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no schedule %', quote_literal(fire_schedule_now.name) USING ERRCODE = 'PQ011';
    END IF;
    v_job := pgq.enqueue(
        v_row.entrypoint, v_row.payload, v_row.priority, NULL,
        'pgq:schedule:' || v_row.name || '@' || to_char(v_now AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        coalesce(v_row.headers, '{}'::jsonb)
            || jsonb_build_object('pgq_schedule', v_row.name, 'pgq_due_at', v_now),
        'existing');
    UPDATE pgq.schedules s SET last_job_id = v_job WHERE s.name = v_row.name;
    RETURN v_job;
END
$$;
COMMENT ON FUNCTION pgq.fire_schedule_now(text, timestamptz) IS
    'Fires a schedule once now (a job as a tick would enqueue, deduplicated by schedule and time) without moving its next run; returns the job id.';
