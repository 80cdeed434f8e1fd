-- pgq.release_schedule(worker_id, name, lease, error, retry_after, at)
-- Contract: gives back a schedule this worker claimed with pgq.claim_schedules but cannot fire
--   (it could not compute the next cron time): the schedule goes back to idle with its due
--   time unchanged, records error (cut to 1000 characters) in last_error, and is not claimed
--   again before at + retry_after (retry_at), so one broken schedule neither blocks the others
--   nor keeps the schedulers busy. Lease-guarded like pgq.fire_schedule: returns 'released',
--   or 'lost' when the lease no longer holds (nothing changes). The next successful fire clears
--   retry_at and last_error. at NULL means now().
-- Locking: the schedule row.
-- Errors: PQ009 NULL worker_id, name or lease, at out of range; PQ008 retry_after outside
--   1 second..1 day.
CREATE OR REPLACE FUNCTION pgq.release_schedule(
    worker_id    uuid,
    name         text,
    lease        bigint,
    error        text        DEFAULT NULL,
    retry_after  interval    DEFAULT interval '1 minute',
    at           timestamptz DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(pgq._check_time(release_schedule.at, 'at'), now());
BEGIN
    IF release_schedule.worker_id IS NULL OR release_schedule.name IS NULL OR release_schedule.lease IS NULL THEN
        RAISE EXCEPTION 'worker_id, name and lease must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    PERFORM pgq._check_interval(coalesce(release_schedule.retry_after, interval '1 minute'), 'retry_after',
                                interval '1 second', interval '1 day');
    UPDATE pgq.schedules s
       SET state = 'idle',
           worker_id = NULL,
           lease = NULL,
           heartbeat_at = NULL,
           retry_at = v_now + coalesce(release_schedule.retry_after, interval '1 minute'),
           last_error = left(release_schedule.error, 1000),
           updated_at = v_now
     WHERE s.name = release_schedule.name
       AND s.lease = release_schedule.lease
       AND s.worker_id = release_schedule.worker_id
       AND s.state = 'firing';
    RETURN CASE WHEN FOUND THEN 'released' ELSE 'lost' END;
END
$$;
COMMENT ON FUNCTION pgq.release_schedule(uuid, text, bigint, text, interval, timestamptz) IS
    'Gives back a claimed schedule that cannot be fired (no next cron time): idle again, not claimed before retry_after, error kept in last_error; lease-guarded: released or lost.';
