-- pgq.job(id)
-- Contract: everything about one job, live (queued or running, from pgq.jobs) or finished
--   (from pgq.job_history): one row, or none for an unknown (or pruned) id. status is scheduled, queued,
--   running, successful, failed or canceled. Timings: enqueued_at (first enqueue), run_at (when
--   the current attempt is or was due; live jobs only), started_at and heartbeat_at (the current
--   or last attempt), finished_at; wait_s = started_at - enqueued_at and run_s = finished_at (a
--   running job: now()) - started_at, in seconds. errors holds every failed attempt
--   ({"attempt", "at", "details"}: the handler's error, message, traceback), details what the
--   last completion stored, result the value a successful handler returned (details->'result').
--   schedule and schedule_due_at name the schedule tick that fired the job (NULL otherwise).
--   max_attempts is the entrypoint's current policy. For a running job, silent_s is how long
--   its attempt has been silent (now() - heartbeat_at: it grows while the worker is hung or
--   gone, before the heartbeat timeout makes the job stale), and deadline_at when its time
--   limit runs out (NULL: no limit); both NULL for other jobs.
-- Locking: none (reads only).
-- Errors: PQ009 NULL id.
CREATE OR REPLACE FUNCTION pgq.job(id bigint)
RETURNS SETOF pgq.job_info
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Index scans: a plan made while a slot of the ring was empty (after a truncation) would
-- otherwise read the slot sequentially once it has filled (tests/py/test_plans.py).
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    IF job.id IS NULL THEN
        RAISE EXCEPTION 'id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    RETURN QUERY
    WITH one AS (
        SELECT j.id, j.entrypoint, j.status, j.priority, j.attempt, j.payload, j.headers, j.dedupe_key,
               j.enqueued_at, j.run_at, j.started_at, j.heartbeat_at, NULL::timestamptz AS finished_at,
               j.worker_id, j.cancel_requested, NULL::jsonb AS details, j.errors, j.deadline_at
          FROM pgq.jobs j
         WHERE j.id = job.id
        UNION ALL
        SELECT h.id, h.entrypoint, h.status, h.priority, h.attempt, h.payload, h.headers, h.dedupe_key,
               h.enqueued_at, NULL, h.started_at, NULL, h.finished_at,
               h.worker_id, false, h.details, h.errors, NULL
          FROM pgq.job_history h
         WHERE h.id = job.id
    )
    SELECT o.id, o.entrypoint, o.status, o.priority, o.attempt, e.max_attempts, o.payload, o.headers,
           o.dedupe_key, o.enqueued_at, o.run_at, o.started_at, o.heartbeat_at, o.finished_at,
           date_part('epoch', o.started_at - o.enqueued_at),
           date_part('epoch', CASE WHEN o.status = 'running' THEN now() ELSE o.finished_at END - o.started_at),
           o.worker_id, o.cancel_requested,
           CASE WHEN o.status = 'successful' AND jsonb_typeof(o.details) = 'object' THEN o.details -> 'result' END,
           o.details, o.errors,
           -- Only a job fired by pgq.fire_schedule (its dedupe key), not a header set by hand.
           CASE WHEN o.dedupe_key LIKE 'pgq:schedule:%' THEN o.headers ->> 'pgq_schedule' END,
           CASE WHEN o.dedupe_key LIKE 'pgq:schedule:%' THEN (o.headers ->> 'pgq_due_at')::timestamptz END,
           CASE WHEN o.status = 'running' THEN date_part('epoch', now() - o.heartbeat_at) END,
           CASE WHEN o.status = 'running' THEN o.deadline_at END
      FROM one o
      LEFT JOIN pgq.entrypoints e ON e.entrypoint = o.entrypoint
     LIMIT 1;
END
$$;
COMMENT ON FUNCTION pgq.job(bigint) IS
    'One job by id, live or finished: status, attempts, payload, timings (wait_s, run_s), worker, errors of every attempt, details, result, the schedule tick that fired it; for a running job how long it has been silent and its deadline.';
