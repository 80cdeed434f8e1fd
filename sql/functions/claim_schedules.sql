-- pgq.claim_schedules(worker_id, batch_size, at)
-- Contract: claims up to batch_size schedules that are due (next_run_at <= at, and retry_at,
--   set by pgq.release_schedule, passed) or whose
--   previous claimer went silent (firing, heartbeat older than fire_timeout), earliest first.
--   Each gets state firing, this worker, heartbeat = at and a new lease, and is returned with
--   its due time and the database clock so the caller computes the next cron time from them
--   and calls pgq.fire_schedule. A registered claimer (pgq.workers) claims only schedules whose
--   entrypoint a live worker serves (pgq._schedule_served): a schedule nobody serves waits,
--   due, until a worker serving it runs, and its catch_up then decides. at NULL means now().
-- Locking: FOR UPDATE SKIP LOCKED on schedule rows: schedulers never wait for each other, and
--   a tick is claimed by one scheduler at a time.
-- Errors: PQ009 NULL worker_id or at out of range, PQ002 batch_size outside 1..1000.
CREATE OR REPLACE FUNCTION pgq.claim_schedules(
    worker_id   uuid,
    batch_size  int         DEFAULT 10,
    at          timestamptz DEFAULT NULL
)
RETURNS TABLE (name text, lease bigint, entrypoint text, cron text, timezone text,
               due_at timestamptz, db_now timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(pgq._check_time(claim_schedules.at, 'at'), now());
BEGIN
    IF claim_schedules.worker_id IS NULL THEN
        RAISE EXCEPTION 'worker_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF claim_schedules.batch_size IS NULL OR claim_schedules.batch_size NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'batch_size must be between 1 and 1000, got %', coalesce(claim_schedules.batch_size::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;
    RETURN QUERY
    WITH due AS (
        SELECT s.name
          FROM pgq.schedules s
         WHERE ((s.state = 'idle' AND s.next_run_at <= v_now AND (s.retry_at IS NULL OR s.retry_at <= v_now))
                OR (s.state = 'firing' AND s.heartbeat_at < v_now - s.fire_timeout))
           AND pgq._schedule_served(s.entrypoint, claim_schedules.worker_id, v_now)
         ORDER BY s.next_run_at, s.name
         LIMIT claim_schedules.batch_size
           FOR UPDATE SKIP LOCKED
    )
    UPDATE pgq.schedules s
       SET state = 'firing',
           worker_id = claim_schedules.worker_id,
           lease = nextval('pgq.lease_seq'),
           heartbeat_at = v_now
      FROM due
     WHERE s.name = due.name
    RETURNING s.name, s.lease, s.entrypoint, s.cron, s.timezone, s.next_run_at, v_now;
END
$$;
COMMENT ON FUNCTION pgq.claim_schedules(uuid, int, timestamptz) IS
    'Claims due schedules (or ones whose claimer went silent) with a lease; returns cron, time zone, due time and the database clock.';
