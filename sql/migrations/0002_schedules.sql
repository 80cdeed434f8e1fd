-- pgq-thin migration 0002: cron schedules. The schedule rows and their locking live here; a
-- client computes cron times (the Python client with croniter) and hands them back.
-- A fire is an ordinary job, deduplicated by schedule and due time.

CREATE TABLE pgq.schedules (
    name           text        NOT NULL,
    entrypoint     text        NOT NULL,
    cron           text        NOT NULL,
    timezone       text        NOT NULL DEFAULT 'UTC',
    payload        jsonb,
    headers        jsonb,
    priority       int         NOT NULL DEFAULT 0,
    catch_up       text        NOT NULL DEFAULT 'once',
    misfire_grace  interval    NOT NULL DEFAULT interval '1 minute',
    fire_timeout   interval    NOT NULL DEFAULT interval '30 seconds',
    next_run_at    timestamptz NOT NULL,
    last_run_at    timestamptz,
    last_job_id    bigint,
    state          text        NOT NULL DEFAULT 'idle',
    worker_id      uuid,
    lease          bigint,
    heartbeat_at   timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT schedules_pkey PRIMARY KEY (name),
    CONSTRAINT schedules_name_check CHECK (length(name) BETWEEN 1 AND 200),
    CONSTRAINT schedules_entrypoint_check CHECK (length(entrypoint) BETWEEN 1 AND 200),
    CONSTRAINT schedules_catch_up_check CHECK (catch_up IN ('once', 'skip')),
    CONSTRAINT schedules_state_check CHECK (state IN ('idle', 'firing')),
    CONSTRAINT schedules_firing_has_lease_check CHECK (
        (state = 'firing') = (lease IS NOT NULL AND worker_id IS NOT NULL AND heartbeat_at IS NOT NULL)
    ),
    CONSTRAINT schedules_timeouts_check CHECK (misfire_grace >= interval '0' AND fire_timeout >= interval '1 second')
);
COMMENT ON TABLE pgq.schedules IS
    'Cron schedules: one row each. pgq.claim_schedules / pgq.fire_schedule turn due rows into jobs.';

-- BEGIN FUNCTIONS (generated from sql/functions/ by scripts/sync_migration.py; do not edit here)
SET check_function_bodies = false;

-- sql/functions/_schedules_changed.sql
-- pgq._schedules_changed(): statement-level trigger on pgq.schedules.
-- Contract: a schedule was added, removed, or its cron expression or time zone changed: sends
--   {"kind": "schedules"} on pgq_events so sleeping schedulers recompute when to wake.
-- Locking: none.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._schedules_changed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    PERFORM pg_notify('pgq_events', '{"kind": "schedules"}');
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._schedules_changed() IS
    'Private trigger: sends {"kind":"schedules"} on pgq_events when schedules are added, removed or re-timed.';

-- sql/functions/claim_schedules.sql
-- pgq.claim_schedules(worker_id, batch_size, at)
-- Contract: claims up to batch_size schedules that are due (next_run_at <= at) or whose
--   previous claimer went silent (firing, heartbeat older than fire_timeout), earliest first.
--   Each gets state firing, this worker, heartbeat = at and a new lease, and is returned with
--   its due time and the database clock so the caller computes the next cron time from them
--   and calls pgq.fire_schedule. at NULL means now().
-- Locking: FOR UPDATE SKIP LOCKED on schedule rows: schedulers never wait for each other, and
--   a tick is claimed by one scheduler at a time.
-- Errors: PQ009 NULL worker_id, PQ002 batch_size outside 1..1000.
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
    v_now timestamptz := coalesce(claim_schedules.at, now());
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
         WHERE (s.state = 'idle' AND s.next_run_at <= v_now)
            OR (s.state = 'firing' AND s.heartbeat_at < v_now - s.fire_timeout)
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

-- sql/functions/fire_schedule.sql
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
-- Errors: PQ009 NULL argument, PQ011 a next run time not after the tick being fired.
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
    v_now timestamptz := coalesce(fire_schedule.at, now());
    v_row pgq.schedules;
    v_job bigint;
    v_next timestamptz;
BEGIN
    IF fire_schedule.worker_id IS NULL OR fire_schedule.name IS NULL OR fire_schedule.lease IS NULL
       OR fire_schedule.next_after_due IS NULL THEN
        RAISE EXCEPTION 'worker_id, name, lease and next_after_due must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
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
           next_run_at = v_next,
           updated_at = v_now
     WHERE s.name = v_row.name;
    RETURN QUERY SELECT CASE WHEN v_job IS NULL THEN 'skipped' ELSE 'fired' END, v_job;
END
$$;
COMMENT ON FUNCTION pgq.fire_schedule(uuid, text, bigint, timestamptz, timestamptz, timestamptz) IS
    'Fires a claimed tick as a job deduplicated by schedule and due time (or skips a missed tick under catch_up skip) and stores the next run; lease-guarded: returns fired, skipped or lost.';

-- sql/functions/next_schedule_at.sql
-- pgq.next_schedule_at()
-- Contract: when a scheduler should next look: the earliest next_run_at of idle schedules, or
--   the moment a firing schedule's claimer would count as silent (heartbeat + fire_timeout).
--   NULL when there are no schedules.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq.next_schedule_at()
RETURNS timestamptz
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT min(CASE WHEN s.state = 'idle' THEN s.next_run_at ELSE s.heartbeat_at + s.fire_timeout END)
      FROM pgq.schedules s;
$$;
COMMENT ON FUNCTION pgq.next_schedule_at() IS
    'Earliest time a schedule becomes due (or a silent claimer may be taken over); NULL without schedules.';

-- sql/functions/schedule.sql
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
-- Errors: PQ001 bad entrypoint, PQ011 bad name, cron expression, time zone or catch_up
--   (named in the message), PQ008 bad interval, PQ009 NULL next_run_at or bad headers.
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
    v_row pgq.schedules;
BEGIN
    PERFORM pgq._check_name(schedule.name, 'schedule name', 'PQ011');
    PERFORM pgq._check_name(schedule.entrypoint, 'entrypoint', 'PQ001');
    -- Shape only: 5 fields (minute precision) or 6 (seconds first). Clients check the rest.
    IF schedule.cron IS NULL
       OR cardinality(regexp_split_to_array(btrim(schedule.cron), '\s+')) NOT IN (5, 6)
       OR btrim(schedule.cron) !~ '^[0-9A-Za-z*/,?#-]+(\s+[0-9A-Za-z*/,?#-]+){4,5}$' THEN
        RAISE EXCEPTION 'invalid cron expression %: expected 5 or 6 fields', coalesce(quote_literal(schedule.cron), 'NULL')
            USING ERRCODE = 'PQ011';
    END IF;
    IF schedule.timezone IS NULL
       OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_timezone_names z WHERE z.name = schedule.timezone) THEN
        RAISE EXCEPTION 'unknown time zone %', coalesce(quote_literal(schedule.timezone), 'NULL')
            USING ERRCODE = 'PQ011';
    END IF;
    IF schedule.catch_up IS NULL OR schedule.catch_up NOT IN ('once', 'skip') THEN
        RAISE EXCEPTION 'catch_up must be ''once'' or ''skip'', got %', coalesce(quote_literal(schedule.catch_up), 'NULL')
            USING ERRCODE = 'PQ011';
    END IF;
    IF schedule.misfire_grace < interval '0' THEN
        RAISE EXCEPTION 'misfire_grace must not be negative, got %', schedule.misfire_grace USING ERRCODE = 'PQ008';
    END IF;
    IF schedule.fire_timeout < interval '1 second' THEN
        RAISE EXCEPTION 'fire_timeout must be at least 1 second, got %', schedule.fire_timeout USING ERRCODE = 'PQ008';
    END IF;
    IF schedule.next_run_at IS NULL THEN
        RAISE EXCEPTION 'next_run_at must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF schedule.priority NOT BETWEEN -32768 AND 32767 THEN
        RAISE EXCEPTION 'priority % is out of range (-32768 to 32767)', schedule.priority USING ERRCODE = 'PQ005';
    END IF;
    IF schedule.headers IS NOT NULL AND jsonb_typeof(schedule.headers) <> 'object' THEN
        RAISE EXCEPTION 'headers must be a JSON object, got %', jsonb_typeof(schedule.headers) USING ERRCODE = 'PQ009';
    END IF;

    INSERT INTO pgq.schedules AS s (name, entrypoint, cron, timezone, payload, headers, priority,
                                    catch_up, misfire_grace, fire_timeout, next_run_at)
    VALUES (schedule.name, schedule.entrypoint, btrim(schedule.cron), schedule.timezone,
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

-- sql/functions/unschedule.sql
-- pgq.unschedule(name)
-- Contract: removes the schedule called name; returns true if it existed. Jobs it already
--   fired are ordinary jobs and stay.
-- Locking: the schedule row (waits for a scheduler that is firing it right now).
-- Errors: none (an unknown name returns false).
CREATE OR REPLACE FUNCTION pgq.unschedule(name text)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    WITH gone AS (DELETE FROM pgq.schedules s WHERE s.name = unschedule.name RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM gone);
$$;
COMMENT ON FUNCTION pgq.unschedule(text) IS 'Removes a schedule; returns true if it existed.';

RESET check_function_bodies;
-- END FUNCTIONS

CREATE TRIGGER schedules_changed AFTER INSERT OR DELETE OR UPDATE OF cron, timezone ON pgq.schedules
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._schedules_changed();

REVOKE ALL ON pgq.schedules FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgq FROM PUBLIC;
GRANT SELECT ON pgq.schedules TO pgq_producer, pgq_worker;
GRANT EXECUTE ON FUNCTION
    pgq.schedule(text, text, text, timestamptz, text, jsonb, int, jsonb, text, interval, interval),
    pgq.claim_schedules(uuid, int, timestamptz),
    pgq.fire_schedule(uuid, text, bigint, timestamptz, timestamptz, timestamptz),
    pgq.next_schedule_at()
    TO pgq_worker;
