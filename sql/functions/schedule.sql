-- pgq.schedule(name, entrypoint, cron, next_run_at, timezone, payload, priority, headers,
--              catch_up, misfire_grace, fire_timeout)
-- Contract: registers or updates the schedule called name, idempotently: every scheduler may
--   call it at start with the same arguments without moving the schedule. next_run_at is the
--   first fire time the caller computed from cron in timezone; it is stored when the schedule is
--   new or its cron expression or time zone changed, and ignored otherwise. catch_up decides what
--   a tick missed by more than misfire_grace does: 'once' (default) fires it once, 'skip' drops
--   it. fire_timeout: a scheduler that claimed a tick and went silent for that long is taken
--   over. Returns the stored row.
-- Locking: the schedule row until commit.
--   The cron expression is validated in full (pgq._check_cron) and stored with its whitespace
--   normalised; payload and headers have the limits of a job (pgq._check_jobs: 1 MiB, 64 KiB
--   with the two headers a fire adds, nesting, numbers).
-- Errors: PQ001 bad entrypoint, PQ011 bad name, cron expression, time zone or catch_up
--   (named in the message), PQ008 misfire_grace outside 0..365 days or fire_timeout outside
--   1 second..1 day, PQ009 NULL or out-of-range next_run_at, bad headers or payload, PQ006
--   payload or headers too large.
CREATE OR REPLACE FUNCTION pgq.schedule(
    name           text,
    entrypoint     text,
    cron           text,
    next_run_at    timestamptz,
    timezone       text     DEFAULT 'UTC',
    payload        jsonb    DEFAULT NULL,
    priority       int      DEFAULT 0,
    headers        jsonb    DEFAULT NULL,
    catch_up       text     DEFAULT 'once',
    misfire_grace  interval DEFAULT NULL,
    fire_timeout   interval DEFAULT NULL
)
RETURNS pgq.schedules
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_row  pgq.schedules;
    v_cron text;
BEGIN
    PERFORM pgq._check_name(schedule.name, 'schedule name', 'PQ011');
    PERFORM pgq._check_name(schedule.entrypoint, 'entrypoint', 'PQ001');
    v_cron := pgq._check_cron(schedule.cron);
    IF schedule.timezone IS NULL
       OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_timezone_names z WHERE z.name = schedule.timezone) THEN
        RAISE EXCEPTION 'unknown time zone %', coalesce(quote_literal(schedule.timezone), 'NULL')
            USING ERRCODE = 'PQ011';
    END IF;
    IF schedule.catch_up IS NULL OR schedule.catch_up NOT IN ('once', 'skip') THEN
        RAISE EXCEPTION 'catch_up must be ''once'' or ''skip'', got %', coalesce(quote_literal(schedule.catch_up), 'NULL')
            USING ERRCODE = 'PQ011';
    END IF;
    PERFORM pgq._check_interval(schedule.misfire_grace, 'misfire_grace', interval '0', interval '365 days');
    PERFORM pgq._check_interval(schedule.fire_timeout, 'fire_timeout', interval '1 second', interval '1 day');
    IF schedule.next_run_at IS NULL THEN
        RAISE EXCEPTION 'next_run_at must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF schedule.priority NOT BETWEEN -32768 AND 32767 THEN
        RAISE EXCEPTION 'priority % is out of range (-32768 to 32767)', schedule.priority USING ERRCODE = 'PQ005';
    END IF;
    IF schedule.headers IS NOT NULL AND jsonb_typeof(schedule.headers) <> 'object' THEN
        RAISE EXCEPTION 'headers must be a JSON object, got %', jsonb_typeof(schedule.headers) USING ERRCODE = 'PQ009';
    END IF;
    PERFORM pgq._check_time(schedule.next_run_at, 'next_run_at');
    -- The limits of a job, on the payload and on the headers a fire will send (with its own two).
    PERFORM pgq._check_jobs(NULL, ARRAY[schedule.payload], NULL, NULL, NULL,
                            ARRAY[coalesce(schedule.headers, '{}') || jsonb_build_object(
                                'pgq_schedule', schedule.name, 'pgq_due_at', timestamptz '8999-12-31 23:59:59.999999+00')]);

    INSERT INTO pgq.schedules AS s (name, entrypoint, cron, timezone, payload, headers, priority,
                                    catch_up, misfire_grace, fire_timeout, next_run_at)
    VALUES (schedule.name, schedule.entrypoint, v_cron, schedule.timezone,
            schedule.payload, schedule.headers, coalesce(schedule.priority, 0), schedule.catch_up,
            coalesce(schedule.misfire_grace, interval '1 minute'),
            coalesce(schedule.fire_timeout, interval '30 seconds'), schedule.next_run_at)
    ON CONFLICT (name) DO UPDATE
       SET entrypoint = excluded.entrypoint,
           payload = excluded.payload,
           headers = excluded.headers,
           priority = excluded.priority,
           catch_up = excluded.catch_up,
           misfire_grace = coalesce(schedule.misfire_grace, s.misfire_grace),
           fire_timeout = coalesce(schedule.fire_timeout, s.fire_timeout),
           cron = excluded.cron,
           timezone = excluded.timezone,
           next_run_at = CASE WHEN s.cron = excluded.cron AND s.timezone = excluded.timezone
                              THEN s.next_run_at ELSE excluded.next_run_at END,
           updated_at = now()
    RETURNING * INTO v_row;
    RETURN v_row;
END
$$;
COMMENT ON FUNCTION pgq.schedule(text, text, text, timestamptz, text, jsonb, int, jsonb, text, interval, interval) IS
    'Registers or updates a cron schedule idempotently; next_run_at is kept unless the cron expression or time zone changed.';
