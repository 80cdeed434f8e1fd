-- pgq-thin migration 0002 (not released yet): what this release changes after 0.1.0, each change
-- under a heading (`-- ## `) that names it. Reads top-down: the hand-written DDL first; just
-- before the DDL that needs them, a short generated section with the two new helpers it uses
-- (pgq._slot, the default of pgq.jobs.slot; pgq._valid_name, in the name CHECKs); then the
-- generated section with every other function this release re-creates; then what needs those
-- functions: the triggers of the new pgq.jobs, the copy of the live jobs into it (it fires the
-- insert trigger) and the grants (sql/migrations/README.md). The schema as it stands after
-- all migrations, every column explained, is sql/schema.snapshot. Not released yet: see
-- RELEASED.

-- CONTENTS (line numbers; written by scripts/new_migration.py from the '-- ##' headings)
--      32  Roles for dashboards (read only) and operators (actions)
--      47  Operate it: workers registry, metrics rollup, pause/resume, job lookup
--     235  Hostile input and hostile neighbours: schedules that cannot be computed rest
--     246  Policy back in SQL: re-signed functions and the claim answer
--     267  Functions: pgq._slot, pgq._valid_name (needed by the DDL below) (generated)
--     321  Schedules fire only where their entrypoint is served
--     329  One name rule for entrypoints and schedules
--     362  The ring: pgq.jobs partitioned, with scheduled jobs and claim replays
--     543  Comments on the columns of the tables 0.1.0 created
--     578  Views of the live jobs (they read the new pgq.jobs)
--     630  Real workloads: time limits, bounded interruptions and snoozes, takeovers in the claim
--     690  Flow control: unique by period
--     707  Flow control: per-key concurrency and fair share
--     746  Workflows: jobs that wait for other jobs
--     794  Flow control: rate limits
--     846  Functions: the other 91 functions this migration re-creates (generated)
--    8214  The ring, continued: triggers and the copy of the live jobs
--    8246  Grants
-- END CONTENTS

-- ## Roles for dashboards (read only) and operators (actions)

-- Cluster-wide, created once.
DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'pgq_reader') THEN
        CREATE ROLE pgq_reader NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'pgq_admin') THEN
        CREATE ROLE pgq_admin NOLOGIN;
    END IF;
END
$roles$;
GRANT USAGE ON SCHEMA pgq TO pgq_reader, pgq_admin;

-- ## Operate it: workers registry, metrics rollup, pause/resume, job lookup

-- docs/sql-api.md, "Seeing and steering the queue". New tables, a column on pgq.entrypoints and
-- one on pgq.job_history; the view pgq.worker_status comes with the new pgq.jobs (it reads it).

-- Workers registry: one row per worker that announced itself with pgq.register_worker.
-- pgq.heartbeat refreshes last_seen_at (one row per call, never per job); last_seen_at is in
-- no index and pages keep room, so that update is HOT.
CREATE TABLE pgq.workers (
    worker_id         uuid        NOT NULL,
    host              text,
    pid               int,
    application_name  text,
    entrypoints       text[]      NOT NULL DEFAULT '{}',
    version           text,
    metadata          jsonb       NOT NULL DEFAULT '{}',
    client_addr       inet,
    timeout           interval    NOT NULL DEFAULT interval '30 seconds',
    started_at        timestamptz NOT NULL,
    last_seen_at      timestamptz NOT NULL,
    CONSTRAINT workers_pkey PRIMARY KEY (worker_id),
    CONSTRAINT workers_timeout_check CHECK (timeout BETWEEN interval '1 second' AND interval '1 day'),
    CONSTRAINT workers_metadata_check CHECK (jsonb_typeof(metadata) = 'object')
) WITH (fillfactor = 50);
COMMENT ON TABLE pgq.workers IS
    'Workers registry: what each worker announced (pgq.register_worker) and when it was last seen (pgq.heartbeat). See the view pgq.worker_status.';

COMMENT ON COLUMN pgq.workers.entrypoints IS
    'The entrypoints the worker said it serves (as announced; claims do not check it).';
COMMENT ON COLUMN pgq.workers.metadata IS 'What the worker chose to announce (a JSON object).';
COMMENT ON COLUMN pgq.workers.client_addr IS 'The address its connection came from (inet_client_addr()).';
COMMENT ON COLUMN pgq.workers.timeout IS
    'Silent for longer than this, the worker counts as gone (pgq.worker_status); pgq.prune_workers deletes a gone worker that holds no job 15 minutes later.';
COMMENT ON COLUMN pgq.workers.last_seen_at IS
    'Its last pgq.register_worker or pgq.heartbeat (in no index, so the refresh is a HOT update).';

-- Paused entrypoints: claims skip them (queued and stale jobs alike) until pgq.resume; the
-- rest of the policy is left as configured.
ALTER TABLE pgq.entrypoints ADD COLUMN paused_at timestamptz;
ALTER TABLE pgq.entrypoints ADD COLUMN paused_by text;
COMMENT ON COLUMN pgq.entrypoints.paused_at IS
    'Set by pgq.pause: claims skip this entrypoint until pgq.resume clears it. NULL: not paused.';
COMMENT ON COLUMN pgq.entrypoints.paused_by IS 'Who paused it (pgq.pause''s by, free text).';

-- Metrics rollup. Every history row records the transaction that wrote it (finished_xid);
-- pgq.rollup_metrics folds rows into 10-second buckets exactly once, in xid order, up to the
-- oldest transaction still running (rows of transactions below it are final). Added without a
-- table rewrite: rows finished before this migration keep NULL and are not rolled up.
ALTER TABLE pgq.job_history ADD COLUMN finished_xid xid8;
ALTER TABLE pgq.job_history ALTER COLUMN finished_xid SET DEFAULT pg_current_xact_id();
CREATE INDEX job_history_finished_xid_idx ON pgq.job_history (finished_xid)
    WHERE finished_xid IS NOT NULL;
COMMENT ON COLUMN pgq.job_history.finished_xid IS
    'The transaction that wrote the row: pgq.rollup_metrics counts rows in this order, once (NULL: finished before 0002, never counted).';

-- The failed-jobs page without an entrypoint (pgq.find_history: failed or canceled, newest
-- first, maybe an error text) walks only the unsuccessful rows, not the whole history. Small:
-- successful rows are not in it, so the archive path of a successful job only checks the
-- predicate.
CREATE INDEX job_history_unsuccessful_idx ON pgq.job_history (finished_at)
    WHERE status <> 'successful';

-- One row: how far the rollup got. Rows of job_history with finished_xid >= watermark are not
-- counted yet.
CREATE TABLE pgq.metrics_state (
    id            boolean     NOT NULL DEFAULT true,
    watermark     xid8        NOT NULL DEFAULT '0',
    rolled_at     timestamptz,
    rows_rolled   bigint      NOT NULL DEFAULT 0,
    caught_up     boolean     NOT NULL DEFAULT true,
    pruned_at     timestamptz,
    CONSTRAINT metrics_state_pkey PRIMARY KEY (id),
    CONSTRAINT metrics_state_one_row_check CHECK (id)
);
COMMENT ON TABLE pgq.metrics_state IS
    'One row: the rollup watermark (history rows with finished_xid >= watermark are not counted yet), the last rollup time, rows counted so far, whether the last rollup caught up.';
COMMENT ON COLUMN pgq.metrics_state.watermark IS
    'History rows with finished_xid below it are counted; the rollup moves it up to the oldest transaction still running.';
COMMENT ON COLUMN pgq.metrics_state.caught_up IS
    'Whether the last rollup counted every row below the horizon (false: its row limit stopped it first).';
COMMENT ON COLUMN pgq.metrics_state.pruned_at IS 'When buckets older than an hour were last deleted.';
INSERT INTO pgq.metrics_state DEFAULT VALUES;

-- Finished jobs per entrypoint and 10-second bucket of finished_at: counts per final status,
-- and log-bucketed histograms (sparse: bins and counts) of wait time (enqueued_at to
-- started_at) and run time (started_at to finished_at). Kept for one hour.
CREATE TABLE pgq.metrics_buckets (
    entrypoint   text        NOT NULL,
    bucket       timestamptz NOT NULL,
    successful   bigint      NOT NULL DEFAULT 0,
    failed       bigint      NOT NULL DEFAULT 0,
    canceled     bigint      NOT NULL DEFAULT 0,
    wait_sum_s   float8      NOT NULL DEFAULT 0,
    run_sum_s    float8      NOT NULL DEFAULT 0,
    wait_bins    int[]       NOT NULL DEFAULT '{}',
    wait_counts  bigint[]    NOT NULL DEFAULT '{}',
    run_bins     int[]       NOT NULL DEFAULT '{}',
    run_counts   bigint[]    NOT NULL DEFAULT '{}',
    CONSTRAINT metrics_buckets_pkey PRIMARY KEY (entrypoint, bucket)
);
CREATE INDEX metrics_buckets_bucket_idx ON pgq.metrics_buckets (bucket);
COMMENT ON COLUMN pgq.metrics_buckets.bucket IS 'Start of the 10-second bucket of finished_at.';
COMMENT ON COLUMN pgq.metrics_buckets.wait_sum_s IS 'Sum of wait times (enqueued_at to started_at), seconds.';
COMMENT ON COLUMN pgq.metrics_buckets.run_sum_s IS 'Sum of run times (started_at to finished_at), seconds.';
COMMENT ON COLUMN pgq.metrics_buckets.wait_bins IS
    'Histogram of wait times, sparse: the log bins (pgq._hist_bin) that have jobs, ascending; wait_counts holds their counts.';
COMMENT ON COLUMN pgq.metrics_buckets.run_bins IS
    'Histogram of run times, sparse: the log bins (pgq._hist_bin) that have jobs, ascending; run_counts holds their counts.';
COMMENT ON TABLE pgq.metrics_buckets IS
    'Finished jobs per entrypoint and 10-second bucket of finished_at: counts per status, wait/run time sums and log-bucketed histograms (see pgq._hist_bin). Written by pgq.rollup_metrics, kept one hour.';

-- Finished jobs per entrypoint and status since the rollup started (Prometheus counters).
CREATE TABLE pgq.metrics_totals (
    entrypoint  text   NOT NULL,
    status      text   NOT NULL,
    jobs        bigint NOT NULL DEFAULT 0,
    CONSTRAINT metrics_totals_pkey PRIMARY KEY (entrypoint, status)
);
COMMENT ON TABLE pgq.metrics_totals IS
    'Finished jobs per entrypoint and final status counted by pgq.rollup_metrics since it started (monotonic counters).';

REVOKE ALL ON pgq.workers, pgq.metrics_state, pgq.metrics_buckets, pgq.metrics_totals FROM PUBLIC;

-- The due backlog over the last hour, for the charts (pgq.metrics_series): pgq.rollup_metrics
-- samples every entrypoint once per minute (the first call of each minute) and keeps an hour.
CREATE TABLE pgq.metrics_backlog (
    entrypoint  text        NOT NULL,
    minute      timestamptz NOT NULL,
    due         bigint      NOT NULL,
    running     bigint      NOT NULL,
    CONSTRAINT metrics_backlog_pkey PRIMARY KEY (minute, entrypoint)
);
COMMENT ON TABLE pgq.metrics_backlog IS
    'Due and running jobs per entrypoint, sampled by pgq.rollup_metrics once per minute (due counted as pgq.metrics does, at most 10,000), kept one hour. Read by pgq.metrics_series.';
REVOKE ALL ON pgq.metrics_backlog FROM PUBLIC;

-- The web dashboard: its search box finds finished jobs by dedupe key
-- (pgq.find_by_dedupe_key). Partial: only jobs enqueued with a key pay for it when archived.
CREATE INDEX job_history_dedupe_key_idx ON pgq.job_history (dedupe_key)
    WHERE dedupe_key IS NOT NULL;

-- What pgq.job answers: one job, live or finished.
CREATE TYPE pgq.job_info AS (
    id                bigint,
    entrypoint        text,
    status            text,
    priority          int,
    attempt           int,
    max_attempts      int,
    payload           jsonb,
    headers           jsonb,
    dedupe_key        text,
    enqueued_at       timestamptz,
    run_at            timestamptz,
    started_at        timestamptz,
    heartbeat_at      timestamptz,
    finished_at       timestamptz,
    wait_s            float8,
    run_s             float8,
    worker_id         uuid,
    cancel_requested  boolean,
    result            jsonb,
    details           jsonb,
    errors            jsonb,
    schedule          text,
    schedule_due_at   timestamptz
);

-- One row of a job listing (pgq.list_jobs, pgq.find_history), with its paging cursor.
CREATE TYPE pgq.job_listing AS (
    id            bigint,
    entrypoint    text,
    status        text,
    priority      int,
    attempt       int,
    dedupe_key    text,
    enqueued_at   timestamptz,
    run_at        timestamptz,
    started_at    timestamptz,
    heartbeat_at  timestamptz,
    finished_at   timestamptz,
    worker_id     uuid,
    error         text,
    message       text,
    cursor        text
);
REVOKE ALL ON TYPE pgq.job_info, pgq.job_listing FROM PUBLIC;

-- ## Hostile input and hostile neighbours: schedules that cannot be computed rest

-- Hostile input and hostile neighbours (docs/architecture.md, "Security"). A schedule that a
-- scheduler cannot compute a next time for is given back (pgq.release_schedule) and rests until
-- retry_at; last_error says why. Both are cleared by the next fire.
ALTER TABLE pgq.schedules ADD COLUMN retry_at timestamptz;
ALTER TABLE pgq.schedules ADD COLUMN last_error text;
COMMENT ON COLUMN pgq.schedules.retry_at IS
    'Given back by pgq.release_schedule: not claimed again before this time (NULL: claimable when due).';
COMMENT ON COLUMN pgq.schedules.last_error IS 'Why the last fire was given back; cleared by the next fire.';

-- ## Policy back in SQL: re-signed functions and the claim answer

-- Policy back in SQL, a SQL API drivers like (docs/sql-api.md). pgq.complete takes what the
-- worker observed (outcomes, with 'interrupted') and answers what SQL decided per job; delays
-- travel as intervals (enqueue delay, enqueue_many delays); payloads, headers and details are
-- one JSON array each instead of jsonb[]; set-returning functions name their columns; a claim
-- re-sent with the same request_id answers the same jobs. Re-signed functions are dropped here
-- and created again in the functions section (grants after it).
DROP FUNCTION pgq.enqueue(text, jsonb, int, timestamptz, text, jsonb, text);
DROP FUNCTION pgq.enqueue_many(text[], jsonb[], int[], timestamptz[], text[], jsonb[], text);
DROP FUNCTION pgq.claim(uuid, text[], int, timestamptz);
DROP FUNCTION pgq.complete(uuid, bigint[], bigint[], text[], jsonb[], timestamptz);
DROP FUNCTION pgq.release(uuid, bigint[], bigint[]);
DROP FUNCTION pgq.cancel(bigint[], timestamptz);
DROP FUNCTION pgq.requeue(bigint[], timestamptz);
DROP FUNCTION pgq._archive(bigint[], text[], jsonb[], timestamptz, uuid, bigint[]);

-- The claim answer carries the heartbeat timeout in seconds and whether this is the last
-- attempt, so no client computes either.
ALTER TYPE pgq.claimed_job ADD ATTRIBUTE heartbeat_timeout_s float8, ADD ATTRIBUTE last_attempt boolean;

-- BEGIN FUNCTIONS _slot _valid_name (written by scripts/new_migration.py from sql/functions/; do not edit here)
SET check_function_bodies = false;

-- sql/functions/_slot.sql
-- pgq._slot(): the ring slot new due jobs enter (docs/decisions/0006).
-- Contract: pgq.ring_seq's last value mod 4 (0..3). A sequence: reading it, and pgq.maintain
--   moving it on, leaves no row version behind. The default of pgq.jobs.slot; jobs not due yet
--   go to slot 4 (jobs_scheduled) instead, given explicitly by their writers. One expression
--   with no FROM, no SET clause and only qualified pg_catalog names, so that it is inlined
--   where it is planned (a SQL function that is not inlined is parsed and planned again by
--   every statement that calls it, before PostgreSQL 18). Before pgq.maintain first moves
--   the ring, the sequence has no last value (NULL): slot 0, its START.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._slot()
RETURNS smallint
LANGUAGE sql
VOLATILE
AS $$
    SELECT (COALESCE(pg_catalog.pg_sequence_last_value('pgq.ring_seq'::pg_catalog.regclass), 0)
            OPERATOR(pg_catalog.%) 4)::smallint
$$;
COMMENT ON FUNCTION pgq._slot() IS
    'Private. The ring slot (0..3) new due jobs enter: pgq.ring_seq mod 4.';

-- sql/functions/_valid_name.sql
-- pgq._valid_name(name): the one rule for entrypoint and schedule names.
-- Contract: true when name is 1 to 200 bytes, not the word NULL (any case), and holds no
--   control character, comma, brace, double quote or backslash, and neither starts nor ends
--   with a space: then the name reads back unchanged as an element of an unquoted array
--   literal ('{a.b,c.d}'), so a literal can never split one name into two, trim it or turn it
--   into NULL. NULL for NULL. Used by pgq._check_name (the error), the hot-path checks of
--   enqueue/enqueue_many and the CHECK constraints on pgq.entrypoints and pgq.schedules
--   (pgq.jobs through its entrypoint row, see pgq._jobs_after_insert). LANGUAGE sql,
--   IMMUTABLE and without a SET clause, so callers inline it; it names pg_catalog objects only,
--   qualified.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._valid_name(name text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT pg_catalog.octet_length(name) OPERATOR(pg_catalog.<=) 200
       AND name OPERATOR(pg_catalog.~) '^[^[:cntrl:],{}"\\ ]([^[:cntrl:],{}"\\]*[^[:cntrl:],{}"\\ ])?$'
       AND pg_catalog.upper(name) OPERATOR(pg_catalog.<>) 'NULL';
$$;
COMMENT ON FUNCTION pgq._valid_name(text) IS
    'Private. The name rule: 1 to 200 bytes, not NULL, no control characters, commas, braces, double quotes, backslashes or surrounding spaces.';

RESET check_function_bodies;
-- END FUNCTIONS

-- ## Schedules fire only where their entrypoint is served

-- A registered scheduler claims a schedule only while a live worker serves its entrypoint
-- (pgq._schedule_served); pgq.next_schedule_at takes the scheduler's id so that it does not
-- wake for schedules it may not claim. Re-signed: dropped here, created again in the
-- functions section, granted again at the end.
DROP FUNCTION pgq.next_schedule_at();

-- ## One name rule for entrypoints and schedules

-- One name rule (pgq._valid_name) for entrypoints and schedule names, in the functions and in
-- the constraints alike (0.1.0 counted bytes for jobs and characters for schedules): no control
-- characters, commas, braces, double quotes, backslashes or surrounding spaces, not the word
-- NULL, so a name reads back unchanged from an unquoted array literal. Live rows that break it
-- stop the upgrade with their names (finish or cancel those jobs, re-register those schedules);
-- finished jobs in pgq.job_history keep their names. The new pgq.jobs (below) checks its names
-- through its entrypoint rows.
DO $$
DECLARE
    v_bad text;
BEGIN
    SELECT string_agg(DISTINCT quote_literal(n), ', ') INTO v_bad
      FROM (SELECT entrypoint FROM pgq.jobs
            UNION ALL SELECT name FROM pgq.schedules
            UNION ALL SELECT entrypoint FROM pgq.schedules) AS t(n)
     WHERE NOT pgq._valid_name(n);
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION 'live jobs or schedules use names the new rule refuses: %', v_bad
            USING HINT = 'finish or cancel those jobs and remove those schedules, then upgrade again';
    END IF;
END
$$;
-- The policy rows of names the rule refuses can never get a job again (no live job or schedule
-- uses them: checked above); they go, and the registry of names keeps the rule.
DELETE FROM pgq.entrypoints WHERE NOT pgq._valid_name(entrypoint);
ALTER TABLE pgq.entrypoints ADD CONSTRAINT entrypoints_entrypoint_check CHECK (pgq._valid_name(entrypoint));
ALTER TABLE pgq.schedules DROP CONSTRAINT schedules_name_check;
ALTER TABLE pgq.schedules ADD CONSTRAINT schedules_name_check CHECK (pgq._valid_name(name));
ALTER TABLE pgq.schedules DROP CONSTRAINT schedules_entrypoint_check;
ALTER TABLE pgq.schedules ADD CONSTRAINT schedules_entrypoint_check CHECK (pgq._valid_name(entrypoint));

-- ## The ring: pgq.jobs partitioned, with scheduled jobs and claim replays

-- Storage that keeps its pace while the vacuum horizon is held (docs/decisions/0006). pgq.jobs
-- becomes a ring: PARTITION BY LIST (slot), four ring partitions jobs_0..jobs_3 that new due
-- jobs enter by turns (the current slot is pgq.ring_seq mod 4) and that pgq.maintain empties
-- with TRUNCATE once drained, and jobs_scheduled (slot 4) for jobs not due yet. A job gets a
-- ready number (pgq.ready_seq) when it becomes runnable; claims read each lane (entrypoint,
-- priority) from its cursor on (a sequence per lane in pgq.lanes: moving it leaves no row
-- version behind), so dead versions of claimed and finished jobs are never walked again.
-- Dedupe keys of live jobs move to pgq.live_keys (no unique index spans partitions). The
-- CLUSTER compaction (pgq.compaction) goes: truncation gives the space back. The live rows are
-- copied under an exclusive lock (in-flight calls finish first, new ones wait for the upgrade)
-- once the functions and triggers are in place (after the functions section): running jobs keep
-- lease, worker and heartbeat; due queued jobs get ready numbers in the old claim order.
-- Two more changes of the same table come with it. Claims stay fast with far-future jobs: a
-- job not due yet is 'scheduled' (indexed by due time alone, in jobs_scheduled) and becomes
-- 'queued' when due (pgq.claim promotes the due ones of its entrypoints first, a cheap probe of
-- that index), so the claim index holds due jobs only; queued jobs not due yet at upgrade time
-- become scheduled. And a running job records the request it was claimed by (pgq.claim's
-- request_id, claim_request): a claim sent again with it answers the same jobs. It joins the
-- running-jobs index (no fifth index on the hot table; the claim changes status anyway, and
-- heartbeats leave both columns alone: still HOT).
LOCK TABLE pgq.jobs IN ACCESS EXCLUSIVE MODE;
CREATE SEQUENCE pgq.ready_seq AS bigint;
CREATE SEQUENCE pgq.lane_id_seq AS bigint;
CREATE SEQUENCE pgq.ring_seq AS bigint MINVALUE 0 START 0;
CREATE SEQUENCE pgq.ring_rotated_at AS bigint MINVALUE 0 START 0;
CREATE SEQUENCE pgq.maintained_at AS bigint MINVALUE 0 START 0;
CREATE SEQUENCE pgq.swept_at AS bigint MINVALUE 0 START 0;
COMMENT ON SEQUENCE pgq.ready_seq IS
    'Ready numbers: the order in which jobs became runnable (claims read each lane in this order).';
COMMENT ON SEQUENCE pgq.ring_seq IS
    'The ring''s current slot is last_value mod 4 (pgq._slot); pgq.maintain moves it on.';
COMMENT ON SEQUENCE pgq.ring_rotated_at IS 'Epoch milliseconds of the last rotation of the ring.';
COMMENT ON SEQUENCE pgq.maintained_at IS
    'Epoch milliseconds (server clock) of the last pgq.maintain (claims never run it).';
COMMENT ON SEQUENCE pgq.swept_at IS
    'Epoch milliseconds (claim clock) of the last stale sweep by a claim (at most one a second).';

CREATE TABLE pgq.lanes (
    entrypoint  text     NOT NULL,
    priority    int      NOT NULL,
    lane_id     bigint   NOT NULL,
    cursor_seq  regclass NOT NULL,
    CONSTRAINT lanes_pkey PRIMARY KEY (entrypoint, priority),
    CONSTRAINT lanes_priority_check CHECK (priority BETWEEN -32768 AND 32767)
);
COMMENT ON TABLE pgq.lanes IS
    'One row per (entrypoint, priority) ever queued, insert-once: the sequence that is the lane''s claim cursor (every ready number at or below it is settled).';
COMMENT ON COLUMN pgq.lanes.lane_id IS 'From pgq.lane_id_seq; names the cursor sequence pgq.lane_cursor_<lane_id>.';
COMMENT ON COLUMN pgq.lanes.cursor_seq IS
    'The lane''s claim cursor: a sequence whose value is the ready number up to which the lane is settled (claims read from it on).';

CREATE TABLE pgq.live_keys (
    dedupe_key  text   NOT NULL,
    job_id      bigint NOT NULL,
    CONSTRAINT live_keys_pkey PRIMARY KEY (dedupe_key)
);
COMMENT ON TABLE pgq.live_keys IS
    'Dedupe keys of live jobs (scheduled, queued, running): unique here, freed when the job finishes.';
COMMENT ON COLUMN pgq.live_keys.job_id IS 'The live job that holds the key (pgq.jobs.id).';

DROP VIEW pgq.queue_stats;
ALTER SEQUENCE pgq.job_id_seq OWNED BY NONE;
ALTER TABLE pgq.jobs RENAME TO jobs_old;
ALTER TABLE pgq.jobs_old RENAME CONSTRAINT jobs_pkey TO jobs_old_pkey;
DROP INDEX pgq.jobs_queued_idx, pgq.jobs_running_idx, pgq.jobs_dedupe_key_idx;
DROP TRIGGER jobs_after_insert ON pgq.jobs_old;
DROP TRIGGER jobs_after_update ON pgq.jobs_old;
DROP TRIGGER jobs_after_delete ON pgq.jobs_old;

CREATE TABLE pgq.jobs (
    id                bigint      NOT NULL DEFAULT nextval('pgq.job_id_seq'),
    entrypoint        text        NOT NULL,
    status            text        NOT NULL DEFAULT 'queued',
    priority          int         NOT NULL DEFAULT 0,
    run_at            timestamptz NOT NULL DEFAULT now(),
    enqueued_at       timestamptz NOT NULL DEFAULT now(),
    attempt           int         NOT NULL DEFAULT 0,
    payload           jsonb,
    headers           jsonb,
    dedupe_key        text,
    lease             bigint,
    worker_id         uuid,
    started_at        timestamptz,
    heartbeat_at      timestamptz,
    cancel_requested  boolean     NOT NULL DEFAULT false,
    errors            jsonb       NOT NULL DEFAULT '[]',
    claim_request     uuid,
    ready_seq         bigint,
    slot              smallint    NOT NULL DEFAULT pgq._slot(),
    CONSTRAINT jobs_status_check CHECK (status IN ('scheduled', 'queued', 'running', 'waiting')),
    -- A running job has a lease, a worker and a heartbeat, and any other job none of them:
    -- jobs_key_running_idx selects running jobs by their lease. (Written as one count: the
    -- constraint is prepared by every statement that writes the table, and two comparisons
    -- of status cost every job 1 % more at one job per call.)
    CONSTRAINT jobs_running_has_lease_check CHECK (
        num_nonnulls(lease, worker_id, heartbeat_at) = 3 * (status = 'running')::int
    ),
    CONSTRAINT jobs_attempt_check CHECK (attempt >= 0),
    CONSTRAINT jobs_slot_check CHECK ((status IN ('scheduled', 'waiting')) = (slot = 4)),
    CONSTRAINT jobs_ready_check CHECK (status <> 'queued' OR ready_seq IS NOT NULL)
) PARTITION BY LIST (slot);
-- A job's entrypoint name and priority are checked once per statement rather than per row and
-- per statement (a CHECK constraint is prepared again by every statement that writes the
-- table, claims included): every job has its lane (entrypoint, priority) and its entrypoint
-- row, which the insert trigger creates for a new pair (pgq._jobs_after_insert), and
-- entrypoints_entrypoint_check and lanes_priority_check hold the rules there.
ALTER SEQUENCE pgq.job_id_seq OWNED BY pgq.jobs.id;
COMMENT ON TABLE pgq.jobs IS
    'Live jobs (scheduled, queued, running). A ring of partitions jobs_0..jobs_3 emptied by TRUNCATE when drained, and jobs_scheduled for jobs not due yet (docs/decisions/0006).';
COMMENT ON COLUMN pgq.jobs.status IS
    'scheduled: not due yet (slot 4); waiting: for the jobs it depends on (slot 4, pgq.job_deps); queued: due, with a ready number; running: claimed, with a lease. Finished jobs leave for pgq.job_history.';
COMMENT ON COLUMN pgq.jobs.priority IS
    'Higher is claimed first. With entrypoint, the lane the job waits in (pgq.lanes).';
COMMENT ON COLUMN pgq.jobs.run_at IS
    'When the job is due: the enqueue time, a delay, or a retry''s backoff.';
COMMENT ON COLUMN pgq.jobs.attempt IS
    'Attempts claimed so far (each claim adds one); the entrypoint''s max_attempts bounds it.';
COMMENT ON COLUMN pgq.jobs.headers IS
    'The producer''s metadata for the job (a JSON object, e.g. trace context), handed to the worker with the payload.';
COMMENT ON COLUMN pgq.jobs.dedupe_key IS
    'At most one live job per key (held in pgq.live_keys until the job finishes).';
COMMENT ON COLUMN pgq.jobs.lease IS
    'The fence of the running attempt: a new number (pgq.lease_seq) per claim. Every write of that attempt (heartbeat, complete, release) names it and does nothing once it no longer matches.';
COMMENT ON COLUMN pgq.jobs.worker_id IS 'The worker that runs it (running jobs only).';
COMMENT ON COLUMN pgq.jobs.started_at IS 'When the running attempt was claimed.';
COMMENT ON COLUMN pgq.jobs.heartbeat_at IS
    'The running attempt''s last sign of life (pgq.heartbeat). Older than the entrypoint''s heartbeat_timeout, the job is stale: the next sweep retries or fails it.';
COMMENT ON COLUMN pgq.jobs.cancel_requested IS
    'pgq.cancel asked a running job to stop: the heartbeat answers cancel_requested, and a failure then ends the job canceled.';
COMMENT ON COLUMN pgq.jobs.errors IS
    'One entry per failed or interrupted attempt: attempt, at, lease, worker_id, outcome, decision, details.';
COMMENT ON COLUMN pgq.jobs.claim_request IS
    'The request_id of the pgq.claim that took the running job: a claim sent again with it answers the same jobs.';
COMMENT ON COLUMN pgq.jobs.ready_seq IS
    'Ready number (pgq.ready_seq), drawn when the job became queued: claims read each lane in this order, from its cursor on.';
COMMENT ON COLUMN pgq.jobs.slot IS
    'The partition: 0..3 the ring slot the job entered (pgq._slot(): pgq.ring_seq mod 4), 4 jobs_scheduled (not due yet). A job changes slot by DELETE and INSERT, never by UPDATE.';
-- Ring slots: fillfactor 50 keeps heartbeats HOT. Autovacuum stays on (a slot that cannot be
-- truncated yet, because the next slot still holds a backlog, is vacuumed as before); the
-- TRUNCATE is what gives the space back while a long transaction holds the horizon.
CREATE TABLE pgq.jobs_0 PARTITION OF pgq.jobs FOR VALUES IN (0);
CREATE TABLE pgq.jobs_1 PARTITION OF pgq.jobs FOR VALUES IN (1);
CREATE TABLE pgq.jobs_2 PARTITION OF pgq.jobs FOR VALUES IN (2);
CREATE TABLE pgq.jobs_3 PARTITION OF pgq.jobs FOR VALUES IN (3);
CREATE TABLE pgq.jobs_scheduled PARTITION OF pgq.jobs FOR VALUES IN (4);
ALTER TABLE pgq.jobs_0 SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE pgq.jobs_1 SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE pgq.jobs_2 SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE pgq.jobs_3 SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.02);

-- By id (heartbeat, complete, release, cancel, look-ups); not unique (a unique index must hold
-- the partition key): ids come from pgq.job_id_seq alone.
CREATE INDEX jobs_id_idx ON pgq.jobs (id);
-- The claim: each lane in ready order, read from its cursor on (and queued listings in claim
-- order: priority desc, then ready order).
CREATE INDEX jobs_ready_idx ON pgq.jobs (entrypoint, priority DESC, ready_seq) WHERE status = 'queued';
-- Running jobs per entrypoint (stale sweep, limit counts) and the claim request that took them.
CREATE INDEX jobs_running_idx ON pgq.jobs (entrypoint, claim_request) WHERE status = 'running';
-- Not-yet-due jobs by due time (promotion, next_run_at).
CREATE INDEX jobs_scheduled_idx ON pgq.jobs (entrypoint, run_at, id) WHERE status = 'scheduled';
DROP TABLE pgq.compaction;
-- One maintainer at a time (pgq.maintain): the row lock of this one-row table, which only the
-- owner can take (an advisory lock could be held by any role that can connect, keeping
-- maintenance, and with it stale recovery and the ring's reclaim, busy for ever).
CREATE TABLE pgq.maintenance (
    id  boolean PRIMARY KEY DEFAULT true CHECK (id)
);
INSERT INTO pgq.maintenance DEFAULT VALUES;
COMMENT ON TABLE pgq.maintenance IS
    'One row, never updated: pgq.maintain holds its row lock (one maintainer at a time).';

-- ## Comments on the columns of the tables 0.1.0 created

COMMENT ON TABLE pgq.entrypoints IS
    'Per-entrypoint policy: concurrency limit, attempts, backoff, heartbeat timeout, pause. A row appears with the first job or schedule of a name (defaults) and is changed by pgq.configure.';
COMMENT ON COLUMN pgq.entrypoints.concurrency_limit IS
    'At most this many running jobs of the entrypoint (NULL: no limit; 0 stops claims).';
COMMENT ON COLUMN pgq.entrypoints.max_attempts IS 'Attempts before a failing job is dead (ends failed).';
COMMENT ON COLUMN pgq.entrypoints.backoff_base IS
    'Retry delay after attempt n: least(backoff_max, backoff_base * 2^(n-1)), with equal jitter (or the worker''s retry_after).';
COMMENT ON COLUMN pgq.entrypoints.backoff_max IS 'The longest retry delay (see backoff_base).';
COMMENT ON COLUMN pgq.entrypoints.heartbeat_timeout IS
    'A running job silent for longer is stale: swept back to the queue (or failed on its last attempt).';
COMMENT ON COLUMN pgq.entrypoints.updated_at IS
    'Last change of the row (configure, pause, resume); pgq.prune_entrypoints removes unused rows not changed for a while.';
COMMENT ON TABLE pgq.job_history IS
    'One row per finished job (successful, failed: attempts used up or dead, canceled), moved here from pgq.jobs by pgq._archive.';
COMMENT ON COLUMN pgq.job_history.attempt IS 'The attempt that finished the job (0: canceled before any claim).';
COMMENT ON COLUMN pgq.job_history.lease IS
    'The lease of the attempt that finished the job through pgq.complete (a repeated complete is recognised by it); NULL when no attempt finished it (cancel, release, sweep).';
COMMENT ON COLUMN pgq.job_history.details IS 'What the worker reported with the final outcome (pgq.complete''s details).';
COMMENT ON COLUMN pgq.job_history.errors IS
    'One entry per failed or interrupted attempt: attempt, at, lease, worker_id, outcome, decision, details.';
COMMENT ON COLUMN pgq.schedules.catch_up IS
    'A tick older than misfire_grace (downtime): once fires it once (the missed ticks collapse), skip drops it.';
COMMENT ON COLUMN pgq.schedules.misfire_grace IS
    'Within it, every tick fires in turn; an older tick is missed (see catch_up).';
COMMENT ON COLUMN pgq.schedules.fire_timeout IS
    'A firing schedule silent for longer (heartbeat_at) may be claimed by another scheduler.';
COMMENT ON COLUMN pgq.schedules.next_run_at IS
    'The next tick: computed from cron and timezone by the scheduler that fired the last one (pgq.fire_schedule).';
COMMENT ON COLUMN pgq.schedules.last_job_id IS 'The job the last fire enqueued.';
COMMENT ON COLUMN pgq.schedules.state IS 'idle, or firing: claimed by a scheduler (worker_id, lease, heartbeat_at set).';
COMMENT ON COLUMN pgq.schedules.lease IS
    'The fence of the current fire: pgq.fire_schedule and pgq.release_schedule name it and do nothing once it no longer matches.';

-- ## Views of the live jobs (they read the new pgq.jobs)

CREATE VIEW pgq.queue_stats AS
SELECT c.entrypoint,
       count(j.id) FILTER (WHERE j.status IN ('queued', 'scheduled'))            AS queued,
       count(j.id) FILTER (WHERE j.status IN ('queued', 'scheduled')
                             AND j.run_at <= now())                               AS due,
       count(j.id) FILTER (WHERE j.status = 'running')                            AS running,
       count(j.id) FILTER (WHERE j.status = 'running'
                             AND j.heartbeat_at < now() - c.heartbeat_timeout)     AS stale,
       now() - min(j.enqueued_at) FILTER (WHERE j.status IN ('queued', 'scheduled')) AS oldest_queued_age,
       c.concurrency_limit,
       c.max_attempts,
       c.heartbeat_timeout,
       c.paused_at IS NOT NULL                                                    AS paused
  FROM pgq.entrypoints c
  LEFT JOIN pgq.jobs j ON j.entrypoint = c.entrypoint
 GROUP BY c.entrypoint, c.concurrency_limit, c.max_attempts, c.heartbeat_timeout, c.paused_at;
COMMENT ON VIEW pgq.queue_stats IS
    'Per entrypoint: queued, due, running, stale (heartbeat older than its timeout), age of the oldest queued job, its policy, and whether it is paused.';
REVOKE ALL ON pgq.jobs, pgq.jobs_0, pgq.jobs_1, pgq.jobs_2, pgq.jobs_3, pgq.jobs_scheduled,
              pgq.lanes, pgq.live_keys, pgq.maintenance, pgq.queue_stats FROM PUBLIC;
REVOKE ALL ON SEQUENCE pgq.ready_seq, pgq.lane_id_seq, pgq.ring_seq, pgq.ring_rotated_at,
                       pgq.maintained_at, pgq.swept_at FROM PUBLIC;
GRANT SELECT ON pgq.queue_stats TO pgq_producer, pgq_worker;

-- Operate it: workers with their running jobs.
CREATE VIEW pgq.worker_status AS
SELECT coalesce(w.worker_id, r.worker_id) AS worker_id,
       CASE WHEN w.worker_id IS NULL THEN 'unregistered'
            WHEN w.last_seen_at >= now() - w.timeout THEN 'active'
            ELSE 'gone' END AS state,
       w.host, w.pid, w.application_name, w.entrypoints, w.version, w.metadata, w.client_addr,
       w.started_at, w.last_seen_at,
       date_part('epoch', now() - w.last_seen_at) AS silent_s,
       w.timeout,
       coalesce(r.running, 0) AS running,
       coalesce(r.stale, 0) AS stale,
       coalesce(r.job_ids, '{}') AS job_ids
  FROM pgq.workers w
  FULL JOIN (SELECT j.worker_id, count(*) AS running,
                    count(*) FILTER (WHERE j.heartbeat_at < now() - c.heartbeat_timeout) AS stale,
                    array_agg(j.id ORDER BY j.id) AS job_ids
               FROM pgq.jobs j
               JOIN pgq.entrypoints c ON c.entrypoint = j.entrypoint
              WHERE j.status = 'running'
              GROUP BY j.worker_id) AS r ON r.worker_id = w.worker_id;
COMMENT ON VIEW pgq.worker_status IS
    'Per worker: state (active; gone when silent past its timeout; unregistered: holds jobs but never registered), what it announced, last seen, silent_s, and the running jobs it holds (running, stale, job_ids).';

REVOKE ALL ON pgq.worker_status FROM PUBLIC;

-- ## Real workloads: time limits, bounded interruptions and snoozes, takeovers in the claim

-- Real workloads (docs/sql-api.md, "Time limits, interruptions, snoozes"). An attempt may run
-- for at most the job's own timeout (pgq.enqueue's timeout) or else its entrypoint's
-- run_timeout: the claim writes the attempt's deadline_at, and the sweep (pgq.maintain, the
-- claims) and pgq.heartbeat end an attempt past it as a failed attempt (pgq._time_out). An
-- interrupted attempt is not counted, up to max_interruptions in a row; a snooze uses no
-- attempt, up to max_snoozes per job. The claim answer carries the attempt's time limit and,
-- for a job taken over from a silent worker, who that was.
ALTER TABLE pgq.entrypoints ADD COLUMN run_timeout interval,
    ADD COLUMN max_interruptions int NOT NULL DEFAULT 3,
    ADD COLUMN max_snoozes int NOT NULL DEFAULT 100,
    ADD CONSTRAINT entrypoints_run_timeout_check
        CHECK (run_timeout BETWEEN interval '1 second' AND interval '30 days'),
    ADD CONSTRAINT entrypoints_max_interruptions_check CHECK (max_interruptions BETWEEN 0 AND 1000),
    ADD CONSTRAINT entrypoints_max_snoozes_check CHECK (max_snoozes BETWEEN 0 AND 10000);
COMMENT ON COLUMN pgq.entrypoints.run_timeout IS
    'How long one attempt may run from its claim (NULL: no limit; a job''s own timeout wins): past it, SQL ends the attempt as failed, timed out.';
COMMENT ON COLUMN pgq.entrypoints.max_interruptions IS
    'Interrupted attempts in a row that are not counted; the next interruption counts as a failed attempt.';
COMMENT ON COLUMN pgq.entrypoints.max_snoozes IS
    'Snoozes a job may take without using an attempt; the next snooze counts as a failed attempt.';
ALTER TABLE pgq.jobs ADD COLUMN timeout interval, ADD COLUMN deadline_at timestamptz;
COMMENT ON COLUMN pgq.jobs.timeout IS
    'The job''s own run time limit (pgq.enqueue''s timeout; NULL: its entrypoint''s run_timeout).';
COMMENT ON COLUMN pgq.jobs.deadline_at IS
    'The running attempt''s deadline (claim time + its time limit; NULL: no limit): past it, the attempt is ended as timed out.';
ALTER TABLE pgq.job_history ADD COLUMN timeout interval;
COMMENT ON COLUMN pgq.job_history.timeout IS 'The job''s own run time limit (kept for pgq.requeue).';
DROP FUNCTION pgq.configure(text, int, int, interval, interval, interval, boolean);
ALTER TYPE pgq.claimed_job ADD ATTRIBUTE run_timeout_s float8, ADD ATTRIBUTE taken_over jsonb;
-- Silence made visible before the timeout: a running job's silence and deadline (pgq.job), and
-- per worker the longest silence of the jobs it holds (pgq.worker_status).
ALTER TYPE pgq.job_info ADD ATTRIBUTE silent_s float8, ADD ATTRIBUTE deadline_at timestamptz;
ALTER TYPE pgq.job_listing ADD ATTRIBUTE silent_s float8;
CREATE OR REPLACE VIEW pgq.worker_status AS
SELECT coalesce(w.worker_id, r.worker_id) AS worker_id,
       CASE WHEN w.worker_id IS NULL THEN 'unregistered'
            WHEN w.last_seen_at >= now() - w.timeout THEN 'active'
            ELSE 'gone' END AS state,
       w.host, w.pid, w.application_name, w.entrypoints, w.version, w.metadata, w.client_addr,
       w.started_at, w.last_seen_at,
       date_part('epoch', now() - w.last_seen_at) AS silent_s,
       w.timeout,
       coalesce(r.running, 0) AS running,
       coalesce(r.stale, 0) AS stale,
       coalesce(r.job_ids, '{}') AS job_ids,
       r.job_silent_s
  FROM pgq.workers w
  FULL JOIN (SELECT j.worker_id, count(*) AS running,
                    count(*) FILTER (WHERE j.heartbeat_at < now() - c.heartbeat_timeout) AS stale,
                    array_agg(j.id ORDER BY j.id) AS job_ids,
                    date_part('epoch', now() - min(j.heartbeat_at)) AS job_silent_s
               FROM pgq.jobs j
               JOIN pgq.entrypoints c ON c.entrypoint = j.entrypoint
              WHERE j.status = 'running'
              GROUP BY j.worker_id) AS r ON r.worker_id = w.worker_id;
COMMENT ON VIEW pgq.worker_status IS
    'Per worker: state (active; gone when silent past its timeout; unregistered: holds jobs but never registered), what it announced, last seen, silent_s, the running jobs it holds (running, stale, job_ids) and job_silent_s, the longest silence among them (seconds since their oldest heartbeat).';

-- ## Flow control: unique by period

-- A dedupe key can outlive its job (docs/sql-api.md, "Unique by period"): an entrypoint's
-- dedupe_period and dedupe_states (pgq.configure) make its enqueues refuse a key that a job
-- finished within the period in one of those states (found in pgq.job_history through
-- job_history_dedupe_key_idx). Nothing changes on the claim or the completion.
ALTER TABLE pgq.entrypoints ADD COLUMN dedupe_period interval NOT NULL DEFAULT interval '0';
ALTER TABLE pgq.entrypoints ADD COLUMN dedupe_states text[] NOT NULL DEFAULT '{successful}';
ALTER TABLE pgq.entrypoints ADD CONSTRAINT entrypoints_dedupe_check CHECK (
    dedupe_period BETWEEN interval '0' AND interval '3650 days'
    AND cardinality(dedupe_states) BETWEEN 1 AND 3
    AND dedupe_states <@ ARRAY['successful', 'failed', 'canceled']);
COMMENT ON COLUMN pgq.entrypoints.dedupe_period IS
    'Unique by period: an enqueue refuses a dedupe key that a job finished within this long ago in one of dedupe_states (0: keys are unique among live jobs only).';
COMMENT ON COLUMN pgq.entrypoints.dedupe_states IS
    'The end states (successful, failed, canceled) in which a finished job keeps its dedupe key for dedupe_period.';

-- ## Flow control: per-key concurrency and fair share

-- A job may carry a group key (a customer, a tenant, an API token: docs/sql-api.md, "Keys").
-- An entrypoint with a key_concurrency_limit runs at most that many jobs of one key at once
-- across all workers, and its claims take the keys of a lane in turn (round-robin in the
-- order of the keys' hashes, from where the last claim stopped: the lane's turn sequence, so
-- no row is written per claim). jobs_key_idx holds queued jobs with a key only, so a job
-- without one costs nothing more; the key travels to history (per-key audits).
ALTER TABLE pgq.jobs ADD COLUMN group_key text;
ALTER TABLE pgq.job_history ADD COLUMN group_key text;
COMMENT ON COLUMN pgq.jobs.group_key IS
    'The job''s key for per-key limits and fair share (NULL: none): see the entrypoint''s key_concurrency_limit.';
COMMENT ON COLUMN pgq.job_history.group_key IS 'The group key the job carried (pgq.jobs.group_key).';
ALTER TABLE pgq.entrypoints ADD COLUMN key_concurrency_limit int;
ALTER TABLE pgq.entrypoints ADD CONSTRAINT entrypoints_key_concurrency_limit_check CHECK (
    key_concurrency_limit IS NULL OR key_concurrency_limit BETWEEN 1 AND 1000000);
COMMENT ON COLUMN pgq.entrypoints.key_concurrency_limit IS
    'At most this many running jobs per group key across all workers, and claims take keys in turn (NULL: no per-key limit).';
ALTER TABLE pgq.lanes ADD COLUMN turn_seq regclass NOT NULL;
COMMENT ON COLUMN pgq.lanes.turn_seq IS
    'Fair share: the hash of the group key the lane''s last keyed claim served (claims go on from the next key).';
-- Queued jobs with a key, per lane and key (hash), in ready order. It leads with the
-- entrypoint's hash, not its name: with fixed-width columns only, the key walk reads each
-- entry's columns at fixed offsets (after a text column every column is found by walking the
-- ones before it), and the walk passes many entries (the rest of a leaf page per probe, the
-- dead entries a held horizon keeps). Its queries compare the entrypoint too (two names of one
-- hash share entries, never a job).
CREATE INDEX jobs_key_idx ON pgq.jobs (hashtext(entrypoint), priority, hashtextextended(group_key, 0), ready_seq)
    WHERE status = 'queued' AND group_key IS NOT NULL;
-- Running jobs with a key, per entrypoint and key (hash): a claim counts the running jobs of
-- the keys it meets (a range over their hashes), not every running job of the entrypoint.
-- Fixed-width columns, as jobs_key_idx. Its predicate names running jobs by their lease (the
-- same rows: jobs_running_has_lease_check), so the count, which says the same, can only be
-- served by this index: written as status = 'running', it could also be served by a scan of
-- jobs_running_idx, which a plan made while the ring's slots looked empty chose (reading
-- every running job of every entrypoint in the slot).
CREATE INDEX jobs_key_running_idx ON pgq.jobs (hashtext(entrypoint), hashtextextended(group_key, 0))
    WHERE lease IS NOT NULL AND group_key IS NOT NULL;

-- ## Workflows: jobs that wait for other jobs

-- A job may depend on other jobs (pgq.enqueue_many depends_on: earlier jobs by id, or jobs of
-- the same call by position, so a whole graph is one statement). Until every job it depends on
-- succeeded it is 'waiting' in jobs_scheduled (slot 4: outside the ring, in no claim or
-- promotion index). pgq.job_deps holds the edges, kept after they are settled (the graph of a
-- workflow stays readable: pgq.workflow); pgq.job_waits counts, per waiting job, the edges not
-- settled yet. A parent's end settles its edges in the same transaction (pgq._archive calls
-- pgq._settle_deps when the parent has edges): a success (or an edge with run_anyway) counts
-- one down, and the child whose count reaches 0 becomes scheduled and is promoted at once;
-- a dead or canceled parent cancels the child (and, through its own edges, its descendants).
CREATE TABLE pgq.job_deps (
    parent_id   bigint  NOT NULL,
    child_id    bigint  NOT NULL,
    workflow_id bigint  NOT NULL,
    run_anyway  boolean NOT NULL DEFAULT false,
    state      text    NOT NULL DEFAULT 'pending'
        CONSTRAINT job_deps_state_check CHECK (state IN ('pending', 'satisfied', 'failed')),
    PRIMARY KEY (parent_id, child_id)
);
CREATE INDEX job_deps_child_idx ON pgq.job_deps (child_id);
-- A workflow's edges, read as a whole (pgq.workflow, pgq.workflows, pruning).
CREATE INDEX job_deps_workflow_idx ON pgq.job_deps (workflow_id);
-- The edges not settled yet: what pgq._archive looks for (empty while no workflow is in flight,
-- so a completion of jobs nobody waits for costs one probe of an empty index).
CREATE INDEX job_deps_pending_idx ON pgq.job_deps (parent_id) WHERE state = 'pending';
-- Set (never called before) by the first enqueue with dependencies: until then pgq._archive
-- does not look at job_deps at all (one read of this sequence, no statement).
CREATE SEQUENCE pgq.job_deps_used AS bigint MINVALUE 0 START 0;
COMMENT ON SEQUENCE pgq.job_deps_used IS
    'Called once any job of this database was enqueued with dependencies: pgq._archive looks for edges to settle only then.';
REVOKE ALL ON SEQUENCE pgq.job_deps_used FROM PUBLIC;
COMMENT ON TABLE pgq.job_deps IS
    'Workflows: child_id waits for parent_id. Kept after the parent ended (the workflow''s graph); removed with the last job of its workflow by pgq.prune_history.';
COMMENT ON COLUMN pgq.job_deps.workflow_id IS
    'The workflow the edge belongs to: the id of the first job of the pgq.enqueue_many call that started the graph; a call whose jobs depend on jobs of a workflow joins it (the oldest of several).';
COMMENT ON COLUMN pgq.job_deps.run_anyway IS
    'The child runs even when this parent ends dead or canceled (default: it is canceled).';
COMMENT ON COLUMN pgq.job_deps.state IS
    'pending: the parent has not ended; satisfied: it succeeded (or ended otherwise with run_anyway); failed: it ended dead or canceled, and the child was canceled.';
CREATE TABLE pgq.job_waits (
    child_id bigint PRIMARY KEY,
    pending  int    NOT NULL CHECK (pending >= 0)
);
COMMENT ON TABLE pgq.job_waits IS
    'Workflows: per waiting job, how many of its edges (pgq.job_deps) are still pending; the job is released when it reaches 0.';
REVOKE ALL ON pgq.job_deps, pgq.job_waits FROM PUBLIC;

-- ## Flow control: rate limits

-- An entrypoint with a rate_limit starts at most that many jobs per rate_period across all
-- workers, in any window of that length (a sliding window over a log of starts: docs/decisions/
-- 0008), for the whole entrypoint or, with rate_per_key, for each group key. The claim counts the
-- window's starts under the policy-row lock it already takes (SKIP LOCKED) and writes one row per
-- budget it took from; pgq.take_tokens writes to the same log, so application code that calls the
-- same API shares the budget. pgq.maintain removes rows older than the period.
ALTER TABLE pgq.entrypoints ADD COLUMN rate_limit int;
ALTER TABLE pgq.entrypoints ADD COLUMN rate_period interval;
ALTER TABLE pgq.entrypoints ADD COLUMN rate_per_key boolean NOT NULL DEFAULT false;
ALTER TABLE pgq.entrypoints ADD CONSTRAINT entrypoints_rate_check CHECK (
    (rate_limit IS NULL) = (rate_period IS NULL)
    AND (rate_limit IS NULL OR rate_limit BETWEEN 1 AND 1000000)
    AND (rate_period IS NULL OR rate_period BETWEEN interval '1 millisecond' AND interval '1 day'));
COMMENT ON COLUMN pgq.entrypoints.rate_limit IS
    'At most this many jobs started per rate_period, in any window of that length, across all workers (NULL: no rate limit).';
COMMENT ON COLUMN pgq.entrypoints.rate_period IS 'The window of rate_limit (1 millisecond to 1 day).';
COMMENT ON COLUMN pgq.entrypoints.rate_per_key IS
    'The rate limit applies to each group key (jobs without a key share one budget) instead of the whole entrypoint.';
CREATE TABLE pgq.rate_starts (
    entrypoint text        NOT NULL,
    key_hash   bigint      NOT NULL,
    rate_key   text,
    started_at timestamptz NOT NULL,
    tokens     int         NOT NULL CHECK (tokens > 0),
    cum        bigint      NOT NULL
);
COMMENT ON TABLE pgq.rate_starts IS
    'Rate limits: the starts (claims and pgq.take_tokens) within the period of rate-limited entrypoints, one row per budget and call. Insert-only; pgq.maintain deletes rows older than the period.';
COMMENT ON COLUMN pgq.rate_starts.key_hash IS
    'hashtextextended(group key, 0), or -9223372036854775808 for the whole entrypoint (rate_per_key false) and for jobs without a key.';
COMMENT ON COLUMN pgq.rate_starts.rate_key IS 'The group key whose budget was used (NULL: the whole entrypoint, or jobs without a key).';
COMMENT ON COLUMN pgq.rate_starts.tokens IS 'Starts recorded by this row (jobs claimed, tokens taken).';
COMMENT ON COLUMN pgq.rate_starts.cum IS
    'The budget''s starts recorded so far, this row''s included: the starts of a window are the newest row''s cum minus the cum before the window''s first row (two probes, however many rows the window holds).';
COMMENT ON COLUMN pgq.rate_starts.started_at IS
    'When the starts were recorded: the claim''s (or take_tokens'') time, or the budget''s last recorded time when that is later, so that started_at and cum rise together.';
-- A budget's rows in time (and cum) order: the newest row, the first of a window (the claim's
-- count); maintain's prune of an entrypoint's old rows.
CREATE INDEX rate_starts_key_idx ON pgq.rate_starts (entrypoint, key_hash, started_at, cum);
CREATE INDEX rate_starts_time_idx ON pgq.rate_starts (entrypoint, started_at);
REVOKE ALL ON pgq.rate_starts FROM PUBLIC;
CREATE SEQUENCE pgq.rate_pruned_at AS bigint MINVALUE 0 START 0;
COMMENT ON SEQUENCE pgq.rate_pruned_at IS
    'When pgq.maintain last removed every row of pgq.rate_starts older than its period (ms since the epoch; once an hour; between those passes it removes only what left a window since its last pass, pgq.rate_cut_at).';
REVOKE ALL ON SEQUENCE pgq.rate_pruned_at FROM PUBLIC;
CREATE SEQUENCE pgq.rate_cut_at AS bigint MINVALUE 0 START 0;
COMMENT ON SEQUENCE pgq.rate_cut_at IS
    'The at of pgq.maintain''s last pass over pgq.rate_starts (ms since the epoch): the next pass removes the starts that left their window since then (and the second before).';
REVOKE ALL ON SEQUENCE pgq.rate_cut_at FROM PUBLIC;

-- BEGIN FUNCTIONS (written by scripts/new_migration.py from sql/functions/; do not edit here)
SET check_function_bodies = false;

-- sql/functions/_add_deps.sql
-- pgq._add_deps(ids, depends_on)
-- Contract: the dependencies of jobs being enqueued by pgq.enqueue_many (ids: their new ids in
--   input order, not inserted yet). depends_on is a JSON array with one element per job: null
--   or [] (none), or an array of references, each a number (the 1-based position of an earlier
--   job of the same call), {"position": n} or {"job": id} (a job enqueued before, live or
--   finished), with "run_anyway": true to run even when that parent ends dead or canceled.
--   A job may only depend on jobs before it in the call, so a graph is acyclic by
--   construction. Writes the edges (pgq.job_deps: pending for a parent not ended, satisfied for
--   one that succeeded or ended otherwise with run_anyway, failed for a dead or canceled one),
--   all in one workflow: the oldest workflow of the jobs named by id (a named job in none
--   counts as one of its own, its id), else the id of the call's first job that has an edge
--   and, per job that waits, its count of pending edges (pgq.job_waits). Answers the jobs that
--   wait (to be inserted as 'waiting') and those to cancel at once (a parent already dead or
--   canceled, without run_anyway).
-- Locking: FOR KEY SHARE on the live parents named by id, to the end of the transaction: a
--   parent cannot end (its row is deleted when it does) before these edges are committed, so
--   its end settles them; a parent that ended before is found in pgq.job_history.
-- Errors: PQ003 depends_on of another length; PQ009 depends_on not a JSON array, an element
--   not an array, a reference that is not a position before the job or {"job": id}, a job
--   that does not exist, more than 10,000 references in one call.
CREATE OR REPLACE FUNCTION pgq._add_deps(ids bigint[], depends_on jsonb,
                                         OUT waiting bigint[], OUT cancel bigint[])
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_n    int := cardinality(_add_deps.ids);
    v_bad    record;
    v_wf     bigint;
    v_pos    int[];      -- per reference: the position of the job that depends
    v_ref    jsonb[];    --   the reference as given
    v_ppos   int[];      --   the parent's position in this call, or
    v_named  bigint[];   --   the parent's id (a job enqueued before)
    v_any    boolean[];  --   run_anyway
    v_parent bigint[];   --   the parent's id, either way
    v_child  bigint[];   --   the child's id
    v_live   bigint[];   -- named parents that are live (locked)
BEGIN
    IF jsonb_typeof(_add_deps.depends_on) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'depends_on must be a JSON array (element i for job i) or NULL, got %',
            coalesce(jsonb_typeof(_add_deps.depends_on), 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF jsonb_array_length(_add_deps.depends_on) <> v_n THEN
        RAISE EXCEPTION 'depends_on has % elements but entrypoints has %', jsonb_array_length(_add_deps.depends_on), v_n
            USING ERRCODE = 'PQ003';
    END IF;
    -- Every reference, parsed into parallel arrays (one element per reference; no temporary
    -- table: creating one per call writes the catalogs, which bloat under a held horizon): a
    -- number or {"position": n} is a job of this call, {"job": id} one enqueued before.
    SELECT coalesce(array_agg(e.pos ORDER BY e.pos, r.ord), '{}'),
           coalesce(array_agg(r.ref ORDER BY e.pos, r.ord), '{}'),
           coalesce(array_agg(CASE WHEN jsonb_typeof(r.ref) = 'number' AND r.ref::text ~ '^[0-9]{1,9}$' THEN r.ref::text::int
                                   WHEN jsonb_typeof(r.ref -> 'position') = 'number' AND (r.ref ->> 'position') ~ '^[0-9]{1,9}$'
                                        THEN (r.ref ->> 'position')::int END ORDER BY e.pos, r.ord), '{}'),
           coalesce(array_agg(CASE WHEN jsonb_typeof(r.ref -> 'job') = 'number' AND (r.ref ->> 'job') ~ '^[0-9]{1,18}$'
                                   THEN (r.ref ->> 'job')::bigint END ORDER BY e.pos, r.ord), '{}'),
           coalesce(array_agg(coalesce(jsonb_typeof(r.ref -> 'run_anyway') = 'boolean' AND (r.ref ->> 'run_anyway')::boolean, false)
                              ORDER BY e.pos, r.ord), '{}')
      INTO v_pos, v_ref, v_ppos, v_named, v_any
      FROM jsonb_array_elements(_add_deps.depends_on) WITH ORDINALITY AS e(deps, pos)
     CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(e.deps) = 'array' THEN e.deps ELSE '[]' END)
                        WITH ORDINALITY AS r(ref, ord);
    SELECT e.pos, jsonb_typeof(e.deps) AS kind INTO v_bad
      FROM jsonb_array_elements(_add_deps.depends_on) WITH ORDINALITY AS e(deps, pos)
     WHERE jsonb_typeof(e.deps) NOT IN ('array', 'null')
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'depends_on at position % must be an array of references or null, got %', v_bad.pos, v_bad.kind
            USING ERRCODE = 'PQ009';
    END IF;
    IF cardinality(v_pos) > 10000 THEN
        RAISE EXCEPTION 'depends_on holds % references, over the 10000 of one call', cardinality(v_pos)
            USING ERRCODE = 'PQ009';
    END IF;
    SELECT d.pos, d.ref INTO v_bad
      FROM unnest(v_pos, v_ref, v_ppos, v_named) AS d(pos, ref, parent_pos, named)
     WHERE num_nonnulls(d.parent_pos, d.named) <> 1
        OR jsonb_typeof(d.ref -> 'run_anyway') NOT IN ('boolean', 'null')
     ORDER BY d.pos
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'depends_on at position %: % is not a reference (a position of an earlier job of this call, {"position": n} or {"job": id}, with an optional "run_anyway": true)',
            v_bad.pos, v_bad.ref
            USING ERRCODE = 'PQ009';
    END IF;
    SELECT d.pos, d.parent_pos INTO v_bad
      FROM unnest(v_pos, v_ppos) AS d(pos, parent_pos)
     WHERE d.parent_pos IS NOT NULL AND (d.parent_pos < 1 OR d.parent_pos >= d.pos)
     ORDER BY d.pos
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'job at position % depends on position %: a job may only depend on jobs before it in the call (so no cycle can form)',
            v_bad.pos, v_bad.parent_pos
            USING ERRCODE = 'PQ009';
    END IF;
    -- Each reference's parent id and child id (a position is a job of this call).
    v_parent := ARRAY(SELECT coalesce(_add_deps.ids[d.parent_pos], d.named)
                        FROM unnest(v_ppos, v_named) WITH ORDINALITY AS d(parent_pos, named, n) ORDER BY d.n);
    v_child := ARRAY(SELECT _add_deps.ids[d.pos] FROM unnest(v_pos) WITH ORDINALITY AS d(pos, n) ORDER BY d.n);
    -- From now on pgq._archive looks for edges to settle (not undone by a rollback: harmless).
    IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NULL THEN
        PERFORM setval('pgq.job_deps_used', 1);
    END IF;

    -- Parents named by id: live ones locked (they cannot end before our edges are committed),
    -- the others read from history.
    v_live := ARRAY(SELECT j.id FROM pgq.jobs j
                     WHERE j.id = ANY (ARRAY(SELECT DISTINCT n FROM unnest(v_named) AS n WHERE n IS NOT NULL))
                     ORDER BY j.id FOR KEY SHARE);
    SELECT d.pos, d.named AS parent_id INTO v_bad
      FROM unnest(v_pos, v_named) AS d(pos, named)
     WHERE d.named IS NOT NULL
       AND d.named <> ALL (v_live)
       AND NOT EXISTS (SELECT 1 FROM pgq.job_history h WHERE h.id = d.named)
     ORDER BY d.pos
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'job at position % depends on job %, which does not exist (not live, not in history)', v_bad.pos, v_bad.parent_id
            USING ERRCODE = 'PQ009';
    END IF;
    -- One call, one workflow: the oldest workflow of the jobs it names (or the oldest job named
    -- that is in none), else the call's first job with an edge. A workflow id is therefore the
    -- id of its first job, and no larger than any of its jobs' ids.
    v_wf := least((SELECT min(coalesce(pgq._workflow_of(n.p), n.p))
                     FROM (SELECT DISTINCT p FROM unnest(v_named) AS p WHERE p IS NOT NULL) n),
                  (SELECT min(_add_deps.ids[pp]) FROM unnest(v_ppos) AS pp));
    INSERT INTO pgq.job_deps (parent_id, child_id, workflow_id, run_anyway, state)
    SELECT d.parent_id, d.child_id, v_wf, bool_or(d.run_anyway),
           CASE WHEN d.named IS NULL OR d.named = ANY (v_live) THEN 'pending'
                WHEN h.status = 'successful' OR bool_or(d.run_anyway) THEN 'satisfied'
                ELSE 'failed' END
      FROM unnest(v_parent, v_child, v_named, v_any) AS d(parent_id, child_id, named, run_anyway)
      LEFT JOIN pgq.job_history h ON d.named IS NOT NULL AND h.id = d.named
     GROUP BY d.parent_id, d.child_id, d.named, h.status;
    INSERT INTO pgq.job_waits (child_id, pending)
    SELECT x.child_id, count(*) FILTER (WHERE x.state = 'pending')
      FROM pgq.job_deps x
     WHERE x.child_id = ANY (_add_deps.ids)
     GROUP BY x.child_id
    HAVING count(*) FILTER (WHERE x.state = 'pending') > 0;
    waiting := ARRAY(SELECT w.child_id FROM pgq.job_waits w WHERE w.child_id = ANY (_add_deps.ids));
    cancel := ARRAY(SELECT DISTINCT x.child_id FROM pgq.job_deps x
                     WHERE x.child_id = ANY (_add_deps.ids) AND x.state = 'failed' ORDER BY 1);
END
$$;
COMMENT ON FUNCTION pgq._add_deps(bigint[], jsonb) IS
    'Private. Parses and checks the dependencies of jobs being enqueued, writes their edges and counts; answers the jobs that wait and those to cancel at once.';

-- sql/functions/_add_lanes.sql
-- pgq._add_lanes(entrypoints, priorities): create the lanes that do not exist yet.
-- Contract: a lane is (entrypoint, priority), one row of pgq.lanes, insert-once, with its own
--   cursor sequence pgq.lane_cursor_<lane_id> (starts at 0: nothing settled) and its turn
--   sequence pgq.lane_turn_<lane_id> (fair share across group keys). Called by the
--   insert trigger of pgq.jobs for the new rows, queued and scheduled alike (the cap below is
--   met by the producer, never by a later promotion). Concurrent creators of one lane wait on the
--   primary key; the loser drops the sequence it made. A claim probes every lane of its
--   entrypoints, so one statement may open at most 100 new lanes (distinct new priorities).
-- Locking: the primary key of pgq.lanes while a lane is created (once per lane, ever).
-- Errors: PQ005 more than 100 new lanes in one statement (the statement adds nothing).
CREATE OR REPLACE FUNCTION pgq._add_lanes(entrypoints text[], priorities int[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_lane record;
    v_id   bigint;
    v_name text;
    v_new  bigint;
BEGIN
    SELECT count(*) INTO v_new
      FROM (SELECT DISTINCT u.e, u.p
              FROM unnest(_add_lanes.entrypoints, _add_lanes.priorities) AS u(e, p)
             WHERE NOT EXISTS (SELECT 1 FROM pgq.lanes l WHERE l.entrypoint = u.e AND l.priority = u.p)) n;
    IF v_new > 100 THEN
        RAISE EXCEPTION 'one statement may open at most 100 new priority lanes, this one opens %', v_new
            USING ERRCODE = 'PQ005',
                  HINT = 'Each distinct priority of an entrypoint is a lane every claim looks at: use few priorities.';
    END IF;
    FOR v_lane IN
        SELECT DISTINCT u.e, u.p
          FROM unnest(_add_lanes.entrypoints, _add_lanes.priorities) AS u(e, p)
         WHERE NOT EXISTS (SELECT 1 FROM pgq.lanes l WHERE l.entrypoint = u.e AND l.priority = u.p)
         ORDER BY 1, 2
    LOOP
        v_id := nextval('pgq.lane_id_seq');
        v_name := 'lane_cursor_' || v_id;
        EXECUTE format('CREATE SEQUENCE pgq.%I AS bigint MINVALUE 0 START 0', v_name);
        EXECUTE format('REVOKE ALL ON SEQUENCE pgq.%I FROM PUBLIC', v_name);
        -- Fair share across group keys: the hash of the last key a keyed claim served.
        EXECUTE format('CREATE SEQUENCE pgq.%I AS bigint MINVALUE -9223372036854775808 START -9223372036854775808',
                       'lane_turn_' || v_id);
        EXECUTE format('REVOKE ALL ON SEQUENCE pgq.%I FROM PUBLIC', 'lane_turn_' || v_id);
        INSERT INTO pgq.lanes (entrypoint, priority, lane_id, cursor_seq, turn_seq)
        VALUES (v_lane.e, v_lane.p, v_id, ('pgq.' || v_name)::regclass, ('pgq.lane_turn_' || v_id)::regclass)
            ON CONFLICT (entrypoint, priority) DO NOTHING;
        IF NOT FOUND THEN
            EXECUTE format('DROP SEQUENCE pgq.%I', v_name);
            EXECUTE format('DROP SEQUENCE pgq.%I', 'lane_turn_' || v_id);
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgq._add_lanes(text[], int[]) IS
    'Private. Creates the missing lanes (entrypoint, priority), each with its cursor sequence and its turn sequence (fair share across group keys).';

-- sql/functions/_archive.sql
-- pgq._archive(ids, statuses, details, at, worker_id, leases): move live jobs to pgq.job_history.
-- Contract: deletes the given jobs from pgq.jobs and writes one history row each with the final
--   status (successful, failed or canceled), details and finished_at = at, and frees their
--   dedupe keys in pgq.live_keys (only a key still held by that job id). Returns one row per
--   job moved: its id, entrypoint, final status and the attempt that ended. statuses may also
--   say 'interrupted' (an attempt cut off: the job ends canceled, the attempt appended to the
--   error list but not counted) or 'released' (pgq.release of a job whose cancel was requested:
--   canceled, never started, so no attempt, start time or worker is recorded), 'fatal' (the
--   job can never succeed: failed, its attempt counted, outcome 'fatal' in the error list) or
--   'snoozed' (a snooze of a job whose cancel was requested: canceled, the attempt not
--   counted, as an interrupted one); 'failed' and 'fatal' end canceled when the job's
--   cancellation was requested, the attempt appended all the same. The job's own timeout is
--   kept with it (pgq.requeue brings it back).
--   Without worker_id and leases, callers must already hold the row locks (a vanished row is
--   skipped). With them, only jobs still running under that worker and lease move (the lease
--   fence of pgq.complete, checked again by the DELETE itself under concurrent updates), and a
--   'failed' job whose cancellation was requested ends as 'canceled', and the history row keeps
--   the lease (pgq.complete recognises a repeated call by it). Without leases (cancel, release,
--   the claim path archiving a stale job) no lease is recorded: an attempt that did not finish
--   the job cannot pass for one that did. A failed or interrupted attempt is appended to the
--   error list: {attempt, at, lease and worker_id (with leases), outcome ('interrupted', 'snoozed' or 'fatal' for
--   one), decision (the final status), details}. One statement: no separate locking pass.
--   Jobs that other jobs wait for (pgq.job_deps) settle their edges in the same transaction
--   (pgq._settle_deps: waiting children released or canceled).
--   slots (up to four of pgq.jobs' slots; NULL: every slot) restricts the DELETE to those
--   partitions: pgq.complete's first look passes the slots its leases name (a job carried to
--   another slot since is not found there, and is looked for again in every slot).
-- Locking: row locks on the deleted jobs and their pgq.live_keys rows.
-- Errors: none of its own; the history CHECK constraint rejects an unknown status.
CREATE OR REPLACE FUNCTION pgq._archive(
    ids        bigint[],
    statuses   text[],
    details    jsonb[],
    at         timestamptz,
    worker_id  uuid     DEFAULT NULL,
    leases     bigint[] DEFAULT NULL,
    slots      smallint[] DEFAULT NULL
)
RETURNS TABLE (id bigint, entrypoint text, status text, attempt int)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans: planning these statements on every call cost more than running them. No JIT:
-- a generic plan's estimates (unknown LIMIT, large backlog) would compile it on every call.
SET plan_cache_mode = force_generic_plan
SET jit = off
-- Index scans by id (jobs_id_idx): a generic plan made while a partition was empty would
-- otherwise scan it sequentially once per job after it has filled.
SET enable_seqscan = off
-- The input meets pgq.jobs in a hash join only (docs/decisions/0007): one scan by id per
-- partition, whatever the statistics. A nested loop would probe every partition once per job
-- (or rescan the input once per row); no statement here needs one.
SET enable_nestloop = off
SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
    v_slots smallint[] := coalesce(_archive.slots, '{0,1,2,3,4}');
BEGIN
    RETURN QUERY
    WITH input AS (
        SELECT u.id, u.lease, u.status, u.details
          FROM unnest(_archive.ids, _archive.leases, _archive.statuses, _archive.details)
               AS u(id, lease, status, details)
    ), gone AS (
        DELETE FROM pgq.jobs j
         USING input i
         WHERE j.id = i.id
           AND j.id = ANY (_archive.ids)
           -- A list of values (not an array parameter): the executor prunes partitions by it.
           AND (j.slot = v_slots[1] OR j.slot = v_slots[2] OR j.slot = v_slots[3] OR j.slot = v_slots[4] OR j.slot = v_slots[5])
           AND (_archive.leases IS NULL
                OR (j.lease = i.lease AND j.status = 'running' AND j.worker_id = _archive.worker_id))
        RETURNING j.*,
                  CASE WHEN i.status IN ('interrupted', 'released', 'snoozed') THEN 'canceled'
                       WHEN i.status IN ('failed', 'fatal') AND j.cancel_requested THEN 'canceled'
                       WHEN i.status = 'fatal' THEN 'failed'
                       ELSE i.status END AS final_status,
                  i.status IN ('failed', 'interrupted', 'snoozed', 'fatal') AS ended_attempt,
                  CASE WHEN i.status IN ('interrupted', 'snoozed', 'fatal') THEN i.status END AS noted,
                  -- Not an attempt: an interrupted one or a snooze is not counted, a released
                  -- job never started (and had no worker).
                  i.status IN ('interrupted', 'released', 'snoozed') AS uncounted,
                  i.status = 'released' AS released,
                  i.details AS final_details
    ), keys AS (
        -- The keys as an array (no join: a hash join would read the whole of live_keys). A key
        -- is held by one job, so key and holder both among the moved ones is that job's key.
        DELETE FROM pgq.live_keys k
         WHERE k.dedupe_key = ANY (ARRAY(SELECT g.dedupe_key FROM gone g WHERE g.dedupe_key IS NOT NULL))
           AND k.job_id = ANY (ARRAY(SELECT g.id FROM gone g WHERE g.dedupe_key IS NOT NULL))
    ), ins AS (
        INSERT INTO pgq.job_history AS h (id, entrypoint, status, priority, attempt, payload, headers,
                                          dedupe_key, enqueued_at, started_at, finished_at, worker_id,
                                          lease, details, errors, timeout, group_key)
        SELECT g.id, g.entrypoint, g.final_status, g.priority,
               CASE WHEN g.uncounted THEN g.attempt - 1 ELSE g.attempt END, g.payload, g.headers,
               g.dedupe_key, g.enqueued_at, CASE WHEN g.released THEN NULL ELSE g.started_at END,
               _archive.at, CASE WHEN g.released THEN NULL ELSE g.worker_id END,
               CASE WHEN _archive.leases IS NULL THEN NULL ELSE g.lease END, g.final_details,
               CASE WHEN g.ended_attempt
                    THEN g.errors || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                             'attempt', g.attempt, 'at', _archive.at,
                             'lease', CASE WHEN _archive.leases IS NULL THEN NULL ELSE g.lease END,
                             'worker_id', CASE WHEN _archive.leases IS NULL THEN NULL ELSE g.worker_id END,
                             'outcome', g.noted,
                             'decision', g.final_status))
                             || jsonb_build_object('details', g.final_details))
                    ELSE g.errors END,
               g.timeout, g.group_key
          FROM gone g
    )
    -- The attempt that ended (an interrupted one too, though history does not count it).
    SELECT g.id, g.entrypoint, g.final_status, g.attempt FROM gone g;
    -- Workflows: jobs that others wait for settle their edges now (pgq._settle_deps; not
    -- again for the children it cancels itself). In a database that never used dependencies,
    -- a read of a sequence (a simple expression: no statement); else one probe of
    -- job_deps_pending_idx per job, by its id (not a probe for any pending edge at all: under
    -- a held horizon that walks the dead entries of every edge settled since).
    IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pgq.job_deps d WHERE d.parent_id = ANY (_archive.ids) AND d.state = 'pending')
           AND coalesce(current_setting('pgq.settling', true), 'off') <> 'on' THEN
            PERFORM pgq._settle_deps(_archive.ids, _archive.at);
        END IF;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._archive(bigint[], text[], jsonb[], timestamptz, uuid, bigint[], smallint[]) IS
    'Private. Moves jobs from pgq.jobs to pgq.job_history with their final status (lease-checked when leases are given); returns the jobs moved (id, entrypoint, status, attempt).';

-- sql/functions/_check_batch.sql
-- pgq._check_batch(worker_id, ids, leases): validate the arguments every lease-guarded call takes.
-- Contract: worker_id is not NULL; ids and leases are arrays of the same length without NULLs;
--   ids hold no duplicates. Returns the number of elements (0 for two empty arrays).
-- Locking: none.
-- Errors: PQ009 NULL worker_id, NULL or multi-dimensional array, NULL element or duplicate id;
--   PQ003 ids and leases of unequal length.
CREATE OR REPLACE FUNCTION pgq._check_batch(worker_id uuid, ids bigint[], leases bigint[])
RETURNS int
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_n int := cardinality(ids);
BEGIN
    IF worker_id IS NULL THEN
        RAISE EXCEPTION 'worker_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF ids IS NULL OR leases IS NULL THEN
        RAISE EXCEPTION 'ids and leases must not be NULL (ids %, leases %)',
            coalesce(ids::text, 'NULL'), coalesce(leases::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF array_ndims(ids) > 1 OR array_ndims(leases) > 1 THEN
        PERFORM pgq._check_dims(ids, 'ids');
        PERFORM pgq._check_dims(leases, 'leases');
    END IF;
    IF cardinality(leases) <> v_n THEN
        RAISE EXCEPTION 'leases has % elements but ids has %', cardinality(leases), v_n
            USING ERRCODE = 'PQ003';
    END IF;
    IF array_position(ids, NULL) IS NOT NULL OR array_position(leases, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids and leases must not contain NULL (ids %, leases %)', ids, leases
            USING ERRCODE = 'PQ009';
    END IF;
    IF v_n > 1 AND (SELECT count(DISTINCT u) FROM unnest(ids) AS u) <> v_n THEN
        RAISE EXCEPTION 'ids must not repeat, got %', ids USING ERRCODE = 'PQ009';
    END IF;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq._check_batch(uuid, bigint[], bigint[]) IS
    'Private. Validates worker_id, ids and leases of lease-guarded calls (PQ009, PQ003); returns the batch size.';

-- sql/functions/_check_cron.sql
-- pgq._check_cron(cron): a cron expression every scheduler can compute times for.
-- Contract: returns the expression with its whitespace normalised (fields separated by one
--   space). Accepted: 5 fields (minute hour day-of-month month day-of-week) or 6 (a seconds
--   field first). Each field is a comma-separated list of items; an item is `*`, a value, or a
--   range `a-b` (a <= b), each optionally followed by `/step` (1 <= step <= the field's span); a
--   value alone with a step (`5/15`) means from that value on. Values: seconds and minutes
--   0-59, hours 0-23, day of month 1-31, month 1-12 or jan-dec, day of week 0-7 (0 and 7 are
--   Sunday) or sun-sat, names in any case. Also `?` as a whole day field; `L` (last day) or `nW`
--   as the whole day of month when day of week is `*` or `?`; `d#n` (n-th weekday d of the
--   month, n 1-5) in day of week when day of month is `*` or `?`. A day of month
--   that no month of the month field has (`0 0 30 2 *`) is refused too, when the day of week
--   field is `*` or `?`. This is a subset of what croniter (the Python client's cron library)
--   accepts, so a stored schedule always has a next time; anything else is refused here.
-- Locking: none.
-- Errors: PQ011 naming the expression and the first bad field.
CREATE OR REPLACE FUNCTION pgq._check_cron(cron text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    c_kinds  constant text[] := ARRAY['second', 'minute', 'hour', 'day of month', 'month', 'day of week'];
    c_lo     constant int[]  := ARRAY[0, 0, 0, 1, 1, 0];
    c_hi     constant int[]  := ARRAY[59, 59, 23, 31, 12, 7];
    c_months constant text[] := ARRAY['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
    c_days   constant text[] := ARRAY['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
    c_mdays  constant int[]  := ARRAY[31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    v_fields text[];
    v_k      int;
    v_item   text;
    v_m      text[];
    v_a      int;
    v_b      int;
    v_step   int;
    v_days   int[];
    v_months int[];
    v_plain  boolean := true;
    v_why    text;
BEGIN
    IF cron IS NULL OR octet_length(cron) > 1000 THEN
        RAISE EXCEPTION 'invalid cron expression %: expected 5 or 6 fields', coalesce(quote_literal(left(cron, 100)), 'NULL')
            USING ERRCODE = 'PQ011';
    END IF;
    v_fields := regexp_split_to_array(btrim(cron, E' \t\n\r'), '\s+');
    IF cardinality(v_fields) NOT IN (5, 6) THEN
        RAISE EXCEPTION 'invalid cron expression %: expected 5 or 6 fields', quote_literal(cron)
            USING ERRCODE = 'PQ011';
    END IF;
    FOR i IN 1 .. cardinality(v_fields) LOOP
        v_k := i + 6 - cardinality(v_fields);          -- index into c_kinds
        FOREACH v_item IN ARRAY string_to_array(lower(v_fields[i]), ',') LOOP
            v_why := NULL;
            IF v_item = '?' AND v_fields[i] <> '?' THEN
                v_why := '''?'' must be the whole field';
            ELSIF v_k = 4 AND (v_item = 'l' OR v_item ~ '^[0-9]{1,2}w$')
                  AND (lower(v_fields[i]) <> v_item OR v_fields[cardinality(v_fields)] NOT IN ('*', '?')) THEN
                v_why := format('%s must be the whole field, with * or ? as the day of week', quote_literal(v_item));
            ELSIF v_item IN ('?', 'l') OR v_item ~ '^[0-9]{1,2}w$' THEN
                IF v_k = 4 AND v_item IN ('?', 'l') THEN
                    v_plain := false;
                    CONTINUE;
                ELSIF v_k = 4 AND substr(v_item, 1, length(v_item) - 1)::int BETWEEN 1 AND 31 THEN
                    v_plain := false;
                    CONTINUE;
                ELSIF v_k = 6 AND v_item = '?' THEN
                    CONTINUE;
                END IF;
                v_why := format('%s is not allowed here', quote_literal(v_item));
            ELSIF v_k = 6 AND v_item ~ '^[a-z0-9]+#[0-9]+$' AND v_fields[i - 1] NOT IN ('*', '?') THEN
                v_why := format('%s needs * or ? as the day of month', quote_literal(v_item));
            ELSIF v_k = 6 AND v_item ~ '^[a-z0-9]+#[0-9]+$' THEN
                v_m := regexp_match(v_item, '^([a-z0-9]+)#([0-9]+)$');
                v_a := CASE WHEN v_m[1] ~ '^[0-9]{1,2}$' THEN v_m[1]::int ELSE array_position(c_days, v_m[1]) - 1 END;
                IF v_a IS NULL OR v_a NOT BETWEEN 0 AND 7 OR length(v_m[2]) > 1 OR v_m[2]::int NOT BETWEEN 1 AND 5 THEN
                    v_why := format('%s is not a weekday#n with n from 1 to 5', quote_literal(v_item));
                END IF;
            ELSE
                v_m := regexp_match(v_item, '^(\*|[a-z0-9]+)(?:-([a-z0-9]+))?(?:/([0-9]+))?$');
                IF v_m IS NULL OR (v_m[1] = '*' AND v_m[2] IS NOT NULL) THEN
                    v_why := format('%s is not *, a value or a range with an optional /step', quote_literal(v_item));
                ELSE
                    IF v_m[1] = '*' THEN
                        v_a := c_lo[v_k];
                        v_b := c_hi[v_k];
                    ELSE
                        v_a := CASE WHEN v_m[1] ~ '^[0-9]{1,2}$' THEN v_m[1]::int
                                    WHEN v_k = 5 THEN array_position(c_months, v_m[1])
                                    WHEN v_k = 6 THEN array_position(c_days, v_m[1]) - 1 END;
                        v_b := CASE WHEN v_m[2] IS NULL THEN CASE WHEN v_m[3] IS NULL THEN v_a ELSE c_hi[v_k] END
                                    WHEN v_m[2] ~ '^[0-9]{1,2}$' THEN v_m[2]::int
                                    WHEN v_k = 5 THEN array_position(c_months, v_m[2])
                                    WHEN v_k = 6 THEN array_position(c_days, v_m[2]) - 1 END;
                    END IF;
                    v_step := CASE WHEN v_m[3] IS NULL THEN 1 WHEN length(v_m[3]) <= 3 THEN v_m[3]::int END;
                    IF v_a IS NULL OR v_b IS NULL OR v_a NOT BETWEEN c_lo[v_k] AND c_hi[v_k]
                       OR v_b NOT BETWEEN c_lo[v_k] AND c_hi[v_k] THEN
                        v_why := format('%s is outside %s..%s', quote_literal(v_item), c_lo[v_k], c_hi[v_k]);
                    ELSIF v_a > v_b THEN
                        v_why := format('%s is a range that ends before it starts', quote_literal(v_item));
                    ELSIF v_step IS NULL OR v_step NOT BETWEEN 1 AND c_hi[v_k] - c_lo[v_k] + 1 THEN
                        v_why := format('%s has a step outside 1..%s', quote_literal(v_item), c_hi[v_k] - c_lo[v_k] + 1);
                    ELSIF v_k = 4 THEN
                        v_days := v_days || ARRAY(SELECT generate_series(v_a, v_b, v_step));
                    ELSIF v_k = 5 THEN
                        v_months := v_months || ARRAY(SELECT generate_series(v_a, v_b, v_step));
                    END IF;
                END IF;
            END IF;
            IF v_why IS NOT NULL THEN
                RAISE EXCEPTION 'invalid cron expression %: % field %',
                    quote_literal(cron), c_kinds[v_k], v_why
                    USING ERRCODE = 'PQ011';
            END IF;
        END LOOP;
    END LOOP;
    -- With a restricted day of week, croniter fires on days matching either day field.
    v_plain := v_plain AND v_fields[cardinality(v_fields)] IN ('*', '?');
    IF v_plain AND v_days IS NOT NULL
       AND (SELECT min(d) FROM unnest(v_days) AS d)
           > (SELECT max(c_mdays[m]) FROM unnest(coalesce(v_months, ARRAY[1,2,3,4,5,6,7,8,9,10,11,12])) AS m) THEN
        RAISE EXCEPTION 'invalid cron expression %: no month of the month field has day %',
            quote_literal(cron), (SELECT min(d) FROM unnest(v_days) AS d)
            USING ERRCODE = 'PQ011';
    END IF;
    RETURN array_to_string(v_fields, ' ');
END
$$;
COMMENT ON FUNCTION pgq._check_cron(text) IS
    'Private. Raises PQ011 unless the cron expression is one every scheduler can compute (5 or 6 fields, ranges, steps, names); returns it normalised.';

-- sql/functions/_check_dedupe_key.sql
-- pgq._check_dedupe_key(key, ord): a dedupe key a producer may use.
-- Contract: NULL passes. A key is at most 1000 bytes (the unique index on live keys cannot hold
--   much more than 2,700) and must not start with 'pgq:schedule:', the prefix of schedule fires
--   (pgq.fire_schedule, pgq.fire_schedule_now): a producer cannot take or forge the key of a
--   scheduled tick. Only a call made from inside one of those two (seen on the call stack;
--   nobody else can create a function in schema pgq) may use the prefix. ord is the key's position in the call.
-- Locking: none.
-- Errors: PQ009 naming the key (cut to 60 characters) and its position.
CREATE OR REPLACE FUNCTION pgq._check_dedupe_key(key text, ord bigint)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_stack text;
BEGIN
    IF octet_length(key) > 1000 THEN
        RAISE EXCEPTION 'dedupe key % at position % is % bytes, over the 1000-byte limit',
            quote_literal(left(key, 60) || '...'), ord, octet_length(key)
            USING ERRCODE = 'PQ009';
    END IF;
    IF starts_with(key, 'pgq:schedule:') THEN
        GET DIAGNOSTICS v_stack = PG_CONTEXT;
        -- A line of the stack starts with the function's name, schema-qualified unless it is
        -- visible on this function's search_path (pg_catalog, pgq): either way only ours
        -- matches (temporary functions are always printed qualified).
        IF v_stack !~ '(^|\n)PL/pgSQL function (pgq\.)?fire_schedule(_now)?\(' THEN
            RAISE EXCEPTION 'dedupe key % at position % uses the prefix ''pgq:schedule:'', reserved for schedule fires',
                quote_literal(left(key, 60)), ord
                USING ERRCODE = 'PQ009';
        END IF;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_dedupe_key(text, bigint) IS
    'Private. Raises PQ009 for a dedupe key over 1000 bytes or one using the reserved prefix pgq:schedule: outside pgq.fire_schedule.';

-- sql/functions/_check_details.sql
-- pgq._check_details(statuses, details): the per-job arrays pgq.complete takes besides ids.
-- Contract: both one-dimensional; every details value fit to store and hand out (at most
--   1 MiB as JSON text, nested at most 64 levels, numbers a double holds: pgq._json_problem),
--   so a retry_after of 1e-400 or a result no client can decode is refused before anything is
--   written. Lengths and statuses are checked by the caller.
-- Locking: none.
-- Errors: PQ009 naming the position (PQ006 for a value over 1 MiB).
CREATE OR REPLACE FUNCTION pgq._check_details(statuses text[], details jsonb[])
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_bad record;
BEGIN
    PERFORM pgq._check_dims(statuses, 'statuses');
    PERFORM pgq._check_dims(details, 'details');
    IF details IS NULL THEN
        RETURN;
    END IF;
    SELECT u.ord, pgq._json_problem(u.d, 1048576) AS problem INTO v_bad
      FROM unnest(details) WITH ORDINALITY AS u(d, ord)
     WHERE NOT pgq._json_ok(u.d, 1048576)
     ORDER BY u.ord
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'details at position % %', v_bad.ord, v_bad.problem
            USING ERRCODE = CASE WHEN v_bad.problem LIKE 'is % bytes%' THEN 'PQ006' ELSE 'PQ009' END;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_details(text[], jsonb[]) IS
    'Private. Raises PQ009/PQ006 for multi-dimensional statuses or details, or a details value unfit to store.';

-- sql/functions/_check_dims.sql
-- pgq._check_dims(value, what): a one-dimensional array.
-- Contract: NULL and one-dimensional arrays (empty ones too) pass; an array of two or more
--   dimensions ('{{1},{2}}') is refused instead of being flattened or failing later. Returns
--   true (so a LANGUAGE sql function can call it in a WHERE clause).
-- Locking: none.
-- Errors: PQ009 naming the argument and its dimensions.
CREATE OR REPLACE FUNCTION pgq._check_dims(value anyarray, what text)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF array_ndims(value) > 1 THEN
        RAISE EXCEPTION '% must be a one-dimensional array, got % dimensions %',
            what, array_ndims(value), array_dims(value)
            USING ERRCODE = 'PQ009';
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION pgq._check_dims(anyarray, text) IS
    'Private. Raises PQ009 for an array of more than one dimension.';

-- sql/functions/_check_history_filter.sql
-- pgq._check_history_filter(entrypoint, statuses, since, until, n, max_n, n_name)
-- Contract: validates the filter arguments shared by pgq.find_history, pgq.requeue_history and
--   pgq.delete_history (and the page or batch size n, 1..max_n). Returns nothing.
-- Locking: none.
-- Errors: PQ001 bad entrypoint (NULL is allowed: all); PQ009 statuses NULL, empty, with NULL
--   or unknown elements, since after until; PQ002 n outside 1..max_n.
CREATE OR REPLACE FUNCTION pgq._check_history_filter(
    entrypoint  text,
    statuses    text[],
    since       timestamptz,
    until       timestamptz,
    n           int,
    max_n       int,
    n_name      text
)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF entrypoint IS NOT NULL THEN
        PERFORM pgq._check_name(entrypoint, 'entrypoint', 'PQ001');
    END IF;
    PERFORM pgq._check_dims(statuses, 'statuses');
    IF coalesce(cardinality(statuses), 0) = 0 OR array_position(statuses, NULL) IS NOT NULL
       OR NOT statuses <@ ARRAY['successful', 'failed', 'canceled'] THEN
        RAISE EXCEPTION 'statuses must be a non-empty array of successful, failed, canceled, got %',
            coalesce(statuses::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF since > until THEN
        RAISE EXCEPTION 'since % is after until %', since, until USING ERRCODE = 'PQ009';
    END IF;
    IF n IS NULL OR n NOT BETWEEN 1 AND max_n THEN
        RAISE EXCEPTION '% must be between 1 and %, got %', n_name, max_n, coalesce(n::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_history_filter(text, text[], timestamptz, timestamptz, int, int, text) IS
    'Private. Validates the history filter of find_history, requeue_history and delete_history.';

-- sql/functions/_check_interval.sql
-- pgq._check_interval(value, what, lo, hi, errcode): an interval within sane bounds.
-- Contract: NULL passes (the caller decides what NULL means). Otherwise lo <= value <= hi
--   (interval comparison: a month counts as 30 days, so callers state bounds in days), which
--   also refuses the infinite intervals of PostgreSQL 17 and later. Returns the value.
-- Locking: none.
-- Errors: errcode (PQ008 for policy values, PQ009 for other arguments), naming the argument,
--   the value and the bounds.
CREATE OR REPLACE FUNCTION pgq._check_interval(value interval, what text, lo interval, hi interval,
                                               errcode text DEFAULT 'PQ008')
RETURNS interval
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF value < lo OR value > hi THEN
        RAISE EXCEPTION '% must be between % and %, got %', what, lo, hi, value
            USING ERRCODE = errcode;
    END IF;
    RETURN value;
END
$$;
COMMENT ON FUNCTION pgq._check_interval(interval, text, interval, interval, text) IS
    'Private. Raises errcode unless the interval is NULL or within lo .. hi; returns it.';

-- sql/functions/_check_job.sql
-- pgq._check_job(entrypoint, payload, priority, headers, ord)
-- Contract: raises the error for the first rule this job breaks, naming the value and its
--   position in the call; returns nothing when the job is valid. The rules: entrypoint of 1 to
--   pgq._valid_name (PQ001), priority within smallint range (PQ005),
--   payload of at most 1 MiB (PQ006), headers NULL or a JSON object (PQ009). One place for the
--   messages of pgq.enqueue and pgq.enqueue_many.
-- Locking: none.
-- Errors: PQ001, PQ005, PQ006, PQ009.
CREATE OR REPLACE FUNCTION pgq._check_job(
    entrypoint  text,
    payload     jsonb,
    priority    int,
    headers     jsonb,
    ord         bigint
)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF NOT coalesce(pgq._valid_name(entrypoint), false) THEN
        RAISE EXCEPTION 'invalid entrypoint % at position %: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL',
            coalesce(quote_literal(left(entrypoint, 220)), 'NULL'), ord
            USING ERRCODE = 'PQ001';
    END IF;
    IF priority NOT BETWEEN -32768 AND 32767 THEN
        RAISE EXCEPTION 'priority % at position % is out of range (-32768 to 32767)', priority, ord
            USING ERRCODE = 'PQ005';
    END IF;
    IF pg_column_size(payload) > 1048576 THEN
        RAISE EXCEPTION 'payload at position % is % bytes, over the 1048576-byte limit',
            ord, pg_column_size(payload)
            USING ERRCODE = 'PQ006';
    END IF;
    IF headers IS NOT NULL AND jsonb_typeof(headers) <> 'object' THEN
        RAISE EXCEPTION 'headers at position % must be a JSON object, got %', ord, jsonb_typeof(headers)
            USING ERRCODE = 'PQ009';
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_job(text, jsonb, int, jsonb, bigint) IS
    'Private. Raises PQ001/PQ005/PQ006/PQ009 for the first rule a job to enqueue breaks, naming its position.';

-- sql/functions/_check_jobs.sql
-- pgq._check_jobs(entrypoints, payloads, priorities, run_ats, dedupe_keys, headers)
-- Contract: the rules pgq.enqueue and pgq.enqueue_many check beyond pgq._check_job (which
--   keeps the entrypoint, priority and headers-type rules), element by element, raising for the
--   first element that breaks one and naming its position: every array one-dimensional;
--   payload at most 1 MiB and headers at most 64 KiB as JSON text (uncompressed), nested at most
--   64 levels, numbers a double holds (pgq._json_problem); run_at within
--   pgq._check_time's range; dedupe keys within pgq._check_dedupe_key's rules. Arrays may be
--   NULL (defaults); their lengths are checked by the caller.
-- Locking: none.
-- Errors: PQ006 payload or headers too large; PQ009 other bad values or dimensions.
CREATE OR REPLACE FUNCTION pgq._check_jobs(
    entrypoints  text[],
    payloads     jsonb[],
    priorities   int[],
    run_ats      timestamptz[],
    dedupe_keys  text[],
    headers      jsonb[]
)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_bad record;
BEGIN
    IF array_ndims(_check_jobs.entrypoints) > 1 OR array_ndims(_check_jobs.payloads) > 1
       OR array_ndims(_check_jobs.priorities) > 1 OR array_ndims(_check_jobs.run_ats) > 1
       OR array_ndims(_check_jobs.dedupe_keys) > 1 OR array_ndims(_check_jobs.headers) > 1 THEN
        PERFORM pgq._check_dims(_check_jobs.entrypoints, 'entrypoints');
        PERFORM pgq._check_dims(_check_jobs.payloads, 'payloads');
        PERFORM pgq._check_dims(_check_jobs.priorities, 'priorities');
        PERFORM pgq._check_dims(_check_jobs.run_ats, 'run_ats');
        PERFORM pgq._check_dims(_check_jobs.dedupe_keys, 'dedupe_keys');
        PERFORM pgq._check_dims(_check_jobs.headers, 'headers');
    END IF;
    -- One job (pgq.enqueue, pgq.schedule): plain expressions, no query.
    IF coalesce(cardinality(_check_jobs.payloads), 0) <= 1 AND coalesce(cardinality(_check_jobs.headers), 0) <= 1
       AND coalesce(cardinality(_check_jobs.run_ats), 0) <= 1 AND coalesce(cardinality(_check_jobs.dedupe_keys), 0) <= 1
       AND pgq._json_ok(_check_jobs.payloads[1], 1048576) AND pgq._json_ok(_check_jobs.headers[1], 65536)
       AND coalesce(_check_jobs.run_ats[1] >= timestamptz '1970-01-01 00:00:00+00'
                    AND _check_jobs.run_ats[1] < timestamptz '9000-01-01 00:00:00+00', true)
       AND coalesce(octet_length(_check_jobs.dedupe_keys[1]) <= 1000
                    AND NOT starts_with(_check_jobs.dedupe_keys[1], 'pgq:schedule:'), true) THEN
        RETURN;
    END IF;

    SELECT u.ord, pgq._json_problem(u.p, 1048576) AS p_problem, pgq._json_problem(u.h, 65536) AS h_problem,
           u.ra, u.dk
      INTO v_bad
      FROM unnest(_check_jobs.payloads, _check_jobs.headers, _check_jobs.run_ats, _check_jobs.dedupe_keys)
           WITH ORDINALITY AS u(p, h, ra, dk, ord)
     WHERE NOT pgq._json_ok(u.p, 1048576)
        OR NOT pgq._json_ok(u.h, 65536)
        OR u.ra < timestamptz '1970-01-01 00:00:00+00' OR u.ra >= timestamptz '9000-01-01 00:00:00+00'
        OR octet_length(u.dk) > 1000 OR starts_with(u.dk, 'pgq:schedule:')
     ORDER BY u.ord
     LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_bad.p_problem IS NOT NULL THEN
        RAISE EXCEPTION 'payload at position % %', v_bad.ord, v_bad.p_problem
            USING ERRCODE = CASE WHEN v_bad.p_problem LIKE 'is % bytes%' THEN 'PQ006' ELSE 'PQ009' END;
    END IF;
    IF v_bad.h_problem IS NOT NULL THEN
        RAISE EXCEPTION 'headers at position % %', v_bad.ord, v_bad.h_problem
            USING ERRCODE = CASE WHEN v_bad.h_problem LIKE 'is % bytes%' THEN 'PQ006' ELSE 'PQ009' END;
    END IF;
    PERFORM pgq._check_time(v_bad.ra, format('run_at at position %s', v_bad.ord));
    PERFORM pgq._check_dedupe_key(v_bad.dk, v_bad.ord);
END
$$;
COMMENT ON FUNCTION pgq._check_jobs(text[], jsonb[], int[], timestamptz[], text[], jsonb[]) IS
    'Private. Raises PQ006/PQ009 for the first job breaking the size, nesting, number, time, dedupe-key or dimension rules.';

-- sql/functions/_check_name.sql
-- pgq._check_name(value, what, errcode): validate an entrypoint or schedule name.
-- Contract: raises errcode with a message naming the bad value unless pgq._valid_name(value)
--   (the one name rule: 1 to 200 bytes without control characters, commas, braces, double
--   quotes, backslashes or surrounding spaces, not the word NULL); returns nothing otherwise.
-- Locking: none.
-- Errors: errcode (PQ001 for entrypoints, PQ011 for schedule names).
CREATE OR REPLACE FUNCTION pgq._check_name(value text, what text, errcode text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF NOT coalesce(pgq._valid_name(value), false) THEN
        RAISE EXCEPTION 'invalid % %: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL',
            what, coalesce(quote_literal(left(value, 220)), 'NULL')
            USING ERRCODE = errcode;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_name(text, text, text) IS
    'Private. Raises errcode unless pgq._valid_name(value).';

-- sql/functions/_check_time.sql
-- pgq._check_time(value, what): a time the queue can store, compute with and hand to clients.
-- Contract: NULL passes (the caller's default applies). Otherwise the time must be finite and
--   from 1970-01-01 00:00 UTC (inclusive) to 9000-01-01 00:00 UTC (exclusive): far enough from
--   the limits of timestamptz that adding the largest allowed interval (see
--   pgq._check_interval callers) or subtracting it cannot overflow, and within what every client
--   language decodes (Python's datetime stops at year 9999). Returns the value, so a caller
--   writes `coalesce(pgq._check_time(f.at, 'at'), now())`.
-- Locking: none.
-- Errors: PQ009 naming the argument and the value.
CREATE OR REPLACE FUNCTION pgq._check_time(value timestamptz, what text)
RETURNS timestamptz
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF value < timestamptz '1970-01-01 00:00:00+00' OR value >= timestamptz '9000-01-01 00:00:00+00' THEN
        RAISE EXCEPTION '% % is out of range: times must be finite, from 1970-01-01 to 9000-01-01 UTC',
            what, quote_literal(value::text)
            USING ERRCODE = 'PQ009';
    END IF;
    RETURN value;
END
$$;
COMMENT ON FUNCTION pgq._check_time(timestamptz, text) IS
    'Private. Raises PQ009 unless the time is NULL or finite within 1970-01-01 .. 9000-01-01 UTC; returns it.';

-- sql/functions/_claim_keyed.sql
-- pgq._claim_keyed(entrypoints, limited, batch_size, at)
-- Contract: the jobs pgq.claim takes when it holds the policy row of an entrypoint with a
--   key_concurrency_limit or a rate limit per key (rate_per_key; limited: the entrypoints whose
--   rows it locked): the ids of up to batch_size queued jobs, locked, as pgq.claim's own
--   statement chooses them (priority, then ready order, within each entrypoint's quota,
--   pgq._quota), except that the lanes of key-limited entrypoints take their candidates from
--   pgq._keyed_candidates (group keys in turn, each within its room: running jobs and starts
--   in the rate window per key), and each key is capped again across the lanes of its
--   entrypoint with the room they reported (a key queued at two priorities) before the
--   entrypoint's quota is counted. Only called when such a row is held, so a claim without key
--   limits runs its own statement and pays nothing for this one.
--   The starts of the chosen jobs of rate-limited entrypoints are recorded here, in the same
--   statement (pgq._rate_rows inlined into a data-modifying CTE: it knows each job's budget, so
--   pgq.claim does not read the jobs again, and the record starts no statement of its own);
--   pgq.claim's UPDATE then takes every job chosen (they are locked), in the same transaction.
-- Locking: FOR UPDATE SKIP LOCKED on the candidates (pgq.claim holds the policy rows); inserts
--   into pgq.rate_starts.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._claim_keyed(
    entrypoints  text[],
    limited      text[],
    batch_size   int,
    at           timestamptz
)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq.claim, whose settings (generic plans, no JIT, no sequential or bitmap
-- scans) are in force here too, and in pgq._keyed_candidates, which it calls: setting them
-- again would cost every call.
AS $$
#variable_conflict use_column
DECLARE
    c_whole constant bigint := -9223372036854775808;  -- pgq.rate_starts.key_hash: no key
    v_ids   bigint[];
BEGIN
    WITH eps AS MATERIALIZED (  -- (each quota computed once, not again in the filter of lanes)
        SELECT c.entrypoint, c.key_concurrency_limit AS key_limit,
               c.key_concurrency_limit IS NOT NULL OR (c.rate_per_key AND c.rate_limit IS NOT NULL) AS keyed,
               CASE WHEN c.rate_per_key THEN c.rate_limit END AS key_rate, c.rate_period,
               c.rate_limit IS NOT NULL AS rated,
               CASE WHEN c.concurrency_limit IS NULL AND c.key_concurrency_limit IS NULL AND c.rate_limit IS NULL
                    THEN _claim_keyed.batch_size
                    WHEN NOT c.entrypoint = ANY (_claim_keyed.limited) THEN 0  -- (another claimer holds it)
                    -- Only limits per key: pgq._quota's answer, without its call (the rooms are
                    -- pgq._keyed_candidates').
                    WHEN c.concurrency_limit IS NULL AND (c.rate_limit IS NULL OR c.rate_per_key)
                    THEN _claim_keyed.batch_size
                    ELSE pgq._quota(c.entrypoint, c.concurrency_limit, c.rate_limit, c.rate_period,
                                    c.rate_per_key, _claim_keyed.batch_size, _claim_keyed.at) END AS quota
          FROM pgq.entrypoints c
         WHERE c.entrypoint = ANY (_claim_keyed.entrypoints)
           AND c.paused_at IS NULL
    ), lanes AS MATERIALIZED (
        SELECT l.entrypoint, l.priority, eps.quota, eps.key_limit, eps.keyed, eps.key_rate, eps.rate_period, eps.rated,
               l.turn_seq,
               pgq._lane_cursor(l.entrypoint, l.priority, l.cursor_seq) AS cursor
          FROM eps
          JOIN pgq.lanes l ON l.entrypoint = eps.entrypoint
         WHERE eps.quota > 0
    ), candidates AS (
        -- Lanes without per-key limits (pgq._lane_jobs: a claim of keyed lanes only never calls
        -- it, nor prepares its read).
        SELECT q.id, lanes.entrypoint, lanes.priority, q.ready_seq, lanes.quota, NULL::bigint AS key_hash,
               NULL::int AS room, lanes.rated, false AS per_key, NULL::text AS group_key
          FROM lanes
         CROSS JOIN LATERAL pgq._lane_jobs(lanes.entrypoint, lanes.priority, lanes.cursor,
                                           least(lanes.quota, _claim_keyed.batch_size)::int, _claim_keyed.at) AS q
         WHERE NOT lanes.keyed
        UNION ALL
        -- Per-key limits and fair share (pgq._keyed_candidates): keys in turn, each within its room.
        SELECT k.id, lanes.entrypoint, lanes.priority, k.ready_seq, lanes.quota, k.key_hash, k.room,
               lanes.rated, lanes.key_rate IS NOT NULL, k.group_key
          FROM lanes
         CROSS JOIN LATERAL pgq._keyed_candidates(lanes.entrypoint, lanes.priority, lanes.cursor, lanes.turn_seq,
                                                  least(lanes.quota, _claim_keyed.batch_size)::int, lanes.key_limit,
                                                  lanes.key_rate, lanes.rate_period, _claim_keyed.at) AS k
         WHERE lanes.keyed
    ), chosen AS MATERIALIZED (
        SELECT r.id, r.entrypoint, r.rated,
               CASE WHEN r.per_key AND r.group_key IS NOT NULL THEN r.key_hash ELSE c_whole END AS h,
               CASE WHEN r.per_key THEN r.group_key END AS k
          FROM (SELECT k.*,
                       -- numbered within the entrypoint's quota after the cap per key: a
                       -- candidate the cap drops does not use up the quota
                       row_number() OVER (PARTITION BY k.entrypoint
                                          ORDER BY k.priority DESC, k.ready_seq) AS n
                  FROM (SELECT c.id, c.entrypoint, c.priority, c.ready_seq, c.quota, c.room, c.rated, c.per_key,
                               c.key_hash, c.group_key,
                               row_number() OVER (PARTITION BY c.entrypoint, c.key_hash
                                                  ORDER BY c.priority DESC, c.ready_seq) AS kn
                          FROM candidates c) k
                 WHERE k.room IS NULL OR k.kn <= k.room) r
         WHERE r.n <= r.quota
         ORDER BY r.priority DESC, r.ready_seq
         LIMIT _claim_keyed.batch_size
    ), recorded AS (
        -- Rate-limited entrypoints: the starts, one row per budget (the whole entrypoint, or
        -- each group key with rate_per_key), counted by the next claim under the same
        -- policy-row lock; pgq.claim's UPDATE takes every job chosen here (they are locked):
        -- they start now. (A data-modifying CTE runs to its end, read or not.)
        INSERT INTO pgq.rate_starts (entrypoint, key_hash, rate_key, started_at, tokens, cum)
        SELECT r.*
          FROM (SELECT c.entrypoint, c.h, c.k, count(*)::int AS n
                  FROM chosen c
                 WHERE c.rated
                 GROUP BY 1, 2, 3) AS b
         CROSS JOIN LATERAL pgq._rate_rows(b.entrypoint, b.h, b.k, b.n, _claim_keyed.at) AS r
    )
    SELECT array_agg(c.id) INTO v_ids FROM chosen c;
    RETURN v_ids;
END
$$;
COMMENT ON FUNCTION pgq._claim_keyed(text[], text[], int, timestamptz) IS
    'Private. The jobs pgq.claim takes when it holds a key-limited entrypoint: its own choice, with the lanes of key-limited entrypoints served by pgq._keyed_candidates and each key capped across lanes.';

-- sql/functions/_cursor.sql
-- pgq._cursor(after, kind): decode a paging cursor of pgq.list_jobs / pgq.find_history.
-- Contract: a cursor is the text the listing returned in its cursor column: 'q,<priority>,
--   <ready number>' (queued jobs, claim order; the ready number comes back in the id column), 'r,<id>' (running jobs, id order) or
--   'h,<finished_at>,<id>' (history, newest first), timestamps as JSON text (ISO 8601 with
--   offset, independent of DateStyle). Returns its parts when its kind is `kind`; NULL parts for
--   a NULL cursor (the first page).
-- Locking: none.
-- Errors: PQ009 a cursor that does not parse, or of another kind (named in the message).
CREATE OR REPLACE FUNCTION pgq._cursor(after text, kind text)
RETURNS TABLE (priority int, at timestamptz, id bigint)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_parts text[] := string_to_array(after, ',');
BEGIN
    IF after IS NULL THEN
        RETURN QUERY SELECT NULL::int, NULL::timestamptz, NULL::bigint;
        RETURN;
    END IF;
    BEGIN
        IF v_parts[1] = kind AND kind = 'q' AND cardinality(v_parts) = 3 THEN
            -- queued: priority and ready number (in the id column)
            RETURN QUERY SELECT v_parts[2]::int, NULL::timestamptz, v_parts[3]::bigint;
            RETURN;
        ELSIF v_parts[1] = kind AND kind = 'r' AND cardinality(v_parts) = 2 THEN
            RETURN QUERY SELECT NULL::int, NULL::timestamptz, v_parts[2]::bigint;
            RETURN;
        ELSIF v_parts[1] = kind AND kind IN ('h', 's') AND cardinality(v_parts) = 3 THEN
            RETURN QUERY SELECT NULL::int, v_parts[2]::timestamptz, v_parts[3]::bigint;
            RETURN;
        END IF;
    EXCEPTION WHEN data_exception THEN
        NULL;  -- falls through to the error below
    END;
    RAISE EXCEPTION 'invalid cursor %: pass the cursor column of the previous page of the same listing',
        quote_literal(left(after, 100))
        USING ERRCODE = 'PQ009';
END
$$;
COMMENT ON FUNCTION pgq._cursor(text, text) IS
    'Private. Decodes a paging cursor (q: priority, ready number; r: id; h: finished_at, id; s: run_at, id); PQ009 when it does not parse.';

-- sql/functions/_enter_ring.sql
-- pgq._enter_ring(ids, from_status, entrypoints)
-- Contract: moves the jobs ids that are in jobs_scheduled (slot 4) with status from_status
--   ('scheduled': pgq._promote; 'waiting': a workflow's released children, pgq._settle_deps)
--   into the ring's current slot as 'queued', each with a new ready number, in run_at order
--   (then id), behind the fence of their entrypoints (pgq._ready_lock(entrypoints): the caller
--   names them). Every other column is kept (id, attempt, errors, dedupe key). A move is
--   DELETE ... RETURNING + INSERT in one statement (an UPDATE that changes the partition would
--   make a concurrent waiter fail; a waiter here finds the row gone and looks again, see
--   pgq.cancel). The jobs are found by id: no scan of an index that a held horizon fills with
--   dead entries. The insert trigger tells idle workers. Returns the number of jobs moved.
-- Locking: the fence of the entrypoints (shared, to the end of the transaction); the caller
--   holds the moved rows (FOR UPDATE).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._enter_ring(ids bigint[], from_status text, entrypoints text[])
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_n int;
BEGIN
    PERFORM pgq._ready_lock(_enter_ring.entrypoints);
    -- slot = 4 stays a literal: it leaves the ring's partitions out of the plan.
    WITH moved AS (
        DELETE FROM pgq.jobs j
         WHERE j.id = ANY (_enter_ring.ids)
           AND j.status = _enter_ring.from_status AND j.slot = 4
        RETURNING j.*
    )
    INSERT INTO pgq.jobs (id, entrypoint, status, priority, run_at, enqueued_at, attempt, payload,
                          headers, dedupe_key, cancel_requested, errors, timeout, ready_seq, slot, group_key)
    SELECT m.id, m.entrypoint, 'queued', m.priority, m.run_at, m.enqueued_at, m.attempt, m.payload,
           m.headers, m.dedupe_key, m.cancel_requested, m.errors, m.timeout, nextval('pgq.ready_seq'), pgq._slot(), m.group_key
      FROM (SELECT * FROM moved ORDER BY run_at, id) m;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq._enter_ring(bigint[], text, text[]) IS
    'Private. Moves jobs of jobs_scheduled (by id, with the given status) into the ring as queued, with ready numbers in run_at order behind the fence; the caller holds them.';

-- sql/functions/_find_history.sql
-- pgq._find_history(entrypoint, statuses, since, until, error, after_at, after_id, n,
--                   requeueable)
-- Contract: the history rows matching a filter, newest first (finished_at desc, id desc), at
--   most n, strictly after the keyset position (after_at, after_id) when given (keyset paging,
--   no OFFSET). Filter: entrypoint (NULL: all), status among statuses, finished_at in
--   [since, until) (NULL: open), error (NULL: any) found case-insensitively in the details'
--   error, message or traceback (or the details themselves when they are a JSON string).
--   requeueable: leave out rows whose dedupe key a live job holds (in pgq.live_keys: they
--   cannot be requeued).
--   Planned for each call's values (so a status filter of 'failed' uses the failed-jobs index).
--   Arguments are checked by the callers.
-- Locking: none (reads only).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._find_history(
    entrypoint   text,
    statuses     text[],
    since        timestamptz,
    until        timestamptz,
    error        text,
    after_at     timestamptz,
    after_id     bigint,
    n            int,
    requeueable  boolean
)
RETURNS SETOF pgq.job_history
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT h.*
      FROM pgq.job_history h
     WHERE (_find_history.entrypoint IS NULL OR h.entrypoint = _find_history.entrypoint)
       AND h.status = ANY (_find_history.statuses)
       AND (_find_history.since IS NULL OR h.finished_at >= _find_history.since)
       AND (_find_history.until IS NULL OR h.finished_at < _find_history.until)
       AND (_find_history.after_at IS NULL
            OR (h.finished_at <= _find_history.after_at
                AND (h.finished_at, h.id) < (_find_history.after_at, _find_history.after_id)))
       AND (_find_history.error IS NULL
            OR strpos(lower(concat_ws(' ', h.details ->> 'error', h.details ->> 'message', h.details ->> 'traceback',
                                      CASE WHEN jsonb_typeof(h.details) = 'string' THEN h.details #>> '{}' END)),
                      lower(_find_history.error)) > 0)
       AND (NOT _find_history.requeueable
            OR h.dedupe_key IS NULL
            OR NOT EXISTS (SELECT 1 FROM pgq.live_keys k WHERE k.dedupe_key = h.dedupe_key))
     ORDER BY h.finished_at DESC, h.id DESC
     LIMIT _find_history.n;
END
$$;
COMMENT ON FUNCTION pgq._find_history(text, text[], timestamptz, timestamptz, text, timestamptz, bigint, int, boolean) IS
    'Private. History rows matching entrypoint, statuses, finished_at range and error text, newest first, keyset-paged.';

-- sql/functions/_hist_quantiles.sql
-- pgq._hist_quantiles(bins, counts, qs): quantiles of a log-bucketed histogram, in seconds.
-- Contract: bins (ascending, no repeats) and counts are a sparse histogram as written by
--   pgq.rollup_metrics: bin 1 holds durations under 100 us, bin k (2..129) those from
--   0.0001 * 2^((k-2)/4) up to 0.0001 * 2^((k-1)/4) seconds, bin 130 those from 2^32 * 100 us
--   (429,497 s) on. For each q of qs (ascending, each in [0, 1]) returns the duration below
--   which a share q of the samples lies, interpolated geometrically inside its bin (linearly
--   in bin 1; bin 130 answers its lower bound), so an answer is off by at most one bin width
--   (about 19 %). NULL elements when the histogram is empty.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._hist_quantiles(bins int[], counts bigint[], qs float8[])
RETURNS float8[]
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_total  float8 := 0;
    v_cum    float8 := 0;
    v_out    float8[] := '{}';
    v_i      int := 1;
    v_target float8;
    v_frac   float8;
    v_n      int := coalesce(cardinality(bins), 0);
    v_q      float8;
BEGIN
    FOR k IN 1 .. v_n LOOP
        v_total := v_total + counts[k];
    END LOOP;
    FOREACH v_q IN ARRAY qs LOOP
        IF v_total <= 0 THEN
            v_out := v_out || NULL::float8;
            CONTINUE;
        END IF;
        v_target := v_q * v_total;
        -- Move to the bin where the cumulative count reaches the target (qs are ascending).
        WHILE v_i < v_n AND v_cum + counts[v_i] < v_target LOOP
            v_cum := v_cum + counts[v_i];
            v_i := v_i + 1;
        END LOOP;
        v_frac := least(1, greatest(0, (v_target - v_cum) / greatest(counts[v_i], 1)));
        v_out := v_out || CASE WHEN bins[v_i] <= 1 THEN 0.0001 * v_frac
                               WHEN bins[v_i] >= 130 THEN 0.0001 * 2 ^ 32
                               ELSE 0.0001 * 2 ^ ((bins[v_i] - 2 + v_frac) / 4.0) END;
    END LOOP;
    RETURN v_out;
END
$$;
COMMENT ON FUNCTION pgq._hist_quantiles(int[], bigint[], float8[]) IS
    'Private. Quantiles (seconds) of a sparse log-bucketed histogram of pgq.metrics_buckets, interpolated inside the bin.';

-- sql/functions/_jobs_after_delete.sql
-- pgq._jobs_after_delete(): statement-level AFTER DELETE trigger on pgq.jobs.
-- Contract: when running jobs of an entrypoint with a concurrency limit or a per-key limit
--   (key_concurrency_limit) leave the table, a slot is free again: sends {"kind": "enqueued", "entrypoints": [...]} so waiting workers claim at
--   once instead of at their next poll. Unlimited entrypoints send nothing.
-- Locking: none.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._jobs_after_delete()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_eps jsonb;
BEGIN
    SELECT jsonb_agg(c.entrypoint) INTO v_eps
      FROM pgq.entrypoints c
     WHERE (c.concurrency_limit IS NOT NULL OR c.key_concurrency_limit IS NOT NULL)
       AND c.entrypoint IN (SELECT o.entrypoint FROM old_rows o WHERE o.status = 'running');
    IF v_eps IS NOT NULL THEN
        PERFORM pgq._notify('enqueued', 'entrypoints', v_eps);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._jobs_after_delete() IS
    'Private trigger: notifies pgq_events when a running job of a concurrency- or key-limited entrypoint leaves.';

-- sql/functions/_jobs_after_insert.sql
-- pgq._jobs_after_insert(): statement-level AFTER INSERT trigger on pgq.jobs.
-- Contract: registers every new entrypoint in pgq.entrypoints with the default policy (at most
--   100 new ones per statement, so one producer call cannot flood the policy table, the
--   notifications and pgq.queue_stats), opens the lane (entrypoint, priority) of every new job
--   (pgq._add_lanes, at most 100 new ones per statement), then
--   sends {"kind": "enqueued", "entrypoints": [...]} naming the entrypoints that got jobs due
--   now, and {"kind": "scheduled", "entrypoints": [...]} naming those that got jobs due later
--   (a worker then asks pgq.next_run_at when to look, instead of claiming nothing now).
--   Never carries payload data (any role may LISTEN).
--   Every job's entrypoint row exists whenever its lane does (they are made together here and
--   removed together by pgq.prune_entrypoints), so one probe of pgq.lanes tells whether
--   anything is new; only then does the trigger write. This is where a job's entrypoint name
--   and priority are checked (pgq.jobs has no CHECK constraint on them: it would be prepared
--   again by every statement writing the table): the new pair's rows must pass
--   entrypoints_entrypoint_check (pgq._valid_name) and lanes_priority_check, else the
--   statement fails (23514) and adds nothing.
-- Locking: ROW EXCLUSIVE on pgq.entrypoints until commit, always (pgq.prune_entrypoints takes
--   SHARE ROW EXCLUSIVE: it waits for the transactions enqueueing now, and they for it, so no
--   job is added for an entrypoint row being removed). A first-time entrypoint briefly holds its
--   new pgq.entrypoints key until commit.
-- Errors: PQ001 more than 100 new entrypoints, PQ005 more than 100 new lanes in one statement
--   (the statement adds nothing).
CREATE OR REPLACE FUNCTION pgq._jobs_after_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_eps   jsonb;
    v_later jsonb;
    v_new   bigint;
BEGIN
    LOCK TABLE pgq.entrypoints IN ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT 1
                 FROM (SELECT DISTINCT n.entrypoint, n.priority FROM new_rows n) l
                WHERE NOT EXISTS (SELECT 1 FROM pgq.lanes x
                                   WHERE x.entrypoint = l.entrypoint AND x.priority = l.priority)) THEN
        WITH added AS (
            INSERT INTO pgq.entrypoints (entrypoint)
            SELECT DISTINCT n.entrypoint FROM new_rows n
            ON CONFLICT (entrypoint) DO NOTHING
            RETURNING 1
        )
        SELECT count(*) INTO v_new FROM added;
        IF v_new > 100 THEN
            RAISE EXCEPTION 'one statement may register at most 100 new entrypoints, this one registers %', v_new
                USING ERRCODE = 'PQ001',
                      HINT = 'Enqueue jobs of many new entrypoints in several calls, or configure the entrypoints first.';
        END IF;

        -- The missing lanes of the new jobs. Scheduled jobs too: the cap on new lanes is met
        -- by the producer, never by a later promotion.
        PERFORM pgq._add_lanes(array_agg(l.entrypoint), array_agg(l.priority))
           FROM (SELECT DISTINCT n.entrypoint, n.priority FROM new_rows n) l
               WHERE NOT EXISTS (SELECT 1 FROM pgq.lanes x WHERE x.entrypoint = l.entrypoint AND x.priority = l.priority)
        HAVING count(*) > 0;
    END IF;

    SELECT jsonb_agg(DISTINCT n.entrypoint) FILTER (WHERE n.status = 'queued'),
           jsonb_agg(DISTINCT n.entrypoint) FILTER (WHERE n.status = 'scheduled')
      INTO v_eps, v_later
      FROM new_rows n;
    IF v_eps IS NOT NULL THEN
        PERFORM pgq._notify('enqueued', 'entrypoints', v_eps);
    END IF;
    IF v_later IS NOT NULL THEN
        PERFORM pgq._notify('scheduled', 'entrypoints', v_later);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._jobs_after_insert() IS
    'Private trigger: registers new entrypoints and sends {"kind":"enqueued"} (due now) or {"kind":"scheduled"} (due later) on pgq_events.';

-- sql/functions/_jobs_after_update.sql
-- pgq._jobs_after_update(): statement-level AFTER UPDATE trigger on pgq.jobs.
-- Contract: when a statement puts running jobs back in the queue (retry, release), sends
--   {"kind": "enqueued", "entrypoints": [...]} for jobs due now, and {"kind": "scheduled",
--   "entrypoints": [...]} for jobs due later (a retry after its backoff: workers ask
--   pgq.next_run_at when to look, rather than wake now and claim nothing); when it flags
--   running jobs for cancellation, sends {"kind": "cancel", "ids": [...]}. Claims and
--   heartbeats (rows left running, no new cancel flag) return after one scan of the
--   transition table and send nothing. A promotion of scheduled jobs that became due is a
--   DELETE and an INSERT (pgq._promote), never an UPDATE: the insert trigger announces it.
-- Locking: none.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._jobs_after_update()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_eps   jsonb;
    v_later jsonb;
    v_ids   jsonb;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.status <> 'running' OR n.cancel_requested) THEN
        RETURN NULL;
    END IF;

    SELECT jsonb_agg(DISTINCT n.entrypoint) FILTER (WHERE n.status = 'queued' AND o.status <> 'queued'),
           jsonb_agg(DISTINCT n.entrypoint) FILTER (WHERE n.status = 'scheduled' AND o.status = 'running'),
           jsonb_agg(n.id ORDER BY n.id) FILTER (WHERE n.cancel_requested AND NOT o.cancel_requested)
      INTO v_eps, v_later, v_ids
      FROM new_rows n
      JOIN old_rows o ON o.id = n.id;

    PERFORM pgq._notify('enqueued', 'entrypoints', v_eps);
    PERFORM pgq._notify('scheduled', 'entrypoints', v_later);
    IF v_ids IS NOT NULL THEN
        PERFORM pgq._notify('cancel', 'ids', v_ids);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._jobs_after_update() IS
    'Private trigger: notifies pgq_events when jobs become runnable again or are flagged for cancellation.';

-- sql/functions/_json_ok.sql
-- pgq._json_ok(value, max_bytes): the fast test of pgq._json_problem, for the hot path.
-- Contract: true when value is NULL or fit to store (at most max_bytes as JSON text, nested at
--   most 64 levels, numbers a double holds), false otherwise; pgq._json_problem then says why.
--   A text under 130 bytes can be neither nested 65 levels deep nor hold a number outside what
--   a double holds (such a number prints with more than 300 digits), so only longer values are
--   walked, once. LANGUAGE sql, IMMUTABLE and without a SET clause, so callers inline it (the
--   one pgq function without a pinned search_path: it names pg_catalog objects only, qualified).
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._json_ok(value jsonb, max_bytes int)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $$
    SELECT value IS NULL
        OR (pg_catalog.octet_length(value::pg_catalog.text) <= max_bytes
            AND (pg_catalog.octet_length(value::pg_catalog.text) < 130
                 OR NOT pg_catalog.jsonb_path_exists(value,
                        'strict $ ? (exists (@.**{65 to last}) || exists (@.** ? (@.type() == "number" && (@ > 1e308 || @ < -1e308 || (@ != 0 && @ < 1e-307 && @ > -1e-307)))))')));
$$;
COMMENT ON FUNCTION pgq._json_ok(jsonb, int) IS
    'Private. True when a JSON value is NULL or fit to store (size as text, nesting, numbers); see pgq._json_problem.';

-- sql/functions/_json_problem.sql
-- pgq._json_problem(value, max_bytes): what makes a JSON value unfit to store and hand out.
-- Contract: NULL when the value is NULL or fit; otherwise a short text naming the problem:
--   over max_bytes as JSON text (measured uncompressed: octet_length of its text form, what a
--   client receives), nested deeper than 64 levels (no value at level 65 or below; the top
--   value is level 0), or a number that a double cannot hold (magnitude above 1e308, or
--   non-zero and below 1e-307): every client decodes what is accepted (Python's json stops near
--   1000 levels and at 4300-digit integers; JavaScript numbers are doubles).
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._json_problem(value jsonb, max_bytes int)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_bytes int;
BEGIN
    IF value IS NULL THEN
        RETURN NULL;
    END IF;
    v_bytes := octet_length(value::text);
    IF v_bytes > max_bytes THEN
        RETURN format('is %s bytes, over the %s-byte limit', v_bytes, max_bytes);
    END IF;
    IF jsonb_path_exists(value, 'strict $.**{65 to last}') THEN
        RETURN 'is nested deeper than 64 levels';
    END IF;
    IF jsonb_path_exists(value, 'strict $.** ? (@.type() == "number" && (@ > 1e308 || @ < -1e308 || (@ != 0 && @ < 1e-307 && @ > -1e-307)))') THEN
        RETURN format('holds the number %s, outside what a double holds (0 or 1e-307 to 1e308 in magnitude)',
                      (SELECT left(n::text, 40) || CASE WHEN length(n::text) > 40 THEN '...' ELSE '' END
                         FROM jsonb_path_query(value, 'strict $.** ? (@.type() == "number" && (@ > 1e308 || @ < -1e308 || (@ != 0 && @ < 1e-307 && @ > -1e-307)))') AS n
                        LIMIT 1));
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._json_problem(jsonb, int) IS
    'Private. NULL when a JSON value is fit to store (size as text, nesting, numbers), else the problem.';

-- sql/functions/_keyed_candidates.sql
-- pgq._keyed_candidates(entrypoint, priority, cursor, turn_seq, quota, key_limit, key_rate,
--                       rate_period, at)
-- Contract: the candidates of one lane of an entrypoint with a key_concurrency_limit or a rate
--   limit per key (key_rate per rate_period; NULL when the entrypoint has none), for
--   pgq.claim: up to quota queued jobs (due at `at`, ready number above the lane's cursor),
--   locked FOR UPDATE SKIP LOCKED, taken from the lane's group keys in turn. It first finds
--   the ring slots where the lane has a queued job above the cursor (one probe of
--   jobs_ready_idx each); the walk reads only those. A statement
--   walks the keys of the lane that have queued jobs in the order of their hash
--   (hashtextextended(key, 0); one probe of jobs_key_idx per key, which finds the key's oldest
--   job due above the cursor: the index's entries below the cursor, jobs claimed before that a
--   held vacuum horizon keeps, are passed in the index without a heap visit), starting after
--   the key the lane's last keyed claim served (turn_seq) and going round the ring at most
--   once, until it met quota keys with room or visited 100 + 4 * quota keys (a lane whose keys
--   are all full costs a bounded walk; the next claim goes on from there). Round 1: each key
--   met with room gives one job, the oldest the walk found, locked where the walk read it
--   (its ctid in its slot: no index probe). When the walk passed the end of the ring, the
--   jobs of the lane without a key get their turn as one more group (one job; all that is
--   left when no key has queued jobs), looked for among the first 100 queued jobs of the
--   lane. Round 2, when room
--   is left: each key met gives what room it has left, in walk order. A key's room is the least
--   of key_limit minus its running jobs (counted after the walk, in one range scan of
--   jobs_key_running_idx over the hashes of the keys met: the cost follows the keys visited,
--   not the entrypoint's running jobs; keys met at their limit make the walk go on in another
--   pass) and key_rate minus its starts in the rate window (pgq._rate_window, inlined in the
--   walk's statement: two probes per key; the jobs without a key have one budget of their own,
--   read only when their turn comes). turn_seq is set to the last key served.
--   Answers (id, ready_seq, key_hash, room, group_key): key_hash and room (before this claim)
--   let the claim cap each key across its lanes (priorities), group_key names the key whose
--   rate budget a start uses; key_hash and room are NULL for a job without a key (with
--   key_rate: the whole-entrypoint hash of pgq.rate_starts and that group's room).
--   Keys whose hashes collide (two keys of 2^64) count as one key: a stricter limit, never
--   a looser one.
-- Locking: row locks on the returned jobs (SKIP LOCKED); the caller holds the entrypoint's
--   policy row (one claimer at a time per key-limited entrypoint: the counts are exact).
--   Sets turn_seq (a sequence: no row version per claim, not undone by a rollback).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._keyed_candidates(
    entrypoint  text,
    priority    int,
    cursor      bigint,
    turn_seq    regclass,
    quota       int,
    key_limit   int,
    key_rate    int,
    rate_period interval,
    at          timestamptz
)
RETURNS TABLE (id bigint, ready_seq bigint, key_hash bigint, room int, group_key text)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq._claim_keyed, whose settings (generic plans, no JIT, no sequential
-- scans) are in force here too: setting them again would cost every call.
AS $$
#variable_conflict use_column
DECLARE
    c_min     constant bigint := -9223372036854775808;
    c_queued  constant text := 'queued';
    c_big     constant int := 1000000000;  -- no limit of that kind
    v_ep      constant int := hashtext(_keyed_candidates.entrypoint);  -- jobs_key_idx's first column
    v_free    int;                          -- the room of the jobs without a key
    v_h       bigint := coalesce(pg_sequence_last_value(_keyed_candidates.turn_seq), c_min);
    v_left    int := _keyed_candidates.quota;
    v_keys    bigint[];
    v_rooms   int[];
    v_ends    boolean := false;
    v_last    bigint;                       -- the last key visited
    v_served  bigint;                       -- the last key served
    v_need    int := _keyed_candidates.quota;  -- keys still to meet with room
    v_n       int := 0;                     -- keys visited (the walk's state between passes)
    v_wrapped boolean := false;
    v_first   bigint;
    v_target  int := _keyed_candidates.quota;  -- keys with rate room this pass walks to
    v_ids     bigint[] := '{}';
    v_seqs    bigint[] := '{}';
    v_hashes  bigint[] := '{}';
    v_kroom   int[] := '{}';
    v_gkeys   text[] := '{}';
    v_got     record;
    v_slots   smallint[];                   -- the ring slots the walk reads
    -- The ring slots whose running jobs the walk counts: all four with a key_concurrency_limit,
    -- none without (a rate per key alone: the count's scans are pruned before they start).
    v_held    smallint[] := CASE WHEN _keyed_candidates.key_limit IS NOT NULL THEN '{0,1,2,3}'::smallint[] END;
BEGIN
    IF v_left <= 0 THEN
        RETURN;
    END IF;
    -- The ring slots with a queued job of the lane above the cursor (one probe of
    -- jobs_ready_idx each; the walk's probes are pruned to them; NULL for a slot without one):
    -- in a slot without one, each probe's seek by key would read the rest of the lane's
    -- entries there (all below the cursor) for nothing, such as a drained slot not yet
    -- truncated. One EXISTS per slot, the slot a literal: each reads its partition alone,
    -- pruned when the plan is made (a lateral probe per slot of generate_series(0, 3) read
    -- them through an Append pruned on every execution: 4,000 instructions more per job,
    -- docs/performance.md).
    v_slots := ARRAY[CASE WHEN EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.slot = 0 AND j.entrypoint = _keyed_candidates.entrypoint
                                           AND j.priority = _keyed_candidates.priority AND j.status = 'queued'
                                           AND j.ready_seq > _keyed_candidates.cursor)
                          THEN 0 END,
                     CASE WHEN EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.slot = 1 AND j.entrypoint = _keyed_candidates.entrypoint
                                           AND j.priority = _keyed_candidates.priority AND j.status = 'queued'
                                           AND j.ready_seq > _keyed_candidates.cursor)
                          THEN 1 END,
                     CASE WHEN EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.slot = 2 AND j.entrypoint = _keyed_candidates.entrypoint
                                           AND j.priority = _keyed_candidates.priority AND j.status = 'queued'
                                           AND j.ready_seq > _keyed_candidates.cursor)
                          THEN 2 END,
                     CASE WHEN EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.slot = 3 AND j.entrypoint = _keyed_candidates.entrypoint
                                           AND j.priority = _keyed_candidates.priority AND j.status = 'queued'
                                           AND j.ready_seq > _keyed_candidates.cursor)
                          THEN 3 END];
    -- One statement per pass: the walk over the keys with queued jobs in hash order after the
    -- pointer, round the ring at most once (the end of the ring is a NULL step: the jobs without
    -- a key), one index probe per key, until the pass met its target of keys with rate room
    -- (the keys still needed; doubled in each further pass) or 100 + 4 * quota keys were
    -- visited in all; the running jobs of the keys met, counted in one range
    -- scan of jobs_key_running_idx over their hashes (the keys visited, not every running job
    -- of the entrypoint); and round 1: one job (its oldest) from each key met with room, in
    -- walk order. Keys met at their concurrency limit leave room unused: another pass walks on
    -- from where this one stopped (only while keys are full).
    LOOP
        WITH RECURSIVE walk (h, n, found, wrapped, first, room, id, slot, tid, k) AS (
            SELECT v_h, v_n, 0, v_wrapped, v_first, NULL::int, NULL::bigint, NULL::smallint, NULL::tid, NULL::text
            UNION ALL
            SELECT nx.h, w.n + 1,
                   w.found + CASE WHEN nx.h IS NOT NULL AND nx.room > 0 THEN 1 ELSE 0 END,
                   w.wrapped OR (nx.h IS NULL AND w.first IS NOT NULL),
                   coalesce(w.first, nx.h), nx.room, nx.id, nx.slot, nx.tid, nx.k
              FROM walk w
             CROSS JOIN LATERAL (
                   SELECT k.h, k.id, k.slot, k.tid, k.k,
                          CASE WHEN _keyed_candidates.key_rate IS NULL OR k.h IS NULL THEN c_big
                               ELSE _keyed_candidates.key_rate - coalesce(r.used, 0)::int END AS room
                     FROM (SELECT s.h, s.id, s.slot, s.tid, s.k
                             FROM (SELECT 1) AS one
                             LEFT JOIN LATERAL (
                                  -- The next key with a job due above the cursor, and that job (its
                                  -- oldest): the first entry of jobs_key_idx after the last key.
                                  SELECT hashtextextended(j.group_key, 0) AS h, j.id, j.slot, j.ctid AS tid, j.group_key AS k
                                    FROM pgq.jobs j
                                   WHERE hashtext(j.entrypoint) = v_ep
                                     AND j.entrypoint = _keyed_candidates.entrypoint
                                     AND j.priority = _keyed_candidates.priority
                                     AND j.status = 'queued'
                                     AND j.group_key IS NOT NULL
                                     AND j.slot <> 4
                                     AND j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])  -- (pruned as it runs)
                                     AND hashtextextended(j.group_key, 0) > coalesce(w.h, c_min)
                                     AND j.ready_seq > _keyed_candidates.cursor
                                     AND j.run_at <= _keyed_candidates.at
                                   ORDER BY hashtextextended(j.group_key, 0), j.ready_seq
                                   LIMIT 1) AS s ON true
                           OFFSET 0) AS k  -- OFFSET 0: one probe per step, not one per use of k.h
                     -- With a rate per key, the key's window (pgq._rate_window, inlined here: two
                     -- probes of rate_starts_key_idx in this statement, no call per step).
                     LEFT JOIN LATERAL (
                          SELECT r.used
                            FROM pgq._rate_window(_keyed_candidates.entrypoint, k.h,
                                                  _keyed_candidates.at - _keyed_candidates.rate_period) AS r
                           WHERE _keyed_candidates.key_rate IS NOT NULL AND k.h IS NOT NULL
                          OFFSET 0) AS r ON true
                    OFFSET 0) AS nx                 -- and one room per step, not one per use of nx.room
             WHERE w.n < 100 + 4 * _keyed_candidates.quota
               AND w.found < v_target
               AND NOT (w.h IS NULL AND w.n > 0 AND nx.h IS NULL)             -- no key at all
               AND NOT coalesce(w.wrapped AND nx.h >= w.first, false)          -- round the ring once
        ), met AS MATERIALIZED (
            SELECT w.n, w.h, w.room, w.id, w.slot, w.tid, w.k, w.wrapped, w.first
              FROM walk w
             WHERE w.n > v_n
        ), running AS MATERIALIZED (
            -- The running jobs of the keys met with rate room (the only ones whose room is
            -- used): one range scan of jobs_key_running_idx over their hashes (two when the
            -- pass went round the end of the ring), so the count reads the running jobs of the
            -- keys visited, not every running job of the entrypoint.
            SELECT hashtextextended(r.group_key, 0) AS h, count(*)::int AS n
              FROM (SELECT min(m.h) AS lo, max(m.h) AS hi
                      FROM met m
                     WHERE m.h IS NOT NULL AND m.room > 0
                       AND _keyed_candidates.key_limit IS NOT NULL
                     GROUP BY m.wrapped) g
             CROSS JOIN LATERAL (
                   SELECT r.group_key
                     FROM pgq.jobs r
                    WHERE hashtext(r.entrypoint) = v_ep
                      AND r.entrypoint = _keyed_candidates.entrypoint
                      AND r.lease IS NOT NULL  -- running (jobs_key_running_idx's predicate)
                      AND r.group_key IS NOT NULL
                      AND r.slot <> 4
                      AND r.slot IN (v_held[1], v_held[2], v_held[3], v_held[4])  -- (none: pruned, v_held)
                      AND hashtextextended(r.group_key, 0) >= g.lo
                      AND hashtextextended(r.group_key, 0) <= g.hi
                   OFFSET 0) r  -- (a range probe per group, not a join over every running job)
             GROUP BY 1
        ), roomed AS MATERIALIZED (
            -- Every step met, with its key's room (NULL for the end of the ring's step).
            SELECT m.n, m.h, m.id, m.slot, m.tid, m.k, m.wrapped, m.first,
                   CASE WHEN m.h IS NOT NULL
                        THEN least(m.room, coalesce(_keyed_candidates.key_limit - coalesce(r.n, 0), c_big)) END AS room,
                   m.h IS NOT NULL AND m.room > 0 AND _keyed_candidates.key_limit - coalesce(r.n, 0) <= 0 AS capped
              FROM met m
              LEFT JOIN running r ON r.h = m.h
        ), picked AS MATERIALIZED (
            -- Round 1 locks the job the walk found for each key with room where the walk read it
            -- (a TID scan of its slot, its id and status checked again; no index probe). A job
            -- locked by someone else (a cancel, the carry) is skipped, and so is one updated since
            -- this statement's snapshot (its new version is elsewhere): that key waits for the
            -- next claim.
            SELECT m.n, m.h, m.room, m.k, j.id, j.ready_seq
              FROM roomed m
             CROSS JOIN LATERAL (
                   SELECT j.id, j.ready_seq
                     FROM pgq.jobs j
                    WHERE j.ctid = m.tid AND j.id = m.id
                      AND j.slot = m.slot AND j.slot <> 4
                      AND j.status = c_queued
                      FOR UPDATE SKIP LOCKED) AS j
             WHERE m.room > 0
             ORDER BY m.n
             LIMIT v_need
        )
        -- One pass over roomed (every step met) and one over picked (every subquery here is
        -- prepared on each call), each read in walk order: the arrays are aggregated in that
        -- order, the last element is the last step's (one sort, not one per ordered aggregate;
        -- picked is in walk order already).
        SELECT mr.keys, mr.rooms, mr.capped, mr.ends, mr.n, mr.last, mr.wrapped, mr.first,
               pp.last AS served, coalesce(pp.ids, '{}') AS ids, coalesce(pp.seqs, '{}') AS seqs,
               coalesce(pp.hashes, '{}') AS hashes, coalesce(pp.rooms, '{}') AS krooms,
               coalesce(pp.keys, '{}') AS gkeys
          INTO v_got
          FROM (SELECT bool_or(m.h IS NULL) AS ends, max(m.n) AS n,
                       (array_agg(m.h))[count(*)] AS last,
                       (array_agg(m.wrapped))[count(*)] AS wrapped,
                       (array_agg(m.first))[count(*)] AS first,
                       array_agg(m.h) FILTER (WHERE m.h IS NOT NULL) AS keys,
                       array_agg(m.room) FILTER (WHERE m.h IS NOT NULL) AS rooms,
                       count(*) FILTER (WHERE m.capped) AS capped
                  FROM (SELECT m.n, m.h, m.wrapped, m.first, m.room, m.capped
                          FROM roomed m ORDER BY m.n) AS m) AS mr,
               (SELECT array_agg(p.id) AS ids, array_agg(p.ready_seq) AS seqs,
                       array_agg(p.h) AS hashes, array_agg(p.room) AS rooms,
                       array_agg(p.k) AS keys, (array_agg(p.h))[count(*)] AS last
                  FROM picked p) AS pp;
        EXIT WHEN v_got.n IS NULL;  -- no key visited: the walk is over
        v_keys := v_keys || v_got.keys;
        v_rooms := v_rooms || v_got.rooms;
        v_ends := v_ends OR coalesce(v_got.ends, false);
        v_ids := v_ids || v_got.ids;
        v_seqs := v_seqs || v_got.seqs;
        v_hashes := v_hashes || v_got.hashes;
        v_kroom := v_kroom || v_got.krooms;
        v_gkeys := v_gkeys || v_got.gkeys;
        v_last := v_got.last;
        v_served := coalesce(v_got.served, v_served);
        v_need := v_need - cardinality(v_got.ids);
        -- Another pass only when keys met were at their concurrency limit and room is left;
        -- it walks twice as far as this one (while keys are full, a claim's passes stay few).
        EXIT WHEN v_got.capped = 0 OR v_need <= 0;
        v_target := least(2 * v_target, 100 + 4 * _keyed_candidates.quota);
        v_h := v_got.last;
        v_n := v_got.n;
        v_wrapped := v_got.wrapped;
        v_first := v_got.first;
    END LOOP;
    v_last := coalesce(v_served, v_last);
    v_left := v_left - cardinality(v_ids);
    -- The end of the ring was passed: the jobs without a key get their turn (one job, or all
    -- that is left when the walk went round), among the first 100 queued jobs of the lane.
    -- (Their budget under a rate per key is read only then.)
    v_free := c_big;
    IF v_ends AND v_left > 0 AND _keyed_candidates.key_rate IS NOT NULL THEN
        v_free := _keyed_candidates.key_rate
                  - coalesce((SELECT w.used
                                FROM pgq._rate_window(_keyed_candidates.entrypoint, c_min,
                                                      _keyed_candidates.at - _keyed_candidates.rate_period) AS w),
                             0)::int;
    END IF;
    IF v_ends AND v_left > 0 AND v_free > 0 THEN
        SELECT array_agg(q.id ORDER BY q.ready_seq) AS ids, array_agg(q.ready_seq ORDER BY q.ready_seq) AS seqs
          INTO v_got
          FROM (SELECT j.id, j.ready_seq
                  FROM pgq.jobs j
                 WHERE j.id = ANY (ARRAY(SELECT w.id
                                          FROM pgq.jobs w
                                         WHERE w.entrypoint = _keyed_candidates.entrypoint
                                           AND w.priority = _keyed_candidates.priority
                                           AND w.status = 'queued'
                                           AND w.slot <> 4
                                           AND w.ready_seq > _keyed_candidates.cursor
                                         ORDER BY w.ready_seq
                                         LIMIT 100))
                   AND j.group_key IS NULL
                   AND j.status = c_queued AND j.slot <> 4
                   AND j.run_at <= _keyed_candidates.at
                 ORDER BY j.ready_seq
                 LIMIT least(CASE WHEN v_keys IS NULL THEN v_left ELSE 1 END, v_free)
                   FOR UPDATE SKIP LOCKED) AS q;
        IF v_got.ids IS NOT NULL THEN
            v_ids := v_ids || v_got.ids;
            v_seqs := v_seqs || v_got.seqs;
            -- With a rate per key, the jobs without one are capped across lanes as one key.
            v_hashes := v_hashes || array_fill(CASE WHEN _keyed_candidates.key_rate IS NOT NULL THEN c_min END,
                                               ARRAY[cardinality(v_got.ids)]);
            v_kroom := v_kroom || array_fill(CASE WHEN _keyed_candidates.key_rate IS NOT NULL THEN v_free END,
                                             ARRAY[cardinality(v_got.ids)]);
            v_gkeys := v_gkeys || array_fill(NULL::text, ARRAY[cardinality(v_got.ids)]);
            v_left := v_left - cardinality(v_got.ids);
            v_last := c_min;
        END IF;
    END IF;
    -- Round 2, when every key was met and room is left: each key gives what room it has left,
    -- keys in walk order, oldest jobs first.
    IF v_left > 0 AND v_keys IS NOT NULL THEN
        SELECT array_agg(q.id ORDER BY q.n, q.ready_seq) AS ids, array_agg(q.ready_seq ORDER BY q.n, q.ready_seq) AS seqs,
               array_agg(q.h ORDER BY q.n, q.ready_seq) AS hashes, array_agg(q.room ORDER BY q.n, q.ready_seq) AS rooms,
               array_agg(q.group_key ORDER BY q.n, q.ready_seq) AS gkeys
          INTO v_got
          FROM (SELECT k.n, k.h, k.room, j.id, j.ready_seq, j.group_key
                  FROM unnest(v_keys, v_rooms) WITH ORDINALITY AS k(h, room, n)
                 CROSS JOIN LATERAL (
                       SELECT j.id, j.ready_seq, j.group_key
                         FROM pgq.jobs j
                        WHERE hashtext(j.entrypoint) = v_ep
                          AND j.entrypoint = _keyed_candidates.entrypoint
                          AND j.priority = _keyed_candidates.priority
                          AND j.status = 'queued'
                          AND j.group_key IS NOT NULL
                          AND j.slot <> 4
                          AND hashtextextended(j.group_key, 0) >= k.h  -- (as in round 1)
                          AND hashtextextended(j.group_key, 0) <= k.h
                          AND j.ready_seq > _keyed_candidates.cursor
                          AND j.run_at <= _keyed_candidates.at
                          AND j.id <> ALL (v_ids)  -- our own row locks are not skipped
                        ORDER BY hashtextextended(j.group_key, 0), j.ready_seq
                        LIMIT least(k.room - 1, v_left)
                          FOR UPDATE SKIP LOCKED) AS j
                 WHERE k.room > 1
                 ORDER BY k.n, j.ready_seq
                 LIMIT v_left) AS q;
        IF v_got.ids IS NOT NULL THEN
            v_ids := v_ids || v_got.ids;
            v_seqs := v_seqs || v_got.seqs;
            v_hashes := v_hashes || v_got.hashes;
            v_kroom := v_kroom || v_got.rooms;
            v_gkeys := v_gkeys || v_got.gkeys;
        END IF;
    END IF;
    -- The next claim goes on after the last key served (or, when none was, the last visited).
    v_last := setval(_keyed_candidates.turn_seq, coalesce(v_last, c_min));  -- (an expression: no statement)
    RETURN QUERY SELECT u.id, u.s, u.h, u.r, u.k FROM unnest(v_ids, v_seqs, v_hashes, v_kroom, v_gkeys) AS u(id, s, h, r, k);
END
$$;
COMMENT ON FUNCTION pgq._keyed_candidates(text, int, bigint, regclass, int, int, int, interval, timestamptz) IS
    'Private. Candidates of one lane of a key-limited entrypoint for pgq.claim: group keys in turn (hash order from the last served), each within its room under key_concurrency_limit and its rate per key, the jobs without a key after the last key; locked SKIP LOCKED.';

-- sql/functions/_lane_cursor.sql
-- pgq._lane_cursor(entrypoint, priority, cursor_seq): a lane's cursor, moved on first when
--   the fence allows.
-- Contract: returns a ready number c such that every job of the lane with a ready number <= c
--   is settled (claimed, finished, canceled, rolled back or never used): a claim reads the lane
--   from ready_seq > c. To move on, it reads L, the last number handed out, then probes the
--   fence (pgq._ready_lock) with an exclusive try-lock released at once: if free, every
--   transaction that drew a number <= L for this entrypoint has ended, and the next statement
--   (a new snapshot) finds the first row still queued above the cursor; the cursor moves to
--   just below it, or to L. If a producer of this entrypoint is open, the cursor stays (claims
--   then read from the old cursor: correct, and only as slow as the walk behind it).
--   Two claimers racing may set the cursor back a little: harmless, a read starts earlier.
-- Locking: an exclusive advisory try-lock for an instant; no row locks.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._lane_cursor(entrypoint text, priority int, cursor_seq regclass)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_c    bigint := coalesce(pg_sequence_last_value(_lane_cursor.cursor_seq), 0);
    v_last bigint;
    v_key  int := hashtext(_lane_cursor.entrypoint);
    v_min  bigint;
    v_new  bigint;
BEGIN
    SELECT CASE WHEN s.is_called THEN s.last_value ELSE s.last_value - 1 END INTO v_last
      FROM pgq.ready_seq s;
    IF v_last <= v_c THEN
        RETURN v_c;
    END IF;
    IF NOT pg_try_advisory_lock('pgq.ready_seq'::regclass::oid::int, v_key) THEN
        RETURN v_c;
    END IF;
    PERFORM pg_advisory_unlock('pgq.ready_seq'::regclass::oid::int, v_key);
    SELECT j.ready_seq INTO v_min
      FROM pgq.jobs j
     WHERE j.entrypoint = _lane_cursor.entrypoint
       AND j.priority = _lane_cursor.priority
       AND j.status = 'queued'
       AND j.slot <> 4
       AND j.ready_seq > v_c
     ORDER BY j.ready_seq
     LIMIT 1;
    v_new := CASE WHEN v_min IS NULL THEN v_last ELSE least(v_last, v_min - 1) END;
    IF v_new > v_c THEN
        PERFORM setval(_lane_cursor.cursor_seq, v_new);
        RETURN v_new;
    END IF;
    RETURN v_c;
END
$$;
COMMENT ON FUNCTION pgq._lane_cursor(text, int, regclass) IS
    'Private. The lane''s claim cursor, moved on past settled ready numbers when no producer of the entrypoint is open.';

-- sql/functions/_lane_jobs.sql
-- pgq._lane_jobs(entrypoint, priority, cursor, n, at)
-- Contract: the first n queued jobs of one lane (entrypoint, priority) due at `at`, in ready
--   order from the lane's cursor on, locked FOR UPDATE SKIP LOCKED: the candidates of a lane
--   without per-key limits in a claim that pgq._claim_keyed makes (pgq.claim's own statement
--   reads its lanes the same way, inline). A function, so that a keyed claim of no such lane
--   does not prepare this read at all.
-- Locking: row locks on the returned jobs (SKIP LOCKED).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._lane_jobs(entrypoint text, priority int, cursor bigint, n int, at timestamptz)
RETURNS TABLE (id bigint, ready_seq bigint)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq._claim_keyed, where pgq.claim's settings (generic plans, no JIT, no
-- sequential scans) are in force.
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT j.id, j.ready_seq
      FROM pgq.jobs j
     WHERE j.entrypoint = _lane_jobs.entrypoint
       AND j.priority = _lane_jobs.priority
       AND j.status = 'queued'
       AND j.slot <> 4
       AND j.ready_seq > _lane_jobs.cursor
       AND j.run_at <= _lane_jobs.at
     ORDER BY j.ready_seq
     LIMIT _lane_jobs.n
       FOR UPDATE SKIP LOCKED;
END
$$;
COMMENT ON FUNCTION pgq._lane_jobs(text, int, bigint, int, timestamptz) IS
    'Private. The first n due queued jobs of one lane from its cursor, locked SKIP LOCKED: the lanes without per-key limits of a keyed claim (pgq._claim_keyed).';

-- sql/functions/_notify.sql
-- pgq._notify(kind, field, vals): send {"kind": kind, field: [...]} on channel pgq_events.
-- Contract: values are split into chunks so each payload stays far below NOTIFY's 8000-byte
--   limit (15 entrypoints of at most 200 bytes, or 300 ids, per notification), and one call sends
--   at most 10 of them (150 entrypoints, 3,000 ids): the values past those are not announced, and
--   workers find that work by polling (a notification is a hint). Sends nothing for
--   an empty or NULL array. Identical payloads in one transaction are folded by PostgreSQL.
-- Locking: none. NOTIFY is delivered at commit, never before.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._notify(kind text, field text, vals jsonb)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    -- Values per notification: 15 entrypoints of at most 200 bytes, or 300 ids.
    v_chunk int := CASE WHEN _notify.field = 'ids' THEN 300 ELSE 15 END;
BEGIN
    IF _notify.vals IS NULL OR jsonb_array_length(_notify.vals) = 0 THEN
        RETURN;
    END IF;
    -- One chunk (the common case): no query.
    IF jsonb_array_length(_notify.vals) <= v_chunk THEN
        PERFORM pg_notify('pgq_events', jsonb_build_object('kind', _notify.kind, _notify.field, _notify.vals)::text);
        RETURN;
    END IF;
    PERFORM pg_notify('pgq_events', jsonb_build_object('kind', _notify.kind, _notify.field, chunk.vals)::text)
       FROM (SELECT jsonb_agg(v.value ORDER BY v.ord) AS vals
               FROM jsonb_array_elements(_notify.vals) WITH ORDINALITY AS v(value, ord)
              WHERE v.ord <= 10 * v_chunk
              GROUP BY (v.ord - 1) / v_chunk) AS chunk;
END
$$;
COMMENT ON FUNCTION pgq._notify(text, text, jsonb) IS
    'Private. Sends {"kind": kind, field: vals} on pgq_events in chunks well under the NOTIFY size limit.';

-- sql/functions/_promote.sql
-- pgq._promote(entrypoints, at, max_rows): scheduled jobs whose run_at has come become queued.
-- Contract: moves at most max_rows jobs of the given entrypoints (NULL: every entrypoint) with
--   status 'scheduled' and run_at <= at, earliest first, from jobs_scheduled into the ring's
--   current slot as 'queued', each with a new ready number (behind the fence,
--   pgq._ready_lock), in run_at order (pgq._enter_ring: every other column kept, a move per
--   row). Rows locked by someone are skipped (SKIP LOCKED). The insert trigger tells idle
--   workers. Returns the number of jobs promoted.
-- Locking: row locks on the moved jobs.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._promote(entrypoints text[], at timestamptz, max_rows int)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
    v_due record;
    v_n   int;
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution
    -- settings); slot = 4 stays a literal: it leaves the ring's partitions out of the plan.
    c_scheduled constant text := 'scheduled';
BEGIN
    -- The earliest due jobs of each entrypoint (NULL: every one: each job's entrypoint has its
    -- row), read from jobs_scheduled_idx in (run_at, id) order, at most max_rows of each:
    -- however many jobs are due or scheduled later, a call reads at most max_rows entries per
    -- entrypoint (one read of every due job, sorted, cost a claim 100 ms with 200,000 due).
    -- slot = 4 (jobs_scheduled, where every scheduled job is: jobs_slot_check) leaves the
    -- ring's partitions out of these plans. Then those jobs locked by id, earliest first, the
    -- ones another promoter holds skipped, with the entrypoints whose fence their ready
    -- numbers need.
    SELECT array_agg(f.id ORDER BY f.run_at, f.id) INTO v_ids
      FROM (SELECT d.id, d.run_at
              FROM unnest(coalesce(_promote.entrypoints,
                                   ARRAY(SELECT e.entrypoint FROM pgq.entrypoints e))) AS e(name)
             CROSS JOIN LATERAL (
                   SELECT j.id, j.run_at
                     FROM pgq.jobs j
                    WHERE j.entrypoint = e.name
                      AND j.status = 'scheduled' AND j.slot = 4
                      AND j.run_at <= _promote.at
                    ORDER BY j.run_at, j.id
                    LIMIT _promote.max_rows) AS d
             ORDER BY d.run_at, d.id
             LIMIT _promote.max_rows) AS f;
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    SELECT array_agg(d.id ORDER BY d.run_at, d.id) AS ids, array_agg(DISTINCT d.entrypoint) AS eps
      INTO v_due
      FROM (SELECT j.id, j.entrypoint, j.run_at
              FROM pgq.jobs j
             WHERE j.id = ANY (v_ids)
               AND j.status = c_scheduled AND j.slot = 4
               FOR UPDATE SKIP LOCKED) d;
    IF v_due.ids IS NULL THEN
        RETURN 0;
    END IF;
    v_n := pgq._enter_ring(v_due.ids, c_scheduled, v_due.eps);
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq._promote(text[], timestamptz, int) IS
    'Private. Moves due scheduled jobs into the ring as queued, with ready numbers in run_at order.';

-- sql/functions/_quota.sql
-- pgq._quota(entrypoint, concurrency_limit, rate_limit, rate_period, rate_per_key, batch_size, at)
-- Contract: how many jobs a claim that holds the entrypoint's policy row may take of it: at most
--   batch_size, at most what fits beside its running jobs under concurrency_limit (NULL: no
--   limit), and, for an entrypoint-wide rate limit (rate_limit set, rate_per_key false), at most
--   rate_limit minus the starts recorded in pgq.rate_starts later than at - rate_period
--   (pgq._rate_window: any start recorded later counts, whatever its time, so a claim whose clock is
--   behind another's still sees it). Never negative. Per-key rooms are pgq._keyed_candidates'.
-- Locking: none (the caller, pgq.claim, holds the policy row: the counts are exact).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._quota(
    entrypoint         text,
    concurrency_limit  int,
    rate_limit         int,
    rate_period        interval,
    rate_per_key       boolean,
    batch_size         int,
    at                 timestamptz
)
RETURNS int
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq.claim and pgq._claim_keyed, whose settings (generic plans, no JIT, no
-- sequential scans) are in force here too: setting them again would cost every call.
AS $$
#variable_conflict use_column
DECLARE
    c_whole constant bigint := -9223372036854775808;  -- pgq.rate_starts.key_hash of the whole entrypoint
    v_room  int := _quota.batch_size;
BEGIN
    IF _quota.concurrency_limit IS NOT NULL THEN
        v_room := least(v_room, _quota.concurrency_limit - (SELECT count(*)
                                                             FROM pgq.jobs r
                                                            WHERE r.entrypoint = _quota.entrypoint
                                                              AND r.status = 'running'
                                                              AND r.slot <> 4));
    END IF;
    IF _quota.rate_limit IS NOT NULL AND NOT _quota.rate_per_key AND v_room > 0 THEN
        v_room := least(v_room, _quota.rate_limit
                                - coalesce((SELECT w.used
                                              FROM pgq._rate_window(_quota.entrypoint, c_whole,
                                                                    _quota.at - _quota.rate_period) AS w), 0));
    END IF;
    RETURN greatest(v_room, 0);
END
$$;
COMMENT ON FUNCTION pgq._quota(text, int, int, interval, boolean, int, timestamptz) IS
    'Private. How many jobs a claim holding the policy row may take of a limited entrypoint: batch_size within its concurrency limit and its entrypoint-wide rate limit.';

-- sql/functions/_rate_due.sql
-- pgq._rate_due(entrypoint, rate_limit, rate_period, rate_per_key, at)
-- Contract: for pgq.next_run_at, when a rate-limited entrypoint's budget next grows, so that a
--   worker whose claim came back short because of the rate limit sleeps until then instead of
--   polling. Whole-entrypoint budget: NULL while the window (at - rate_period, ...] holds no
--   start; when it is used up, the time enough of its starts have left it (start + rate_period,
--   oldest first) for one more to fit; else the time its oldest start leaves it (a worker that
--   lost the policy row to another claimer looks again then, not at its next poll). Per key: the first time a start of a key that has queued jobs leaves the window,
--   among the 100 oldest starts of the window (beyond them, the 100th's time: a worker wakes
--   then and asks again), the jobs without a key counted as queued; NULL when none is found.
--   Never earlier than `at`.
-- Locking: none (reads only).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._rate_due(
    entrypoint    text,
    rate_limit    int,
    rate_period   interval,
    rate_per_key  boolean,
    at            timestamptz
)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq.next_run_at, whose settings are in force here too.
AS $$
#variable_conflict use_column
DECLARE
    c_whole constant bigint := -9223372036854775808;
    v_due   timestamptz;
    v_last  timestamptz;
    v_n     int;
    v_used  bigint;
BEGIN
    IF NOT _rate_due.rate_per_key THEN
        v_used := coalesce((SELECT w.used
                              FROM pgq._rate_window(_rate_due.entrypoint, c_whole,
                                                    _rate_due.at - _rate_due.rate_period) AS w), 0);
        IF v_used = 0 THEN
            RETURN NULL;
        END IF;
        -- The first start of the window whose leaving makes room for one more (with room now:
        -- the oldest). Rows rise in started_at and cum together: a scan from the window's start.
        SELECT s.started_at + _rate_due.rate_period INTO v_due
          FROM pgq.rate_starts s
         WHERE s.entrypoint = _rate_due.entrypoint AND s.key_hash = c_whole
           AND s.started_at > _rate_due.at - _rate_due.rate_period
           AND s.cum >= (SELECT f.cum - f.tokens
                           FROM pgq.rate_starts f
                          WHERE f.entrypoint = _rate_due.entrypoint AND f.key_hash = c_whole
                            AND f.started_at > _rate_due.at - _rate_due.rate_period
                          ORDER BY f.started_at, f.cum
                          LIMIT 1) + greatest(v_used - _rate_due.rate_limit + 1, 1)
         ORDER BY s.started_at, s.cum
         LIMIT 1;
        RETURN CASE WHEN v_due IS NOT NULL THEN greatest(v_due, _rate_due.at) END;
    END IF;
    -- The window's starts oldest first, up to the first whose key waits (lazily: with a backlog,
    -- the first start's key). Whether a key has a queued job: its entries of jobs_key_idx above
    -- the lane's cursor (every job at or below it is settled), newest first (a backward scan):
    -- the entries of its jobs claimed since (dead, and under a held vacuum horizon not yet
    -- marked so) are its oldest, and most lie below the cursor.
    SELECT o.started_at INTO v_due
      FROM (SELECT s.started_at, s.key_hash
              FROM pgq.rate_starts s
             WHERE s.entrypoint = _rate_due.entrypoint
               AND s.started_at > _rate_due.at - _rate_due.rate_period
             ORDER BY s.started_at
             LIMIT 100) o
     WHERE o.key_hash = c_whole
        OR EXISTS (SELECT 1
                     FROM pgq.lanes l
                    CROSS JOIN LATERAL (
                          SELECT coalesce(pg_sequence_last_value(l.cursor_seq), 0) AS c
                          OFFSET 0) AS cur  -- (read once, then a bound of the index scan)
                    CROSS JOIN LATERAL (
                          SELECT 1
                            FROM pgq.jobs j
                           WHERE hashtext(j.entrypoint) = hashtext(l.entrypoint)  -- (jobs_key_idx)
                             AND j.entrypoint = l.entrypoint
                             AND j.priority = l.priority
                             AND j.status = 'queued'
                             AND j.group_key IS NOT NULL
                             AND j.slot <> 4
                             AND hashtextextended(j.group_key, 0) = o.key_hash
                             AND j.ready_seq > cur.c
                           ORDER BY j.ready_seq DESC
                           LIMIT 1) q
                    WHERE l.entrypoint = _rate_due.entrypoint)
     ORDER BY o.started_at
     LIMIT 1;
    IF v_due IS NULL THEN
        SELECT max(o.started_at), count(*) INTO v_last, v_n
          FROM (SELECT s.started_at
                  FROM pgq.rate_starts s
                 WHERE s.entrypoint = _rate_due.entrypoint
                   AND s.started_at > _rate_due.at - _rate_due.rate_period
                 ORDER BY s.started_at
                 LIMIT 100) o;
    END IF;
    IF v_due IS NULL AND v_n = 100 THEN
        v_due := v_last;
    END IF;
    RETURN CASE WHEN v_due IS NOT NULL THEN greatest(v_due + _rate_due.rate_period, _rate_due.at) END;
END
$$;
COMMENT ON FUNCTION pgq._rate_due(text, int, interval, boolean, timestamptz) IS
    'Private. For pgq.next_run_at: when a rate-limited entrypoint''s budget (or, per key, the budget of a key with queued jobs) next grows; NULL while it has room.';

-- sql/functions/_rate_rows.sql
-- pgq._rate_rows(entrypoint, key_hash, rate_key, tokens, at)
-- Contract: the row that records `tokens` starts of one budget in pgq.rate_starts (the
--   entrypoint, the key hash, the key itself or NULL), for the caller to insert (INSERT INTO
--   pgq.rate_starts SELECT * FROM pgq._rate_rows(...), or one row per budget from a lateral
--   read of the budgets): started_at is `at`, or the budget's last recorded started_at when that is later (a claim
--   whose transaction began before another's but got the policy row after it), and cum the
--   budget's starts so far, this row's included. So a budget's rows rise in started_at and cum
--   together, which pgq._rate_window counts on. Exactness is kept: a start recorded later than
--   it happened stays in the window longer, never shorter (docs/decisions/0008).
--   LANGUAGE sql, STABLE and without a SET clause, so the INSERT that reads it inlines it: the
--   record is one statement of its caller (or a part of one, pgq._claim_keyed), not a call
--   that starts a statement of its own. It names pgq.rate_starts and pg_catalog objects only,
--   qualified; EXECUTE is the owner's alone, and every caller pins search_path.
-- Locking: none of its own; the callers (pgq.claim, pgq.take_tokens) hold the entrypoint's
--   policy row, so one recorder at a time per budget.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._rate_rows(entrypoint text, key_hash bigint, rate_key text, tokens int,
                                          at timestamptz)
RETURNS TABLE (entrypoint text, key_hash bigint, rate_key text, started_at timestamptz, tokens int, cum bigint)
LANGUAGE sql
STABLE
AS $$
    SELECT $1, $2, $3, greatest($5, l.started_at), $4, coalesce(l.cum, 0) + $4
      FROM (SELECT 1) AS one
      LEFT JOIN LATERAL (
           SELECT s.started_at, s.cum
             FROM pgq.rate_starts s
            WHERE s.entrypoint = $1 AND s.key_hash = $2
            ORDER BY s.started_at DESC, s.cum DESC
            LIMIT 1) AS l ON true;
$$;
COMMENT ON FUNCTION pgq._rate_rows(text, bigint, text, int, timestamptz) IS
    'Private. The rows that record starts of rate budgets (one each, with a running count and a time that never goes back); inlined into the INSERT that reads it.';

-- sql/functions/_rate_window.sql
-- pgq._rate_window(entrypoint, key_hash, since)
-- Contract: one rate budget (an entrypoint and a key hash; -9223372036854775808: the whole
--   entrypoint, or the jobs without a key) as pgq.rate_starts records it, one row, or none
--   when the budget has no row (callers read used as 0 then): used, the starts later than
--   `since` (the newest row's cum minus the cum before the first row later than `since`: each
--   row's cum counts the budget's starts so far, and a budget's rows are recorded with rising
--   started_at and cum, pgq._rate_rows; 0 when none is later); last_cum and last_at, the
--   newest row's cum and started_at. One index probe for the newest row, and one more for the
--   window's first row only when the budget has rows: however many rows the window holds.
--   LANGUAGE sql, STABLE and without a SET clause, so a statement that reads it in FROM
--   inlines it: the key walk of pgq._keyed_candidates reads each key's window in its own
--   statement (a function call per key started a statement of its own per key and set
--   search_path: most of what a rate per key added to a claim, docs/performance.md). It names
--   pgq.rate_starts and pg_catalog objects only, qualified; EXECUTE is the owner's alone, and
--   every caller pins search_path.
-- Locking: none (the callers that decide hold the entrypoint's policy row: the count is exact).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._rate_window(entrypoint text, key_hash bigint, since timestamptz)
RETURNS TABLE (used bigint, last_cum bigint, last_at timestamptz)
LANGUAGE sql
STABLE
AS $$
    SELECT l.cum - coalesce((SELECT f.cum - f.tokens
                               FROM pgq.rate_starts f
                              WHERE f.entrypoint = $1 AND f.key_hash = $2
                                AND f.started_at > $3
                              ORDER BY f.started_at, f.cum
                              LIMIT 1), l.cum),
           l.cum, l.started_at
      FROM pgq.rate_starts l
     WHERE l.entrypoint = $1 AND l.key_hash = $2
     ORDER BY l.started_at DESC, l.cum DESC
     LIMIT 1;
$$;
COMMENT ON FUNCTION pgq._rate_window(text, bigint, timestamptz) IS
    'Private. One rate budget''s starts later than since (the newest row''s cum minus the cum before the window''s first row: two index probes) and its newest row, no row when it has none; inlined into the statements that read it.';

-- sql/functions/_ready_lock.sql
-- pgq._ready_lock(entrypoints): the producer side of the ready-number fence.
-- Contract: every transaction that draws numbers from pgq.ready_seq for jobs of an entrypoint
--   (enqueue, promotion, release, a retry, the stale sweep, requeue) calls this first, for
--   those entrypoints. It takes a SHARED transaction-level advisory lock on (the oid of
--   pgq.ready_seq, hashtext(entrypoint)) for each distinct entrypoint, in sorted order, held to
--   the end of the transaction. pgq._lane_cursor moves a lane's cursor only when an exclusive
--   try-lock on the same key succeeds: then every number drawn for that entrypoint before it
--   read the sequence belongs to a transaction that has ended, so a row committed late can
--   never lie behind a cursor. A transaction that draws no ready number (a long report, an
--   idle session holding an xid) does not hold a cursor back.
-- Locking: shared advisory locks (they wait only for a probe holding the exclusive lock for an
--   instant).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._ready_lock(entrypoints text[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    -- One entrypoint (pgq.enqueue): no query.
    IF cardinality(_ready_lock.entrypoints) = 1 THEN
        PERFORM pg_advisory_xact_lock_shared('pgq.ready_seq'::regclass::oid::int, hashtext(_ready_lock.entrypoints[1]));
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock_shared('pgq.ready_seq'::regclass::oid::int, s.k)
       FROM (SELECT DISTINCT hashtext(e) AS k FROM unnest(_ready_lock.entrypoints) AS e ORDER BY 1) s;
END
$$;
COMMENT ON FUNCTION pgq._ready_lock(text[]) IS
    'Private. The fence: shared advisory locks a transaction holds while it draws ready numbers for these entrypoints.';

-- sql/functions/_rearm_deps.sql
-- pgq._rearm_deps(ids, at)
-- Contract: for pgq.requeue: the jobs just requeued (ids) whose failure canceled waiting jobs
--   (edges in state 'failed') get that part of their workflow back: each job that was canceled
--   because of them (in history as canceled with details.error 'dependency failed', and every
--   failed edge into it from a job requeued or brought back here) returns from history as
--   'waiting' (same id, payload, dedupe key; attempt 0, errors kept), level by level through
--   its own failed edges; every failed edge from a requeued or returned job is pending again
--   (its next end settles it), and each returned job counts its pending edges
--   (pgq.job_waits); so do the requeued jobs that pgq.requeue made wait (requeued with a
--   parent whose failure canceled them). When the requeued parents succeed,
--   the children are released as on a first run. Returns the ids brought back.
-- Locking: the history rows it moves (FOR UPDATE, id order); the dedupe keys it takes back;
--   the edges into the jobs it brings back are already locked by pgq._requeue (its caller).
-- Errors: PQ007 when a live job holds a returned job's dedupe key (the caller's whole call is
--   undone).
CREATE OR REPLACE FUNCTION pgq._rearm_deps(ids bigint[], at timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_set   bigint[] := _rearm_deps.ids;   -- requeued or brought back
    v_more  bigint[];
    v_back  bigint[] := '{}';
    v_wait  bigint[];
BEGIN
    -- Requeued jobs that pgq.requeue made wait (a parent of theirs was requeued with them).
    v_wait := ARRAY(SELECT j.id FROM pgq.jobs j
                     WHERE j.id = ANY (_rearm_deps.ids) AND j.status = 'waiting' AND j.slot = 4);
    LOOP
        v_more := ARRAY(
            SELECT DISTINCT d.child_id
              FROM pgq.job_deps d
              JOIN pgq.job_history h ON h.id = d.child_id
             WHERE d.parent_id = ANY (v_set)
               AND d.state = 'failed'
               AND d.child_id <> ALL (v_set)
               AND h.status = 'canceled'
               AND h.details ->> 'error' = 'dependency failed'
               AND NOT EXISTS (SELECT 1 FROM pgq.job_deps o
                                WHERE o.child_id = d.child_id AND o.state = 'failed'
                                  AND o.parent_id <> ALL (v_set))
             ORDER BY 1);
        EXIT WHEN cardinality(v_more) = 0;
        v_set := v_set || v_more;
        v_back := v_back || v_more;
    END LOOP;
    -- The requeued and returned jobs are live again: every edge their failure marked failed is
    -- pending, so that their next end settles it (into the returned and waiting jobs: counted
    -- below; into a job left in history: a later requeue of it sees the parent's new end, not
    -- a stale failure).
    UPDATE pgq.job_deps d SET state = 'pending'
     WHERE d.parent_id = ANY (v_set) AND d.state = 'failed';
    IF cardinality(v_back) + cardinality(v_wait) = 0 THEN
        RETURN v_back;
    END IF;
    IF cardinality(v_back) > 0 THEN  -- (with none, a plan for an empty list may walk an index)
        PERFORM 1 FROM pgq.job_history h WHERE h.id = ANY (v_back) ORDER BY h.id FOR UPDATE;
        PERFORM pgq._revive(v_back, _rearm_deps.at, v_back, false);
    END IF;
    INSERT INTO pgq.job_waits (child_id, pending)
    SELECT d.child_id, count(*) FILTER (WHERE d.state = 'pending')
      FROM pgq.job_deps d
     WHERE d.child_id = ANY (v_back || v_wait)
     GROUP BY d.child_id
        ON CONFLICT (child_id) DO UPDATE SET pending = excluded.pending;
    RETURN v_back;
END
$$;
COMMENT ON FUNCTION pgq._rearm_deps(bigint[], timestamptz) IS
    'Private. For pgq.requeue: brings back as waiting the jobs a requeued job''s failure canceled, with their edges pending again.';

-- sql/functions/_requeue.sql
-- pgq._requeue(ids, at, hold)
-- Contract: pgq.requeue (see there), returning the ids requeued as an array. With hold (for
--   pgq.requeue_workflow), a job with a failed parent that is not requeued in the same call
--   (it ended after the caller read the workflow) is left in history, and so is every job that
--   would wait for one left: it never runs ahead of a failed parent nor waits for one that
--   will not end. Without hold (pgq.requeue), such a parent is overridden: the job runs.
-- Locking: as pgq.requeue: the history rows (id order), the fence, then the workflow edges into
--   the requeued jobs and the jobs below them through failed edges (one pass, in (parent,
--   child) order, as pgq._settle_deps locks them).
-- Errors: as pgq.requeue.
CREATE OR REPLACE FUNCTION pgq._requeue(ids bigint[], at timestamptz, hold boolean)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_ids   bigint[];
    v_back  bigint[];
    v_due   boolean;
    v_wait  bigint[] := '{}';
    v_skip  bigint[];
BEGIN
    PERFORM pgq._check_dims(_requeue.ids, 'ids');
    PERFORM pgq._check_time(_requeue.at, 'at');
    IF _requeue.ids IS NULL OR array_position(_requeue.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(_requeue.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;

    -- One locked read decides which jobs come back: only those are moved below (pgq._revive,
    -- which takes the fence of their entrypoints before it draws a ready number; a job that
    -- failed or was canceled after this read stays in history). Locked in id order.
    SELECT array_agg(h.id ORDER BY h.id)
      INTO v_back
      FROM (SELECT h.id
              FROM pgq.job_history h
             WHERE h.id = ANY (_requeue.ids)
               AND h.status IN ('failed', 'canceled')
             ORDER BY h.id
               FOR UPDATE) AS h;
    IF v_back IS NULL THEN
        RETURN '{}';
    END IF;
    -- Due now: queued with ready numbers, behind the fence of their entrypoints (pgq._revive
    -- takes it before it draws a number). Not due yet: scheduled, in jobs_scheduled (slot 4).
    v_due := _requeue.at IS NULL OR _requeue.at <= now();

    -- Workflows: a job requeued with a parent whose failure canceled it waits for it again, and
    -- so does one whose parent has not ended (it was canceled while it waited). The edges into
    -- the requeued jobs and into every job below them through failed edges (what
    -- pgq._rearm_deps may bring back) are locked first, in one ordered pass (a settlement
    -- locks its edges in the same order): a parent ending meanwhile has settled its edge (and
    -- found no waiting child to count down) before they are read, or settles it after this
    -- commits (and counts the child down).
    IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL THEN
        PERFORM 1 FROM pgq.job_deps d
         WHERE d.child_id = ANY (ARRAY(
                   WITH RECURSIVE below (id) AS (
                       SELECT unnest(v_back)
                       UNION
                       SELECT e.child_id FROM below b JOIN pgq.job_deps e ON e.parent_id = b.id AND e.state = 'failed'
                   )
                   SELECT b.id FROM below b))
         ORDER BY d.parent_id, d.child_id
           FOR UPDATE;
        -- With hold, a job whose failed parent does not come back (it ended after the caller
        -- read the workflow) is not requeued either, nor what would wait for it: it stays as
        -- it is (never waiting for a parent that will not end, never ahead of it).
        IF _requeue.hold THEN
            LOOP
                v_skip := ARRAY(SELECT DISTINCT d.child_id FROM pgq.job_deps d
                                 WHERE d.child_id = ANY (v_back) AND d.state = 'failed'
                                   AND d.parent_id <> ALL (v_back));
                EXIT WHEN cardinality(v_skip) = 0;
                v_back := ARRAY(SELECT b FROM unnest(v_back) AS b WHERE b <> ALL (v_skip) ORDER BY b);
            END LOOP;
            IF cardinality(v_back) = 0 THEN
                RETURN '{}';
            END IF;
        END IF;
        v_wait := ARRAY(SELECT DISTINCT d.child_id FROM pgq.job_deps d
                         WHERE d.child_id = ANY (v_back)
                           AND (d.state = 'pending' OR (d.state = 'failed' AND d.parent_id = ANY (v_back))));
    END IF;

    -- Back into pgq.jobs (dedupe keys taken again first: PQ007 when one is held by a live job).
    v_ids := pgq._revive(v_back, coalesce(_requeue.at, now()), v_wait, v_due);
    -- Workflows: what these jobs' failure canceled comes back, waiting for them again.
    IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL AND cardinality(v_ids) > 0 THEN
        PERFORM pgq._rearm_deps(v_ids, coalesce(_requeue.at, now()));
    END IF;
    RETURN v_ids;
END
$$;
COMMENT ON FUNCTION pgq._requeue(bigint[], timestamptz, boolean) IS
    'Private. pgq.requeue''s body; with hold (pgq.requeue_workflow), a job whose failed parent is not requeued with it is left in history.';

-- sql/functions/_retry_delay.sql
-- pgq._retry_delay(attempt, backoff_base, backoff_max, details): the retry policy, in seconds.
-- Contract: the delay before a failed attempt runs again. details->'retry_after' (a JSON number
--   of seconds, checked by pgq.complete) when the handler asked for it; else the entrypoint's
--   backoff, least(backoff_max, backoff_base * 2^(attempt-1)), with equal jitter: a random
--   factor in [0.5, 1.0), so half the delay is guaranteed and the other half spreads a burst of
--   failures out. Intervals count in seconds (a month as 30 days); the doubling is numeric and
--   stops at 2^40 (base * 2^40 as an interval overflows for a base of a few seconds or more).
--   LANGUAGE sql without a SET clause, so pgq.complete inlines it into its statement (as
--   pgq._json_ok: it names pg_catalog functions only, qualified; EXECUTE is the owner's alone).
--   See docs/architecture.md#retry-backoff.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._retry_delay(attempt int, backoff_base interval, backoff_max interval,
                                            details jsonb)
RETURNS float8
LANGUAGE sql
VOLATILE
AS $$
    SELECT CASE WHEN pg_catalog.jsonb_typeof(details) = 'object' AND details ? 'retry_after'
                THEN (details ->> 'retry_after')::pg_catalog.float8
                ELSE least(EXTRACT(epoch FROM backoff_max),
                                      EXTRACT(epoch FROM backoff_base)
                                      * 2::pg_catalog.numeric ^ least(attempt - 1, 40))::pg_catalog.float8
                     * (0.5 + pg_catalog.random() * 0.5)
           END;
$$;
COMMENT ON FUNCTION pgq._retry_delay(int, interval, interval, jsonb) IS
    'Private. The retry policy: seconds before a failed attempt runs again (retry_after, else backoff with equal jitter). Inlined into pgq.complete.';

-- sql/functions/_revive.sql
-- pgq._revive(ids, run_at, wait, due)
-- Contract: moves the history rows of ids (failed or canceled jobs the caller has locked) back
--   into pgq.jobs, every column they kept there kept: the jobs in wait become 'waiting' (slot
--   4: they wait for their parents again), the others, when due, 'queued' with a ready number
--   in the current ring slot (behind the fence of their entrypoints, pgq._ready_lock, taken
--   first for the entrypoints of the rows it moves, whatever the caller read before), else
--   'scheduled' (slot 4); run_at is the given time. A job's dedupe key is taken again in
--   pgq.live_keys first. Returns the ids moved, in id order. The one move from history back to
--   live for pgq._requeue (requeued jobs) and pgq._rearm_deps (the jobs their failure canceled).
-- Locking: when due, the fence of their entrypoints (shared); the rows it deletes and inserts;
--   an INSERT into pgq.live_keys per dedupe key.
-- Errors: PQ007 when a live job holds the dedupe key of one of them (nothing is moved: the
--   whole call is undone).
CREATE OR REPLACE FUNCTION pgq._revive(ids bigint[], run_at timestamptz, wait bigint[], due boolean)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq._requeue and pgq._rearm_deps, whose enable_seqscan = off is in force here.
AS $$
#variable_conflict use_column
DECLARE
    v_ids   bigint[];
    v_clash text;
    v_due   boolean := _revive.due;
BEGIN
    IF v_due THEN
        PERFORM pgq._ready_lock(ARRAY(SELECT DISTINCT h.entrypoint FROM pgq.job_history h
                                        WHERE h.id = ANY (_revive.ids) AND h.id <> ALL (_revive.wait)));
    END IF;
    WITH back AS (
        DELETE FROM pgq.job_history h
         WHERE h.id = ANY (_revive.ids)
        RETURNING h.*
    ), keys AS (
        INSERT INTO pgq.live_keys (dedupe_key, job_id)
        SELECT b.dedupe_key, b.id
          FROM back b
         WHERE b.dedupe_key IS NOT NULL
         ORDER BY b.id
            ON CONFLICT (dedupe_key) DO NOTHING
        RETURNING job_id
    ), ins AS (
        INSERT INTO pgq.jobs (id, entrypoint, priority, run_at, enqueued_at, payload, headers,
                              dedupe_key, errors, timeout, status, ready_seq, slot, group_key)
        SELECT b.id, b.entrypoint, b.priority, _revive.run_at, b.enqueued_at,
               b.payload, b.headers, b.dedupe_key, b.errors, b.timeout,
               CASE WHEN b.id = ANY (_revive.wait) THEN 'waiting' WHEN v_due THEN 'queued' ELSE 'scheduled' END,
               CASE WHEN v_due AND b.id <> ALL (_revive.wait) THEN nextval('pgq.ready_seq') END,
               CASE WHEN v_due AND b.id <> ALL (_revive.wait) THEN pgq._slot() ELSE 4 END, b.group_key
          FROM (SELECT b.* FROM back b
                 WHERE b.dedupe_key IS NULL OR b.id IN (SELECT k.job_id FROM keys k)
                 ORDER BY b.id) AS b
        RETURNING id
    )
    SELECT array_agg(b.id ORDER BY b.id) FILTER (WHERE ins.id IS NOT NULL),
           (array_agg(b.dedupe_key ORDER BY b.id) FILTER (WHERE ins.id IS NULL))[1]
      INTO v_ids, v_clash
      FROM back b
      LEFT JOIN ins ON ins.id = b.id;
    IF v_clash IS NOT NULL THEN
        -- Raising undoes the whole call: no history row is lost, nothing is requeued.
        RAISE EXCEPTION 'cannot requeue: dedupe key % is held by a live job', quote_literal(v_clash)
            USING ERRCODE = 'PQ007';
    END IF;
    RETURN coalesce(v_ids, '{}');
END
$$;
COMMENT ON FUNCTION pgq._revive(bigint[], timestamptz, bigint[], boolean) IS
    'Private. Moves failed or canceled jobs from history back into pgq.jobs (waiting, queued or scheduled), their dedupe keys taken again; for pgq._requeue and pgq._rearm_deps.';

-- sql/functions/_sample_backlog.sql
-- pgq._sample_backlog(at): the charts' backlog sample of the minute `at` falls in.
-- Contract: when pgq.metrics_backlog has no row for that minute yet, writes one per entrypoint:
--   due (queued jobs, and scheduled ones due at `at` not promoted yet, each part counted up to
--   10,000 like pgq.metrics, so at most 20,000) and running; and deletes samples older than one
--   hour. Otherwise does nothing (one sample per minute, whoever calls). Called by
--   pgq.rollup_metrics under its lock, so callers never write one minute twice; the primary key
--   guards it anyway.
-- Locking: inserts and deletes rows of pgq.metrics_backlog.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._sample_backlog(at timestamptz)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Each count reads its partial index from the entrypoint on, never a whole slot (a plan made
-- while a slot is empty must not scan it whole once it is full: tests/py/test_plans.py).
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_minute timestamptz := date_bin(interval '1 minute', _sample_backlog.at, timestamptz '2000-01-01 00:00:00+00');
    v_cap    CONSTANT bigint := 10000;
BEGIN
    IF EXISTS (SELECT 1 FROM pgq.metrics_backlog b WHERE b.minute = v_minute) THEN
        RETURN;
    END IF;
    INSERT INTO pgq.metrics_backlog (entrypoint, minute, due, running)
    SELECT e.entrypoint, v_minute, qd.n + sd.n, rn.n
      FROM pgq.entrypoints e
     CROSS JOIN LATERAL (
           SELECT count(*) AS n
             FROM (SELECT 1 FROM pgq.jobs j
                    WHERE j.entrypoint = e.entrypoint AND j.status = 'queued'
                    LIMIT v_cap) AS x) AS qd
     CROSS JOIN LATERAL (
           SELECT count(*) AS n
             FROM (SELECT 1 FROM pgq.jobs j
                    WHERE j.entrypoint = e.entrypoint AND j.status = 'scheduled' AND j.slot = 4
                      AND j.run_at <= _sample_backlog.at
                    LIMIT v_cap) AS x) AS sd
     CROSS JOIN LATERAL (
           SELECT count(*) AS n FROM pgq.jobs j
            WHERE j.entrypoint = e.entrypoint AND j.status = 'running') AS rn
     ORDER BY e.entrypoint
        ON CONFLICT DO NOTHING;
    DELETE FROM pgq.metrics_backlog b WHERE b.minute < v_minute - interval '1 hour';
END
$$;
COMMENT ON FUNCTION pgq._sample_backlog(timestamptz) IS
    'Private. Once per minute: due and running jobs per entrypoint into pgq.metrics_backlog (kept one hour), for pgq.metrics_series.';

-- sql/functions/_schedule_served.sql
-- pgq._schedule_served(entrypoint, claimer, at): may this claimer fire a schedule of this
--   entrypoint now?
-- Contract: true when the claimer is not in the workers registry (a client that does not
--   register, such as a psql loop or a 0.1.0 worker: it fires every schedule, as before), or
--   when a live worker serves the entrypoint: one in pgq.workers that announced it and was
--   last seen within its timeout at `at` (the claimer itself, or any other: a process that
--   only runs schedules fires them for the workers that run the jobs). A schedule nobody
--   serves is therefore not fired; it stays due, and when a worker serving it starts, its
--   catch_up decides (once: one fire for the missed ticks; skip: the next tick). So its jobs
--   cannot pile up with no consumer. Used by pgq.claim_schedules and pgq.next_schedule_at.
-- Locking: none (reads pgq.workers).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._schedule_served(entrypoint text, claimer uuid, at timestamptz)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT NOT EXISTS (SELECT 1 FROM pgq.workers c WHERE c.worker_id = _schedule_served.claimer)
        OR EXISTS (SELECT 1 FROM pgq.workers w
                    WHERE _schedule_served.entrypoint = ANY (w.entrypoints)
                      AND w.last_seen_at >= _schedule_served.at - w.timeout);
$$;
COMMENT ON FUNCTION pgq._schedule_served(text, uuid, timestamptz) IS
    'Private. Whether a claimer may fire a schedule of this entrypoint: it is unregistered, or a live registered worker serves the entrypoint.';

-- sql/functions/_settle_deps.sql
-- pgq._settle_deps(parent_ids, at)
-- Contract: settles the pending edges (pgq.job_deps) of jobs that have just ended (they are in
--   pgq.job_history), each edge once: a successful parent, or an edge with run_anyway, makes
--   the edge satisfied and counts the child's pgq.job_waits one down; a child whose count
--   reaches 0 (and is still waiting) moves into the ring as queued when due (pgq._enter_ring,
--   by id, behind the fence: the insert trigger tells the workers), or becomes
--   scheduled when its run_at is later, all in the caller's transaction. A dead or canceled parent makes the edge failed and cancels the child if it
--   is still waiting (pgq._archive, details {"error": "dependency failed", "parent_id",
--   "parent_status"}); the canceled children's own edges are settled the same way, level by
--   level, so a failure cancels every waiting descendant that does not run anyway.
-- Locking: the edges it settles, in (parent, child) order (a parent's edges are settled by one
--   caller only; pgq._requeue locks edges in the same order), the
--   children's job rows in id order (FOR UPDATE: two parents of one child ending at once count
--   it down one after the other; a cancel of the child waits or is waited for), with, when a
--   child is to be canceled, every waiting job below it in the same ordered pass; then their
--   pgq.job_waits rows.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._settle_deps(parent_ids bigint[], at timestamptz)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_parents  bigint[] := _settle_deps.parent_ids;
    v_edges    record;
    v_ready    bigint[];
    v_cancel   bigint[];
    v_due      record;
    v_details  jsonb[];
    v_below    bigint[];
    c_waiting  constant text := 'waiting';
BEGIN
    -- Canceled children are archived here with the settling switched off in pgq._archive; this
    -- loop settles their edges in turn (a chain of any length without nesting calls).
    PERFORM set_config('pgq.settling', 'on', true);
    WHILE cardinality(v_parents) > 0 LOOP
        -- The edges, locked in (parent, child) order first (as pgq._requeue locks them).
        PERFORM 1 FROM pgq.job_deps d
         WHERE d.parent_id = ANY (v_parents) AND d.state = 'pending'
         ORDER BY d.parent_id, d.child_id
           FOR UPDATE;
        -- The parents' ends, read by id first (a join with pgq.job_history could hash the whole
        -- history: a settlement's cost grew with it).
        WITH ended AS MATERIALIZED (
            SELECT h.id, h.status FROM pgq.job_history h WHERE h.id = ANY (v_parents)
        ), settled AS (
            UPDATE pgq.job_deps d
               SET state = CASE WHEN h.status = 'successful' OR d.run_anyway THEN 'satisfied' ELSE 'failed' END
              FROM ended h
             WHERE d.parent_id = ANY (v_parents)
               AND d.state = 'pending'
               AND h.id = d.parent_id
            RETURNING d.child_id, d.parent_id, d.state, h.status AS parent_status
        )
        SELECT array_agg(DISTINCT s.child_id) FILTER (WHERE s.state = 'satisfied') AS ok,
               array_agg(DISTINCT s.child_id) FILTER (WHERE s.state = 'failed') AS bad,
               array_agg(s.child_id) FILTER (WHERE s.state = 'satisfied') AS counts,
               jsonb_object_agg(s.child_id::text, jsonb_build_object('parent_id', s.parent_id,
                                                                     'parent_status', s.parent_status))
                   FILTER (WHERE s.state = 'failed') AS why
          INTO v_edges
          FROM settled s;
        -- The children, locked in id order, still waiting. The first time some are to be canceled,
        -- every waiting job below them too (through pending edges), in the same ordered pass:
        -- locking level by level, two settlements could each hold a job of one level that the
        -- other wants at the next, and deadlock.
        IF v_edges.bad IS NOT NULL AND v_below IS NULL THEN
            v_below := ARRAY(
                WITH RECURSIVE below (id) AS (
                    SELECT unnest(v_edges.bad)
                    UNION
                    SELECT d.child_id FROM below b JOIN pgq.job_deps d ON d.parent_id = b.id AND d.state = 'pending'
                )
                SELECT b.id FROM below b);
        END IF;
        PERFORM 1 FROM pgq.jobs j
         WHERE j.id = ANY (coalesce(v_edges.ok, '{}') || coalesce(v_edges.bad, '{}') || coalesce(v_below, '{}'))
           AND j.status = c_waiting AND j.slot = 4
         ORDER BY j.id
           FOR UPDATE;
        -- Satisfied edges count their children down; those at 0 are released.
        WITH down AS (
            UPDATE pgq.job_waits w
               SET pending = w.pending - c.n
              FROM (SELECT x.id, count(*)::int AS n FROM unnest(v_edges.counts) AS x(id) GROUP BY x.id) c
             WHERE w.child_id = ANY (v_edges.counts)  -- probed by id: a join could walk the whole
               AND w.child_id = c.id                  -- index, dead entries of every count included
            RETURNING w.child_id, w.pending
        )
        SELECT array_agg(d.child_id) INTO v_ready FROM down d WHERE d.pending = 0;
        v_cancel := ARRAY(SELECT j.id FROM pgq.jobs j
                           WHERE j.id = ANY (coalesce(v_edges.bad, '{}'))
                             AND j.status = c_waiting AND j.slot = 4
                           ORDER BY j.id);
        IF v_ready IS NOT NULL THEN
            -- Not the ones being canceled (a failed edge besides). Those due move straight into
            -- the ring as queued, found by id (a scan of the promotion index would walk the
            -- dead entries of every job promoted before, which a held horizon keeps), behind
            -- the fence of their entrypoints; those not due yet become scheduled (promoted
            -- when due, as any delayed job).
            SELECT array_agg(j.id) AS ids, array_agg(DISTINCT j.entrypoint) AS eps INTO v_due
              FROM pgq.jobs j
             WHERE j.id = ANY (v_ready) AND j.id <> ALL (v_cancel)
               AND j.status = c_waiting AND j.slot = 4
               AND j.run_at <= _settle_deps.at;
            IF v_due.ids IS NOT NULL THEN
                PERFORM pgq._enter_ring(v_due.ids, c_waiting, v_due.eps);
            END IF;
            UPDATE pgq.jobs j
               SET status = 'scheduled'
             WHERE j.id = ANY (v_ready) AND j.id <> ALL (v_cancel)
               AND j.status = c_waiting AND j.slot = 4;
            DELETE FROM pgq.job_waits w WHERE w.child_id = ANY (v_ready);
        END IF;
        EXIT WHEN cardinality(v_cancel) = 0;
        SELECT array_agg(jsonb_build_object('error', 'dependency failed') || (v_edges.why -> x.id::text) ORDER BY x.ord)
          INTO v_details
          FROM unnest(v_cancel) WITH ORDINALITY AS x(id, ord);
        PERFORM 1 FROM pgq._archive(v_cancel, array_fill('canceled'::text, ARRAY[cardinality(v_cancel)]),
                                    v_details, _settle_deps.at);
        DELETE FROM pgq.job_waits w WHERE w.child_id = ANY (v_cancel);
        v_parents := v_cancel;
    END LOOP;
    PERFORM set_config('pgq.settling', 'off', true);
END
$$;
COMMENT ON FUNCTION pgq._settle_deps(bigint[], timestamptz) IS
    'Private. Settles the edges of jobs that just ended: successes count their waiting children down and release those at 0; failures cancel waiting descendants.';

-- sql/functions/_streaks.sql
-- pgq._streaks(errors): what a job's error list says about its interruptions and snoozes.
-- Contract: interrupted is the number of entries at the end of the list that are interrupted
--   attempts (outcome 'interrupted', or a counted interruption: details.interrupted true), the
--   streak pgq.complete bounds with max_interruptions; any other entry (a failure, a sweep, a
--   snooze) ends the streak. snoozed is the number of snoozes in the whole list (outcome
--   'snoozed'), which pgq.complete bounds with max_snoozes. NULL or '[]' gives 0 and 0.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._streaks(errors jsonb, OUT interrupted int, OUT snoozed int)
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT (coalesce(jsonb_array_length(errors), 0)
            - coalesce(max(e.ord) FILTER (WHERE NOT coalesce(e.v ->> 'outcome' = 'interrupted'
                                                            OR e.v -> 'details' ->> 'interrupted' = 'true', false)), 0))::int,
           (count(*) FILTER (WHERE e.v ->> 'outcome' = 'snoozed'))::int
      FROM jsonb_array_elements(coalesce(errors, '[]'::jsonb)) WITH ORDINALITY AS e(v, ord)
$$;
COMMENT ON FUNCTION pgq._streaks(jsonb) IS
    'Private. From an error list: interrupted attempts in a row at its end, and snoozes in all.';

-- sql/functions/_sweep.sql
-- pgq._sweep(entrypoints, at): stale running jobs leave the running state.
-- Contract: running jobs of the given entrypoints (NULL: every entrypoint) whose heartbeat is
--   older than their entrypoint's heartbeat_timeout at `at` (their worker is gone): those whose
--   attempts are used up go to history as failed, those flagged for cancellation as canceled;
--   the others are queued again (lease, worker and heartbeat cleared, a new ready number behind
--   the fence, the timeout noted in their error list) and the next claim takes them as a new
--   attempt. A paused entrypoint's stale jobs (pgq.pause, or concurrency_limit 0) are left
--   running as they are, under their old lease, until it is resumed (nothing would run them, and
--   their worker, if only slow, may still complete them); those out of attempts or flagged for
--   cancellation are archived all the same. SKIP LOCKED: a job a concurrent call holds is left
--   for the next sweep. First, running jobs past their attempt's deadline (deadline_at, see
--   pgq.claim) are ended as timed out (pgq._time_out: a failed attempt, the retry policy
--   applies), whether their worker is alive, hung or gone, paused or not. Returns the number
--   of jobs swept (timed out ones included).
-- Locking: row locks on the swept jobs.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._sweep(entrypoints text[], at timestamptz)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
-- Joins by hash only (docs/decisions/0007): the queue-again UPDATE meets pgq.jobs through one
-- scan by id per partition, not a probe of every partition per job; the stale read walks the
-- running jobs of every entrypoint either way.
SET enable_nestloop = off
SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
    v_n     int := 0;
    v_m     int;
    v_stale record;
    v_late  bigint[];
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution settings).
    c_running constant text := 'running';
BEGIN
    -- One locked read of the stale jobs (the running index is walked once; under a held horizon
    -- that walk is the cost): those to archive, and those to queue again with the entrypoints
    -- whose fence their ready numbers need.
    SELECT array_agg(s.id ORDER BY s.id) FILTER (WHERE s.late) AS late_ids,
           array_agg(s.id ORDER BY s.id) FILTER (WHERE s.dead) AS dead_ids,
           -- 'failed': pgq._archive ends a job whose cancellation was requested as canceled,
           -- and appends the timeout to the error list either way.
           array_agg('failed'::text ORDER BY s.id) FILTER (WHERE s.dead) AS statuses,
           array_agg(jsonb_build_object('error', 'heartbeat timeout', 'worker_id', s.worker_id,
                                        'heartbeat_at', s.heartbeat_at) ORDER BY s.id)
               FILTER (WHERE s.dead) AS details,
           array_agg(s.id ORDER BY s.priority DESC, s.run_at, s.id) FILTER (WHERE NOT s.dead AND NOT s.late) AS back_ids,
           array_agg(DISTINCT s.entrypoint) FILTER (WHERE NOT s.dead AND NOT s.late) AS back_eps
      INTO v_stale
      FROM (SELECT j.id, j.entrypoint, j.priority, j.run_at, j.cancel_requested, j.worker_id,
                   j.heartbeat_at, late.late,
                   NOT late.late AND (j.attempt >= c.max_attempts OR j.cancel_requested) AS dead
              FROM pgq.entrypoints c
              JOIN pgq.jobs j ON j.entrypoint = c.entrypoint AND j.status = 'running' AND j.slot <> 4
             CROSS JOIN LATERAL (SELECT coalesce(j.deadline_at <= _sweep.at, false) AS late) AS late
             WHERE (_sweep.entrypoints IS NULL OR c.entrypoint = ANY (_sweep.entrypoints))
               AND (late.late
                    OR (j.heartbeat_at < _sweep.at - c.heartbeat_timeout
                        AND (j.attempt >= c.max_attempts OR j.cancel_requested
                             OR (c.paused_at IS NULL AND coalesce(c.concurrency_limit, 1) > 0))))
               FOR UPDATE OF j SKIP LOCKED) s;

    -- Past their deadline: a failed attempt each, timed out (the retry policy decides).
    IF v_stale.late_ids IS NOT NULL THEN
        v_late := pgq._time_out(v_stale.late_ids, _sweep.at);
        v_n := cardinality(v_late);
    END IF;

    IF v_stale.dead_ids IS NOT NULL THEN
        SELECT v_n + count(*) INTO v_n
          FROM pgq._archive(v_stale.dead_ids, v_stale.statuses, v_stale.details, _sweep.at);
    END IF;
    IF v_stale.back_ids IS NULL THEN
        RETURN v_n;
    END IF;

    PERFORM pgq._ready_lock(v_stale.back_eps);
    UPDATE pgq.jobs j
       SET status = 'queued',
           ready_seq = u.seq,
           lease = NULL,
           worker_id = NULL,
           started_at = NULL,
           heartbeat_at = NULL,
           claim_request = NULL,
           -- No lease in the entry: a lease in the error list means that attempt's result was
           -- applied (see pgq.complete).
           errors = j.errors || jsonb_build_array(jsonb_build_object(
                        'attempt', j.attempt, 'at', _sweep.at, 'decision', 'retry',
                        'details', jsonb_build_object('error', 'heartbeat timeout',
                                                      'worker_id', j.worker_id,
                                                      'heartbeat_at', j.heartbeat_at)))
      -- The ready numbers drawn here, in the order of back_ids (after the sort), whatever the join.
      FROM (SELECT u.id, nextval('pgq.ready_seq') AS seq
              FROM unnest(v_stale.back_ids) WITH ORDINALITY AS u(id, ord) ORDER BY u.ord) AS u
     WHERE j.id = u.id
       AND j.id = ANY (v_stale.back_ids)
       AND j.status = c_running AND j.slot <> 4;
    GET DIAGNOSTICS v_m = ROW_COUNT;
    RETURN v_n + v_m;
END
$$;
COMMENT ON FUNCTION pgq._sweep(text[], timestamptz) IS
    'Private. Stale running jobs: archived (attempts used up, cancel requested) or queued again with a new ready number.';

-- sql/functions/_time_out.sql
-- pgq._time_out(ids, at): running attempts past their deadline end as failed, "timed out".
-- Contract: of the given jobs, those still running whose attempt's deadline_at (set by the claim:
--   claim time + the job's own timeout, else its entrypoint's run_timeout) is at or before `at`
--   end as a failed attempt, through pgq.complete under their own worker and lease, so the
--   retry policy applies as for any failure (queued again after the backoff, dead on the last
--   attempt, canceled when a cancel was requested). The details SQL writes:
--   {error: 'timed out', message: 'timed out after N s', timeout_s, started_at, deadline_at}.
--   The lease is written with the error entry, so a result the worker sends later under that
--   lease is answered with this decision and changes nothing. Returns the ids ended.
--   Called by pgq._sweep (pgq.maintain and the claims: also when the worker is hung or gone)
--   and by pgq.heartbeat (which answers 'timed_out': the worker stops the handler at once).
-- Locking: row locks on the jobs ended (pgq.complete: in id order).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._time_out(ids bigint[], at timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_done bigint[] := '{}';
    v_w    record;
BEGIN
    FOR v_w IN
        SELECT j.worker_id, array_agg(j.id ORDER BY j.id) AS ids, array_agg(j.lease ORDER BY j.id) AS leases,
               jsonb_agg(jsonb_build_object(
                   'error', 'timed out',
                   'message', format('timed out after %s s',
                                     trim_scale(extract(epoch FROM j.deadline_at - j.started_at))),
                   'timeout_s', extract(epoch FROM j.deadline_at - j.started_at)::float8,
                   'started_at', j.started_at, 'deadline_at', j.deadline_at) ORDER BY j.id) AS details
          FROM pgq.jobs j
         WHERE j.id = ANY (_time_out.ids)
           AND j.status = 'running' AND j.slot <> 4
           AND j.deadline_at <= _time_out.at
         GROUP BY j.worker_id
         ORDER BY j.worker_id
    LOOP
        SELECT v_done || coalesce(array_agg(c.id), '{}') INTO v_done
          FROM pgq.complete(v_w.worker_id, v_w.ids, v_w.leases,
                            array_fill('failed'::text, ARRAY[cardinality(v_w.ids)]), v_w.details,
                            _time_out.at) AS c;
    END LOOP;
    RETURN v_done;
END
$$;
COMMENT ON FUNCTION pgq._time_out(bigint[], timestamptz) IS
    'Private. Ends running attempts past their deadline as failed attempts (timed out after N s), through pgq.complete: the retry policy applies. Returns the ids ended.';

-- sql/functions/_workflow_of.sql
-- pgq._workflow_of(job_id)
-- Contract: the workflow job_id belongs to: the workflow id of its edges in pgq.job_deps (as
--   parent or as child; the oldest, i.e. smallest, when a later call joined it to another
--   workflow), NULL for a job without dependencies or dependents.
-- Locking: none (reads only).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._workflow_of(job_id bigint)
RETURNS bigint
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    -- OFFSET 0: the edges of this job first (its index), then their least workflow id; else
    -- min() walks job_deps_workflow_idx from the smallest id, filtering on the job.
    SELECT least((SELECT min(e.w) FROM (SELECT d.workflow_id AS w FROM pgq.job_deps d
                                         WHERE d.parent_id = _workflow_of.job_id OFFSET 0) e),
                 (SELECT min(e.w) FROM (SELECT d.workflow_id AS w FROM pgq.job_deps d
                                         WHERE d.child_id = _workflow_of.job_id OFFSET 0) e));
$$;
COMMENT ON FUNCTION pgq._workflow_of(bigint) IS
    'Private. The workflow id of a job''s edges (the smallest of several); NULL for a job outside any workflow.';

-- sql/functions/cancel.sql
-- pgq.cancel(ids, at)
-- Contract: queued and scheduled jobs move to history as canceled at once (their dedupe keys
--   are free again); running jobs are flagged
--   (cancel_requested) and their worker is told through pgq_events ({"kind": "cancel"}) and
--   through the next heartbeat answer; the worker then completes them as canceled (or the claim
--   path archives them once their heartbeat goes stale). Returns the ids canceled or flagged
--   (one column, id);
--   ids that are unknown or already finished are ignored. Calling it again is harmless.
--   at NULL means now(). A job carried to another slot of the ring while the call waited for it
--   (pgq.maintain) is found again by a second look.
-- Locking: row locks on the affected jobs, taken in id order; waits for a transaction that
--   holds one of them.
-- Errors: PQ009 NULL ids or NULL element.
CREATE OR REPLACE FUNCTION pgq.cancel(ids bigint[], at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans, so that the status variable below stays a parameter (a custom plan would put
-- its value in, and could then scan a whole partial index, as described there).
SET plan_cache_mode = force_generic_plan
-- Index scans by id (jobs_id_idx): a generic plan made while a partition was empty would
-- otherwise scan it sequentially once per job after it has filled.
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution settings).
    c_running constant text := 'running';
    v_queued  bigint[];
    v_running bigint[];
    v_flagged bigint[];
    v_done    bigint[] := '{}';
    v_look   int;
BEGIN
    PERFORM pgq._check_dims(cancel.ids, 'ids');
    PERFORM pgq._check_time(cancel.at, 'at');
    IF cancel.ids IS NULL OR array_position(cancel.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(cancel.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;

    -- Unknown and finished ids miss twice. Each look locks its jobs in one read, in id order,
    -- whatever their status and slot (docs/architecture.md#leases-and-zombie-fencing).
    FOR v_look IN 1..2 LOOP  -- look twice: docs/architecture.md#look-twice
        SELECT array_agg(l.id ORDER BY l.id) FILTER (WHERE l.status <> c_running),
               array_agg(l.id ORDER BY l.id) FILTER (WHERE l.status = c_running)
          INTO v_queued, v_running
          FROM (SELECT j.id, j.status FROM pgq.jobs j
                 WHERE j.id = ANY (cancel.ids)
                   AND j.id <> ALL (v_done)
                 ORDER BY j.id
                   FOR UPDATE) AS l;
        IF v_queued IS NOT NULL THEN
            -- Queued and scheduled: to history as canceled; _archive frees their dedupe keys.
            RETURN QUERY SELECT a.id
                           FROM pgq._archive(v_queued, array_fill('canceled'::text, ARRAY[cardinality(v_queued)]),
                                             NULL, coalesce(cancel.at, now())) AS a;
            v_done := v_done || v_queued;
            -- Workflows: a waiting job canceled here has no count left to keep (its row is
            -- locked by the read above, as a parent's settlement locks it before its count).
            IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL THEN
                DELETE FROM pgq.job_waits w WHERE w.child_id = ANY (v_queued);
            END IF;
        END IF;

        IF v_running IS NOT NULL THEN
            WITH flagged AS (
                UPDATE pgq.jobs j
                   SET cancel_requested = true
                 WHERE j.id = ANY (v_running)
                   AND j.status = c_running AND j.slot <> 4
                RETURNING j.id
            )
            SELECT array_agg(f.id) INTO v_flagged FROM flagged f;
            IF v_flagged IS NOT NULL THEN
                RETURN QUERY SELECT unnest(v_flagged);
                v_done := v_done || v_flagged;
            END IF;
        END IF;
        EXIT WHEN cardinality(v_done) >= cardinality(cancel.ids);
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgq.cancel(bigint[], timestamptz) IS
    'Cancels jobs: queued ones go to history as canceled, running ones are flagged and their worker notified. Returns the ids affected.';

-- sql/functions/cancel_workflow.sql
-- pgq.cancel_workflow(job_id, at)
-- Contract: cancels every job of a workflow (pgq.workflow: job_id is its id or any of its
--   jobs) that has not ended, as pgq.cancel does: waiting,
--   scheduled and queued jobs move to history as canceled at once, running ones are asked to
--   stop. Returns the ids canceled or flagged (one column, id). Jobs that ended are left as they
--   are; a job without dependencies is a workflow of none (nothing is canceled).
-- Locking: as pgq.cancel (row locks in id order).
-- Errors: PQ009 NULL job_id, at out of range.
CREATE OR REPLACE FUNCTION pgq.cancel_workflow(job_id bigint, at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT c.id
      FROM pgq.cancel(ARRAY(SELECT w.id FROM pgq.workflow(cancel_workflow.job_id) w
                             WHERE w.state IN ('waiting', 'scheduled', 'queued', 'running')
                             ORDER BY w.id),
                      cancel_workflow.at) c;
END
$$;
COMMENT ON FUNCTION pgq.cancel_workflow(bigint, timestamptz) IS
    'Cancels every job of job_id''s workflow that has not ended (as pgq.cancel); returns the ids canceled or flagged.';

-- sql/functions/claim.sql
-- pgq.claim(worker_id, entrypoints, batch_size, at, request_id)
-- Contract: claims up to batch_size runnable jobs of the given entrypoints, highest priority
--   first, then in ready order: the order in which jobs became runnable (enqueue order for jobs
--   due at once; a delayed or retried job joins when it is due; a released or timed-out job
--   goes to the back of its lane). Each lane (entrypoint, priority) is read from its cursor on
--   (pgq._lane_cursor), so row versions of jobs claimed or finished before are never walked
--   again, however long a transaction holds the vacuum horizon (docs/decisions/0006).
--   Each claimed job gets status running, heartbeat = at, this worker, a new lease and
--   attempt + 1.
--   Stale jobs (running with a heartbeat older than the entrypoint's heartbeat_timeout: their
--   worker is gone) are swept first, at most once a second of `at` across all claimers
--   (pgq._sweep, every entrypoint): queued again with the timeout in their error list (and then
--   claimed like any queued job, a new attempt), or to history as failed when their attempts
--   are used up, as canceled when cancellation was requested. (The ring's rotation and
--   truncation are pgq.maintain's, never a claim's: a TRUNCATE's lock would last as long as the
--   claim's transaction.)
--   An entrypoint's concurrency_limit holds across all workers: one claimer at a time takes the
--   entrypoint's policy row (SKIP LOCKED: the others skip that entrypoint for this call), and
--   claims only what fits beside its running jobs, so limit 0 claims nothing. An entrypoint
--   with a key_concurrency_limit is locked the same way; when the claim holds one, its jobs
--   are chosen by pgq._claim_keyed (group keys in turn, at most key_concurrency_limit running
--   jobs per key; the other entrypoints of the call as below). An entrypoint with a
--   rate_limit is locked the same way and takes at most rate_limit minus the starts of its
--   window (pgq._quota; per group key with rate_per_key, through pgq._claim_keyed); each claim
--   records its starts in pgq.rate_starts (one row per budget it took from), so no window of
--   rate_period ever holds more than rate_limit starts (pgq.next_run_at tells a worker when the
--   next one is allowed). An entrypoint
--   paused with pgq.pause is skipped entirely until pgq.resume.
--   at NULL means now(); tests pass a time to move the clock.
--   request_id (optional, chosen by the worker, new for every claim): a claim sent again with
--   the same request_id by the same worker (its answer was lost with the connection) answers
--   the jobs the first one claimed that this worker still runs under those leases (heartbeat
--   refreshed; priority first, then ready order, as a claim answers), and claims nothing new;
--   when none of them is still running under it (finished, released, swept or claimed again
--   meanwhile), it is an ordinary claim. A lost answer costs a round trip, not a heartbeat
--   timeout. A job carried to another slot of the ring while the replay waited for it
--   (pgq.maintain) is found again by a second look.
--   Jobs not due yet are 'scheduled' (in their own partition, outside the claim's way); the
--   claim first promotes the scheduled jobs of its entrypoints that are due at `at` (at most
--   1000 per call, earliest first; pgq._promote), a cheap index probe when none is due.
--   Each row carries the entrypoint's policy as the worker needs it: max_attempts,
--   heartbeat_timeout (also in seconds, heartbeat_timeout_s: heartbeat well within it) and
--   last_attempt (a failure of this attempt makes the job dead); the attempt's time limit in
--   seconds, run_timeout_s (the job's own timeout, else the entrypoint's run_timeout; NULL: none;
--   the claim sets deadline_at = at + that limit, and pgq._time_out ends the attempt past it);
--   and taken_over, for a job whose previous attempt SQL ended: swept because its worker fell
--   silent ({worker_id, heartbeat_at (its last sign of life), attempt, swept_at, error
--   'heartbeat timeout'}) or timed out ({worker_id, attempt, swept_at, error 'timed out',
--   message, started_at, deadline_at, timeout_s}); else NULL.
-- Locking: FOR UPDATE SKIP LOCKED on candidate jobs and on limited entrypoints' policy rows;
--   never waits for another claimer. A replayed request locks its own running jobs in id
--   order (it waits for a call holding one of them, as heartbeat does). Must run in READ
--   COMMITTED so each step sees the last commit.
-- Errors: PQ001 bad entrypoints, PQ002 batch_size outside 1..10000, PQ009 NULL worker_id,
--   PQ010 not READ COMMITTED.
CREATE OR REPLACE FUNCTION pgq.claim(
    worker_id    uuid,
    entrypoints  text[],
    batch_size   int         DEFAULT 1,
    at           timestamptz DEFAULT NULL,
    request_id   uuid        DEFAULT NULL
)
RETURNS SETOF pgq.claimed_job
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans: planning these statements on every call cost more than running them. No JIT:
-- a generic plan's estimates (unknown LIMIT, large backlog) would compile it on every call.
SET plan_cache_mode = force_generic_plan
SET jit = off
-- Partitions emptied by TRUNCATE would otherwise get sequential scans in generic plans made
-- while they were empty (docs/decisions/0006).
SET enable_seqscan = off
-- No bitmap scans: planned without statistics, the UPDATE by ids read each partition through a
-- bitmap of its id index (10 jobs of 10 keys: 10 heap pages visited through the bitmap, 9,000
-- instructions per job more than analyzed), and the key walk's step (pgq._keyed_candidates)
-- through a bitmap of the lane's whole ready index, the key a filter, instead of one probe of
-- jobs_key_idx. Every statement of a claim finds its rows by index probes.
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_now     timestamptz := coalesce(claim.at, now());
    v_limited text[];
    v_keyed   boolean;
    v_rated   boolean;
    v_ids     bigint[];
    v_found   bigint[];
    v_now_ms  bigint;
    v_look   int;
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution settings).
    c_queued  constant text := 'queued';
    c_running constant text := 'running';
    c_whole   constant bigint := -9223372036854775808;  -- pgq.rate_starts.key_hash: no key
BEGIN
    IF array_ndims(claim.entrypoints) > 1 OR claim.at < timestamptz '1970-01-01 00:00:00+00' OR claim.at >= timestamptz '9000-01-01 00:00:00+00' THEN
        PERFORM pgq._check_dims(claim.entrypoints, 'entrypoints'), pgq._check_time(claim.at, 'at');
    END IF;
    IF claim.worker_id IS NULL THEN
        RAISE EXCEPTION 'worker_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF coalesce(cardinality(claim.entrypoints), 0) = 0
       OR array_position(claim.entrypoints, NULL) IS NOT NULL
       OR array_position(claim.entrypoints, '') IS NOT NULL THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array of non-empty names, got %',
            coalesce(claim.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    IF claim.batch_size IS NULL OR claim.batch_size NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'batch_size must be between 1 and 10000, got %', coalesce(claim.batch_size::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'pgq.claim needs READ COMMITTED isolation, the transaction is %',
            current_setting('transaction_isolation')
            USING ERRCODE = 'PQ010';
    END IF;

    -- The same request again: its answer was lost. Answer the jobs it claimed, still ours.
    -- (A read first: the UPDATE would fire the update trigger even when it finds nothing, as
    -- it does for every new request.) Then the jobs are locked by id, in id order, looking
    -- twice: a replay never falls through to a new claim while its own job is being carried.
    IF claim.request_id IS NOT NULL THEN
        SELECT array_agg(j.id) INTO v_found
          FROM pgq.jobs j
         WHERE j.entrypoint = ANY (claim.entrypoints)
           AND j.claim_request = claim.request_id
           AND j.status = 'running' AND j.slot <> 4
           AND j.worker_id = claim.worker_id;
    END IF;
    IF v_found IS NOT NULL THEN
        v_ids := '{}';
        FOR v_look IN 1..2 LOOP  -- look twice: docs/architecture.md#look-twice
            v_ids := v_ids || ARRAY(SELECT j.id
                                      FROM pgq.jobs j
                                     WHERE j.id = ANY (v_found)
                                       AND j.id <> ALL (v_ids)
                                       AND j.claim_request = claim.request_id
                                       AND j.status = c_running AND j.slot <> 4
                                       AND j.worker_id = claim.worker_id
                                     ORDER BY j.id
                                       FOR UPDATE);
            EXIT WHEN cardinality(v_ids) = cardinality(v_found);
        END LOOP;
        -- None of them still runs under this request (finished, released, swept or claimed
        -- again meanwhile): an ordinary claim below.
        IF cardinality(v_ids) > 0 THEN
            RETURN QUERY
            WITH again AS (
                UPDATE pgq.jobs j
                   SET heartbeat_at = greatest(j.heartbeat_at, v_now)
                  FROM pgq.entrypoints c
                 WHERE j.id = ANY (v_ids)
                   AND j.status = c_running AND j.slot <> 4
                   AND c.entrypoint = j.entrypoint
                RETURNING j.id, j.lease, j.entrypoint, j.payload, j.headers, j.priority, j.attempt,
                          j.enqueued_at, j.run_at, j.dedupe_key, c.max_attempts, c.heartbeat_timeout,
                          extract(epoch FROM c.heartbeat_timeout)::float8 AS timeout_s,
                          j.attempt >= c.max_attempts AS last_attempt, j.ready_seq,
                          extract(epoch FROM coalesce(j.timeout, c.run_timeout))::float8 AS run_timeout_s,
                          CASE WHEN j.attempt > 1 AND j.errors -> -1 -> 'details' ->> 'error' IN ('heartbeat timeout', 'timed out')
                               THEN (j.errors -> -1 -> 'details') || jsonb_build_object('attempt', j.errors -> -1 -> 'attempt',
                                                                                        'swept_at', j.errors -> -1 -> 'at')
                                    || jsonb_strip_nulls(jsonb_build_object('worker_id', j.errors -> -1 -> 'worker_id'))
                          END AS taken_over
            )
            SELECT a.id, a.lease, a.entrypoint, a.payload, a.headers, a.priority, a.attempt,
                   a.enqueued_at, a.run_at, a.dedupe_key, a.max_attempts, a.heartbeat_timeout,
                   a.timeout_s, a.last_attempt, a.run_timeout_s, a.taken_over
              FROM again a
             ORDER BY a.priority DESC, a.ready_seq;
            RETURN;
        END IF;
    END IF;

    -- Stale jobs, at most once a second of the claim clock (either way: tests move it back).
    v_now_ms := (extract(epoch FROM v_now) * 1000)::bigint;
    IF abs(v_now_ms - (SELECT s.last_value FROM pgq.swept_at s)) >= 1000 THEN
        PERFORM setval('pgq.swept_at', greatest(v_now_ms, 0));
        PERFORM pgq._sweep(NULL, v_now);
    END IF;
    -- Due scheduled jobs become queued (the insert trigger tells the other workers). A probe
    -- first (pgq._promote's own read, without its locks): the call costs more than the probe.
    IF EXISTS (SELECT 1 FROM pgq.jobs j
                WHERE j.entrypoint = ANY (claim.entrypoints)
                  AND j.status = 'scheduled' AND j.slot = 4
                  AND j.run_at <= v_now) THEN
        PERFORM pgq._promote(claim.entrypoints, v_now, 1000);
    END IF;

    -- Limited entrypoints: one claimer at a time per entrypoint. The lock is held to commit.
    SELECT array_agg(c.entrypoint), bool_or(c.keyed), bool_or(c.rated) INTO v_limited, v_keyed, v_rated
      FROM (SELECT e.entrypoint,
                   e.key_concurrency_limit IS NOT NULL OR (e.rate_per_key AND e.rate_limit IS NOT NULL) AS keyed,
                   e.rate_limit IS NOT NULL AS rated
              FROM pgq.entrypoints e
             WHERE e.entrypoint = ANY (claim.entrypoints)
               AND (e.concurrency_limit IS NOT NULL OR e.key_concurrency_limit IS NOT NULL OR e.rate_limit IS NOT NULL)
               AND e.paused_at IS NULL
             ORDER BY e.entrypoint
               FOR UPDATE SKIP LOCKED) AS c;
    IF v_keyed THEN
        -- Per-key limits and fair share (a key-limited or key-rated entrypoint is locked by this claim).
        v_ids := pgq._claim_keyed(claim.entrypoints, v_limited, claim.batch_size, v_now);
    ELSE  -- (the statement below, not indented again: it is the claim of every other call)
    -- Lock the jobs to take: per lane from its cursor on (slot <> 4: queued jobs are in the
    -- ring, jobs_slot_check; the planner leaves jobs_scheduled out), then by priority and ready order
    -- within each entrypoint's quota. (The ids go to an array: the UPDATE below finds them by
    -- id whatever the planner guesses about the LIMITs.)
    WITH eps AS MATERIALIZED (  -- (each quota computed once, not again in the filter of lanes)
        SELECT c.entrypoint,
               CASE WHEN c.concurrency_limit IS NULL AND c.key_concurrency_limit IS NULL AND c.rate_limit IS NULL
                    THEN claim.batch_size
                    WHEN c.entrypoint = ANY (v_limited) THEN
                         pgq._quota(c.entrypoint, c.concurrency_limit, c.rate_limit, c.rate_period,
                                    c.rate_per_key, claim.batch_size, v_now)
                    ELSE 0 END AS quota
          FROM pgq.entrypoints c
         WHERE c.entrypoint = ANY (claim.entrypoints)
           AND c.paused_at IS NULL
    ), lanes AS MATERIALIZED (
        SELECT l.entrypoint, l.priority, eps.quota,
               pgq._lane_cursor(l.entrypoint, l.priority, l.cursor_seq) AS cursor
          FROM eps
          JOIN pgq.lanes l ON l.entrypoint = eps.entrypoint
         WHERE eps.quota > 0
    ), candidates AS (
        SELECT q.id, q.entrypoint, q.priority, q.ready_seq, lanes.quota
          FROM lanes
         CROSS JOIN LATERAL (
               SELECT j.id, j.entrypoint, j.priority, j.ready_seq
                 FROM pgq.jobs j
                WHERE j.entrypoint = lanes.entrypoint
                  AND j.priority = lanes.priority
                  AND j.status = 'queued'
                  AND j.slot <> 4
                  AND j.ready_seq > lanes.cursor
                  AND j.run_at <= v_now
                ORDER BY j.ready_seq
                LIMIT least(lanes.quota, claim.batch_size)
                  FOR UPDATE SKIP LOCKED) AS q
    )
    SELECT array_agg(p.id) INTO v_ids
      FROM (SELECT r.id
              FROM (SELECT c.id, c.priority, c.ready_seq, c.quota,
                           row_number() OVER (PARTITION BY c.entrypoint
                                              ORDER BY c.priority DESC, c.ready_seq) AS n
                      FROM candidates c) r
             WHERE r.n <= r.quota
             ORDER BY r.priority DESC, r.ready_seq
             LIMIT claim.batch_size) AS p;
    END IF;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;

    -- The lease carries the job's slot (lease mod 4, docs/architecture.md#leases-carry-the-slot):
    -- pgq.complete reads that slot first.
    RETURN QUERY
    WITH claimed AS (
        UPDATE pgq.jobs j
           SET status = 'running',
               lease = nextval('pgq.lease_seq') * 4 + j.slot,
               worker_id = claim.worker_id,
               started_at = v_now,
               heartbeat_at = v_now,
               claim_request = claim.request_id,
               attempt = j.attempt + 1,
               deadline_at = v_now + coalesce(j.timeout, c.run_timeout)
          FROM pgq.entrypoints c
         WHERE j.id = ANY (v_ids)
           AND j.status = c_queued AND j.slot <> 4
           AND c.entrypoint = j.entrypoint
        RETURNING j.id, j.lease, j.entrypoint, j.payload, j.headers, j.priority, j.attempt,
                  j.enqueued_at, j.run_at, j.dedupe_key, c.max_attempts, c.heartbeat_timeout,
                  extract(epoch FROM c.heartbeat_timeout)::float8 AS timeout_s,
                  j.attempt >= c.max_attempts AS last_attempt, j.ready_seq,
                  extract(epoch FROM coalesce(j.timeout, c.run_timeout))::float8 AS run_timeout_s,
                  -- Taken over from a silent worker: the sweep's note of the attempt before
                  -- (only read for a job claimed before).
                  CASE WHEN j.attempt > 1 AND j.errors -> -1 -> 'details' ->> 'error' IN ('heartbeat timeout', 'timed out')
                       THEN (j.errors -> -1 -> 'details') || jsonb_build_object('attempt', j.errors -> -1 -> 'attempt',
                                                                                'swept_at', j.errors -> -1 -> 'at')
                            || jsonb_strip_nulls(jsonb_build_object('worker_id', j.errors -> -1 -> 'worker_id'))
                  END AS taken_over
    )
    SELECT c.id, c.lease, c.entrypoint, c.payload, c.headers, c.priority, c.attempt, c.enqueued_at,
           c.run_at, c.dedupe_key, c.max_attempts, c.heartbeat_timeout, c.timeout_s, c.last_attempt,
           c.run_timeout_s, c.taken_over
      FROM claimed c
     ORDER BY c.priority DESC, c.ready_seq;
    -- Rate-limited entrypoints: the starts, one row per budget (the whole entrypoint, or each
    -- group key with rate_per_key), counted by the next claim under the same policy-row lock.
    -- (pgq._claim_keyed recorded them already: it knows each job's key and budget.)
    IF v_rated AND NOT coalesce(v_keyed, false) THEN
        INSERT INTO pgq.rate_starts (entrypoint, key_hash, rate_key, started_at, tokens, cum)
        SELECT r.*
          FROM (SELECT j.entrypoint,
                       CASE WHEN e.rate_per_key AND j.group_key IS NOT NULL THEN hashtextextended(j.group_key, 0)
                            ELSE c_whole END AS h,
                       CASE WHEN e.rate_per_key THEN j.group_key END AS k,
                       count(*)::int AS n
                  FROM pgq.jobs j
                  JOIN pgq.entrypoints e ON e.entrypoint = j.entrypoint
                 WHERE j.id = ANY (v_ids)
                   AND j.status = c_running AND j.slot <> 4
                   AND e.rate_limit IS NOT NULL
                 GROUP BY 1, 2, 3) AS b
         CROSS JOIN LATERAL pgq._rate_rows(b.entrypoint, b.h, b.k, b.n, v_now) AS r;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq.claim(uuid, text[], int, timestamptz, uuid) IS
    'Claims up to batch_size runnable jobs: priority desc, then ready order (stale jobs are swept and queued again first). SKIP LOCKED; respects concurrency limits; each claim gets a new lease. A claim re-sent with the same request_id answers the same jobs.';

-- sql/functions/claim_schedules.sql
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

-- sql/functions/compact_jobs.sql
-- pgq.compact_jobs(max_rows, max_bytes, lock_wait, at): the 0.1.0 name of pgq.maintain.
-- Contract: kept for clients of 0.1.0, whose workers call it every few seconds: runs
--   pgq.maintain(at) and answers in the old columns: compacted = a slot of the ring was
--   truncated, reason = pgq.maintain's state ('ok' or 'busy'), rows = jobs carried forward,
--   bytes_before = the ring's size before the truncation, bytes_after = its size after (NULL
--   when busy before any work). The arguments are checked as before and otherwise unused: the
--   ring has its own bounds (1,000 rows carried, a 5 ms lock wait). New clients call
--   pgq.maintain.
-- Locking: as pgq.maintain.
-- Errors: PQ008 max_rows or max_bytes NULL or negative, lock_wait NULL, negative or over 1
--   minute; pgq.maintain's.
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
    v_m record;
BEGIN
    IF compact_jobs.max_rows IS NULL OR compact_jobs.max_rows < 0 THEN
        RAISE EXCEPTION 'max_rows must be a non-negative number of rows, got %',
            coalesce(compact_jobs.max_rows::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    IF compact_jobs.max_bytes IS NULL OR compact_jobs.max_bytes < 0 THEN
        RAISE EXCEPTION 'max_bytes must be a non-negative number of bytes, got %',
            coalesce(compact_jobs.max_bytes::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    IF compact_jobs.lock_wait IS NULL OR compact_jobs.lock_wait < interval '0'
       OR compact_jobs.lock_wait > interval '1 minute' THEN
        RAISE EXCEPTION 'lock_wait must be between 0 and 1 minute, got %',
            coalesce(compact_jobs.lock_wait::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    SELECT * INTO v_m FROM pgq.maintain(compact_jobs.at) m;
    -- The size after: a few file sizes read under the truncation's lock (microseconds).
    RETURN QUERY
    SELECT v_m.truncated IS NOT NULL, v_m.state, v_m.carried::bigint, v_m.bytes,
           CASE WHEN v_m.bytes IS NOT NULL THEN
               (SELECT sum(pg_total_relation_size(format('pgq.jobs_%s', k)::regclass))::bigint
                  FROM generate_series(0, 3) AS k)
           END;
END
$$;
COMMENT ON FUNCTION pgq.compact_jobs(int, bigint, interval, timestamptz) IS
    'The 0.1.0 name of pgq.maintain, answering in its old columns (compacted = a slot truncated, reason = state, rows = jobs carried, bytes before and after).';

-- sql/functions/complete.sql
-- pgq.complete(worker_id, ids, leases, outcomes, details, at)
-- Contract: ends the attempts this worker still owns under those leases. The worker reports
--   what it observed; SQL decides what follows and answers it, one row per job accepted:
--   id, status (what SQL decided), attempt (the attempt that ended), max_attempts, and for a
--   job going back to the queue run_at and retry_in_s (seconds from at, on the server's clock).
--   A stale lease (the job was re-claimed, or is gone) is ignored, never applied, and gets no row.
--   outcomes, element i for job i:
--   'successful'  the handler returned: history as successful (also when a cancel was
--                 requested meanwhile: the work is done).
--   'failed'      the handler raised: the entrypoint's retry policy decides. While
--                 attempt < max_attempts and no cancel was requested, status 'retry': queued
--                 again after pgq._retry_delay (backoff_base * 2^(attempt-1), capped at
--                 backoff_max, with equal jitter; or details->'retry_after' seconds when the
--                 handler asked for it; due later: status 'scheduled', see pgq.claim). Else history
--                 as 'failed' (dead), or 'canceled' when a cancel
--                 was requested.
--   'interrupted' the worker cut the attempt off (shutdown): status 'retry', queued again at
--                 once (run_at = at), and the attempt is not counted (as pgq.release); the
--                 error list notes it. A job whose cancel was requested ends 'canceled'.
--   'canceled'    the handler gave up because the job was canceled (or chose to): history as
--                 canceled.
--   'snoozed'     the handler asked to run again later without using an attempt:
--                 details->'snooze' seconds (a number from 0 to 31536000) after at, on the
--                 server's clock: status 'snoozed', due then (queued, or scheduled when later),
--                 the attempt not counted, the snooze noted in the error list (outcome and
--                 decision 'snoozed'). A job that already snoozed max_snoozes times (its
--                 entrypoint's, default 100) has this snooze counted as a failed attempt
--                 (the retry policy, with the snooze as its retry_after). A job whose cancel
--                 was requested ends 'canceled'.
--   'fatal'       the job can never succeed (a payload its handler cannot decode, a permanent
--                 error): dead at once, history as 'failed' whatever attempts are left (or
--                 'canceled' when a cancel was requested), the error list notes outcome 'fatal'.
--   An 'interrupted' attempt of a job whose last max_interruptions attempts (its entrypoint's,
--   default 3) were all interrupted counts: it is treated as 'failed' (retry policy, dead on
--   the last attempt), its details marked interrupted: true with a message saying why, so a
--   job that hangs across restarts ends dead.
--   details: one JSON array (element i for job i, JSON null for none) or NULL for none at all;
--   each failure's details are kept in the job's error list. at NULL means now().
--   Idempotent: repeating a call whose answer was lost (the connection dropped after the
--   commit) finds the results already applied under the same leases, answers the same
--   decisions (a retry's run_at as stored) and changes nothing.
-- Locking: row locks on the owned jobs, taken in id order; waits only for a claimer that holds
--   one of them at this instant, and then sees its new lease (and leaves the job alone).
-- Errors: PQ009, PQ003 (arguments), PQ004 unknown outcome, PQ009 bad details, retry_after or
--   snooze.
CREATE OR REPLACE FUNCTION pgq.complete(
    worker_id  uuid,
    ids        bigint[],
    leases     bigint[],
    outcomes   text[],
    details    jsonb       DEFAULT NULL,
    at         timestamptz DEFAULT NULL
)
RETURNS TABLE (id bigint, status text, attempt int, max_attempts int, run_at timestamptz,
               retry_in_s float8)
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
    v_now      timestamptz := coalesce(complete.at, now());
    v_n        int := pgq._check_batch(complete.worker_id, complete.ids, complete.leases);
    v_details  jsonb[];
    v_outcomes text[] := complete.outcomes;  -- what is decided on (see 'interrupted', 'snoozed')
    v_bad      record;
    -- The answer, built as parallel arrays (one element per job accepted).
    a_id       bigint[] := '{}';
    a_status   text[] := '{}';
    a_attempt  int[] := '{}';
    a_max      int[] := '{}';
    a_run      timestamptz[] := '{}';
    -- The jobs still to decide (all at first; in the second round, those the first missed).
    r_ids      bigint[];
    r_leases   bigint[];
    r_outcomes text[];
    r_details  jsonb[];
    v_look    int;
    v_slots   smallint[];  -- the slots the jobs are looked for in (their leases' first)
    v_retry    boolean;  -- failures or interruptions among the jobs still to decide
    v_decided  bigint[];   -- failures and interruptions locked this round
    v_later    bigint[];   -- ... retried later (moved to jobs_scheduled)
    v_later_s  float8[];
    v_later_d  jsonb[];
    v_later_o  text[];
    v_now_ids  bigint[];   -- ... retried at once (queued in place)
    v_now_s    float8[];
    v_now_d    jsonb[];
    v_now_o    text[];
    v_eps      text[];
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution settings).
    c_running  constant text := 'running';
BEGIN
    -- The checking helpers are called only when there is something to check: each call of a
    -- function with SET clauses costs more than the check (docs/architecture.md).
    IF complete.at IS NOT NULL THEN
        PERFORM pgq._check_time(complete.at, 'at');
    END IF;
    IF complete.outcomes IS NULL THEN
        RAISE EXCEPTION 'outcomes must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF cardinality(complete.outcomes) <> v_n THEN
        RAISE EXCEPTION 'outcomes has % elements but ids has %', coalesce(cardinality(complete.outcomes)::text, 'NULL'), v_n
            USING ERRCODE = 'PQ003';
    END IF;
    IF complete.details IS NOT NULL THEN
        IF jsonb_typeof(complete.details) <> 'array' THEN
            RAISE EXCEPTION 'details must be a JSON array (element i for job i) or NULL, got %', jsonb_typeof(complete.details)
                USING ERRCODE = 'PQ009';
        END IF;
        IF jsonb_array_length(complete.details) <> v_n THEN
            RAISE EXCEPTION 'details has % elements but ids has %', jsonb_array_length(complete.details), v_n
                USING ERRCODE = 'PQ003';
        END IF;
        v_details := ARRAY(SELECT nullif(e.value, 'null'::jsonb)
                             FROM jsonb_array_elements(complete.details) WITH ORDINALITY AS e(value, ord)
                            ORDER BY e.ord);
    END IF;
    IF v_details IS NOT NULL OR array_ndims(complete.outcomes) > 1 THEN
        PERFORM pgq._check_details(complete.outcomes, v_details);
    END IF;
    SELECT u.s, u.d, u.ord INTO v_bad
      FROM unnest(complete.outcomes, v_details) WITH ORDINALITY AS u(s, d, ord)
     WHERE u.s IS NULL OR u.s NOT IN ('successful', 'failed', 'interrupted', 'canceled', 'snoozed', 'fatal')
        OR (jsonb_typeof(u.d) = 'object' AND u.d ? 'retry_after'
            AND (jsonb_typeof(u.d -> 'retry_after') <> 'number'
                 OR (u.d ->> 'retry_after')::numeric NOT BETWEEN 0 AND 31536000))
        OR (u.s = 'snoozed'
            AND (jsonb_typeof(u.d -> 'snooze') IS DISTINCT FROM 'number'
                 OR (u.d ->> 'snooze')::numeric NOT BETWEEN 0 AND 31536000))
     ORDER BY u.ord
     LIMIT 1;
    IF FOUND THEN
        IF v_bad.s IS NULL OR v_bad.s NOT IN ('successful', 'failed', 'interrupted', 'canceled', 'snoozed', 'fatal') THEN
            RAISE EXCEPTION 'unknown outcome % at position %: use successful, failed, interrupted, canceled, snoozed or fatal',
                coalesce(quote_literal(v_bad.s), 'NULL'), v_bad.ord
                USING ERRCODE = 'PQ004';
        END IF;
        IF v_bad.s = 'snoozed' AND (jsonb_typeof(v_bad.d -> 'snooze') IS DISTINCT FROM 'number'
                                    OR (v_bad.d ->> 'snooze')::numeric NOT BETWEEN 0 AND 31536000) THEN
            RAISE EXCEPTION 'snooze at position % must be a number of seconds from 0 to 31536000 (details->''snooze''), got %',
                v_bad.ord, coalesce((v_bad.d -> 'snooze')::text, 'nothing')
                USING ERRCODE = 'PQ009';
        END IF;
        RAISE EXCEPTION 'retry_after at position % must be a number of seconds from 0 to 31536000, got %',
            v_bad.ord, v_bad.d -> 'retry_after'
            USING ERRCODE = 'PQ009';
    END IF;

    -- Interruptions and snoozes past their entrypoint's bound count as failed attempts: decided
    -- on as 'failed', with a note in their details (a read of the jobs still owned; the locked
    -- reads below check the leases again).
    IF 'interrupted' = ANY (complete.outcomes) OR 'snoozed' = ANY (complete.outcomes) THEN
        -- The owned jobs meet the input in a hash join (docs/decisions/0007), not a probe of
        -- every partition per input row.
        SELECT array_agg(CASE WHEN x.note IS NOT NULL THEN 'failed' ELSE x.s END ORDER BY x.ord),
               array_agg(CASE WHEN x.note IS NOT NULL THEN coalesce(x.d, '{}'::jsonb) || x.note ELSE x.d END ORDER BY x.ord)
          INTO v_outcomes, v_details
          FROM (SELECT u.s, u.d, u.ord,
                       CASE WHEN u.s = 'interrupted' AND (o.k).interrupted >= o.max_interruptions THEN
                                 jsonb_build_object('interrupted', true, 'message', format(
                                     'interrupted %s times in a row (max_interruptions %s), so this interruption counts as a failed attempt%s',
                                     (o.k).interrupted + 1, o.max_interruptions,
                                     coalesce(': ' || (u.d ->> 'message'), '')))
                            WHEN u.s = 'snoozed' AND (o.k).snoozed >= o.max_snoozes THEN
                                 jsonb_build_object('snoozed', true, 'retry_after', u.d -> 'snooze', 'message', format(
                                     'snoozed %s times (max_snoozes %s), so this snooze counts as a failed attempt',
                                     (o.k).snoozed + 1, o.max_snoozes))
                       END AS note
                  FROM unnest(complete.outcomes, v_details, complete.ids, complete.leases)
                       WITH ORDINALITY AS u(s, d, id, lease, ord)
                  LEFT JOIN (SELECT j.id, j.lease, c.max_interruptions, c.max_snoozes,
                                    pgq._streaks(j.errors) AS k
                               FROM pgq.jobs j
                               JOIN pgq.entrypoints c ON c.entrypoint = j.entrypoint
                              WHERE j.id = ANY (complete.ids)
                                AND j.status = c_running AND j.slot <> 4
                                AND j.worker_id = complete.worker_id) AS o
                         ON o.id = u.id AND o.lease = u.lease AND u.s IN ('interrupted', 'snoozed')) AS x;
    END IF;

    -- A stale lease misses every look and gets no row.
    r_ids := complete.ids;
    r_leases := complete.leases;
    r_outcomes := v_outcomes;
    r_details := v_details;
    -- The first look reads only the slots the leases name (the claim put each job's slot in
    -- its lease: docs/architecture.md#leases-carry-the-slot); the jobs it misses (carried to
    -- another slot since, claimed before leases carried slots, or stale) are looked for twice
    -- more in every slot.
    IF v_n = 1 THEN
        v_slots := ARRAY[(complete.leases[1] % 4)::smallint];
    ELSE
        v_slots := ARRAY(SELECT DISTINCT (l % 4)::smallint FROM unnest(complete.leases) AS l);
    END IF;
    FOR v_look IN 0..2 LOOP  -- look twice: docs/architecture.md#look-twice (after a look by slot)
        IF v_look = 1 THEN
            v_slots := '{0,1,2,3}';
        END IF;
        v_decided := '{}';
        v_retry := 'failed' = ANY (r_outcomes) OR 'interrupted' = ANY (r_outcomes)
                   OR 'snoozed' = ANY (r_outcomes) OR 'fatal' = ANY (r_outcomes);
        -- The jobs are locked in id order first (every function that locks several jobs takes
        -- them in id order, so two of them never deadlock; the archive's DELETE would lock in
        -- the order of its plan). Successes and cancellations alone: a bare locked read by id
        -- (the archive checks the leases). One job alone needs no order.
        IF NOT v_retry AND cardinality(r_ids) > 1 THEN
            PERFORM 1
               FROM (SELECT j.id FROM pgq.jobs j
                      WHERE j.id = ANY (r_ids)
                        AND (j.slot = v_slots[1] OR j.slot = v_slots[2] OR j.slot = v_slots[3] OR j.slot = v_slots[4])
                        AND j.status = c_running AND j.slot <> 4
                      ORDER BY j.id
                        FOR UPDATE) AS l;
        END IF;
        -- With failures or interrupted attempts, the locked read of the jobs this worker owns
        -- under these leases also decides those (lease-fenced), so that a row carried
        -- meanwhile cannot reach the archive below with a failure it should retry: back to
        -- the queue with attempts left, and interrupted attempts (not counted).
        IF v_retry THEN
            SELECT coalesce(array_agg(d.id ORDER BY d.id) FILTER (WHERE d.outcome IN ('failed', 'interrupted', 'snoozed', 'fatal')), '{}'),
                   coalesce(array_agg(d.id ORDER BY d.id) FILTER (WHERE d.retry AND d.delay > 0), '{}'),
                   coalesce(array_agg(d.id ORDER BY d.id) FILTER (WHERE d.retry AND d.delay <= 0), '{}'),
                   coalesce(array_agg(d.delay ORDER BY d.id) FILTER (WHERE d.retry AND d.delay > 0), '{}'),
                   coalesce(array_agg(d.delay ORDER BY d.id) FILTER (WHERE d.retry AND d.delay <= 0), '{}'),
                   coalesce(array_agg(d.details ORDER BY d.id) FILTER (WHERE d.retry AND d.delay > 0), '{}'),
                   coalesce(array_agg(d.details ORDER BY d.id) FILTER (WHERE d.retry AND d.delay <= 0), '{}'),
                   coalesce(array_agg(d.outcome ORDER BY d.id) FILTER (WHERE d.retry AND d.delay <= 0), '{}'),
                   coalesce(array_agg(d.outcome ORDER BY d.id) FILTER (WHERE d.retry AND d.delay > 0), '{}'),
                   array_agg(DISTINCT d.entrypoint) FILTER (WHERE d.retry AND d.delay <= 0)
              INTO v_decided, v_later, v_now_ids, v_later_s, v_now_s, v_later_d, v_now_d, v_now_o, v_later_o, v_eps
              FROM (SELECT j.id, j.entrypoint, i.outcome, i.details,
                           i.outcome IN ('failed', 'interrupted', 'snoozed') AND NOT j.cancel_requested
                           AND (i.outcome IN ('interrupted', 'snoozed') OR j.attempt < c.max_attempts) AS retry,
                           -- The delay in seconds: none for an interrupted attempt, the asked
                           -- one for a snooze, else the retry policy (inlined).
                           CASE WHEN i.outcome = 'failed'
                                THEN pgq._retry_delay(j.attempt, c.backoff_base, c.backoff_max, i.details)
                                WHEN i.outcome = 'snoozed' THEN (i.details ->> 'snooze')::float8
                                WHEN i.outcome = 'interrupted' THEN 0::float8 END AS delay
                      FROM unnest(r_ids, r_leases, r_outcomes, r_details) AS i(id, lease, outcome, details)
                      JOIN pgq.jobs j ON j.id = i.id
                      JOIN pgq.entrypoints c ON c.entrypoint = j.entrypoint
                     WHERE j.id = ANY (r_ids)
                       AND (j.slot = v_slots[1] OR j.slot = v_slots[2] OR j.slot = v_slots[3] OR j.slot = v_slots[4])
                       AND j.lease = i.lease
                       AND j.status = c_running AND j.slot <> 4
                       AND j.worker_id = complete.worker_id
                     ORDER BY j.id
                       FOR UPDATE OF j) AS d;

            -- Due now (no delay): queued again in place, with a new ready number behind the
            -- fence (the back of its lane).
            IF cardinality(v_now_ids) > 0 THEN
                PERFORM pgq._ready_lock(v_eps);
                WITH retried AS (
                    UPDATE pgq.jobs j
                       SET status = 'queued',
                           ready_seq = i.seq,
                           run_at = v_now + make_interval(secs => i.delay),
                           attempt = CASE WHEN i.outcome IN ('interrupted', 'snoozed') THEN j.attempt - 1 ELSE j.attempt END,
                           lease = NULL,
                           worker_id = NULL,
                           started_at = NULL,
                           heartbeat_at = NULL,
                           claim_request = NULL,
                           errors = j.errors || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                                        'attempt', j.attempt, 'at', v_now, 'lease', j.lease,
                                        'worker_id', j.worker_id,
                                        'outcome', CASE WHEN i.outcome IN ('interrupted', 'snoozed') THEN i.outcome END,
                                        'decision', CASE WHEN i.outcome = 'snoozed' THEN 'snoozed' ELSE 'retry' END,
                                        'run_at', v_now + make_interval(secs => i.delay)))
                                        || jsonb_build_object('details', i.details))
                      -- The ready numbers drawn here, in id order (after the sort), whatever the join.
                      FROM (SELECT u.id, u.delay, u.details, u.outcome, nextval('pgq.ready_seq') AS seq
                              FROM unnest(v_now_ids, v_now_s, v_now_d, v_now_o)
                                   WITH ORDINALITY AS u(id, delay, details, outcome, ord)
                             ORDER BY u.ord) AS i,
                           pgq.entrypoints c
                     WHERE j.id = i.id
                       AND j.id = ANY (v_now_ids)
                       AND j.status = c_running AND j.slot <> 4
                       AND c.entrypoint = j.entrypoint
                    RETURNING j.id, j.attempt, i.outcome, c.max_attempts, j.run_at
                )
                SELECT a_id || coalesce(array_agg(r.id), '{}'),
                       a_status || coalesce(array_agg(CASE WHEN r.outcome = 'snoozed' THEN 'snoozed' ELSE 'retry' END), '{}'),
                       a_attempt || coalesce(array_agg(CASE WHEN r.outcome IN ('interrupted', 'snoozed') THEN r.attempt + 1 ELSE r.attempt END), '{}'),
                       a_max || coalesce(array_agg(r.max_attempts), '{}'), a_run || coalesce(array_agg(r.run_at), '{}')
                  INTO a_id, a_status, a_attempt, a_max, a_run
                  FROM retried r;
            END IF;

            -- Due later: 'scheduled', moved to jobs_scheduled (slot 4) as DELETE ... RETURNING +
            -- INSERT of the same row (an UPDATE of the partition key would fail a concurrent
            -- waiter); pgq._promote gives it a ready number at run_at.
            IF cardinality(v_later) > 0 THEN
                WITH moved AS (
                    DELETE FROM pgq.jobs j
                     USING unnest(v_later, v_later_s, v_later_d, v_later_o) AS i(id, delay, details, outcome)
                     WHERE j.id = i.id
                       AND j.id = ANY (v_later)
                       AND j.status = c_running AND j.slot <> 4
                    RETURNING j.*, i.delay, i.details AS retry_details, i.outcome AS retry_outcome
                ), ins AS (
                    INSERT INTO pgq.jobs (id, entrypoint, status, priority, run_at, enqueued_at, attempt,
                                          payload, headers, dedupe_key, cancel_requested, errors, timeout, slot, group_key)
                    SELECT m.id, m.entrypoint, 'scheduled', m.priority, v_now + make_interval(secs => m.delay),
                           m.enqueued_at, CASE WHEN m.retry_outcome = 'snoozed' THEN m.attempt - 1 ELSE m.attempt END,
                           m.payload, m.headers, m.dedupe_key, m.cancel_requested,
                           m.errors || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                               'attempt', m.attempt, 'at', v_now, 'lease', m.lease,
                               'worker_id', m.worker_id,
                               'outcome', CASE WHEN m.retry_outcome = 'snoozed' THEN 'snoozed' END,
                               'decision', CASE WHEN m.retry_outcome = 'snoozed' THEN 'snoozed' ELSE 'retry' END,
                               'run_at', v_now + make_interval(secs => m.delay)))
                               || jsonb_build_object('details', m.retry_details)),
                           m.timeout, 4, m.group_key
                      FROM moved m
                     ORDER BY m.id
                    RETURNING id, attempt, entrypoint, run_at, errors -> -1 ->> 'decision' AS decision
                )
                SELECT a_id || coalesce(array_agg(r.id), '{}'),
                       a_status || coalesce(array_agg(CASE WHEN r.decision = 'snoozed' THEN 'snoozed' ELSE 'retry' END), '{}'),
                       a_attempt || coalesce(array_agg(CASE WHEN r.decision = 'snoozed' THEN r.attempt + 1 ELSE r.attempt END), '{}'),
                       a_max || coalesce(array_agg(c.max_attempts), '{}'), a_run || coalesce(array_agg(r.run_at), '{}')
                  INTO a_id, a_status, a_attempt, a_max, a_run
                  FROM ins r
                  JOIN pgq.entrypoints c ON c.entrypoint = r.entrypoint;
            END IF;
        END IF;

        -- Everything else this worker still owns moves to history: successful and canceled
        -- outcomes (lease-fenced by _archive itself), and the failures, fatal outcomes,
        -- interruptions and snoozes locked above that may not run again (no attempts left, or
        -- canceled meanwhile). An interrupted or snoozed job that gets here was canceled
        -- meanwhile.
        SELECT a_id || coalesce(array_agg(a.id), '{}'), a_status || coalesce(array_agg(a.status), '{}'),
               a_attempt || coalesce(array_agg(a.attempt), '{}'), a_max || coalesce(array_agg(c.max_attempts), '{}'),
               a_run || coalesce(array_agg(NULL::timestamptz), '{}')
          INTO a_id, a_status, a_attempt, a_max, a_run
          FROM (SELECT array_agg(u.id ORDER BY u.ord) AS ids, array_agg(u.lease ORDER BY u.ord) AS leases,
                       array_agg(u.outcome ORDER BY u.ord) AS outcomes,
                       array_agg(u.details ORDER BY u.ord) AS details
                  FROM unnest(r_ids, r_leases, r_outcomes, r_details) WITH ORDINALITY AS u(id, lease, outcome, details, ord)
                 WHERE u.outcome IN ('successful', 'canceled')
                    OR (u.id = ANY (v_decided) AND u.id <> ALL (a_id))) AS x
         CROSS JOIN LATERAL pgq._archive(x.ids, x.outcomes, x.details, v_now, complete.worker_id, x.leases, v_slots) AS a
          JOIN pgq.entrypoints c ON c.entrypoint = a.entrypoint
         WHERE x.ids IS NOT NULL;

        EXIT WHEN cardinality(a_id) >= v_n OR v_look = 2;
        -- The jobs missed so far, for the next look.
        SELECT array_agg(u.id ORDER BY u.ord), array_agg(u.lease ORDER BY u.ord),
               array_agg(u.outcome ORDER BY u.ord), array_agg(u.details ORDER BY u.ord)
          INTO r_ids, r_leases, r_outcomes, r_details
          FROM unnest(complete.ids, complete.leases, v_outcomes, v_details)
               WITH ORDINALITY AS u(id, lease, outcome, details, ord)
         WHERE u.id <> ALL (a_id);
    END LOOP;

    -- A repeated call (its first answer was lost with the connection) finds its own results
    -- already applied under the same lease: the same decisions are answered, nothing changes.
    IF cardinality(a_id) < v_n THEN
        SELECT a_id || coalesce(array_agg(x.id), '{}'), a_status || coalesce(array_agg(x.status), '{}'),
               a_attempt || coalesce(array_agg(x.attempt), '{}'), a_max || coalesce(array_agg(x.max_attempts), '{}'),
               a_run || coalesce(array_agg(x.run_at), '{}')
          INTO a_id, a_status, a_attempt, a_max, a_run
          FROM (-- Ended by that attempt: its history row (the attempt as answered then: an
                -- interrupted one is in the error list, not in the count).
                SELECT i.id, h.status, coalesce((e.value ->> 'attempt')::int, h.attempt) AS attempt,
                       c.max_attempts, NULL::timestamptz AS run_at
                  FROM unnest(complete.ids, complete.leases) AS i(id, lease)
                  JOIN pgq.job_history h ON h.id = i.id AND h.lease = i.lease AND h.worker_id = complete.worker_id
                                        AND h.id = ANY (complete.ids)  -- by id: no nested loops here
                  JOIN pgq.entrypoints c ON c.entrypoint = h.entrypoint
                  LEFT JOIN LATERAL (SELECT x.value FROM jsonb_array_elements(h.errors) AS x(value)
                                      WHERE x.value -> 'lease' = to_jsonb(i.lease) LIMIT 1) AS e ON true
                 WHERE i.id <> ALL (a_id)
                UNION ALL
                -- Queued again by that attempt (and perhaps ended since under another lease, or
                -- requeued): its error entry of that lease and worker says what was decided.
                SELECT i.id, e.value ->> 'decision', (e.value ->> 'attempt')::int, c.max_attempts,
                       CASE WHEN e.value ->> 'decision' IN ('retry', 'snoozed') THEN (e.value ->> 'run_at')::timestamptz END
                  FROM unnest(complete.ids, complete.leases) AS i(id, lease)
                  JOIN (SELECT j.id, j.entrypoint, j.lease, j.errors FROM pgq.jobs j WHERE j.id = ANY (complete.ids)
                        UNION ALL
                        SELECT h.id, h.entrypoint, h.lease, h.errors FROM pgq.job_history h
                         WHERE h.id = ANY (complete.ids)) AS o
                       ON o.id = i.id AND o.lease IS DISTINCT FROM i.lease
                  JOIN pgq.entrypoints c ON c.entrypoint = o.entrypoint
                 CROSS JOIN LATERAL (SELECT x.value FROM jsonb_array_elements(o.errors) AS x(value)
                                      WHERE x.value -> 'lease' = to_jsonb(i.lease)
                                        AND x.value ->> 'worker_id' = complete.worker_id::text
                                        AND x.value ? 'decision'
                                      LIMIT 1) AS e
                 WHERE i.id <> ALL (a_id)) AS x;
    END IF;

    -- One row per job accepted, in input order.
    RETURN QUERY
    SELECT r.id, r.status, r.attempt, r.max_attempts, r.run_at,
           CASE WHEN r.run_at IS NOT NULL THEN greatest(0, extract(epoch FROM r.run_at - v_now))::float8 END
      FROM unnest(complete.ids) WITH ORDINALITY AS i(id, ord)
      JOIN unnest(a_id, a_status, a_attempt, a_max, a_run) AS r(id, status, attempt, max_attempts, run_at)
        ON r.id = i.id
     ORDER BY i.ord;
END
$$;
COMMENT ON FUNCTION pgq.complete(uuid, bigint[], bigint[], text[], jsonb, timestamptz) IS
    'Ends attempts owned under these leases with what the worker observed (successful, failed, interrupted, canceled, snoozed, fatal); answers per job what SQL decided: status successful, failed (dead), canceled, retry or snoozed, attempt, max_attempts, and for a retry or snooze run_at and retry_in_s. Stale leases are ignored.';

-- sql/functions/configure.sql
-- pgq.configure(entrypoint, concurrency_limit, max_attempts, backoff_base, backoff_max,
--               heartbeat_timeout, reset, run_timeout, max_interruptions, max_snoozes,
--               dedupe_period, dedupe_states, key_concurrency_limit, rate_limit,
--               rate_period, rate_per_key)
-- Contract: stores the policy of one entrypoint in pgq.entrypoints, the same for every worker in
--   any language, and returns the resulting row. NULL leaves a setting unchanged; reset => true
--   first returns every setting to its default (no concurrency limit, 5 attempts, 1 s base,
--   5 min cap, 30 s heartbeat timeout, no run timeout, 3 interruptions, 100 snoozes, dedupe
--   keys freed when their job finishes, no key limit) and then applies the given ones.
--   run_timeout: how long one attempt may run (from its claim) before SQL ends it as a failed
--   attempt, "timed out" (pgq._time_out; a job's own timeout from pgq.enqueue wins);
--   interval '0' removes the limit. max_interruptions: consecutive interrupted attempts that
--   are not counted; the next one counts (see pgq.complete). max_snoozes: snoozes a job may
--   take without using an attempt; the next one counts. dedupe_period: a job of this
--   entrypoint that finishes in one of dedupe_states (a non-empty subset of successful,
--   failed, canceled; default successful) keeps its dedupe key for that long after it
--   finished (pgq._archive), so no job with the same key can be enqueued meanwhile
--   (on_conflict answers as for a live holder); 0 frees keys at once. key_concurrency_limit
--   (1..1,000,000): at most that many running jobs per group key across all workers, claims
--   taking the keys in turn (see pgq.claim; NULL: none, only reset removes it).
--   rate_limit (1..1,000,000) and rate_period (1 millisecond..1 day), set together the first
--   time: at most rate_limit jobs start per rate_period, in any window of that length, across
--   all workers (a job claimed again after a retry starts again; pgq.take_tokens counts too);
--   rate_per_key => true applies it to each group key (jobs without a key share one budget)
--   instead of the whole entrypoint. rate_limit 0 removes the rate limit. Removing it or
--   changing rate_per_key forgets the starts counted so far (pgq.rate_starts).
--   concurrency_limit 0 pauses the entrypoint (nothing is claimed). Entrypoints never configured use the defaults.
--   The next claim sweeps stale jobs whatever the time of the last sweep (a limit lifted from 0
--   ends a pause; see pgq._sweep).
-- Locking: the entrypoint's policy row, until commit (claims of limited entrypoints skip it).
--   Bounds: backoff_base 0..1 day, backoff_max 0..365 days, heartbeat_timeout 1 second..7 days
--   (so every time computed from them stays in range), run_timeout 0 (none) or 1 second..30
--   days, max_interruptions 0..1000, max_snoozes 0..10000, dedupe_period 0..3650 days,
--   rate_limit 0 (none) or 1..1,000,000, rate_period 1 millisecond..1 day.
-- Errors: PQ001 bad entrypoint, PQ008 a value out of range (named in the message).
CREATE OR REPLACE FUNCTION pgq.configure(
    entrypoint         text,
    concurrency_limit  int      DEFAULT NULL,
    max_attempts       int      DEFAULT NULL,
    backoff_base       interval DEFAULT NULL,
    backoff_max        interval DEFAULT NULL,
    heartbeat_timeout  interval DEFAULT NULL,
    reset              boolean  DEFAULT false,
    run_timeout        interval DEFAULT NULL,
    max_interruptions  int      DEFAULT NULL,
    max_snoozes        int      DEFAULT NULL,
    dedupe_period      interval DEFAULT NULL,
    dedupe_states      text[]   DEFAULT NULL,
    key_concurrency_limit int   DEFAULT NULL,
    rate_limit         int      DEFAULT NULL,
    rate_period        interval DEFAULT NULL,
    rate_per_key       boolean  DEFAULT NULL
)
RETURNS pgq.entrypoints
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_row pgq.entrypoints;
    v_was pgq.entrypoints;
BEGIN
    PERFORM pgq._check_name(configure.entrypoint, 'entrypoint', 'PQ001');
    IF configure.concurrency_limit < 0 THEN
        RAISE EXCEPTION 'concurrency_limit must be >= 0 (0 pauses), got %', configure.concurrency_limit
            USING ERRCODE = 'PQ008';
    END IF;
    IF configure.key_concurrency_limit NOT BETWEEN 1 AND 1000000 THEN
        RAISE EXCEPTION 'key_concurrency_limit must be between 1 and 1000000, got %', configure.key_concurrency_limit
            USING ERRCODE = 'PQ008';
    END IF;
    IF configure.rate_limit NOT BETWEEN 0 AND 1000000 THEN
        RAISE EXCEPTION 'rate_limit must be between 1 and 1000000 (0 removes it), got %', configure.rate_limit
            USING ERRCODE = 'PQ008';
    END IF;
    PERFORM pgq._check_interval(configure.rate_period, 'rate_period', interval '1 millisecond', interval '1 day');
    IF configure.max_attempts < 1 THEN
        RAISE EXCEPTION 'max_attempts must be >= 1, got %', configure.max_attempts USING ERRCODE = 'PQ008';
    END IF;
    PERFORM pgq._check_interval(configure.backoff_base, 'backoff_base', interval '0', interval '1 day');
    PERFORM pgq._check_interval(configure.backoff_max, 'backoff_max', interval '0', interval '365 days');
    PERFORM pgq._check_interval(configure.heartbeat_timeout, 'heartbeat_timeout', interval '1 second', interval '7 days');
    IF configure.run_timeout <> interval '0' THEN
        PERFORM pgq._check_interval(configure.run_timeout, 'run_timeout (0 for none)', interval '1 second', interval '30 days');
    END IF;
    IF configure.max_interruptions NOT BETWEEN 0 AND 1000 THEN
        RAISE EXCEPTION 'max_interruptions must be between 0 and 1000, got %', configure.max_interruptions
            USING ERRCODE = 'PQ008';
    END IF;
    IF configure.max_snoozes NOT BETWEEN 0 AND 10000 THEN
        RAISE EXCEPTION 'max_snoozes must be between 0 and 10000, got %', configure.max_snoozes
            USING ERRCODE = 'PQ008';
    END IF;
    PERFORM pgq._check_interval(configure.dedupe_period, 'dedupe_period', interval '0', interval '3650 days');
    IF configure.dedupe_states IS NOT NULL THEN
        PERFORM pgq._check_dims(configure.dedupe_states, 'dedupe_states');
        IF cardinality(configure.dedupe_states) = 0
           OR array_position(configure.dedupe_states, NULL) IS NOT NULL
           OR NOT configure.dedupe_states <@ ARRAY['successful', 'failed', 'canceled']
           OR cardinality(configure.dedupe_states) <> (SELECT count(DISTINCT s) FROM unnest(configure.dedupe_states) s) THEN
            RAISE EXCEPTION 'dedupe_states must be distinct end states among successful, failed, canceled, got %',
                configure.dedupe_states
                USING ERRCODE = 'PQ008';
        END IF;
    END IF;
    IF configure.backoff_base < interval '0' THEN
        RAISE EXCEPTION 'backoff_base must not be negative, got %', configure.backoff_base USING ERRCODE = 'PQ008';
    END IF;
    IF configure.heartbeat_timeout < interval '1 second' THEN
        RAISE EXCEPTION 'heartbeat_timeout must be at least 1 second, got %', configure.heartbeat_timeout
            USING ERRCODE = 'PQ008';
    END IF;

    INSERT INTO pgq.entrypoints (entrypoint) VALUES (configure.entrypoint)
        ON CONFLICT (entrypoint) DO NOTHING;
    -- The policy before this call (a reset included): its rate budgets may end below.
    SELECT * INTO v_was FROM pgq.entrypoints e WHERE e.entrypoint = configure.entrypoint FOR UPDATE;
    IF configure.reset THEN
        -- Column defaults are the one place the default policy is written down.
        UPDATE pgq.entrypoints e
           SET concurrency_limit = DEFAULT, max_attempts = DEFAULT, backoff_base = DEFAULT,
               backoff_max = DEFAULT, heartbeat_timeout = DEFAULT, run_timeout = DEFAULT,
               max_interruptions = DEFAULT, max_snoozes = DEFAULT, dedupe_period = DEFAULT,
               dedupe_states = DEFAULT, key_concurrency_limit = DEFAULT, rate_limit = DEFAULT,
               rate_period = DEFAULT, rate_per_key = DEFAULT
         WHERE e.entrypoint = configure.entrypoint;
    END IF;
    SELECT * INTO v_row FROM pgq.entrypoints e WHERE e.entrypoint = configure.entrypoint FOR UPDATE;

    v_row.concurrency_limit := coalesce(configure.concurrency_limit, v_row.concurrency_limit);
    v_row.max_attempts := coalesce(configure.max_attempts, v_row.max_attempts);
    v_row.backoff_base := coalesce(configure.backoff_base, v_row.backoff_base);
    v_row.backoff_max := coalesce(configure.backoff_max, v_row.backoff_max);
    v_row.heartbeat_timeout := coalesce(configure.heartbeat_timeout, v_row.heartbeat_timeout);
    v_row.run_timeout := CASE WHEN configure.run_timeout IS NULL THEN v_row.run_timeout
                              ELSE nullif(configure.run_timeout, interval '0') END;
    v_row.max_interruptions := coalesce(configure.max_interruptions, v_row.max_interruptions);
    v_row.max_snoozes := coalesce(configure.max_snoozes, v_row.max_snoozes);
    v_row.dedupe_period := coalesce(configure.dedupe_period, v_row.dedupe_period);
    v_row.dedupe_states := coalesce(configure.dedupe_states, v_row.dedupe_states);
    v_row.key_concurrency_limit := coalesce(configure.key_concurrency_limit, v_row.key_concurrency_limit);
    v_row.rate_limit := CASE WHEN configure.rate_limit IS NULL THEN v_row.rate_limit
                             ELSE nullif(configure.rate_limit, 0) END;
    v_row.rate_period := CASE WHEN configure.rate_limit = 0 THEN NULL
                              ELSE coalesce(configure.rate_period, v_row.rate_period) END;
    v_row.rate_per_key := coalesce(configure.rate_per_key, v_row.rate_per_key);
    IF v_row.rate_limit IS NOT NULL AND v_row.rate_period IS NULL THEN
        RAISE EXCEPTION 'rate_limit % needs a rate_period (the window it counts starts in)', v_row.rate_limit
            USING ERRCODE = 'PQ008';
    END IF;
    IF v_row.rate_period IS NOT NULL AND v_row.rate_limit IS NULL THEN
        RAISE EXCEPTION 'rate_period % needs a rate_limit (0 removed it)', v_row.rate_period
            USING ERRCODE = 'PQ008';
    END IF;
    IF v_row.backoff_max < v_row.backoff_base THEN
        RAISE EXCEPTION 'backoff_max % must not be below backoff_base %', v_row.backoff_max, v_row.backoff_base
            USING ERRCODE = 'PQ008';
    END IF;

    UPDATE pgq.entrypoints e
       SET concurrency_limit = v_row.concurrency_limit,
           max_attempts = v_row.max_attempts,
           backoff_base = v_row.backoff_base,
           backoff_max = v_row.backoff_max,
           heartbeat_timeout = v_row.heartbeat_timeout,
           run_timeout = v_row.run_timeout,
           max_interruptions = v_row.max_interruptions,
           max_snoozes = v_row.max_snoozes,
           dedupe_period = v_row.dedupe_period,
           dedupe_states = v_row.dedupe_states,
           key_concurrency_limit = v_row.key_concurrency_limit,
           rate_limit = v_row.rate_limit,
           rate_period = v_row.rate_period,
           rate_per_key = v_row.rate_per_key,
           updated_at = now()
     WHERE e.entrypoint = configure.entrypoint
    RETURNING * INTO v_row;
    -- Budgets that no longer exist (or now mean something else) start from nothing.
    IF v_was.rate_limit IS NOT NULL
       AND (v_row.rate_limit IS NULL OR v_row.rate_per_key IS DISTINCT FROM v_was.rate_per_key) THEN
        DELETE FROM pgq.rate_starts s WHERE s.entrypoint = configure.entrypoint;
    END IF;
    -- A lifted concurrency_limit 0 ends a pause: the next claim sweeps (see pgq._sweep).
    PERFORM setval('pgq.swept_at', 0);
    RETURN v_row;
END
$$;
COMMENT ON FUNCTION pgq.configure(text, int, int, interval, interval, interval, boolean, interval, int, int, interval, text[], int, int, interval, boolean) IS
    'Sets the policy of one entrypoint for every worker: concurrency_limit (0 pauses), max_attempts, backoff_base, backoff_max, heartbeat_timeout, run_timeout (0 removes it), max_interruptions, max_snoozes, dedupe_period and dedupe_states (dedupe keys kept after the job finished), key_concurrency_limit (running jobs per group key; claims take keys in turn), rate_limit per rate_period (starts in any window, for the entrypoint or with rate_per_key each group key; 0 removes it). NULL leaves a setting unchanged; reset => true restores defaults first.';

-- sql/functions/delete_history.sql
-- pgq.delete_history(entrypoint, statuses, since, until, error, max_jobs)
-- Contract: bulk delete by filter (the filter of pgq.find_history; failed jobs by default):
--   deletes up to max_jobs matching history rows, newest first, and returns how many. Call it
--   again until it returns fewer than max_jobs. Rows being requeued or pruned at the same
--   moment are skipped.
-- Locking: row locks on the deleted rows (SKIP LOCKED).
-- Errors: PQ001 bad entrypoint; PQ009 bad statuses, since after until; PQ002 max_jobs outside
--   1..10000.
CREATE OR REPLACE FUNCTION pgq.delete_history(
    entrypoint  text        DEFAULT NULL,
    statuses    text[]      DEFAULT '{failed}',
    since       timestamptz DEFAULT NULL,
    until       timestamptz DEFAULT NULL,
    error       text        DEFAULT NULL,
    max_jobs    int         DEFAULT 1000
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_n bigint;
BEGIN
    PERFORM pgq._check_history_filter(delete_history.entrypoint, delete_history.statuses, delete_history.since,
                                      delete_history.until, delete_history.max_jobs, 10000, 'max_jobs');
    DELETE FROM pgq.job_history d
     WHERE d.id IN (SELECT l.id
                      FROM pgq.job_history l
                     WHERE l.id IN (SELECT h.id
                                      FROM pgq._find_history(delete_history.entrypoint, delete_history.statuses,
                                                             delete_history.since, delete_history.until,
                                                             delete_history.error, NULL, NULL,
                                                             delete_history.max_jobs, false) AS h)
                       FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq.delete_history(text, text[], timestamptz, timestamptz, text, int) IS
    'Bulk delete of history rows matching entrypoint, statuses (failed by default), finish time and error text, up to max_jobs per call; returns how many.';

-- sql/functions/delete_jobs.sql
-- pgq.delete_jobs(ids)
-- Contract: deletes finished jobs by id: their rows of pgq.job_history, whatever the final
--   status. Live jobs (queued or running) and unknown ids are left alone: cancel a live job
--   first. Rows locked by a concurrent requeue or prune are skipped, never waited for. Returns
--   the ids deleted. The by-id side of pgq.delete_history (a dashboard's "delete selected").
-- Locking: row locks on the history rows it deletes (SKIP LOCKED).
-- Errors: PQ009 NULL ids or a NULL element; PQ002 more than 10000 ids.
CREATE OR REPLACE FUNCTION pgq.delete_jobs(ids bigint[])
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(delete_jobs.ids, 'ids');
    IF delete_jobs.ids IS NULL OR array_position(delete_jobs.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(delete_jobs.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF cardinality(delete_jobs.ids) > 10000 THEN
        RAISE EXCEPTION 'ids must hold at most 10000 ids, got %', cardinality(delete_jobs.ids)
            USING ERRCODE = 'PQ002';
    END IF;
    RETURN QUERY
    DELETE FROM pgq.job_history h
     WHERE h.id IN (SELECT l.id
                      FROM pgq.job_history l
                     WHERE l.id = ANY (delete_jobs.ids)
                       FOR UPDATE SKIP LOCKED)
    RETURNING h.id;
END
$$;
COMMENT ON FUNCTION pgq.delete_jobs(bigint[]) IS
    'Deletes finished jobs (history rows) by id, skipping live jobs, unknown ids and rows locked right now; returns the ids deleted.';

-- sql/functions/enqueue.sql
-- pgq.enqueue(entrypoint, payload, priority, run_at, dedupe_key, headers, on_conflict, delay,
--             timeout, group_key)
-- Contract: adds one job and returns its id; the same rules, defaults and errors as
--   pgq.enqueue_many for one element (the messages come from the same pgq._check_job), without
--   its array handling: one INSERT. Due at run_at, or delay after now() (the server's clock),
--   or now when both are NULL; giving both is an error. timeout: this job's run time limit
--   (1 second .. 30 days; NULL: the entrypoint's run_timeout, see pgq.configure), which wins
--   over the entrypoint's.
-- Locking: as pgq.enqueue_many.
-- Errors: PQ001, PQ005, PQ006, PQ007, PQ009 (see docs/errors.md; PQ009 also for run_at and delay
--   together, and for a timeout out of bounds). Any error adds nothing.
CREATE OR REPLACE FUNCTION pgq.enqueue(
    entrypoint   text,
    payload      jsonb       DEFAULT NULL,
    priority     int         DEFAULT 0,
    run_at       timestamptz DEFAULT NULL,
    dedupe_key   text        DEFAULT NULL,
    headers      jsonb       DEFAULT NULL,
    on_conflict  text        DEFAULT 'raise',
    delay        interval    DEFAULT NULL,
    timeout      interval    DEFAULT NULL,
    group_key    text        DEFAULT NULL
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_id  bigint;
    v_due timestamptz;
    v_kept record;
BEGIN
    IF enqueue.on_conflict IS NULL OR enqueue.on_conflict NOT IN ('raise', 'existing') THEN
        RAISE EXCEPTION 'on_conflict must be ''raise'' or ''existing'', got %', coalesce(quote_literal(enqueue.on_conflict), 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF enqueue.run_at IS NOT NULL AND enqueue.delay IS NOT NULL THEN
        RAISE EXCEPTION 'give run_at or delay, not both (run_at %, delay %)', enqueue.run_at, enqueue.delay
            USING ERRCODE = 'PQ009';
    END IF;
    IF NOT coalesce(pgq._valid_name(enqueue.entrypoint), false) OR enqueue.priority NOT BETWEEN -32768 AND 32767
       OR pg_column_size(enqueue.payload) > 1048576
       OR (enqueue.headers IS NOT NULL AND jsonb_typeof(enqueue.headers) <> 'object') THEN
        PERFORM pgq._check_job(enqueue.entrypoint, enqueue.payload, enqueue.priority, enqueue.headers, 1);
    END IF;
    -- The checking helpers only when there is something to check (a call of a function with
    -- SET clauses costs more than the check): JSON that pgq._json_ok refuses, a run_at, a
    -- dedupe_key, a delay.
    IF NOT (pgq._json_ok(enqueue.payload, 1048576) AND pgq._json_ok(enqueue.headers, 65536))
       OR enqueue.run_at IS NOT NULL OR enqueue.dedupe_key IS NOT NULL THEN
        PERFORM pgq._check_jobs(NULL, ARRAY[enqueue.payload], NULL, ARRAY[enqueue.run_at], ARRAY[enqueue.dedupe_key], ARRAY[enqueue.headers]);
    END IF;
    IF octet_length(enqueue.group_key) > 200 THEN
        RAISE EXCEPTION 'group key % at position 1 is % bytes, over the 200-byte limit',
            quote_literal(left(enqueue.group_key, 60) || '...'), octet_length(enqueue.group_key)
            USING ERRCODE = 'PQ009';
    END IF;
    IF enqueue.delay IS NOT NULL THEN
        PERFORM pgq._check_interval(enqueue.delay, 'delay', interval '0', interval '36500 days', 'PQ009');
    END IF;
    IF enqueue.timeout IS NOT NULL THEN
        PERFORM pgq._check_interval(enqueue.timeout, 'timeout', interval '1 second', interval '30 days', 'PQ009');
    END IF;

    v_due := coalesce(enqueue.run_at, now() + enqueue.delay, now());
    v_id := nextval('pgq.job_id_seq');
    -- The dedupe key first: unique among live jobs in pgq.live_keys (waits for a concurrent
    -- holder's transaction, like a unique index).
    IF enqueue.dedupe_key IS NOT NULL THEN
        INSERT INTO pgq.live_keys (dedupe_key, job_id) VALUES (enqueue.dedupe_key, v_id)
            ON CONFLICT (dedupe_key) DO NOTHING;
        IF FOUND THEN
            -- Unique by period: a job that finished within the entrypoint's dedupe_period in
            -- one of its dedupe_states keeps the key (looked up after taking the live key, so
            -- a holder finishing meanwhile is seen).
            SELECT h.id, h.finished_at, c.dedupe_period INTO v_kept
              FROM pgq.entrypoints c
             CROSS JOIN LATERAL (SELECT h.id, h.finished_at
                                   FROM pgq.job_history h
                                  WHERE h.dedupe_key = enqueue.dedupe_key
                                    AND h.finished_at > now() - c.dedupe_period
                                    AND h.status = ANY (c.dedupe_states)
                                  ORDER BY h.finished_at DESC
                                  LIMIT 1) AS h
             WHERE c.entrypoint = enqueue.entrypoint
               AND c.dedupe_period > interval '0';
            IF v_kept.id IS NOT NULL THEN
                IF enqueue.on_conflict = 'raise' THEN
                    RAISE EXCEPTION 'dedupe key % is kept until % by job %, finished at % (dedupe_period %)',
                        quote_literal(enqueue.dedupe_key), v_kept.finished_at + v_kept.dedupe_period,
                        v_kept.id, v_kept.finished_at, v_kept.dedupe_period
                        USING ERRCODE = 'PQ007',
                              HINT = 'Pass on_conflict => ''existing'' to get the id of that job instead.';
                END IF;
                DELETE FROM pgq.live_keys k WHERE k.dedupe_key = enqueue.dedupe_key AND k.job_id = v_id;
                RETURN v_kept.id;
            END IF;
        ELSE
            IF enqueue.on_conflict = 'raise' THEN
                RAISE EXCEPTION 'dedupe key % is already held by a live job', quote_literal(enqueue.dedupe_key)
                    USING ERRCODE = 'PQ007',
                          HINT = 'Pass on_conflict => ''existing'' to get the id of the live job instead.';
            END IF;
            -- 'existing': a new statement sees the holder that made our insert skip.
            SELECT k.job_id INTO v_id FROM pgq.live_keys k WHERE k.dedupe_key = enqueue.dedupe_key;
            IF v_id IS NULL THEN
                -- The holder finished between our insert and this look-up: its key is free now.
                RAISE EXCEPTION 'dedupe key % was released while enqueueing; retry the call', quote_literal(enqueue.dedupe_key)
                    USING ERRCODE = 'PQ007';
            END IF;
            RETURN v_id;
        END IF;
    END IF;

    -- A job not due yet is 'scheduled' (slot 4) until a claim promotes it (see pgq.claim); a
    -- due one enters the ring's current slot with a ready number, behind the fence.
    IF v_due > now() THEN
        INSERT INTO pgq.jobs (id, entrypoint, payload, priority, run_at, dedupe_key, headers, timeout,
                              status, slot, group_key)
        VALUES (v_id, enqueue.entrypoint, enqueue.payload, coalesce(enqueue.priority, 0), v_due,
                enqueue.dedupe_key, enqueue.headers, enqueue.timeout, 'scheduled', 4, enqueue.group_key);
    ELSE
        PERFORM pgq._ready_lock(ARRAY[enqueue.entrypoint]);
        INSERT INTO pgq.jobs (id, entrypoint, payload, priority, run_at, dedupe_key, headers, timeout,
                              status, ready_seq, slot, group_key)
        VALUES (v_id, enqueue.entrypoint, enqueue.payload, coalesce(enqueue.priority, 0), v_due,
                enqueue.dedupe_key, enqueue.headers, enqueue.timeout, 'queued', nextval('pgq.ready_seq'), pgq._slot(),
                enqueue.group_key);
    END IF;
    RETURN v_id;
END
$$;
COMMENT ON FUNCTION pgq.enqueue(text, jsonb, int, timestamptz, text, jsonb, text, interval, interval, text) IS
    'Adds one job; returns its id. Due at run_at, or delay after now (not both), or now; dedupe_key is unique among live jobs (on_conflict: raise or existing); timeout is its run time limit (NULL: the entrypoint''s); group_key is its key for per-key limits and fair share.';

-- sql/functions/enqueue_many.sql
-- pgq.enqueue_many(entrypoints, payloads, priorities, run_ats, dedupe_keys, headers, on_conflict,
--   delays, timeouts, group_keys, depends_on)
-- Contract: adds one job per element of entrypoints in one statement and returns their ids in
--   input order (one column, id). Every other argument is optional (NULL: defaults for all) and,
--   when given, must have the same length. payloads and headers are one JSON array each
--   (element i for job i; JSON null: none), so any driver can pass them as one JSON value.
--   Element defaults: payload NULL, priority 0, due now, no dedupe key, headers NULL. A job is
--   due at its run_ats element, or its delays element after now() (the server's clock); one
--   job may not have both. Jobs are due at run_at and claimed by priority (higher first), then in
--   ready order (enqueue order for jobs due at once; a delayed job joins when it is due). A dedupe key is unique among live (scheduled, queued or running)
--   jobs (pgq.live_keys), and when the new job's entrypoint has a dedupe_period (pgq.configure),
--   also among jobs that finished within it in one of its dedupe_states (unique by period: the
--   newest such job in pgq.job_history keeps the key):
--   on_conflict => 'raise' (default) raises PQ007 and adds nothing; 'existing' returns the id of
--   the live job that holds the key (or the finished job that keeps it) instead of adding one.
--   timeouts: each job's run time limit (1 second .. 30 days; NULL: the entrypoint's
--   run_timeout), which wins over the entrypoint's. group_keys: element i is job i's group key
--   (NULL: none), for the per-key limits and fair share of its entrypoint
--   (key_concurrency_limit, pgq.configure; see pgq.claim). depends_on (workflows): a JSON array,
--   element i the jobs job i waits for (pgq._add_deps: earlier jobs of this call by position,
--   jobs enqueued before by {"job": id}, each optionally with "run_anyway": true). A job with a
--   dependency not ended yet is 'waiting' (not claimable) until every one has succeeded, then
--   runs as any job; one whose parent already ended dead or canceled is canceled at once
--   (unless run_anyway). Not with on_conflict => 'existing'.
-- Locking: inserts only; a clashing dedupe key waits for the transaction that holds it; live
--   parents named by id are locked FOR KEY SHARE (pgq._add_deps).
-- Errors: PQ001 bad entrypoint, PQ003 arrays of unequal length, PQ005 priority out of range,
--   PQ006 payload over 1 MiB, PQ007 dedupe key taken, PQ009 bad headers or on_conflict,
--   payloads or headers not a JSON array, a job with both run_at and delay, a timeout out of
--   bounds, a group key over 200 bytes, bad depends_on (pgq._add_deps), depends_on with
--   on_conflict => 'existing'.
--   Any error adds nothing.
CREATE OR REPLACE FUNCTION pgq.enqueue_many(
    entrypoints  text[],
    payloads     jsonb         DEFAULT NULL,
    priorities   int[]         DEFAULT NULL,
    run_ats      timestamptz[] DEFAULT NULL,
    dedupe_keys  text[]        DEFAULT NULL,
    headers      jsonb         DEFAULT NULL,
    on_conflict  text          DEFAULT 'raise',
    delays       interval[]    DEFAULT NULL,
    timeouts     interval[]    DEFAULT NULL,
    group_keys   text[]        DEFAULT NULL,
    depends_on   jsonb         DEFAULT NULL
)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans: planning these statements on every call cost more than running them. No JIT:
-- a generic plan's estimates (unknown LIMIT, large backlog) would compile it on every call.
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_n        int := coalesce(cardinality(enqueue_many.entrypoints), 0);
    v_bad      record;
    v_ids      bigint[];
    v_missing  text[];
    v_kept_keys text[];
    v_kept_ids bigint[];
    v_kept_msg text;
    v_payloads jsonb[];
    v_headers  jsonb[];
    v_waiting  bigint[];
    v_cancel   bigint[];
BEGIN
    IF v_n = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(enqueue_many.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    IF enqueue_many.on_conflict IS NULL OR enqueue_many.on_conflict NOT IN ('raise', 'existing') THEN
        RAISE EXCEPTION 'on_conflict must be ''raise'' or ''existing'', got %', coalesce(quote_literal(enqueue_many.on_conflict), 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    SELECT a.name, a.kind INTO v_bad
      FROM (VALUES ('payloads', jsonb_typeof(enqueue_many.payloads)),
                   ('headers', jsonb_typeof(enqueue_many.headers))) AS a(name, kind)
     WHERE a.kind <> 'array'
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% must be a JSON array (element i for job i) or NULL, got %', v_bad.name, v_bad.kind
            USING ERRCODE = 'PQ009';
    END IF;
    SELECT a.name, a.len INTO v_bad
      FROM (VALUES ('payloads', jsonb_array_length(enqueue_many.payloads)),
                   ('priorities', cardinality(enqueue_many.priorities)),
                   ('run_ats', cardinality(enqueue_many.run_ats)),
                   ('dedupe_keys', cardinality(enqueue_many.dedupe_keys)),
                   ('headers', jsonb_array_length(enqueue_many.headers)),
                   ('delays', cardinality(enqueue_many.delays)),
                   ('timeouts', cardinality(enqueue_many.timeouts)),
                   ('group_keys', cardinality(enqueue_many.group_keys))) AS a(name, len)
     WHERE a.len IS NOT NULL AND a.len <> v_n
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% has % elements but entrypoints has %', v_bad.name, v_bad.len, v_n
            USING ERRCODE = 'PQ003';
    END IF;
    IF enqueue_many.run_ats IS NOT NULL AND enqueue_many.delays IS NOT NULL THEN
        SELECT u.ord, u.r, u.d INTO v_bad
          FROM unnest(enqueue_many.run_ats, enqueue_many.delays) WITH ORDINALITY AS u(r, d, ord)
         WHERE u.r IS NOT NULL AND u.d IS NOT NULL
         ORDER BY u.ord
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'give run_at or delay, not both (position %: run_at %, delay %)', v_bad.ord, v_bad.r, v_bad.d
                USING ERRCODE = 'PQ009';
        END IF;
    END IF;
    IF enqueue_many.payloads IS NOT NULL THEN
        v_payloads := ARRAY(SELECT nullif(e.value, 'null'::jsonb)
                              FROM jsonb_array_elements(enqueue_many.payloads) WITH ORDINALITY AS e(value, ord)
                             ORDER BY e.ord);
    END IF;
    IF enqueue_many.headers IS NOT NULL THEN
        v_headers := ARRAY(SELECT nullif(e.value, 'null'::jsonb)
                             FROM jsonb_array_elements(enqueue_many.headers) WITH ORDINALITY AS e(value, ord)
                            ORDER BY e.ord);
    END IF;

    -- One pass over the input finds the first bad element, if any.
    SELECT u.ord, u.e, u.p, u.pr, u.h INTO v_bad
      FROM unnest(enqueue_many.entrypoints, v_payloads, enqueue_many.priorities,
                  v_headers) WITH ORDINALITY AS u(e, p, pr, h, ord)
     WHERE NOT coalesce(pgq._valid_name(u.e), false)
        OR u.pr NOT BETWEEN -32768 AND 32767
        OR pg_column_size(u.p) > 1048576
        OR (u.h IS NOT NULL AND jsonb_typeof(u.h) <> 'object')
     ORDER BY u.ord
     LIMIT 1;
    IF FOUND THEN
        PERFORM pgq._check_job(v_bad.e, v_bad.p, v_bad.pr, v_bad.h, v_bad.ord);
    END IF;

    IF enqueue_many.on_conflict = 'raise' AND enqueue_many.dedupe_keys IS NOT NULL THEN
        SELECT d.key, min(d.ord) AS first, (array_agg(d.ord ORDER BY d.ord))[2] AS second INTO v_bad
          FROM unnest(enqueue_many.dedupe_keys) WITH ORDINALITY AS d(key, ord)
         WHERE d.key IS NOT NULL
         GROUP BY d.key
        HAVING count(*) > 1
         ORDER BY 2
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'dedupe key % appears more than once in this call (positions % and %)',
                quote_literal(v_bad.key), v_bad.first, v_bad.second
                USING ERRCODE = 'PQ007';
        END IF;
    END IF;

    IF enqueue_many.group_keys IS NOT NULL THEN
        PERFORM pgq._check_dims(enqueue_many.group_keys, 'group_keys');
        SELECT u.k, u.ord INTO v_bad
          FROM unnest(enqueue_many.group_keys) WITH ORDINALITY AS u(k, ord)
         WHERE octet_length(u.k) > 200
         ORDER BY u.ord
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'group key % at position % is % bytes, over the 200-byte limit',
                quote_literal(left(v_bad.k, 60) || '...'), v_bad.ord, octet_length(v_bad.k)
                USING ERRCODE = 'PQ009';
        END IF;
    END IF;
    PERFORM pgq._check_jobs(enqueue_many.entrypoints, v_payloads, enqueue_many.priorities, enqueue_many.run_ats, enqueue_many.dedupe_keys, v_headers);
    IF enqueue_many.delays IS NOT NULL THEN
        PERFORM pgq._check_dims(enqueue_many.delays, 'delays');
        PERFORM pgq._check_interval(u.d, 'delay at position ' || u.ord, interval '0', interval '36500 days', 'PQ009')
           FROM unnest(enqueue_many.delays) WITH ORDINALITY AS u(d, ord);
    END IF;
    IF enqueue_many.timeouts IS NOT NULL THEN
        PERFORM pgq._check_dims(enqueue_many.timeouts, 'timeouts');
        PERFORM pgq._check_interval(u.t, 'timeout at position ' || u.ord, interval '1 second', interval '30 days', 'PQ009')
           FROM unnest(enqueue_many.timeouts) WITH ORDINALITY AS u(t, ord);
    END IF;

    -- Ids first, in input order, so the insert needs no join to report them.
    v_ids := ARRAY(SELECT nextval('pgq.job_id_seq') FROM generate_series(1, v_n));
    -- Dedupe keys first: unique among live jobs in pgq.live_keys (a clash waits for the
    -- holder's transaction, like a unique index). v_won: the elements that hold their key.
    IF enqueue_many.dedupe_keys IS NOT NULL THEN
        WITH won AS (
            INSERT INTO pgq.live_keys (dedupe_key, job_id)
            SELECT x.dk, x.id
              FROM unnest(v_ids, enqueue_many.dedupe_keys) WITH ORDINALITY AS x(id, dk, ord)
             WHERE x.dk IS NOT NULL
             ORDER BY x.ord
                ON CONFLICT (dedupe_key) DO NOTHING
            RETURNING job_id
        )
        SELECT array_agg(x.dk ORDER BY x.ord) FILTER (WHERE x.dk IS NOT NULL AND w.job_id IS NULL)
          INTO v_missing
          FROM unnest(v_ids, enqueue_many.dedupe_keys) WITH ORDINALITY AS x(id, dk, ord)
          LEFT JOIN won w ON w.job_id = x.id;
        -- Unique by period: among the keys just taken, those a job finished within its new
        -- job's entrypoint's dedupe_period in one of its dedupe_states keeps (looked up after
        -- taking the live keys, so a holder finishing meanwhile is seen).
        SELECT array_agg(x.dk ORDER BY x.ord), array_agg(h.id ORDER BY x.ord),
               (array_agg(format('dedupe key %s is kept until %s by job %s, finished at %s (dedupe_period %s)',
                                 quote_literal(x.dk), h.finished_at + c.dedupe_period, h.id, h.finished_at,
                                 c.dedupe_period) ORDER BY x.ord))[1]
          INTO v_kept_keys, v_kept_ids, v_kept_msg
          FROM unnest(v_ids, enqueue_many.entrypoints, enqueue_many.dedupe_keys) WITH ORDINALITY AS x(id, e, dk, ord)
          JOIN pgq.entrypoints c ON c.entrypoint = x.e
         CROSS JOIN LATERAL (SELECT h.id, h.finished_at
                               FROM pgq.job_history h
                              WHERE h.dedupe_key = x.dk
                                AND h.finished_at > now() - c.dedupe_period
                                AND h.status = ANY (c.dedupe_states)
                              ORDER BY h.finished_at DESC
                              LIMIT 1) AS h
         WHERE x.dk IS NOT NULL
           AND c.dedupe_period > interval '0'
           AND EXISTS (SELECT 1 FROM pgq.live_keys k WHERE k.dedupe_key = x.dk AND k.job_id = x.id);
        IF v_kept_keys IS NOT NULL THEN
            IF enqueue_many.on_conflict = 'raise' THEN
                RAISE EXCEPTION '%', v_kept_msg
                    USING ERRCODE = 'PQ007',
                          HINT = 'Pass on_conflict => ''existing'' to get the id of that job instead.';
            END IF;
            DELETE FROM pgq.live_keys k WHERE k.dedupe_key = ANY (v_kept_keys) AND k.job_id = ANY (v_ids);
        END IF;
        IF v_missing IS NOT NULL AND enqueue_many.on_conflict = 'raise' THEN
            RAISE EXCEPTION 'dedupe key % is already held by a live job', quote_literal(v_missing[1])
                USING ERRCODE = 'PQ007',
                      HINT = 'Pass on_conflict => ''existing'' to get the id of the live job instead.';
        END IF;
    END IF;

    -- Workflows: the edges, and which jobs wait.
    IF enqueue_many.depends_on IS NOT NULL THEN
        IF enqueue_many.on_conflict <> 'raise' THEN
            RAISE EXCEPTION 'depends_on cannot be used with on_conflict => ''existing'' (a job answered by another''s id would not wait)'
                USING ERRCODE = 'PQ009';
        END IF;
        SELECT d.waiting, d.cancel INTO v_waiting, v_cancel FROM pgq._add_deps(v_ids, enqueue_many.depends_on) d;
    END IF;

    -- A job not due yet is 'scheduled' (slot 4) until a claim promotes it (see pgq.claim); a
    -- due one enters the ring's current slot with a ready number, behind the fence; one that
    -- waits for other jobs is 'waiting' (slot 4) until they succeeded.
    PERFORM pgq._ready_lock(enqueue_many.entrypoints);
    INSERT INTO pgq.jobs (id, entrypoint, payload, priority, run_at, dedupe_key, headers, timeout,
                          status, ready_seq, slot, group_key)
    SELECT u.id, u.e, u.p, coalesce(u.pr, 0), d.due, u.dk, u.h, u.t,
           CASE WHEN u.id = ANY (v_waiting) THEN 'waiting' WHEN d.due > now() THEN 'scheduled' ELSE 'queued' END,
           CASE WHEN d.due > now() OR u.id = ANY (v_waiting) THEN NULL ELSE nextval('pgq.ready_seq') END,
           CASE WHEN d.due > now() OR u.id = ANY (v_waiting) THEN 4 ELSE pgq._slot() END, u.gk
      FROM unnest(v_ids, enqueue_many.entrypoints, v_payloads, enqueue_many.priorities,
                  enqueue_many.run_ats, enqueue_many.dedupe_keys, v_headers, enqueue_many.delays,
                  enqueue_many.timeouts, enqueue_many.group_keys)
           WITH ORDINALITY AS u(id, e, p, pr, ra, dk, h, dl, t, gk, ord)
     CROSS JOIN LATERAL (SELECT coalesce(u.ra, now() + u.dl, now()) AS due) AS d
     WHERE (u.dk IS NULL OR v_missing IS NULL
            OR NOT EXISTS (SELECT 1 FROM pgq.live_keys k WHERE k.dedupe_key = u.dk AND k.job_id <> u.id))
       AND (v_kept_keys IS NULL OR u.dk IS NULL OR u.dk <> ALL (v_kept_keys))
     ORDER BY u.ord;

    IF v_missing IS NOT NULL OR v_kept_keys IS NOT NULL THEN
        -- 'existing': a new statement sees the holders that made our key insert skip; a kept
        -- key answers the finished job that keeps it.
        SELECT array_agg(coalesce(kh.id, k.job_id, x.id) ORDER BY x.ord),
               array_agg(x.dk ORDER BY x.ord) FILTER (WHERE x.dk IS NOT NULL AND k.job_id IS NULL AND kh.id IS NULL)
          INTO v_ids, v_missing
          FROM unnest(v_ids, enqueue_many.dedupe_keys) WITH ORDINALITY AS x(id, dk, ord)
          LEFT JOIN pgq.live_keys k ON k.dedupe_key = x.dk
          LEFT JOIN unnest(v_kept_keys, v_kept_ids) AS kh(dk, id) ON kh.dk = x.dk;
        IF v_missing IS NOT NULL THEN
            -- The holder finished between our insert and this look-up: its key is free now.
            RAISE EXCEPTION 'dedupe key % was released while enqueueing; retry the call', quote_literal(v_missing[1])
                USING ERRCODE = 'PQ007';
        END IF;
    END IF;
    IF cardinality(v_cancel) > 0 THEN  -- a parent already ended dead or canceled
        PERFORM 1 FROM pgq._archive(v_cancel, array_fill('canceled'::text, ARRAY[cardinality(v_cancel)]),
                                    array_fill('{"error": "dependency failed"}'::jsonb, ARRAY[cardinality(v_cancel)]),
                                    now());
        DELETE FROM pgq.job_waits w WHERE w.child_id = ANY (v_cancel);
    END IF;
    RETURN QUERY SELECT unnest(v_ids);
END
$$;
COMMENT ON FUNCTION pgq.enqueue_many(text[], jsonb, int[], timestamptz[], text[], jsonb, text, interval[], interval[], text[], jsonb) IS
    'Adds many jobs in one statement; returns their ids in input order. payloads and headers are JSON arrays; optional arguments must match entrypoints in length; run_ats or delays (server clock) per job; timeouts (run time limits) and group_keys per job; depends_on (a JSON array: the jobs each waits for, by position in the call or by id). on_conflict: raise (PQ007) or existing.';

-- sql/functions/entrypoint_config.sql
-- pgq.entrypoint_config(entrypoints)
-- Contract: the stored policy of entrypoints (rows of pgq.entrypoints: concurrency limit,
--   attempts, backoff, heartbeat timeout, when it changed, whether and by whom it is paused),
--   for the given names (NULL: every one), ordered by entrypoint. A name without a row is left
--   out: the defaults apply to it. The table is owner only; this is its read side for readers
--   and operators (a dashboard's entrypoint page).
-- Locking: none (reads only).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq.entrypoint_config(entrypoints text[] DEFAULT NULL)
RETURNS SETOF pgq.entrypoints
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(entrypoint_config.entrypoints, 'entrypoints');
    RETURN QUERY
        SELECT c.*
          FROM pgq.entrypoints c
         WHERE entrypoint_config.entrypoints IS NULL
            OR c.entrypoint = ANY (entrypoint_config.entrypoints)
         ORDER BY c.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.entrypoint_config(text[]) IS
    'The stored policy rows of entrypoints (NULL: all), by entrypoint; names never configured or enqueued are left out.';

-- sql/functions/find_by_dedupe_key.sql
-- pgq.find_by_dedupe_key(dedupe_key, max_rows)
-- Contract: the jobs that carry a dedupe key, as pgq.list_jobs lists them (type
--   pgq.job_listing): the live job holding it (at most one: the key is unique among live
--   jobs) first, then finished jobs that carried it, newest first, at most max_rows rows in
--   all. A search box's answer ("where is the job of order 4711?"); the cursor column is
--   filled as in the listings, but there is no next page.
-- Locking: none (reads only). The lookups are index scans (the key in pgq.live_keys, then its
--   job by id in jobs_id_idx; job_history_dedupe_key_idx).
-- Errors: PQ009 NULL dedupe_key; PQ002 max_rows outside 1..1000.
CREATE OR REPLACE FUNCTION pgq.find_by_dedupe_key(dedupe_key text, max_rows int DEFAULT 50)
RETURNS SETOF pgq.job_listing
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
    IF find_by_dedupe_key.dedupe_key IS NULL THEN
        RAISE EXCEPTION 'dedupe_key must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF find_by_dedupe_key.max_rows IS NULL OR find_by_dedupe_key.max_rows NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 1000, got %', coalesce(find_by_dedupe_key.max_rows::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;
    RETURN QUERY
    (SELECT j.id, j.entrypoint, j.status, j.priority, j.attempt, j.dedupe_key, j.enqueued_at, j.run_at,
            j.started_at, j.heartbeat_at, NULL::timestamptz, j.worker_id,
            j.errors -> -1 -> 'details' ->> 'error', j.errors -> -1 -> 'details' ->> 'message',
            CASE WHEN j.status = 'queued'
                 THEN 'q,' || j.priority || ',' || j.ready_seq
                 WHEN j.status = 'scheduled'
                 THEN 's,' || (to_json(j.run_at) #>> '{}') || ',' || j.id
                 ELSE 'r,' || j.id END,
            CASE WHEN j.status = 'running' THEN date_part('epoch', now() - j.heartbeat_at) END
       FROM pgq.jobs j
      -- The id as a value (an init plan): a look-up in jobs_id_idx whatever the slots' stats.
      WHERE j.id = (SELECT k.job_id FROM pgq.live_keys k WHERE k.dedupe_key = find_by_dedupe_key.dedupe_key))
    UNION ALL
    (SELECT h.id, h.entrypoint, h.status, h.priority, h.attempt, h.dedupe_key, h.enqueued_at, NULL::timestamptz,
            h.started_at, NULL::timestamptz, h.finished_at, h.worker_id, h.details ->> 'error', h.details ->> 'message',
            'h,' || (to_json(h.finished_at) #>> '{}') || ',' || h.id, NULL::float8
       FROM pgq.job_history h
      WHERE h.dedupe_key = find_by_dedupe_key.dedupe_key
      ORDER BY h.finished_at DESC, h.id DESC
      LIMIT find_by_dedupe_key.max_rows)
    LIMIT find_by_dedupe_key.max_rows;
END
$$;
COMMENT ON FUNCTION pgq.find_by_dedupe_key(text, int) IS
    'The jobs carrying a dedupe key: the live one first, then finished ones newest first (at most max_rows).';

-- sql/functions/find_history.sql
-- pgq.find_history(entrypoint, statuses, since, until, error, after, page_size)
-- Contract: finished jobs matching a filter, newest first (finished_at desc, id desc), one page
--   of at most page_size rows: dead jobs by default (statuses '{failed}'), of one entrypoint
--   (NULL: all), finished in [since, until) (NULL: open), whose error, message or traceback
--   contains the text `error` (case-insensitive; NULL: any). Keyset paging: pass the cursor
--   column of the last row as `after` to get the next page (never OFFSET). error and message
--   are the last failure's details->>'error' and details->>'message'. The same filter drives
--   pgq.requeue_history and pgq.delete_history.
-- Locking: none (reads only).
-- Errors: PQ001 bad entrypoint; PQ009 statuses NULL, empty or not among successful, failed,
--   canceled, since after until, a bad cursor; PQ002 page_size outside 1..1000.
CREATE OR REPLACE FUNCTION pgq.find_history(
    entrypoint  text        DEFAULT NULL,
    statuses    text[]      DEFAULT '{failed}',
    since       timestamptz DEFAULT NULL,
    until       timestamptz DEFAULT NULL,
    error       text        DEFAULT NULL,
    after       text        DEFAULT NULL,
    page_size   int         DEFAULT 50
)
RETURNS SETOF pgq.job_listing
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_after record;
BEGIN
    PERFORM pgq._check_history_filter(find_history.entrypoint, find_history.statuses, find_history.since,
                                      find_history.until, find_history.page_size, 1000, 'page_size');
    SELECT * INTO v_after FROM pgq._cursor(find_history.after, 'h');
    RETURN QUERY
    SELECT h.id, h.entrypoint, h.status, h.priority, h.attempt, h.dedupe_key, h.enqueued_at, NULL::timestamptz,
           h.started_at, NULL::timestamptz, h.finished_at, h.worker_id, h.details ->> 'error', h.details ->> 'message',
           'h,' || (to_json(h.finished_at) #>> '{}') || ',' || h.id, NULL::float8
      FROM pgq._find_history(find_history.entrypoint, find_history.statuses, find_history.since,
                             find_history.until, find_history.error, v_after.at, v_after.id,
                             find_history.page_size, false) AS h;
END
$$;
COMMENT ON FUNCTION pgq.find_history(text, text[], timestamptz, timestamptz, text, text, int) IS
    'Finished jobs (failed by default) by entrypoint, finish time and error text, newest first, keyset-paged through the cursor column.';

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

-- sql/functions/fire_schedule_now.sql
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

-- sql/functions/heartbeat.sql
-- pgq.heartbeat(worker_id, ids, leases, at)
-- Contract: refreshes heartbeat_at = at for each job this worker still owns under that lease,
--   and answers one row per input id, in input order: state 'ok', 'cancel_requested' (still
--   owned, but pgq.cancel asked it to stop), 'timed_out' (the attempt was past its deadline: this
--   call, or a sweep before it, ended it as a failed attempt, pgq._time_out, so the worker stops
--   the handler and writes no result) or 'lost' (re-claimed by another worker, finished or gone). A lost job is
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
-- The input arrays meet pgq.jobs in hash joins only (docs/decisions/0007): one scan by id per
-- partition, whatever the statistics; a nested loop would probe every partition once per job.
SET enable_nestloop = off
SET enable_mergejoin = off
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
    -- Not owned any more because SQL ended the attempt for its time limit under this lease (a
    -- sweep came first): answered 'timed_out' as well, so the worker reports what SQL decided.
    -- Read only when some job is not owned: the error entry names the lease and the worker.
    IF cardinality(v_ok) < cardinality(heartbeat.ids) THEN
        SELECT v_late || coalesce(array_agg(i.id), '{}') INTO v_late
          FROM unnest(heartbeat.ids, heartbeat.leases) AS i(id, lease)
          JOIN (SELECT j.id, j.errors FROM pgq.jobs j
                 WHERE j.id = ANY (heartbeat.ids) AND j.id <> ALL (v_ok)
                UNION ALL
                SELECT h.id, h.errors FROM pgq.job_history h
                 WHERE h.id = ANY (heartbeat.ids) AND h.id <> ALL (v_ok)) AS g ON g.id = i.id
         WHERE g.errors @> jsonb_build_array(jsonb_build_object(
                   'lease', i.lease, 'worker_id', heartbeat.worker_id,
                   'details', jsonb_build_object('error', 'timed out')));
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

-- sql/functions/history_summary.sql
-- pgq.history_summary(entrypoints, since_id)
-- Contract: finished jobs per entrypoint and final status: how many, the most attempts any of
--   them took, and the mean time from enqueue to finish in seconds. Only jobs with an id of at
--   least since_id (default: all) and, when entrypoints is given, of those entrypoints. A
--   report for dashboards and the demo; reads pgq.job_history only.
-- Locking: none (reads only).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq.history_summary(entrypoints text[] DEFAULT NULL, since_id bigint DEFAULT 0)
RETURNS TABLE (entrypoint text, status text, jobs bigint, max_attempt int, avg_latency_s float8)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(history_summary.entrypoints, 'entrypoints');
    RETURN QUERY
        SELECT h.entrypoint, h.status, count(*), max(h.attempt),
               avg(extract(epoch FROM h.finished_at - h.enqueued_at))::float8
          FROM pgq.job_history h
         WHERE (history_summary.entrypoints IS NULL OR h.entrypoint = ANY (history_summary.entrypoints))
           AND h.id >= coalesce(history_summary.since_id, 0)
         GROUP BY h.entrypoint, h.status
         ORDER BY h.entrypoint, h.status;
END
$$;
COMMENT ON FUNCTION pgq.history_summary(text[], bigint) IS
    'Finished jobs per entrypoint and status: count, most attempts, mean enqueue-to-finish seconds (ids >= since_id).';

-- sql/functions/job.sql
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

-- sql/functions/job_results.sql
-- pgq.job_results(ids)
-- Contract: what a producer needs to wait for its jobs: one row per id, in input order:
--   status (scheduled, queued, running, successful, failed, canceled, or unknown for an id that is not
--   there: never enqueued, or pruned from history), finished (the job is in history), result
--   (what a successful handler returned: details->'result'), error (the details of the final
--   failure or cancellation), attempt and finished_at. No payload or headers. A caller that
--   waits polls it with a growing pause (see docs/sql-api.md): finished jobs never change back
--   unless requeued. Any id may be read: see the isolation note in docs/sql-api.md.
-- Locking: none (reads only).
-- Errors: PQ009 NULL ids or a NULL element, more than 10000 ids.
CREATE OR REPLACE FUNCTION pgq.job_results(ids bigint[])
RETURNS TABLE (id bigint, status text, finished boolean, result jsonb, error jsonb, attempt int,
               finished_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(job_results.ids, 'ids');
    IF job_results.ids IS NULL OR array_position(job_results.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(job_results.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF cardinality(job_results.ids) > 10000 THEN
        RAISE EXCEPTION 'at most 10000 ids per call, got %', cardinality(job_results.ids)
            USING ERRCODE = 'PQ009';
    END IF;
    RETURN QUERY
    SELECT u.id,
           coalesce(h.status, j.status, 'unknown'),
           h.id IS NOT NULL,
           CASE WHEN h.status = 'successful' AND jsonb_typeof(h.details) = 'object' THEN h.details -> 'result' END,
           CASE WHEN h.status IN ('failed', 'canceled') THEN h.details END,
           coalesce(h.attempt, j.attempt),
           h.finished_at
      FROM unnest(job_results.ids) WITH ORDINALITY AS u(id, ord)
      LEFT JOIN pgq.jobs j ON j.id = u.id
      LEFT JOIN pgq.job_history h ON h.id = u.id
     ORDER BY u.ord;
END
$$;
COMMENT ON FUNCTION pgq.job_results(bigint[]) IS
    'Status and result of jobs by id, for producers waiting on them: one row per id (unknown when absent); result of successful jobs, error details of failed or canceled ones; no payload.';

-- sql/functions/key_stats.sql
-- pgq.key_stats(entrypoints, max_keys)
-- Contract: the busiest group keys of the entrypoints with a key_concurrency_limit (the given
--   names, NULL: every one), for dashboards and the CLI: per entrypoint, up to max_keys keys
--   with queued or running jobs, most queued first (then by key): queued, running, the limit,
--   and at_limit (running >= limit: its queued jobs wait on the key's limit, not on a worker).
--   Read-only; counts what it finds now (one walk of the entrypoint's queued and running jobs
--   with a key), so a dashboard calls it for the entrypoints it shows.
-- Locking: none (reads only).
-- Errors: PQ002 max_keys outside 1..1000; PQ009 a multi-dimensional entrypoints array.
CREATE OR REPLACE FUNCTION pgq.key_stats(entrypoints text[] DEFAULT NULL, max_keys int DEFAULT 10)
RETURNS TABLE (entrypoint text, group_key text, queued bigint, running bigint,
               key_concurrency_limit int, at_limit boolean)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(key_stats.entrypoints, 'entrypoints');
    IF key_stats.max_keys IS NULL OR key_stats.max_keys NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max_keys must be between 1 and 1000, got %', coalesce(key_stats.max_keys::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;
    RETURN QUERY
    SELECT e.entrypoint, k.group_key, k.queued, k.running, e.key_concurrency_limit,
           k.running >= e.key_concurrency_limit
      FROM pgq.entrypoints e
     CROSS JOIN LATERAL (
           -- The entrypoint's keyed jobs alone: queued ones through jobs_key_idx, running ones
           -- (a lease) through jobs_key_running_idx.
           SELECT j.group_key,
                  count(*) FILTER (WHERE NOT j.running) AS queued,
                  count(*) FILTER (WHERE j.running) AS running
             FROM (SELECT q.group_key, false AS running
                     FROM pgq.jobs q
                    WHERE hashtext(q.entrypoint) = hashtext(e.entrypoint) AND q.entrypoint = e.entrypoint
                      AND q.status = 'queued' AND q.group_key IS NOT NULL AND q.slot <> 4
                   UNION ALL
                   SELECT r.group_key, true
                     FROM pgq.jobs r
                    WHERE hashtext(r.entrypoint) = hashtext(e.entrypoint) AND r.entrypoint = e.entrypoint
                      AND r.lease IS NOT NULL AND r.group_key IS NOT NULL AND r.slot <> 4) AS j
            GROUP BY j.group_key
            ORDER BY 2 DESC, 1
            LIMIT key_stats.max_keys) AS k
     WHERE e.key_concurrency_limit IS NOT NULL
       AND (key_stats.entrypoints IS NULL OR e.entrypoint = ANY (key_stats.entrypoints))
     ORDER BY e.entrypoint, k.queued DESC, k.group_key;
END
$$;
COMMENT ON FUNCTION pgq.key_stats(text[], int) IS
    'The busiest group keys of key-limited entrypoints: queued, running, the limit and whether the key is at it (its queued jobs wait on the key''s limit).';

-- sql/functions/list_jobs.sql
-- pgq.list_jobs(entrypoint, state, after, page_size)
-- Contract: one page of the jobs of one entrypoint in one state, with keyset paging (pass the
--   cursor column of the last row as `after` for the next page; never OFFSET):
--   - queued: jobs due, in claim order (priority desc, then ready order), read from the claim
--     index;
--   - scheduled: jobs not due yet, by due time (run_at, id);
--   - running: by id;
--   - successful, failed, canceled: newest first (finished_at desc, id desc), as
--     pgq.find_history.
--   Columns: the job's id, entrypoint, status, priority, attempt, dedupe_key, enqueued_at,
--   run_at (live jobs), started_at, heartbeat_at (running jobs), finished_at (history),
--   worker_id, error and message (the last failure's details->>'error' / ->>'message': from the
--   error list of a live job, from details of a finished one), cursor, silent_s (a running
--   job: seconds since its last heartbeat, before the timeout makes it stale; else NULL). Payloads are left out:
--   pgq.job(id) has everything about one job.
-- Locking: none (reads only).
-- Errors: PQ001 bad entrypoint; PQ009 unknown state, a bad cursor (or one of another state);
--   PQ002 page_size outside 1..1000.
CREATE OR REPLACE FUNCTION pgq.list_jobs(
    entrypoint  text,
    state       text,
    after       text DEFAULT NULL,
    page_size   int  DEFAULT 50
)
RETURNS SETOF pgq.job_listing
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_custom_plan
-- Index scans: a plan made while a slot of the ring was empty (after a truncation) would
-- otherwise read the slot sequentially once it has filled (tests/py/test_plans.py).
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_after record;
BEGIN
    PERFORM pgq._check_name(list_jobs.entrypoint, 'entrypoint', 'PQ001');
    IF list_jobs.state IS NULL OR list_jobs.state NOT IN ('scheduled', 'queued', 'running', 'successful', 'failed', 'canceled') THEN
        RAISE EXCEPTION 'state must be scheduled, queued, running, successful, failed or canceled, got %',
            coalesce(quote_literal(list_jobs.state), 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF list_jobs.page_size IS NULL OR list_jobs.page_size NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'page_size must be between 1 and 1000, got %', coalesce(list_jobs.page_size::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;

    IF list_jobs.state IN ('successful', 'failed', 'canceled') THEN
        RETURN QUERY
        SELECT f.*
          FROM pgq.find_history(list_jobs.entrypoint, ARRAY[list_jobs.state], NULL, NULL, NULL,
                                list_jobs.after, list_jobs.page_size) AS f;
        RETURN;
    END IF;

    SELECT * INTO v_after FROM pgq._cursor(list_jobs.after, CASE list_jobs.state WHEN 'queued' THEN 'q' WHEN 'scheduled' THEN 's' ELSE 'r' END);
    RETURN QUERY
    WITH page AS (
        -- queued, first page
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'queued' AND v_after.id IS NULL
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'queued'
          ORDER BY j.priority DESC, j.ready_seq
          LIMIT list_jobs.page_size)
        UNION ALL
        -- queued, next pages: the rest of the cursor's priority, then lower priorities; each
        -- part starts where the cursor is in the claim index
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'queued' AND v_after.id IS NOT NULL
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'queued'
            AND j.priority = v_after.priority AND j.ready_seq > v_after.id
          ORDER BY j.ready_seq
          LIMIT list_jobs.page_size)
        UNION ALL
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'queued' AND v_after.id IS NOT NULL
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'queued'
            AND j.priority < v_after.priority
          ORDER BY j.priority DESC, j.ready_seq
          LIMIT list_jobs.page_size)
        UNION ALL
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'scheduled'
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'scheduled' AND j.slot = 4
            AND (v_after.id IS NULL OR (j.run_at, j.id) > (v_after.at, v_after.id))
          ORDER BY j.run_at, j.id
          LIMIT list_jobs.page_size)
        UNION ALL
        -- running: read through the running index (OFFSET 0 keeps the ORDER BY out of the scan,
        -- which could otherwise walk jobs_id_idx in id order), then sorted
        (SELECT r.*
           FROM (SELECT j.*
                   FROM pgq.jobs j
                  WHERE list_jobs.state = 'running'
                    AND j.entrypoint = list_jobs.entrypoint AND j.status = 'running'
                    AND (v_after.id IS NULL OR j.id > v_after.id)
                 OFFSET 0) AS r
          ORDER BY r.id
          LIMIT list_jobs.page_size)
    )
    SELECT p.id, p.entrypoint, p.status, p.priority, p.attempt, p.dedupe_key, p.enqueued_at, p.run_at,
           p.started_at, p.heartbeat_at, NULL::timestamptz, p.worker_id,
           p.errors -> -1 -> 'details' ->> 'error', p.errors -> -1 -> 'details' ->> 'message',
           CASE WHEN p.status = 'queued'
                THEN 'q,' || p.priority || ',' || p.ready_seq
                WHEN p.status = 'scheduled'
                THEN 's,' || (to_json(p.run_at) #>> '{}') || ',' || p.id
                ELSE 'r,' || p.id END,
           CASE WHEN p.status = 'running' THEN date_part('epoch', now() - p.heartbeat_at) END
      FROM page p
     ORDER BY CASE WHEN p.status = 'queued' THEN -p.priority END, CASE WHEN p.status = 'queued' THEN p.ready_seq END,
              CASE WHEN p.status = 'scheduled' THEN p.run_at END, p.id
     LIMIT list_jobs.page_size;
END
$$;
COMMENT ON FUNCTION pgq.list_jobs(text, text, text, int) IS
    'One page of the jobs of an entrypoint in a state (queued in claim order, scheduled by due time, running by id, finished newest first), keyset-paged through the cursor column.';

-- sql/functions/maintain.sql
-- pgq.maintain(at, min_interval): stale recovery, promotion and the ring's reclaim
--   (docs/decisions/0006).
-- Contract: one maintainer at a time: the others answer 'busy' at once, having done nothing
--   (counts 0, bytes NULL). With min_interval, a call made less than min_interval after the
--   last pass (pgq.maintained_at, the server's clock; a pass stamped later than now, the clock
--   set back, is not recent) answers 'recent' at once, having done nothing and taken no lock:
--   a fleet of workers that each call every few seconds makes at most one pass per
--   min_interval between them. The maintainer, in this order:
--   1. sweeps stale running jobs (pgq._sweep: archived when their attempts are used up or their
--      cancellation was requested, else queued again with a new ready number);
--   2. promotes due scheduled jobs into the ring (pgq._promote, at most 10,000 per call), and
--      removes the rate limits' starts that left their window (pgq.rate_starts: those that left
--      it since the last call's `at`, pgq.rate_cut_at, and the second before; the minute
--      before each rate-limited entrypoint's window when that call is older or `at` went
--      back; once an hour of `at`, every row outside its entrypoint's window, and the rows of
--      entrypoints without a rate limit);
--   3. carries forward: when the next slot of the ring (the one to be reused) holds between 1
--      and 1,000 live rows (stragglers: long-running or retried jobs, the tail of a backlog),
--      they move to the current slot as they are (same id, lease, ready number, every column;
--      a DELETE ... RETURNING + INSERT of the partitions themselves, so no notification is
--      sent); rows locked by someone else are moved by a later call. A next slot holding more
--      (a backlog) stays: the ring stops turning until it drains and the current slot grows;
--   4. rotates (the next slot becomes current, pgq.ring_seq) when the next slot has no pages
--      at all (no rows, truncated or never used) and the last rotation is at least 2 seconds
--      old on the server's clock (pgq.ring_rotated_at), or later than now (the clock was set
--      back);
--   5. truncates at most one slot other than the current one that has pages but no live row
--      (the next slot first, then the oldest), as the last statement: everything it returns is
--      computed first, pgq.maintained_at set, then the partition's lock is asked for with
--      lock_timeout 5 ms, its emptiness checked again under the lock, and TRUNCATE. A lock not
--      granted within 5 ms (a reader of pgq.jobs in an open transaction, a heavy queue of
--      calls) is an answer: state 'busy', truncated NULL, lock_wait_ms set.
--   Returns one row: state ('ok', 'busy' or 'recent' as above), swept, promoted, carried (jobs),
--   truncated (the partition emptied, or NULL), rotated, lock_wait_ms (how long the
--   truncation's lock was waited for, NULL when none was asked for) and bytes (heap, TOAST and
--   indexes of jobs_0 .. jobs_3 before the truncation). at NULL means now() (the clock of the sweep and the
--   promotion; the 2-second rule reads the server's clock).
--   Safe inside a transaction that already used pgq.jobs: its own locks do not conflict, and a
--   slot this session still has in use (an open cursor) is left for a later call ('busy'); the
--   truncation's lock then lasts until that transaction ends.
-- Locking: the row of pgq.maintenance (FOR UPDATE SKIP LOCKED: never waited for; only the owner
--   can lock it, so no role that merely connects can keep maintenance busy); row locks on the
--   jobs it sweeps, promotes and carries (SKIP LOCKED); ACCESS EXCLUSIVE on one partition of
--   pgq.jobs from the grant to the end of the transaction, waited for at most 5 ms. Every
--   statement on pgq.jobs waits for that lock (a generic plan locks every partition), so call
--   it in its own transaction (autocommit): the commit follows at once. A transaction holding
--   any lock on the partition (a long report over pgq.jobs) keeps it from being truncated,
--   and the ring from turning, until it ends.
-- Errors: PQ009 at out of range, or min_interval negative or over an hour; PQ010 not READ
--   COMMITTED (TRUNCATE is not MVCC-safe: the emptiness check must see every committed row).
CREATE OR REPLACE FUNCTION pgq.maintain(at timestamptz DEFAULT NULL, min_interval interval DEFAULT NULL)
RETURNS TABLE (state text, swept int, promoted int, carried int, truncated text, rotated boolean,
               lock_wait_ms float8, bytes bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    c_slots      constant int := 4;
    c_carry      constant int := 1000;
    c_period_ms  constant bigint := 2000;
    v_now        timestamptz := coalesce(pgq._check_time(maintain.at, 'at'), now());
    v_swept      int;
    v_promoted   int;
    v_carried    int := 0;
    v_rotated    boolean := false;
    v_turn       bigint;
    v_cur        int;
    v_next       int;
    v_slot       int;
    v_target     text;
    v_n          bigint;
    v_ids        bigint[];
    v_cols       text;
    v_empty      boolean;
    v_bytes      bigint;
    v_old_wait   text;
    v_t0         timestamptz;
    v_wait       float8;
    v_state      text := 'ok';
    v_from       timestamptz;  -- the last pass over pgq.rate_starts (pgq.rate_cut_at)
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'pgq.maintain needs READ COMMITTED isolation, the transaction is %',
            current_setting('transaction_isolation')
            USING ERRCODE = 'PQ010';
    END IF;
    IF min_interval < interval '0' OR min_interval > interval '1 hour' THEN
        RAISE EXCEPTION 'min_interval must be between 0 and 1 hour, got %', min_interval
            USING ERRCODE = 'PQ009';
    END IF;
    -- A last pass in the future (the server's clock was set back) is not recent: else every
    -- call would answer 'recent' until the clock caught up.
    IF (extract(epoch FROM clock_timestamp()) * 1000)::bigint
       - (SELECT s.last_value FROM pgq.maintained_at s)
       BETWEEN 0 AND extract(epoch FROM min_interval) * 1000 - 1 THEN
        RETURN QUERY SELECT 'recent'::text, 0, 0, 0, NULL::text, false, NULL::float8, NULL::bigint;
        RETURN;
    END IF;
    PERFORM 1 FROM pgq.maintenance m FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'busy'::text, 0, 0, 0, NULL::text, false, NULL::float8, NULL::bigint;
        RETURN;
    END IF;

    -- 1., 2.
    v_swept := pgq._sweep(NULL, v_now);
    v_promoted := pgq._promote(NULL, v_now, 10000);
    -- Rate limits: starts that left their window since the last pass (pgq.rate_cut_at: its `at`),
    -- and the second before (a claim whose transaction began before that pass but committed
    -- after it), at most the minute before each window. Under a held vacuum horizon the rows
    -- removed before stay in the index below the lower bound, so a pass reads only what it
    -- removes. Once an hour, the whole table (rows a gap in maintenance left behind).
    v_from := to_timestamp((SELECT s.last_value FROM pgq.rate_cut_at s) / 1000.0);
    IF v_from > v_now OR v_from < v_now - interval '1 minute' THEN
        v_from := v_now - interval '1 minute';  -- `at` went back, or the last pass is long ago
    END IF;
    PERFORM setval('pgq.rate_cut_at', greatest((extract(epoch FROM v_now) * 1000)::bigint, 0));
    -- One range probe of rate_starts_time_idx per rate-limited entrypoint (a lateral read: a
    -- join may hash the entrypoints and read the whole index), then the rows by TID.
    DELETE FROM pgq.rate_starts s
     WHERE s.ctid = ANY (ARRAY(
           SELECT r.ctid
             FROM pgq.entrypoints e
            CROSS JOIN LATERAL (
                  SELECT r.ctid
                    FROM pgq.rate_starts r
                   WHERE r.entrypoint = e.entrypoint
                     AND r.started_at <= v_now - e.rate_period
                     AND r.started_at > v_from - interval '1 second' - e.rate_period
                  OFFSET 0) AS r  -- (kept a probe per entrypoint: not pulled up into a join)
            WHERE e.rate_limit IS NOT NULL));
    IF abs((extract(epoch FROM v_now) * 1000)::bigint - (SELECT s.last_value FROM pgq.rate_pruned_at s)) >= 3600000 THEN
        PERFORM setval('pgq.rate_pruned_at', greatest((extract(epoch FROM v_now) * 1000)::bigint, 0));
        DELETE FROM pgq.rate_starts s
         WHERE NOT EXISTS (SELECT 1
                             FROM pgq.entrypoints e
                            WHERE e.entrypoint = s.entrypoint
                              AND e.rate_limit IS NOT NULL
                              AND s.started_at > v_now - e.rate_period);
    END IF;

    -- Slot-wide reads of one partition: a sequential scan is the cheap way (the index scans
    -- this function is set up for walk the same dead versions and visit the heap for each).
    -- The setting ends with the function.
    PERFORM set_config('enable_seqscan', 'on', true);

    -- 3. Carry forward.
    v_turn := (SELECT s.last_value FROM pgq.ring_seq s);
    v_cur := v_turn % c_slots;
    v_next := (v_cur + 1) % c_slots;
    EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM pgq.%I LIMIT %s) s', 'jobs_' || v_next, c_carry + 1)
       INTO v_n;
    IF v_n BETWEEN 1 AND c_carry THEN
        EXECUTE format('SELECT array_agg(j.id) FROM (SELECT j.id FROM pgq.%I j FOR UPDATE SKIP LOCKED) j',
                       'jobs_' || v_next)
           INTO v_ids;
        IF v_ids IS NOT NULL THEN
            -- Every column but slot, as the table has them (a column added later moves too).
            SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO v_cols
              FROM pg_attribute a
             WHERE a.attrelid = 'pgq.jobs'::regclass
               AND a.attnum > 0
               AND NOT a.attisdropped
               AND a.attname <> 'slot';
            EXECUTE format('WITH moved AS (DELETE FROM pgq.%1$I j WHERE j.id = ANY ($1) RETURNING %2$s) '
                           'INSERT INTO pgq.%3$I (%2$s, slot) SELECT %2$s, $2 FROM moved',
                           'jobs_' || v_next, v_cols, 'jobs_' || v_cur)
              USING v_ids, v_cur::smallint;
            GET DIAGNOSTICS v_carried = ROW_COUNT;
        END IF;
    END IF;

    -- 4. Rotate onto a slot without pages only: a slot entered with pages left would stay full
    --    of dead versions for a whole turn of the ring.
    --    A last rotation in the future (the server's clock was set back) does not hold it up.
    IF pg_relation_size(format('pgq.jobs_%s', v_next)::regclass) = 0
       AND (extract(epoch FROM clock_timestamp()) * 1000)::bigint
           - (SELECT s.last_value FROM pgq.ring_rotated_at s) NOT BETWEEN 0 AND c_period_ms - 1 THEN
        -- The stamp first: sequences are not transactional, so whoever reads the new turn
        -- also reads its stamp. setval, not nextval: the sequence starts unused at 0, whose
        -- first nextval is 0.
        PERFORM setval('pgq.ring_rotated_at', (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
        PERFORM setval('pgq.ring_seq', v_turn + 1);
        v_rotated := true;
        v_cur := v_next;
    END IF;

    -- 5. The slot to truncate: the first non-current one (next first, then the oldest) with
    --    pages and no live row. Everything returned is computed before its lock is asked for.
    FOR v_slot IN SELECT (v_cur + k) % c_slots FROM generate_series(1, c_slots - 1) AS k ORDER BY k LOOP
        CONTINUE WHEN pg_relation_size(format('pgq.jobs_%s', v_slot)::regclass) = 0;
        EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM pgq.%I)', 'jobs_' || v_slot) INTO v_empty;
        IF v_empty THEN
            v_target := 'jobs_' || v_slot;
            EXIT;
        END IF;
    END LOOP;
    SELECT sum(pg_total_relation_size(format('pgq.jobs_%s', k)::regclass))::bigint INTO v_bytes
      FROM generate_series(0, c_slots - 1) AS k;
    PERFORM setval('pgq.maintained_at', (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
    IF v_target IS NULL THEN
        RETURN QUERY SELECT v_state, v_swept, v_promoted, v_carried, NULL::text, v_rotated, NULL::float8, v_bytes;
        RETURN;
    END IF;

    -- The lock, waited for at most 5 ms (every call on pgq.jobs queues behind the request
    -- meanwhile), the emptiness checked again under it (a producer that drew this slot before
    -- it stopped being current may have committed since), TRUNCATE; the commit follows.
    v_old_wait := current_setting('lock_timeout');
    BEGIN
        PERFORM set_config('lock_timeout', '5ms', true);
        v_t0 := clock_timestamp();
        EXECUTE format('LOCK TABLE pgq.%I IN ACCESS EXCLUSIVE MODE', v_target);
        v_wait := extract(epoch FROM clock_timestamp() - v_t0) * 1000;
        PERFORM set_config('lock_timeout', v_old_wait, true);
        EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM pgq.%I)', v_target) INTO v_empty;
        IF v_empty THEN
            EXECUTE format('TRUNCATE pgq.%I', v_target);
        ELSE
            v_target := NULL;
        END IF;
    EXCEPTION WHEN lock_not_available OR deadlock_detected OR object_in_use THEN
        -- The sub-block's rollback restored lock_timeout.
        v_wait := extract(epoch FROM clock_timestamp() - v_t0) * 1000;
        v_state := 'busy';
        v_target := NULL;
    END;
    RETURN QUERY SELECT v_state, v_swept, v_promoted, v_carried, v_target, v_rotated, v_wait, v_bytes;
END
$$;
COMMENT ON FUNCTION pgq.maintain(timestamptz, interval) IS
    'Stale sweep, promotion of due jobs, and the ring''s reclaim (carry stragglers, rotate, truncate one drained slot); one maintainer at a time, others answer busy; with min_interval, a call soon after the last pass answers recent.';

-- sql/functions/metrics.sql
-- pgq.metrics(entrypoints, percentile_window, at)
-- Contract: one row per entrypoint (every entrypoint in pgq.entrypoints, or those given), the
--   numbers a dashboard or a Prometheus exporter shows, as typed columns:
--   - live, from pgq.jobs at `at`: paused; queued, split into due (queued jobs, and scheduled
--     ones with run_at <= at not promoted yet) and delayed (scheduled, run_at > at); running;
--     stale (running, heartbeat older than the entrypoint's heartbeat_timeout); lag_s, the age
--     of the oldest due job in seconds (how long it has been waiting since it became due: the
--     head of each lane, the job a claim takes next, and the earliest scheduled job that is
--     due; 0 when nothing is due). due and delayed are exact up to 10,000 each and read 10,000
--     when there are more (queued = due + delayed, so at most 20,000): the read stays bounded
--     whatever the backlog. lag_s, running and stale are always exact;
--   - finished jobs per final status over the last 1, 5 and 15 minutes and throughput
--     (finished jobs per second over each window), from the rollup (pgq.rollup_metrics),
--     counted in whole 10-second buckets of finished_at: "the last minute" is the six complete
--     buckets before the one `at` falls in, so the figures move every 10 seconds and trail by
--     at most 10 seconds;
--   - wait time (enqueued_at to started_at of the last attempt) and run time (started_at to
--     finished_at) percentiles p50/p95/p99 in seconds over the complete buckets of the last
--     percentile_window (10 seconds to 1 hour, rounded up to whole buckets), all statuses
--     together, NULL without samples; within one histogram bin (about 19 %);
--   - successful_total, failed_total, canceled_total: finished jobs counted since the rollup
--     started (monotonic, for Prometheus counters);
--   - rollup_caught_up: when the rollup last ran it counted every finished job up to the
--     oldest transaction of this database still running (false: more than 100,000 rows were
--     waiting, the next calls catch up);
--   - served: a live worker serves the entrypoint: one in pgq.workers that announced it and
--     counts as active at `at` (last seen within its timeout, as pgq.worker_status says), or a
--     running job of it whose heartbeat is within heartbeat_timeout (a worker that does not
--     register, seen while it works). unserved_s: NULL when served or when nothing is due;
--     else how long due work has waited with no live worker serving it: the seconds since the
--     later of the last time the registry saw a worker serving it (gone workers stay there 15
--     minutes) and the moment its oldest due job became due (so at most lag_s).
--   - flow control (NULL where the entrypoint has no such limit): rate_remaining, the starts
--     its whole-entrypoint rate limit has left in the window; rate_wait_s, when that budget is
--     used up, the seconds until one more start fits (its due jobs wait on the limit, not on a
--     worker); rate_keys_used_up, with a rate limit per key, the keys (and the jobs without a
--     key, as one) whose budget is used up; keys_at_limit, the group keys whose running jobs
--     are at key_concurrency_limit, and key_limited, the queued jobs of those keys (waiting on
--     their key's limit; exact up to 10,000). The busiest keys: pgq.key_stats, pgq.rate_stats.
--   First it advances the rollup by one bounded call (pgq.rollup_metrics, at most 100,000 rows;
--   skipped when another caller is doing it, and in a read-only or non-READ COMMITTED
--   transaction). Cost: per entrypoint, the live part reads at most 10,000 entries of the
--   claim index and 10,000 of the scheduled index per count (index-only once vacuum has set
--   the visibility map), one probe per distinct priority of its queued jobs (a loose index scan:
--   the oldest due job of each priority is the first entry) and its running jobs; the rest reads
--   at most 90 buckets; flow control reads each limited entrypoint's rate window (at most
--   rate_limit entries per budget), its running jobs and up to 10,000 queued jobs of its keys
--   at their limit. It does not grow with the backlog or the history.
--   at NULL means now().
-- Locking: as pgq.rollup_metrics (never waits for another caller); otherwise reads.
-- Errors: PQ009 percentile_window NULL or outside 10 seconds .. 1 hour.
CREATE OR REPLACE FUNCTION pgq.metrics(
    entrypoints        text[]      DEFAULT NULL,
    percentile_window  interval    DEFAULT interval '5 minutes',
    at                 timestamptz DEFAULT NULL
)
RETURNS TABLE (
    entrypoint        text,
    paused            boolean,
    queued            bigint,
    due               bigint,
    delayed           bigint,
    running           bigint,
    stale             bigint,
    lag_s             float8,
    successful_1m     bigint,
    failed_1m         bigint,
    canceled_1m       bigint,
    successful_5m     bigint,
    failed_5m         bigint,
    canceled_5m       bigint,
    successful_15m    bigint,
    failed_15m        bigint,
    canceled_15m      bigint,
    throughput_1m     float8,
    throughput_5m     float8,
    throughput_15m    float8,
    wait_p50_s        float8,
    wait_p95_s        float8,
    wait_p99_s        float8,
    run_p50_s         float8,
    run_p95_s         float8,
    run_p99_s         float8,
    successful_total  bigint,
    failed_total      bigint,
    canceled_total    bigint,
    rollup_caught_up  boolean,
    served            boolean,
    unserved_s        float8,
    rate_remaining    bigint,
    rate_wait_s       float8,
    rate_keys_used_up bigint,
    keys_at_limit     bigint,
    key_limited       bigint
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- No JIT, no parallel workers: a scrape must not take cores from the workers (one backend
-- counting was as fast as three on two cores).
SET jit = off
SET max_parallel_workers_per_gather = 0
AS $$
#variable_conflict use_column
DECLARE
    v_now    timestamptz := coalesce(pgq._check_time(metrics.at, 'at'), now());
    v_cur    timestamptz := date_bin(interval '10 seconds', coalesce(pgq._check_time(metrics.at, 'at'), now()), timestamptz '2000-01-01 00:00:00+00');
    v_pstart timestamptz;
    -- Live counts are exact up to this many jobs (due and delayed each, per entrypoint).
    v_cap    CONSTANT bigint := 10000;
    c_whole  CONSTANT bigint := -9223372036854775808;  -- pgq.rate_starts: the whole entrypoint
BEGIN
    PERFORM pgq._check_dims(metrics.entrypoints, 'entrypoints');
    IF metrics.percentile_window IS NULL
       OR metrics.percentile_window NOT BETWEEN interval '10 seconds' AND interval '1 hour' THEN
        RAISE EXCEPTION 'percentile_window must be between 10 seconds and 1 hour, got %',
            coalesce(metrics.percentile_window::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    v_pstart := v_cur - interval '10 seconds' * ceil(date_part('epoch', metrics.percentile_window) / 10);

    IF current_setting('transaction_isolation') = 'read committed'
       AND current_setting('transaction_read_only') = 'off' THEN
        PERFORM pgq.rollup_metrics(100000, v_now);
    END IF;

    RETURN QUERY
    WITH eps AS (
        SELECT e.entrypoint, e.paused_at, e.heartbeat_timeout, e.rate_limit, e.rate_period, e.rate_per_key,
               e.key_concurrency_limit
          FROM pgq.entrypoints e
         WHERE metrics.entrypoints IS NULL OR e.entrypoint = ANY (metrics.entrypoints)
    ), live AS (
        -- Index scans of the partial indexes, each stopped at the cap: due jobs (queued, then
        -- scheduled ones not promoted yet), delayed ones (scheduled, not due at `at`), and the
        -- oldest due job: the head of each lane (its first queued job past the lane's cursor,
        -- so a held horizon's dead entries behind the cursor are not walked) and the first of
        -- the scheduled index.
        SELECT e.entrypoint,
               least(v_cap, qd.n + sd.n) AS due,
               least(v_cap, sl.n) AS delayed,
               least(qp.oldest_due, so.oldest_due) AS oldest_due
          FROM eps e
         CROSS JOIN LATERAL (
               SELECT count(*) AS n
                 FROM (SELECT 1 FROM pgq.jobs j
                        WHERE j.entrypoint = e.entrypoint AND j.status = 'queued'
                        LIMIT v_cap) AS x) AS qd
         CROSS JOIN LATERAL (
               SELECT count(*) AS n
                 FROM (SELECT 1 FROM pgq.jobs j
                        WHERE j.entrypoint = e.entrypoint AND j.status = 'scheduled' AND j.slot = 4 AND j.run_at <= v_now
                        LIMIT v_cap) AS x) AS sd
         CROSS JOIN LATERAL (
               SELECT count(*) AS n
                 FROM (SELECT 1 FROM pgq.jobs j
                        WHERE j.entrypoint = e.entrypoint AND j.status = 'scheduled' AND j.slot = 4 AND j.run_at > v_now
                        LIMIT v_cap) AS x) AS sl
         CROSS JOIN LATERAL (
               SELECT min(j.run_at) FILTER (WHERE j.run_at <= v_now) AS oldest_due
                 FROM (SELECT j.run_at FROM pgq.jobs j
                        WHERE j.entrypoint = e.entrypoint AND j.status = 'scheduled' AND j.slot = 4
                        ORDER BY j.run_at LIMIT 1) AS j) AS so
         CROSS JOIN LATERAL (
               SELECT min(f.run_at) AS oldest_due
                 FROM pgq.lanes l
                CROSS JOIN LATERAL (
                      SELECT j.run_at FROM pgq.jobs j
                       WHERE j.entrypoint = l.entrypoint AND j.status = 'queued' AND j.priority = l.priority
                         AND j.ready_seq > coalesce(pg_sequence_last_value(l.cursor_seq), 0)
                       ORDER BY j.ready_seq LIMIT 1) AS f
                WHERE l.entrypoint = e.entrypoint) AS qp
    ), running AS (
        SELECT j.entrypoint, count(*) AS running,
               count(*) FILTER (WHERE j.heartbeat_at < v_now - e.heartbeat_timeout) AS stale
          FROM eps e
          JOIN pgq.jobs j ON j.entrypoint = e.entrypoint AND j.status = 'running'
         GROUP BY j.entrypoint
    ), buckets AS (
        SELECT m.*
          FROM pgq.metrics_buckets m
         WHERE m.bucket >= least(v_cur - interval '15 minutes', v_pstart) AND m.bucket < v_cur
           AND (metrics.entrypoints IS NULL OR m.entrypoint = ANY (metrics.entrypoints))
    ), windows AS (
        SELECT b.entrypoint,
               sum(b.successful) FILTER (WHERE b.bucket >= v_cur - interval '1 minute') AS successful_1m,
               sum(b.failed) FILTER (WHERE b.bucket >= v_cur - interval '1 minute') AS failed_1m,
               sum(b.canceled) FILTER (WHERE b.bucket >= v_cur - interval '1 minute') AS canceled_1m,
               sum(b.successful) FILTER (WHERE b.bucket >= v_cur - interval '5 minutes') AS successful_5m,
               sum(b.failed) FILTER (WHERE b.bucket >= v_cur - interval '5 minutes') AS failed_5m,
               sum(b.canceled) FILTER (WHERE b.bucket >= v_cur - interval '5 minutes') AS canceled_5m,
               sum(b.successful) FILTER (WHERE b.bucket >= v_cur - interval '15 minutes') AS successful_15m,
               sum(b.failed) FILTER (WHERE b.bucket >= v_cur - interval '15 minutes') AS failed_15m,
               sum(b.canceled) FILTER (WHERE b.bucket >= v_cur - interval '15 minutes') AS canceled_15m
          FROM buckets b
         GROUP BY b.entrypoint
    ), wait_hist AS (
        SELECT h.entrypoint,
               pgq._hist_quantiles(array_agg(h.bin ORDER BY h.bin), array_agg(h.n ORDER BY h.bin),
                                   '{0.5,0.95,0.99}') AS q
          FROM (SELECT b.entrypoint, u.bin, sum(u.n)::bigint AS n
                  FROM buckets b, unnest(b.wait_bins, b.wait_counts) AS u(bin, n)
                 WHERE b.bucket >= v_pstart
                 GROUP BY b.entrypoint, u.bin) AS h
         GROUP BY h.entrypoint
    ), run_hist AS (
        SELECT h.entrypoint,
               pgq._hist_quantiles(array_agg(h.bin ORDER BY h.bin), array_agg(h.n ORDER BY h.bin),
                                   '{0.5,0.95,0.99}') AS q
          FROM (SELECT b.entrypoint, u.bin, sum(u.n)::bigint AS n
                  FROM buckets b, unnest(b.run_bins, b.run_counts) AS u(bin, n)
                 WHERE b.bucket >= v_pstart
                 GROUP BY b.entrypoint, u.bin) AS h
         GROUP BY h.entrypoint
    ), servers AS (
        -- The registry (a few rows per worker): when each entrypoint's newest worker was last
        -- seen, and whether one of them is active at `at`.
        SELECT u.entrypoint,
               max(w.last_seen_at) AS last_seen_at,
               bool_or(w.last_seen_at >= v_now - w.timeout) AS active
          FROM pgq.workers w
         CROSS JOIN LATERAL unnest(w.entrypoints) AS u(entrypoint)
         WHERE metrics.entrypoints IS NULL OR u.entrypoint = ANY (metrics.entrypoints)
         GROUP BY u.entrypoint
    ), flow AS (
        -- Entrypoints with a rate or key limit only: what waits on the limit, not on a worker.
        SELECT e.entrypoint, rw.used, rk.used_up, kf.keys
          FROM eps e
          LEFT JOIN LATERAL (
               SELECT coalesce((SELECT w.used FROM pgq._rate_window(e.entrypoint, c_whole, v_now - e.rate_period) AS w), 0) AS used) AS rw
                 ON e.rate_limit IS NOT NULL AND NOT e.rate_per_key
          LEFT JOIN LATERAL (
               SELECT count(*) AS used_up
                 FROM (SELECT 1 FROM pgq.rate_starts s
                        WHERE s.entrypoint = e.entrypoint AND s.started_at > v_now - e.rate_period
                        GROUP BY s.key_hash
                       HAVING sum(s.tokens) >= e.rate_limit) AS x) AS rk
                 ON e.rate_limit IS NOT NULL AND e.rate_per_key
          LEFT JOIN LATERAL (
               SELECT array_agg(x.h) AS keys
                 FROM (SELECT hashtextextended(j.group_key, 0) AS h
                         FROM pgq.jobs j
                        WHERE j.entrypoint = e.entrypoint AND j.status = 'running' AND j.group_key IS NOT NULL
                        GROUP BY 1
                       HAVING count(*) >= e.key_concurrency_limit) AS x) AS kf
                 ON e.key_concurrency_limit IS NOT NULL
         WHERE e.rate_limit IS NOT NULL OR e.key_concurrency_limit IS NOT NULL
    ), totals AS (
        SELECT t.entrypoint,
               sum(t.jobs) FILTER (WHERE t.status = 'successful') AS successful_total,
               sum(t.jobs) FILTER (WHERE t.status = 'failed') AS failed_total,
               sum(t.jobs) FILTER (WHERE t.status = 'canceled') AS canceled_total
          FROM pgq.metrics_totals t
         WHERE metrics.entrypoints IS NULL OR t.entrypoint = ANY (metrics.entrypoints)
         GROUP BY t.entrypoint
    )
    SELECT e.entrypoint,
           e.paused_at IS NOT NULL,
           q.due + q.delayed,
           q.due,
           q.delayed,
           coalesce(r.running, 0),
           coalesce(r.stale, 0),
           coalesce(greatest(0, date_part('epoch', v_now - q.oldest_due)), 0),
           coalesce(w.successful_1m, 0)::bigint,
           coalesce(w.failed_1m, 0)::bigint,
           coalesce(w.canceled_1m, 0)::bigint,
           coalesce(w.successful_5m, 0)::bigint,
           coalesce(w.failed_5m, 0)::bigint,
           coalesce(w.canceled_5m, 0)::bigint,
           coalesce(w.successful_15m, 0)::bigint,
           coalesce(w.failed_15m, 0)::bigint,
           coalesce(w.canceled_15m, 0)::bigint,
           (coalesce(w.successful_1m, 0) + coalesce(w.failed_1m, 0) + coalesce(w.canceled_1m, 0))::float8 / 60,
           (coalesce(w.successful_5m, 0) + coalesce(w.failed_5m, 0) + coalesce(w.canceled_5m, 0))::float8 / 300,
           (coalesce(w.successful_15m, 0) + coalesce(w.failed_15m, 0) + coalesce(w.canceled_15m, 0))::float8 / 900,
           wh.q[1], wh.q[2], wh.q[3],
           rh.q[1], rh.q[2], rh.q[3],
           coalesce(t.successful_total, 0)::bigint,
           coalesce(t.failed_total, 0)::bigint,
           coalesce(t.canceled_total, 0)::bigint,
           (SELECT s.caught_up FROM pgq.metrics_state s),
           coalesce(sv.active, false) OR coalesce(r.running - r.stale, 0) > 0,
           CASE WHEN coalesce(sv.active, false) OR coalesce(r.running - r.stale, 0) > 0
                     OR q.oldest_due IS NULL THEN NULL
                ELSE greatest(0, date_part('epoch', v_now - greatest(q.oldest_due, sv.last_seen_at))) END,
           CASE WHEN f.used IS NOT NULL THEN greatest(e.rate_limit - f.used, 0)::bigint END,
           CASE WHEN f.used >= e.rate_limit
                THEN greatest(0, date_part('epoch', pgq._rate_due(e.entrypoint, e.rate_limit, e.rate_period, false, v_now) - v_now)) END,
           f.used_up,
           CASE WHEN e.key_concurrency_limit IS NOT NULL THEN coalesce(cardinality(f.keys), 0)::bigint END,
           CASE WHEN e.key_concurrency_limit IS NOT NULL
                THEN (SELECT count(*) FROM (SELECT 1 FROM pgq.jobs j
                                             WHERE hashtext(j.entrypoint) = hashtext(e.entrypoint)  -- (jobs_key_idx)
                                               AND j.entrypoint = e.entrypoint AND j.status = 'queued'
                                               AND j.group_key IS NOT NULL
                                               AND hashtextextended(j.group_key, 0) = ANY (f.keys)
                                             LIMIT v_cap) AS x) END
      FROM eps e
      JOIN live q ON q.entrypoint = e.entrypoint
      LEFT JOIN running r ON r.entrypoint = e.entrypoint
      LEFT JOIN windows w ON w.entrypoint = e.entrypoint
      LEFT JOIN wait_hist wh ON wh.entrypoint = e.entrypoint
      LEFT JOIN run_hist rh ON rh.entrypoint = e.entrypoint
      LEFT JOIN totals t ON t.entrypoint = e.entrypoint
      LEFT JOIN servers sv ON sv.entrypoint = e.entrypoint
      LEFT JOIN flow f ON f.entrypoint = e.entrypoint
     ORDER BY e.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.metrics(text[], interval, timestamptz) IS
    'Per entrypoint: paused, queued/due/delayed (due and delayed exact up to 10,000 each), running, stale, lag_s; finished per status over 1/5/15 min and throughput (10-second buckets); wait/run p50/p95/p99 over percentile_window; totals; served (a live worker serves it) and unserved_s; what waits on a rate or key limit. Advances the rollup first (bounded).';

-- sql/functions/metrics_series.sql
-- pgq.metrics_series(entrypoints, combined, at)
-- Contract: the last hour minute by minute, for charts: one row per series and minute, 60
--   minutes ending with the minute `at` falls in (that last one is in progress: partial), in
--   order. A series is one entrypoint (every one in pgq.entrypoints, or those given), or with
--   combined => true one series (entrypoint NULL) over all of them. Per minute:
--   successful, failed (dead), canceled: jobs that finished in it (from the rollup's 10-second
--   buckets, as pgq.metrics counts them; 0 without any); due and running: the backlog sample
--   pgq.rollup_metrics took in that minute (summed over the series' entrypoints; NULL when no
--   sample was taken: nothing called the rollup that minute); wait_p95_s and run_p95_s: the
--   95th percentile of the wait and run times of the jobs finished in it (the rollup's
--   histograms merged, within about 19 %; NULL without samples). It reads, it does not advance
--   the rollup: call pgq.metrics first for figures up to the last 10 seconds. Cost: at most
--   360 buckets and 60 samples per entrypoint (one hour is all the rollup keeps).
--   at NULL means now().
-- Locking: none (reads).
-- Errors: PQ009 combined NULL, at out of range, a multi-dimensional entrypoints array.
CREATE OR REPLACE FUNCTION pgq.metrics_series(
    entrypoints  text[]      DEFAULT NULL,
    combined     boolean     DEFAULT false,
    at           timestamptz DEFAULT NULL
)
RETURNS TABLE (
    entrypoint  text,
    minute      timestamptz,
    successful  bigint,
    failed      bigint,
    canceled    bigint,
    due         bigint,
    running     bigint,
    wait_p95_s  float8,
    run_p95_s   float8
)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET jit = off
SET max_parallel_workers_per_gather = 0
AS $$
#variable_conflict use_column
DECLARE
    v_cur   timestamptz := date_bin(interval '1 minute', coalesce(pgq._check_time(metrics_series.at, 'at'), now()),
                                    timestamptz '2000-01-01 00:00:00+00');
    v_first timestamptz;
BEGIN
    PERFORM pgq._check_dims(metrics_series.entrypoints, 'entrypoints');
    IF metrics_series.combined IS NULL THEN
        RAISE EXCEPTION 'combined must be true or false, got NULL' USING ERRCODE = 'PQ009';
    END IF;
    v_first := v_cur - interval '59 minutes';
    RETURN QUERY
    WITH eps AS (
        -- the series key: the entrypoint, or '' for the combined series (no name is empty)
        SELECT e.entrypoint, CASE WHEN metrics_series.combined THEN '' ELSE e.entrypoint END AS k
          FROM pgq.entrypoints e
         WHERE metrics_series.entrypoints IS NULL OR e.entrypoint = ANY (metrics_series.entrypoints)
    ), b AS (
        SELECT e.k, date_bin(interval '1 minute', m.bucket, timestamptz '2000-01-01 00:00:00+00') AS minute,
               m.successful, m.failed, m.canceled, m.wait_bins, m.wait_counts, m.run_bins, m.run_counts
          FROM eps e
          JOIN pgq.metrics_buckets m ON m.entrypoint = e.entrypoint
         WHERE m.bucket >= v_first AND m.bucket < v_cur + interval '1 minute'
    ), counts AS (
        SELECT b.k, b.minute, sum(b.successful) AS successful, sum(b.failed) AS failed,
               sum(b.canceled) AS canceled
          FROM b
         GROUP BY b.k, b.minute
    ), wait_q AS (
        SELECT h.k, h.minute,
               (pgq._hist_quantiles(array_agg(h.bin ORDER BY h.bin), array_agg(h.n ORDER BY h.bin), '{0.95}'))[1] AS q
          FROM (SELECT b.k, b.minute, u.bin, sum(u.n)::bigint AS n
                  FROM b, unnest(b.wait_bins, b.wait_counts) AS u(bin, n)
                 GROUP BY b.k, b.minute, u.bin) AS h
         GROUP BY h.k, h.minute
    ), run_q AS (
        SELECT h.k, h.minute,
               (pgq._hist_quantiles(array_agg(h.bin ORDER BY h.bin), array_agg(h.n ORDER BY h.bin), '{0.95}'))[1] AS q
          FROM (SELECT b.k, b.minute, u.bin, sum(u.n)::bigint AS n
                  FROM b, unnest(b.run_bins, b.run_counts) AS u(bin, n)
                 GROUP BY b.k, b.minute, u.bin) AS h
         GROUP BY h.k, h.minute
    ), backlog AS (
        SELECT e.k, l.minute, sum(l.due)::bigint AS due, sum(l.running)::bigint AS running
          FROM eps e
          JOIN pgq.metrics_backlog l ON l.entrypoint = e.entrypoint
         WHERE l.minute >= v_first AND l.minute <= v_cur
         GROUP BY e.k, l.minute
    )
    SELECT nullif(s.k, ''), g.minute,
           coalesce(c.successful, 0)::bigint, coalesce(c.failed, 0)::bigint, coalesce(c.canceled, 0)::bigint,
           l.due, l.running, w.q, r.q
      FROM (SELECT DISTINCT e.k FROM eps e) AS s
     CROSS JOIN generate_series(v_first, v_cur, interval '1 minute') AS g(minute)
      LEFT JOIN counts c ON c.k = s.k AND c.minute = g.minute
      LEFT JOIN wait_q w ON w.k = s.k AND w.minute = g.minute
      LEFT JOIN run_q r ON r.k = s.k AND r.minute = g.minute
      LEFT JOIN backlog l ON l.k = s.k AND l.minute = g.minute
     ORDER BY s.k, g.minute;
END
$$;
COMMENT ON FUNCTION pgq.metrics_series(text[], boolean, timestamptz) IS
    'The last hour per minute, for charts: finished per status, the due and running backlog sampled each minute, wait and run p95; per entrypoint, or combined. Reads only.';

-- sql/functions/next_run_at.sql
-- pgq.next_run_at(entrypoints, at)
-- Contract: the earliest run_at after `at` among waiting (scheduled) jobs of the given entrypoints, or NULL
--   when none is waiting (nor any rate limit, below). An idle worker sleeps until then (or until a notification) instead of
--   polling at a fixed interval. Jobs already due are not considered: claim takes those.
--   For an entrypoint with a rate limit (pgq.configure rate_limit) whose window holds starts,
--   the time its budget next grows counts like a due time (pgq._rate_due): a worker whose claim
--   came back short because of the limit sleeps until the next start is allowed.
--   at NULL means now().
--   Reads jobs_scheduled through jobs_scheduled_idx, one probe per entrypoint.
-- Locking: none (reads only).
-- Errors: PQ001 NULL or empty entrypoints.
CREATE OR REPLACE FUNCTION pgq.next_run_at(entrypoints text[], at timestamptz DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(next_run_at.entrypoints, 'entrypoints');
    PERFORM pgq._check_time(next_run_at.at, 'at');
    IF coalesce(cardinality(next_run_at.entrypoints), 0) = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(next_run_at.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    -- One probe of jobs_scheduled_idx per entrypoint (slot 4 is jobs_scheduled alone: the ring's
    -- partitions are not visited), instead of reading every scheduled job of these entrypoints.
    RETURN least((SELECT min(f.run_at)
                    FROM unnest(next_run_at.entrypoints) AS e(name)
                   CROSS JOIN LATERAL (
                         SELECT j.run_at
                           FROM pgq.jobs j
                          WHERE j.slot = 4
                            AND j.entrypoint = e.name
                            AND j.status = 'scheduled' AND j.slot = 4
                            AND j.run_at > coalesce(next_run_at.at, now())
                          ORDER BY j.run_at
                          LIMIT 1) AS f),
                 -- Rate-limited entrypoints: when their budget grows again.
                 (SELECT min(pgq._rate_due(c.entrypoint, c.rate_limit, c.rate_period, c.rate_per_key,
                                           coalesce(next_run_at.at, now())))
                    FROM pgq.entrypoints c
                   WHERE c.entrypoint = ANY (next_run_at.entrypoints)
                     AND c.rate_limit IS NOT NULL
                     AND c.paused_at IS NULL));
END
$$;
COMMENT ON FUNCTION pgq.next_run_at(text[], timestamptz) IS
    'Earliest run_at after at among scheduled jobs of these entrypoints, or when a rate limit''s budget next grows (NULL if neither): how long an idle worker may sleep.';

-- sql/functions/next_schedule_at.sql
-- pgq.next_schedule_at(worker_id, at)
-- Contract: when a scheduler should next look: the earliest next_run_at of idle schedules (or
--   their retry_at, when pgq.release_schedule set a later one), or
--   the moment a firing schedule's claimer would count as silent (heartbeat + fire_timeout).
--   With a worker_id, only the schedules that worker may claim (pgq._schedule_served, as
--   pgq.claim_schedules decides at `at`): a due schedule that nobody serves does not make a
--   registered scheduler wake at once, again and again. NULL when there are none (worker_id
--   NULL: every schedule). at NULL means now().
-- Locking: none.
-- Errors: PQ009 at out of range.
CREATE OR REPLACE FUNCTION pgq.next_schedule_at(
    worker_id  uuid        DEFAULT NULL,
    at         timestamptz DEFAULT NULL
)
RETURNS timestamptz
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT min(CASE WHEN s.state = 'idle' THEN greatest(s.next_run_at, s.retry_at) ELSE s.heartbeat_at + s.fire_timeout END)
      FROM pgq.schedules s
     WHERE next_schedule_at.worker_id IS NULL
        OR pgq._schedule_served(s.entrypoint, next_schedule_at.worker_id,
                                coalesce(pgq._check_time(next_schedule_at.at, 'at'), now()));
$$;
COMMENT ON FUNCTION pgq.next_schedule_at(uuid, timestamptz) IS
    'Earliest time a schedule becomes due (or a silent claimer may be taken over); with a worker_id, only the schedules it may claim (their entrypoint served); NULL without any.';

-- sql/functions/parent_results.sql
-- pgq.parent_results(job_id)
-- Contract: the jobs job_id depends on (pgq.job_deps), each with its final status and result
--   (what a successful handler returned, details -> 'result' of its history row, as
--   pgq.job_results reads it; NULL while it has not ended, when it did not succeed, or when it
--   returned nothing), ordered by parent id: what a fan-in job merges, in one
--   call.
-- Locking: none (reads only).
-- Errors: PQ009 NULL job_id.
CREATE OR REPLACE FUNCTION pgq.parent_results(job_id bigint)
RETURNS TABLE (parent_id bigint, status text, result jsonb)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    IF parent_results.job_id IS NULL THEN
        RAISE EXCEPTION 'job_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    RETURN QUERY
    SELECT d.parent_id, coalesce(h.status, j.status),
           CASE WHEN h.status = 'successful' AND jsonb_typeof(h.details) = 'object' THEN h.details -> 'result' END
      FROM pgq.job_deps d
      LEFT JOIN pgq.job_history h ON h.id = d.parent_id
      LEFT JOIN pgq.jobs j ON j.id = d.parent_id
     WHERE d.child_id = parent_results.job_id
     ORDER BY d.parent_id;
END
$$;
COMMENT ON FUNCTION pgq.parent_results(bigint) IS
    'The jobs job_id depends on, with their final status and result (details.result): what a fan-in job merges.';

-- sql/functions/pause.sql
-- pgq.pause(entrypoints, at)
-- Contract: pauses entrypoints for every worker: from the next claim on, no job of a paused
--   entrypoint starts running, neither a queued one nor a stale re-claim (the stale job stays
--   running-and-stale, visible as stale, until the entrypoint is resumed). Enqueueing goes on:
--   jobs pile up and run after pgq.resume. Jobs already running finish normally. The rest of
--   the policy (concurrency_limit, attempts, backoff, timeouts) is not touched, so pgq.resume
--   restores exactly what was configured. An entrypoint never seen before gets its policy row
--   (with the defaults), so it can be paused before its first job. Pausing a paused entrypoint
--   keeps its paused_at. Records paused_at = at and paused_by = the session user. Returns the
--   policy rows, ordered by entrypoint. at NULL means now().
-- Locking: the entrypoints' policy rows until commit (waits for a claim of a limited
--   entrypoint that holds one at this instant).
-- Errors: PQ001 NULL or empty array, or a bad entrypoint name.
CREATE OR REPLACE FUNCTION pgq.pause(entrypoints text[], at timestamptz DEFAULT NULL)
RETURNS SETOF pgq.entrypoints
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_name text;
BEGIN
    PERFORM pgq._check_dims(pause.entrypoints, 'entrypoints');
    PERFORM pgq._check_time(pause.at, 'at');
    IF coalesce(cardinality(pause.entrypoints), 0) = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(pause.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    FOREACH v_name IN ARRAY pause.entrypoints LOOP
        PERFORM pgq._check_name(v_name, 'entrypoint', 'PQ001');
    END LOOP;

    INSERT INTO pgq.entrypoints (entrypoint)
    SELECT DISTINCT u.e FROM unnest(pause.entrypoints) AS u(e) ORDER BY u.e
        ON CONFLICT (entrypoint) DO NOTHING;
    RETURN QUERY
    WITH paused AS (
        UPDATE pgq.entrypoints e
           SET paused_at = coalesce(e.paused_at, coalesce(pause.at, now())),
               paused_by = CASE WHEN e.paused_at IS NULL THEN session_user::text ELSE e.paused_by END,
               updated_at = now()
         WHERE e.entrypoint = ANY (pause.entrypoints)
        RETURNING e.*
    )
    SELECT p.* FROM paused p ORDER BY p.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.pause(text[], timestamptz) IS
    'Pauses entrypoints for every worker (no queued job or stale re-claim starts) without touching their policy; enqueueing goes on. Returns the policy rows.';

-- sql/functions/prune_entrypoints.sql
-- pgq.prune_entrypoints(older_than, lock_wait, at)
-- Contract: removes the rows of pgq.entrypoints nobody needs: no live job, no schedule naming
--   the entrypoint, not paused, the default policy (never configured, or reset), and not
--   changed for older_than. Such a row carries nothing but the defaults: the next enqueue of
--   that entrypoint creates it again, and history rows keep their entrypoint name. Its lanes
--   (pgq.lanes) go with it and their cursor sequences are dropped (the next enqueue creates
--   them again, starting from nothing settled). Returns the
--   number of rows removed, or NULL when it could not take its lock within lock_wait (0: 1 ms)
--   and removed nothing. at NULL means now().
-- Locking: SHARE ROW EXCLUSIVE on pgq.entrypoints until commit, waited for at most lock_wait:
--   it waits for transactions that are enqueueing right now (they hold ROW EXCLUSIVE from the
--   insert trigger until they commit), and enqueues and configure calls wait for it, so a job
--   can never be added for an entrypoint row being removed. Claims are not blocked. ACCESS
--   EXCLUSIVE on the dropped cursor sequences until commit.
-- Errors: PQ008 older_than outside 0..36500 days, lock_wait outside 0..1 minute; PQ009 at out
--   of range.
CREATE OR REPLACE FUNCTION pgq.prune_entrypoints(
    older_than  interval    DEFAULT interval '1 day',
    lock_wait   interval    DEFAULT interval '100 milliseconds',
    at          timestamptz DEFAULT NULL
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now      timestamptz := coalesce(pgq._check_time(prune_entrypoints.at, 'at'), now());
    v_old_wait text := current_setting('lock_timeout');
    v_gone     text[];
    v_seq      text;
BEGIN
    IF prune_entrypoints.older_than IS NULL OR prune_entrypoints.lock_wait IS NULL THEN
        RAISE EXCEPTION 'older_than and lock_wait must not be NULL' USING ERRCODE = 'PQ008';
    END IF;
    PERFORM pgq._check_interval(prune_entrypoints.older_than, 'older_than', interval '0', interval '36500 days');
    PERFORM pgq._check_interval(prune_entrypoints.lock_wait, 'lock_wait', interval '0', interval '1 minute');
    BEGIN
        PERFORM set_config('lock_timeout',
            greatest(1, ceil(extract(epoch FROM prune_entrypoints.lock_wait) * 1000))::bigint::text, true);
        LOCK TABLE pgq.entrypoints IN SHARE ROW EXCLUSIVE MODE;
        PERFORM set_config('lock_timeout', v_old_wait, true);
    EXCEPTION WHEN lock_not_available THEN
        RETURN NULL;
    END;
    WITH gone AS (
    DELETE FROM pgq.entrypoints e
     WHERE e.updated_at < v_now - prune_entrypoints.older_than
       AND e.paused_at IS NULL
       -- The column defaults of pgq.entrypoints (0001): nothing was configured.
       AND e.concurrency_limit IS NULL
       AND e.max_attempts = 5
       AND e.backoff_base = interval '1 second'
       AND e.backoff_max = interval '5 minutes'
       AND e.heartbeat_timeout = interval '30 seconds'
       AND e.dedupe_period = interval '0'
       AND e.key_concurrency_limit IS NULL
       AND NOT EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.entrypoint = e.entrypoint)
       AND NOT EXISTS (SELECT 1 FROM pgq.schedules s WHERE s.entrypoint = e.entrypoint)
    RETURNING e.entrypoint
    )
    SELECT array_agg(d.entrypoint) INTO v_gone FROM gone d;
    IF v_gone IS NULL THEN
        RETURN 0;
    END IF;
    -- Their lanes go too, with the cursor and turn sequences (the next enqueue creates them again).
    FOR v_seq IN
        WITH lanes AS (DELETE FROM pgq.lanes l WHERE l.entrypoint = ANY (v_gone) RETURNING l.cursor_seq, l.turn_seq)
        SELECT format('%I.%I', n.nspname, c.relname)
          FROM lanes l
          CROSS JOIN LATERAL (VALUES (l.cursor_seq), (l.turn_seq)) AS s(seq)
          JOIN pg_class c ON c.oid = s.seq
          JOIN pg_namespace n ON n.oid = c.relnamespace
    LOOP
        EXECUTE 'DROP SEQUENCE ' || v_seq;
    END LOOP;
    RETURN cardinality(v_gone);
END
$$;
COMMENT ON FUNCTION pgq.prune_entrypoints(interval, interval, timestamptz) IS
    'Removes entrypoint rows with no live job, no schedule, the default policy, not paused and unchanged for older_than; returns how many (NULL: lock not taken within lock_wait).';

-- sql/functions/prune_history.sql
-- pgq.prune_history(older_than, at, batch)
-- Contract: deletes up to `batch` history rows that finished before at - older_than and returns
--   how many it deleted; call it until it returns less than `batch` (the worker's maintenance
--   step does). Keeps the history table bounded. at NULL means now(). A workflow's edges
--   (pgq.job_deps) are deleted with the last of its jobs (none live, none left in history):
--   until then pgq.workflow shows the pruned ones as 'pruned'.
-- Locking: row locks on the deleted history rows (SKIP LOCKED: two pruners never wait) and on
--   the edges of the workflows that ended with them.
-- Errors: PQ008 older_than negative or NULL, batch outside 1..100000.
CREATE OR REPLACE FUNCTION pgq.prune_history(
    older_than  interval,
    at          timestamptz DEFAULT NULL,
    batch       int         DEFAULT 10000
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_n    bigint;
    v_gone bigint[];
BEGIN
    IF prune_history.older_than IS NULL OR prune_history.older_than < interval '0' THEN
        RAISE EXCEPTION 'older_than must be a non-negative interval, got %', coalesce(prune_history.older_than::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    PERFORM pgq._check_interval(prune_history.older_than, 'older_than', interval '0', interval '36500 days');
    PERFORM pgq._check_time(prune_history.at, 'at');
    IF prune_history.batch IS NULL OR prune_history.batch NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION 'batch must be between 1 and 100000, got %', coalesce(prune_history.batch::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    WITH gone AS (
        DELETE FROM pgq.job_history h
         WHERE h.id IN (SELECT o.id
                          FROM pgq.job_history o
                         WHERE o.finished_at < coalesce(prune_history.at, now()) - prune_history.older_than
                         ORDER BY o.finished_at
                         LIMIT prune_history.batch
                           FOR UPDATE SKIP LOCKED)
        RETURNING h.id
    )
    SELECT count(*), array_agg(g.id) INTO v_n, v_gone FROM gone g;
    -- Workflows: a workflow's edges go with the last of its jobs.
    IF v_n > 0 AND pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL THEN
        DELETE FROM pgq.job_deps d
         WHERE d.workflow_id = ANY (ARRAY(
                   SELECT w.workflow_id
                     FROM (SELECT e.workflow_id FROM pgq.job_deps e WHERE e.child_id = ANY (v_gone)
                           UNION
                           SELECT e.workflow_id FROM pgq.job_deps e WHERE e.parent_id = ANY (v_gone)) w
                    WHERE NOT EXISTS (
                              SELECT 1 FROM pgq.job_deps e
                               WHERE e.workflow_id = w.workflow_id
                                 AND (EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.id = e.child_id)
                                      OR EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.id = e.parent_id)
                                      OR EXISTS (SELECT 1 FROM pgq.job_history o WHERE o.id = e.child_id)
                                      OR EXISTS (SELECT 1 FROM pgq.job_history o WHERE o.id = e.parent_id)))));
    END IF;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq.prune_history(interval, timestamptz, int) IS
    'Deletes up to batch history rows finished more than older_than ago; returns how many. Call until it returns less than batch.';

-- sql/functions/prune_workers.sql
-- pgq.prune_workers(at)
-- Contract: the maintenance step for the workers registry: deletes the rows of workers that
--   have been gone (silent past their timeout) for more than 15 minutes and hold no running
--   job; a gone worker that still holds jobs stays visible until they are re-claimed or
--   finished. Returns how many rows it deleted. Cheap: the registry has one row per worker.
--   at NULL means now().
-- Locking: row locks on the deleted rows (SKIP LOCKED: a worker registering or heartbeating
--   right now is left alone).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq.prune_workers(at timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_n bigint;
BEGIN
    PERFORM pgq._check_time(prune_workers.at, 'at');
    DELETE FROM pgq.workers w
     WHERE w.worker_id IN (
               SELECT g.worker_id
                 FROM pgq.workers g
                WHERE g.last_seen_at < coalesce(prune_workers.at, now()) - g.timeout - interval '15 minutes'
                  AND NOT EXISTS (SELECT 1 FROM pgq.jobs j
                                   WHERE j.worker_id = g.worker_id AND j.status = 'running')
                  FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq.prune_workers(timestamptz) IS
    'Deletes registry rows of workers gone for over 15 minutes that hold no running job; returns how many.';

-- sql/functions/rate_stats.sql
-- pgq.rate_stats(entrypoints, at)
-- Contract: the state of the rate limits of the given entrypoints (NULL: every entrypoint with a
--   rate limit), for dashboards, the CLI and the exporter: per rate-limited entrypoint, its
--   rate_limit, rate_period and rate_per_key; started, the starts (claimed jobs and tokens
--   taken) in the window (later than at - rate_period); remaining, what the window has
--   left (the whole-entrypoint budget; NULL with rate_per_key); budgets, the budgets that have
--   starts in the window (with rate_per_key: keys, the jobs without a key counting as one);
--   budgets_used_up, those with no room left; next_start_at, when the budget next grows
--   (pgq._rate_due; NULL when nothing started within the period). at NULL means now().
--   Read-only; reads the window's starts once per entrypoint (at most rate_limit per budget).
-- Locking: none (reads only).
-- Errors: PQ009 a multi-dimensional entrypoints array, at out of range.
CREATE OR REPLACE FUNCTION pgq.rate_stats(entrypoints text[] DEFAULT NULL, at timestamptz DEFAULT NULL)
RETURNS TABLE (entrypoint text, rate_limit int, rate_period interval, rate_per_key boolean,
               started bigint, remaining bigint, budgets bigint, budgets_used_up bigint,
               next_start_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(pgq._check_time(rate_stats.at, 'at'), now());
BEGIN
    PERFORM pgq._check_dims(rate_stats.entrypoints, 'entrypoints');
    RETURN QUERY
    SELECT e.entrypoint, e.rate_limit, e.rate_period, e.rate_per_key,
           coalesce(sum(b.n), 0)::bigint,
           CASE WHEN NOT e.rate_per_key THEN greatest(e.rate_limit - coalesce(sum(b.n), 0), 0)::bigint END,
           count(b.n),
           count(b.n) FILTER (WHERE b.n >= e.rate_limit),
           pgq._rate_due(e.entrypoint, e.rate_limit, e.rate_period, e.rate_per_key, v_now)
      FROM pgq.entrypoints e
      LEFT JOIN LATERAL (
           SELECT s.key_hash, sum(s.tokens) AS n
             FROM pgq.rate_starts s
            WHERE s.entrypoint = e.entrypoint
              AND s.started_at > v_now - e.rate_period
            GROUP BY s.key_hash) b ON true
     WHERE e.rate_limit IS NOT NULL
       AND (rate_stats.entrypoints IS NULL OR e.entrypoint = ANY (rate_stats.entrypoints))
     GROUP BY e.entrypoint, e.rate_limit, e.rate_period, e.rate_per_key
     ORDER BY e.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.rate_stats(text[], timestamptz) IS
    'The rate limits of these entrypoints (NULL: all): starts in the window, what is left, budgets (keys) with starts and those used up, and when the budget next grows.';

-- sql/functions/rate_waits.sql
-- pgq.rate_waits(entrypoints, at)
-- Contract: among the given entrypoints, those whose rate limit covers the whole entrypoint
--   (rate_per_key false) and whose budget is used up at `at`, with next_start_at, when one more
--   start fits (pgq._rate_due). No job of such an entrypoint can start before then, so a worker
--   may ignore its enqueue notifications until that time (a claim would find nothing). An
--   entrypoint with a rate limit per key is never listed (a job of a new key may start at
--   once). at NULL means now(). One probe of the policy and two of the window's starts
--   (pgq._rate_window) per rate-limited entrypoint.
-- Locking: none (reads only).
-- Errors: PQ001 NULL or empty entrypoints; PQ009 a multi-dimensional array, at out of range.
CREATE OR REPLACE FUNCTION pgq.rate_waits(entrypoints text[], at timestamptz DEFAULT NULL)
RETURNS TABLE (entrypoint text, next_start_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    c_whole constant bigint := -9223372036854775808;
    v_now   timestamptz := coalesce(pgq._check_time(rate_waits.at, 'at'), now());
BEGIN
    PERFORM pgq._check_dims(rate_waits.entrypoints, 'entrypoints');
    IF coalesce(cardinality(rate_waits.entrypoints), 0) = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(rate_waits.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    RETURN QUERY
    SELECT e.entrypoint, pgq._rate_due(e.entrypoint, e.rate_limit, e.rate_period, false, v_now)
      FROM pgq.entrypoints e
     WHERE e.entrypoint = ANY (rate_waits.entrypoints)
       AND e.rate_limit IS NOT NULL
       AND NOT e.rate_per_key
       AND coalesce((SELECT w.used
                       FROM pgq._rate_window(e.entrypoint, c_whole, v_now - e.rate_period) AS w), 0)
           >= e.rate_limit
     ORDER BY e.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.rate_waits(text[], timestamptz) IS
    'The entrypoints among these whose whole-entrypoint rate limit is used up, and when one more start fits: a worker ignores their enqueue notifications until then.';

-- sql/functions/register_worker.sql
-- pgq.register_worker(worker_id, entrypoints, host, pid, application_name, version, metadata,
--                     timeout, at)
-- Contract: a worker announces itself in the workers registry (pgq.workers), in any language:
--   what it runs (entrypoints), where (host, pid, application_name: the session's
--   application_name when not given; client_addr: the address of this connection), its version
--   and free-form metadata (a JSON object: concurrency, batch size, whether it runs a
--   scheduler, ...). Calling it again (after a reconnect, or with new entrypoints) replaces
--   those fields and keeps started_at, the time of the first registration. The worker then
--   stays fresh through pgq.heartbeat, which it calls anyway (also with empty arrays when it
--   holds no job); it counts as gone once silent for longer than timeout (NULL: the stored
--   value, 30 seconds for a new worker). Returns started_at, last_seen_at, gone_after (the
--   timeout) and heartbeat_interval: how often to call pgq.heartbeat at the least (a third of
--   the timeout). at NULL means now().
-- Locking: the worker's registry row until commit.
-- Errors: PQ009 NULL worker_id, host/application_name/version too long, a bad pid, metadata
--   not a JSON object or over 8192 bytes; PQ001 a bad entrypoint name (or more than 1000);
--   PQ008 timeout outside 1 second .. 1 day.
CREATE OR REPLACE FUNCTION pgq.register_worker(
    worker_id         uuid,
    entrypoints       text[]      DEFAULT NULL,
    host              text        DEFAULT NULL,
    pid               int         DEFAULT NULL,
    application_name  text        DEFAULT NULL,
    version           text        DEFAULT NULL,
    metadata          jsonb       DEFAULT NULL,
    timeout           interval    DEFAULT NULL,
    at                timestamptz DEFAULT NULL
)
RETURNS TABLE (started_at timestamptz, last_seen_at timestamptz, gone_after interval,
               heartbeat_interval interval)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now  timestamptz := coalesce(pgq._check_time(register_worker.at, 'at'), now());
    v_name text;
BEGIN
    PERFORM pgq._check_dims(register_worker.entrypoints, 'entrypoints');
    IF register_worker.worker_id IS NULL THEN
        RAISE EXCEPTION 'worker_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF cardinality(register_worker.entrypoints) > 1000 THEN
        RAISE EXCEPTION 'entrypoints has % elements, at most 1000 are allowed', cardinality(register_worker.entrypoints)
            USING ERRCODE = 'PQ001';
    END IF;
    FOREACH v_name IN ARRAY coalesce(register_worker.entrypoints, '{}') LOOP
        PERFORM pgq._check_name(v_name, 'entrypoint', 'PQ001');
    END LOOP;
    IF octet_length(register_worker.host) > 255 THEN
        RAISE EXCEPTION 'host must be at most 255 bytes, got %', octet_length(register_worker.host) USING ERRCODE = 'PQ009';
    END IF;
    IF octet_length(register_worker.application_name) > 255 THEN
        RAISE EXCEPTION 'application_name must be at most 255 bytes, got %', octet_length(register_worker.application_name)
            USING ERRCODE = 'PQ009';
    END IF;
    IF octet_length(register_worker.version) > 255 THEN
        RAISE EXCEPTION 'version must be at most 255 bytes, got %', octet_length(register_worker.version) USING ERRCODE = 'PQ009';
    END IF;
    IF register_worker.pid <= 0 THEN
        RAISE EXCEPTION 'pid must be positive, got %', register_worker.pid USING ERRCODE = 'PQ009';
    END IF;
    IF register_worker.metadata IS NOT NULL
       AND (jsonb_typeof(register_worker.metadata) <> 'object' OR pg_column_size(register_worker.metadata) > 8192) THEN
        RAISE EXCEPTION 'metadata must be a JSON object of at most 8192 bytes, got % of % bytes',
            jsonb_typeof(register_worker.metadata), pg_column_size(register_worker.metadata)
            USING ERRCODE = 'PQ009';
    END IF;
    IF register_worker.timeout NOT BETWEEN interval '1 second' AND interval '1 day' THEN
        RAISE EXCEPTION 'timeout must be between 1 second and 1 day, got %', register_worker.timeout
            USING ERRCODE = 'PQ008';
    END IF;

    INSERT INTO pgq.workers (worker_id, started_at, last_seen_at)
    VALUES (register_worker.worker_id, v_now, v_now)
        ON CONFLICT (worker_id) DO NOTHING;
    RETURN QUERY
    UPDATE pgq.workers w
       SET host = register_worker.host,
           pid = register_worker.pid,
           application_name = coalesce(register_worker.application_name,
                                       nullif(current_setting('application_name'), '')),
           entrypoints = coalesce(register_worker.entrypoints, '{}'),
           version = register_worker.version,
           metadata = coalesce(register_worker.metadata, '{}'),
           client_addr = inet_client_addr(),
           timeout = coalesce(register_worker.timeout, w.timeout),
           last_seen_at = v_now
     WHERE w.worker_id = register_worker.worker_id
    RETURNING w.started_at, w.last_seen_at, w.timeout, w.timeout / 3;
END
$$;
COMMENT ON FUNCTION pgq.register_worker(uuid, text[], text, int, text, text, jsonb, interval, timestamptz) IS
    'Announces a worker in the registry (pgq.workers); idempotent, keeps started_at. pgq.heartbeat keeps it fresh; returns started_at, last_seen_at, gone_after (the timeout) and heartbeat_interval (timeout / 3).';

-- sql/functions/release.sql
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

-- sql/functions/release_schedule.sql
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

-- sql/functions/requeue.sql
-- pgq.requeue(ids, at)
-- Contract: puts finished jobs that failed (dead) or were canceled back in the queue: each
--   leaves pgq.job_history and becomes a queued job again with the same id, payload, headers,
--   priority and dedupe key, attempt 0, due at `at`, and its error list kept. Due now: queued
--   with a new ready number (the back of its lane); due later: scheduled. Successful jobs
--   and unknown ids are ignored. Returns the ids requeued. at NULL means now(). A requeued job
--   whose failure canceled jobs waiting for it (workflows) brings them back as waiting
--   (pgq._rearm_deps): they run again once it (and their other parents) succeeded. A job
--   requeued in the same call as a parent whose failure canceled it is 'waiting' for that
--   parent again (not queued), as is one with a parent that has not ended (canceled while it
--   waited); requeued without its failed parent, it runs (an explicit requeue overrides a
--   failed parent).
-- Locking: row locks on the history rows (in id order, by one read that also decides which
--   jobs come back), then on the workflow edges into them (pgq.job_deps, FOR UPDATE); inserts into pgq.jobs (fires the enqueue notice) and
--   the jobs' dedupe keys into pgq.live_keys; when due, the ready-number fence
--   (pgq._ready_lock) of their entrypoints until commit.
-- Errors: PQ009 NULL ids or NULL element; PQ007 when a live job already holds the dedupe key
--   of a job to requeue or to bring back (nothing is requeued).
CREATE OR REPLACE FUNCTION pgq.requeue(ids bigint[], at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_time(requeue.at, 'at');
    RETURN QUERY SELECT unnest(pgq._requeue(requeue.ids, requeue.at, false));
END
$$;
COMMENT ON FUNCTION pgq.requeue(bigint[], timestamptz) IS
    'Puts failed (dead) or canceled jobs from history back in the queue with attempt 0; returns the ids requeued.';

-- sql/functions/requeue_history.sql
-- pgq.requeue_history(entrypoint, statuses, since, until, error, max_jobs, at)
-- Contract: bulk redrive by filter (the filter of pgq.find_history): puts up to max_jobs
--   matching finished jobs back in the queue, newest first, exactly as pgq.requeue does (same
--   id, attempt 0, due at `at`, error list kept). Only failed (default) and canceled jobs can
--   be requeued. Jobs whose dedupe key a live job holds are left out (they stay in history).
--   Returns the ids requeued; call it again until it returns fewer than max_jobs (each call
--   takes the newest rows still matching). at NULL means now().
-- Locking: as pgq.requeue.
-- Errors: PQ001 bad entrypoint; PQ009 statuses not among failed, canceled, since after until;
--   PQ002 max_jobs outside 1..10000; PQ007 only in the race where a live job takes a dedupe
--   key during the call (nothing is requeued; call again).
CREATE OR REPLACE FUNCTION pgq.requeue_history(
    entrypoint  text        DEFAULT NULL,
    statuses    text[]      DEFAULT '{failed}',
    since       timestamptz DEFAULT NULL,
    until       timestamptz DEFAULT NULL,
    error       text        DEFAULT NULL,
    max_jobs    int         DEFAULT 1000,
    at          timestamptz DEFAULT NULL
)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
BEGIN
    PERFORM pgq._check_time(requeue_history.at, 'at');
    PERFORM pgq._check_history_filter(requeue_history.entrypoint, requeue_history.statuses, requeue_history.since,
                                      requeue_history.until, requeue_history.max_jobs, 10000, 'max_jobs');
    IF 'successful' = ANY (requeue_history.statuses) THEN
        RAISE EXCEPTION 'only failed and canceled jobs can be requeued, got statuses %', requeue_history.statuses
            USING ERRCODE = 'PQ009';
    END IF;
    SELECT array_agg(h.id) INTO v_ids
      FROM pgq._find_history(requeue_history.entrypoint, requeue_history.statuses, requeue_history.since,
                             requeue_history.until, requeue_history.error, NULL, NULL,
                             requeue_history.max_jobs, true) AS h;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT r.id FROM pgq.requeue(v_ids, requeue_history.at) AS r(id);
END
$$;
COMMENT ON FUNCTION pgq.requeue_history(text, text[], timestamptz, timestamptz, text, int, timestamptz) IS
    'Bulk requeue of failed (or canceled) jobs matching entrypoint, finish time and error text, up to max_jobs per call, skipping jobs whose dedupe key is held; returns the ids requeued.';

-- sql/functions/requeue_workflow.sql
-- pgq.requeue_workflow(job_id, at)
-- Contract: requeues the failed part of the workflow job_id belongs to (pgq.workflow: its id or
--   any of its jobs): every job of it that ended failed (dead) or canceled goes back as
--   pgq.requeue does, in one call, except that a job never runs ahead of a failed parent: each
--   job with a parent that failed or has not ended waits for it ('waiting'), and the others are
--   queued (due at `at`). Returns the ids requeued. A job of it that ends failed while this
--   runs is not requeued, and neither is what depends on it (left as it is): requeue again.
--   Successful and live jobs are left as they are; a job outside any workflow is a workflow of
--   none (nothing is requeued).
-- Locking: as pgq.requeue.
-- Errors: PQ009 NULL job_id, at out of range; PQ007 when a live job holds the dedupe key of a
--   job to requeue (nothing is requeued).
CREATE OR REPLACE FUNCTION pgq.requeue_workflow(job_id bigint, at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_time(requeue_workflow.at, 'at');
    RETURN QUERY
    SELECT unnest(pgq._requeue(ARRAY(SELECT w.id FROM pgq.workflow(requeue_workflow.job_id) w
                                      WHERE w.state IN ('failed', 'canceled')
                                      ORDER BY w.id),
                               requeue_workflow.at, true)) AS id
     ORDER BY 1;
END
$$;
COMMENT ON FUNCTION pgq.requeue_workflow(bigint, timestamptz) IS
    'Requeues every job of job_id''s workflow that ended failed or canceled (as pgq.requeue, in one call: a job comes back waiting for a parent that comes back with it); returns the ids requeued.';

-- sql/functions/resume.sql
-- pgq.resume(entrypoints)
-- Contract: undoes pgq.pause: the entrypoints are claimed again at the next claim, with the
--   policy exactly as configured before the pause (pause never changed it). Sends
--   {"kind": "enqueued", "entrypoints": [...]} for the entrypoints it resumed, so idle workers
--   claim at once. Resuming an entrypoint that is not paused changes nothing. Returns the policy
--   rows of the known entrypoints among those given (unknown names are ignored), ordered by
--   entrypoint. The next claim sweeps stale jobs whatever the time of the last sweep (the
--   sweep left those of paused entrypoints running; see pgq._sweep).
-- Locking: the entrypoints' policy rows until commit.
-- Errors: PQ001 NULL or empty array, or a bad entrypoint name.
CREATE OR REPLACE FUNCTION pgq.resume(entrypoints text[])
RETURNS SETOF pgq.entrypoints
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_name    text;
    v_resumed jsonb;
BEGIN
    PERFORM pgq._check_dims(resume.entrypoints, 'entrypoints');
    IF coalesce(cardinality(resume.entrypoints), 0) = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(resume.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    FOREACH v_name IN ARRAY resume.entrypoints LOOP
        PERFORM pgq._check_name(v_name, 'entrypoint', 'PQ001');
    END LOOP;

    WITH resumed AS (
        UPDATE pgq.entrypoints e
           SET paused_at = NULL,
               paused_by = NULL,
               updated_at = now()
         WHERE e.entrypoint = ANY (resume.entrypoints)
           AND e.paused_at IS NOT NULL
        RETURNING e.entrypoint
    )
    SELECT jsonb_agg(r.entrypoint ORDER BY r.entrypoint) INTO v_resumed FROM resumed r;
    PERFORM pgq._notify('enqueued', 'entrypoints', v_resumed);

    PERFORM setval('pgq.swept_at', 0);
    RETURN QUERY
    SELECT e.* FROM pgq.entrypoints e WHERE e.entrypoint = ANY (resume.entrypoints) ORDER BY e.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.resume(text[]) IS
    'Resumes paused entrypoints with their policy as configured, and wakes idle workers; returns the policy rows of the known ones.';

-- sql/functions/rollup_metrics.sql
-- pgq.rollup_metrics(max_rows, at)
-- Contract: counts newly finished jobs into the metrics rollup, exactly once each: history rows
--   are taken in the order of the transaction that wrote them (job_history.finished_xid), from
--   the watermark in pgq.metrics_state up to the oldest transaction of this database still
--   running (every transaction below it has ended, so its rows are final), at most about max_rows rows per
--   call (never splitting one transaction's rows; a single transaction larger than max_rows is
--   taken whole). Each row adds to its entrypoint's 10-second bucket of finished_at in
--   pgq.metrics_buckets (count per final status, wait and run time sums and log-bucketed
--   histograms) and to pgq.metrics_totals; then the watermark moves past the rows taken.
--   Buckets older than one hour are deleted (at most once a minute). The first call of each
--   minute (of `at`) also samples the live backlog for the charts: one row per entrypoint in
--   pgq.metrics_backlog (due counted as pgq.metrics does, at most 10,000, and running),
--   kept one hour. Returns the rows counted,
--   caught_up (every row below the horizon is counted now; rows of transactions after the
--   oldest one still running wait for it, so a long transaction delays the figures) and busy (another call holds the rollup: this
--   one did nothing and never waited). pgq.metrics calls it before reading; a maintenance loop
--   may call it too. at NULL means now() (the clock of the one-hour retention).
--   Histogram bins of a duration d seconds: 1 for d < 0.0001 (100 us), else
--   2 + floor(4 * log2(d / 0.0001)) up to 130 (from 429,497 s on): four bins per doubling,
--   each about 19 % wide.
-- Locking: the pgq.metrics_state row (FOR UPDATE SKIP LOCKED: concurrent callers skip, so two
--   scrapers never count a row twice); row locks on the buckets and totals it writes. Reads
--   job_history through its finished_xid index.
--   Call it in READ COMMITTED (autocommit): rows written by the calling transaction itself
--   are left for a later call.
-- Errors: PQ002 max_rows NULL or outside 1..1000000; PQ010 not READ COMMITTED.
CREATE OR REPLACE FUNCTION pgq.rollup_metrics(max_rows int DEFAULT 100000, at timestamptz DEFAULT NULL)
RETURNS TABLE (rolled bigint, caught_up boolean, busy boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- The batch (up to max_rows rows) stays in memory; the grouping is hashed (a few thousand
-- groups: sorting the rows instead cost three times as much); no JIT for a bounded batch.
SET work_mem = '64MB'
SET enable_sort = off
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_now     timestamptz := coalesce(pgq._check_time(rollup_metrics.at, 'at'), now());
    v_state   pgq.metrics_state;
    v_horizon xid8;
    v_to      xid8;
    v_caught  boolean;
    v_n       bigint;
BEGIN
    IF rollup_metrics.max_rows IS NULL OR rollup_metrics.max_rows NOT BETWEEN 1 AND 1000000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 1000000, got %', coalesce(rollup_metrics.max_rows::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'pgq.rollup_metrics needs READ COMMITTED isolation, the transaction is %',
            current_setting('transaction_isolation')
            USING ERRCODE = 'PQ010';
    END IF;
    SELECT * INTO v_state FROM pgq.metrics_state s WHERE s.id FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 0::bigint, false, true;
        RETURN;
    END IF;

    -- The horizon: every transaction of this database with an xid below it has ended, so its
    -- history rows are final (committed and visible to the next statement, or never there).
    -- From a new snapshot (READ COMMITTED: taken after the lock above): its xmax, lowered to
    -- every xid still running except those of other databases and of autovacuum (they never
    -- write pgq tables), and to this transaction's own xid (its rows wait for the next call).
    WITH snap AS (
        SELECT pg_current_snapshot() AS s
    ), elsewhere AS (
        SELECT a.backend_xid AS x
          FROM pg_catalog.pg_stat_activity a
         WHERE a.backend_xid IS NOT NULL
           AND (a.backend_type = 'autovacuum worker'
                OR a.datid <> (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database()))
        UNION ALL
        SELECT p.transaction FROM pg_catalog.pg_prepared_xacts p WHERE p.database <> current_database()
    )
    SELECT least(pg_snapshot_xmax(snap.s), pg_current_xact_id(),
                 (SELECT min(r.x) FROM pg_snapshot_xip(snap.s) AS r(x)
                   WHERE NOT EXISTS (SELECT 1 FROM elsewhere e WHERE e.x = xid(r.x))))
      INTO v_horizon
      FROM snap;

    -- One pass: the next max_rows + 1 rows in xid order; if there are that many, the last
    -- transaction among them may be cut off, so this call stops before it (cut). A transaction
    -- larger than max_rows (cut = the watermark) is taken whole from the table. The rows are
    -- hashed into a few groups (entrypoint, bucket, status, wait bin, run bin); everything after
    -- works on those groups only.
    WITH batch AS MATERIALIZED (
        SELECT h.finished_xid AS x, h.entrypoint, h.status, h.finished_at,
               date_part('epoch', h.started_at - h.enqueued_at) AS wait_s,
               date_part('epoch', h.finished_at - h.started_at) AS run_s
          FROM pgq.job_history h
         WHERE h.finished_xid >= v_state.watermark AND h.finished_xid < v_horizon
         ORDER BY h.finished_xid
         LIMIT rollup_metrics.max_rows + 1
    ), cut AS (
        SELECT CASE WHEN count(*) > rollup_metrics.max_rows THEN max(b.x) END AS x FROM batch b
    ), taken AS (
        SELECT b.entrypoint, b.status, b.finished_at, b.wait_s, b.run_s
          FROM batch b, cut
         WHERE cut.x IS NULL OR b.x < cut.x
        UNION ALL
        SELECT h.entrypoint, h.status, h.finished_at, date_part('epoch', h.started_at - h.enqueued_at),
               date_part('epoch', h.finished_at - h.started_at)
          FROM cut, pgq.job_history h
         WHERE cut.x = v_state.watermark AND h.finished_xid = v_state.watermark
    ), grouped AS MATERIALIZED (
        SELECT t.entrypoint, t.status,
               date_bin(interval '10 seconds', t.finished_at, timestamptz '2000-01-01 00:00:00+00') AS bucket,
               -- 2 + floor(4 * log2(d / 0.0001)), as 4 / ln(2) * ln(d * 10000)
               CASE WHEN t.wait_s IS NULL THEN NULL WHEN t.wait_s < 0.0001 THEN 1
                    ELSE least(130, 2 + floor(5.770780163555854 * ln(t.wait_s * 10000))::int) END AS wait_bin,
               CASE WHEN t.run_s IS NULL THEN NULL WHEN t.run_s < 0.0001 THEN 1
                    ELSE least(130, 2 + floor(5.770780163555854 * ln(t.run_s * 10000))::int) END AS run_bin,
               count(*) AS n, sum(t.wait_s) AS wait_sum, sum(t.run_s) AS run_sum
          FROM taken t
         GROUP BY 1, 2, 3, 4, 5
    ), counts AS (
        SELECT g.entrypoint, g.bucket,
               coalesce(sum(g.n) FILTER (WHERE g.status = 'successful'), 0)::bigint AS successful,
               coalesce(sum(g.n) FILTER (WHERE g.status = 'failed'), 0)::bigint AS failed,
               coalesce(sum(g.n) FILTER (WHERE g.status = 'canceled'), 0)::bigint AS canceled,
               coalesce(sum(g.wait_sum), 0) AS wait_sum_s,
               coalesce(sum(g.run_sum), 0) AS run_sum_s
          FROM grouped g
         GROUP BY g.entrypoint, g.bucket
    ), wait_hist AS (
        SELECT w.entrypoint, w.bucket, array_agg(w.bin ORDER BY w.bin) AS bins, array_agg(w.n ORDER BY w.bin) AS counts
          FROM (SELECT g.entrypoint, g.bucket, g.wait_bin AS bin, sum(g.n)::bigint AS n
                  FROM grouped g WHERE g.wait_bin IS NOT NULL
                 GROUP BY 1, 2, 3) AS w
         GROUP BY w.entrypoint, w.bucket
    ), run_hist AS (
        SELECT r.entrypoint, r.bucket, array_agg(r.bin ORDER BY r.bin) AS bins, array_agg(r.n ORDER BY r.bin) AS counts
          FROM (SELECT g.entrypoint, g.bucket, g.run_bin AS bin, sum(g.n)::bigint AS n
                  FROM grouped g WHERE g.run_bin IS NOT NULL
                 GROUP BY 1, 2, 3) AS r
         GROUP BY r.entrypoint, r.bucket
    ), per_bucket AS (
        SELECT c.entrypoint, c.bucket, c.successful, c.failed, c.canceled, c.wait_sum_s, c.run_sum_s,
               coalesce(w.bins, '{}') AS wait_bins, coalesce(w.counts, '{}') AS wait_counts,
               coalesce(r.bins, '{}') AS run_bins, coalesce(r.counts, '{}') AS run_counts
          FROM counts c
          LEFT JOIN wait_hist w ON w.entrypoint = c.entrypoint AND w.bucket = c.bucket
          LEFT JOIN run_hist r ON r.entrypoint = c.entrypoint AND r.bucket = c.bucket
    ), totals AS (
        INSERT INTO pgq.metrics_totals AS t (entrypoint, status, jobs)
        SELECT g.entrypoint, g.status, sum(g.n)
          FROM grouped g
         GROUP BY g.entrypoint, g.status
         ORDER BY g.entrypoint, g.status
            ON CONFLICT (entrypoint, status) DO UPDATE SET jobs = t.jobs + excluded.jobs
    ), buckets AS (
        INSERT INTO pgq.metrics_buckets AS m (entrypoint, bucket, successful, failed, canceled, wait_sum_s,
                                              run_sum_s, wait_bins, wait_counts, run_bins, run_counts)
        SELECT p.entrypoint, p.bucket, p.successful, p.failed, p.canceled, p.wait_sum_s, p.run_sum_s,
               p.wait_bins, p.wait_counts, p.run_bins, p.run_counts
          FROM per_bucket p
         ORDER BY p.entrypoint, p.bucket
            ON CONFLICT (entrypoint, bucket) DO UPDATE
           SET successful = m.successful + excluded.successful,
               failed = m.failed + excluded.failed,
               canceled = m.canceled + excluded.canceled,
               wait_sum_s = m.wait_sum_s + excluded.wait_sum_s,
               run_sum_s = m.run_sum_s + excluded.run_sum_s,
               (wait_bins, wait_counts) = (SELECT coalesce(array_agg(u.bin ORDER BY u.bin), '{}'),
                                                  coalesce(array_agg(u.n ORDER BY u.bin), '{}')
                                             FROM (SELECT x.bin, sum(x.n)::bigint AS n
                                                     FROM unnest(m.wait_bins || excluded.wait_bins,
                                                                 m.wait_counts || excluded.wait_counts) AS x(bin, n)
                                                    GROUP BY x.bin) AS u),
               (run_bins, run_counts) = (SELECT coalesce(array_agg(u.bin ORDER BY u.bin), '{}'),
                                                coalesce(array_agg(u.n ORDER BY u.bin), '{}')
                                           FROM (SELECT x.bin, sum(x.n)::bigint AS n
                                                   FROM unnest(m.run_bins || excluded.run_bins,
                                                               m.run_counts || excluded.run_counts) AS x(bin, n)
                                                  GROUP BY x.bin) AS u)
    )
    SELECT coalesce(sum(g.n), 0), (SELECT c.x FROM cut c) INTO v_n, v_to FROM grouped g;
    v_caught := v_to IS NULL;
    v_to := CASE WHEN v_to IS NULL THEN greatest(v_horizon, v_state.watermark)
                 -- a whole transaction was taken: go on after it
                 WHEN v_to = v_state.watermark THEN (v_to::text::numeric + 1)::text::xid8
                 ELSE v_to END;

    UPDATE pgq.metrics_state s
       SET watermark = v_to,
           rolled_at = v_now,
           rows_rolled = s.rows_rolled + v_n,
           caught_up = v_caught,
           pruned_at = CASE WHEN s.pruned_at IS NULL OR s.pruned_at < v_now - interval '1 minute'
                            THEN v_now ELSE s.pruned_at END
     WHERE s.id;
    IF v_state.pruned_at IS NULL OR v_state.pruned_at < v_now - interval '1 minute' THEN
        DELETE FROM pgq.metrics_buckets m WHERE m.bucket < v_now - interval '1 hour 10 seconds';
    END IF;
    PERFORM pgq._sample_backlog(v_now);

    RETURN QUERY SELECT v_n, v_caught, false;
END
$$;
COMMENT ON FUNCTION pgq.rollup_metrics(int, timestamptz) IS
    'Counts newly finished jobs (history rows in transaction order, exactly once) into 10-second metric buckets and totals; at most about max_rows per call; never waits for another caller. Returns rolled, caught_up, busy.';

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

-- sql/functions/take_tokens.sql
-- pgq.take_tokens(entrypoint, tokens, rate_key, at)
-- Contract: takes `tokens` starts from a rate-limited entrypoint's budget outside a job, so that
--   application code calling the same API as the entrypoint's jobs shares its rate limit
--   (pgq.configure rate_limit, rate_period, rate_per_key). All or nothing: when the window
--   (at - rate_period, ...] holds at most rate_limit - tokens starts, records them in
--   pgq.rate_starts (as a claim records its jobs) and answers granted true with the starts left
--   in the window (remaining); else records nothing and answers granted false, remaining (what
--   the window has left now) and retry_at, the first time at which the same request would be
--   granted if nothing else took from the budget meanwhile. rate_key: the group key whose
--   budget to take from, for an entrypoint with rate_per_key (NULL: the budget of the jobs
--   without a key); it must be NULL for an entrypoint whose one budget covers all its jobs.
--   at NULL means now(). Call it in its own short transaction (autocommit): the policy row stays
--   locked until commit, and claims of the entrypoint skip it meanwhile.
-- Locking: the entrypoint's policy row FOR UPDATE (waits for a claim of the entrypoint, which
--   holds it for one statement's time; claims skip it while this call's transaction lasts).
-- Errors: PQ001 bad entrypoint; PQ008 an entrypoint without a rate limit; PQ009 tokens NULL or
--   outside 1..rate_limit, a rate_key for an entrypoint without rate_per_key, a rate_key over
--   200 bytes, at out of range.
CREATE OR REPLACE FUNCTION pgq.take_tokens(
    entrypoint  text,
    tokens      int         DEFAULT 1,
    rate_key    text        DEFAULT NULL,
    at          timestamptz DEFAULT NULL
)
RETURNS TABLE (granted boolean, remaining int, retry_at timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    c_whole  constant bigint := -9223372036854775808;
    v_now    timestamptz := coalesce(pgq._check_time(take_tokens.at, 'at'), now());
    v_policy pgq.entrypoints;
    v_hash   bigint := c_whole;
    v_used   bigint;
    v_retry  timestamptz;
BEGIN
    PERFORM pgq._check_name(take_tokens.entrypoint, 'entrypoint', 'PQ001');
    SELECT * INTO v_policy FROM pgq.entrypoints e WHERE e.entrypoint = take_tokens.entrypoint FOR UPDATE;
    IF v_policy.rate_limit IS NULL THEN
        RAISE EXCEPTION 'entrypoint % has no rate limit (pgq.configure rate_limit, rate_period)',
            quote_literal(take_tokens.entrypoint)
            USING ERRCODE = 'PQ008';
    END IF;
    IF take_tokens.tokens IS NULL OR take_tokens.tokens NOT BETWEEN 1 AND v_policy.rate_limit THEN
        RAISE EXCEPTION 'tokens must be between 1 and the rate_limit of %, %, got %',
            quote_literal(take_tokens.entrypoint), v_policy.rate_limit, coalesce(take_tokens.tokens::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF take_tokens.rate_key IS NOT NULL THEN
        IF NOT v_policy.rate_per_key THEN
            RAISE EXCEPTION 'entrypoint % has one rate budget for all its jobs (rate_per_key false): rate_key must be NULL, got %',
                quote_literal(take_tokens.entrypoint), quote_literal(left(take_tokens.rate_key, 60))
                USING ERRCODE = 'PQ009';
        END IF;
        IF octet_length(take_tokens.rate_key) > 200 THEN
            RAISE EXCEPTION 'rate_key %... is % bytes, over the 200-byte limit of group keys',
                quote_literal(left(take_tokens.rate_key, 60)), octet_length(take_tokens.rate_key)
                USING ERRCODE = 'PQ009';
        END IF;
        v_hash := hashtextextended(take_tokens.rate_key, 0);
    END IF;

    v_used := coalesce((SELECT w.used
                          FROM pgq._rate_window(take_tokens.entrypoint, v_hash,
                                                v_now - v_policy.rate_period) AS w), 0);
    IF v_used + take_tokens.tokens <= v_policy.rate_limit THEN
        INSERT INTO pgq.rate_starts (entrypoint, key_hash, rate_key, started_at, tokens, cum)
        SELECT * FROM pgq._rate_rows(take_tokens.entrypoint, v_hash, take_tokens.rate_key, take_tokens.tokens, v_now);
        RETURN QUERY SELECT true, (v_policy.rate_limit - v_used - take_tokens.tokens)::int, NULL::timestamptz;
        RETURN;
    END IF;
    -- Not now: granted once enough of the window's starts have left it, oldest first (rows rise
    -- in started_at and cum together: the first row whose cum reaches the starts to shed).
    SELECT s.started_at + v_policy.rate_period INTO v_retry
      FROM pgq.rate_starts s
     WHERE s.entrypoint = take_tokens.entrypoint AND s.key_hash = v_hash
       AND s.started_at > v_now - v_policy.rate_period
       AND s.cum >= (SELECT f.cum - f.tokens
                       FROM pgq.rate_starts f
                      WHERE f.entrypoint = take_tokens.entrypoint AND f.key_hash = v_hash
                        AND f.started_at > v_now - v_policy.rate_period
                      ORDER BY f.started_at, f.cum
                      LIMIT 1) + (v_used + take_tokens.tokens - v_policy.rate_limit)
     ORDER BY s.started_at, s.cum
     LIMIT 1;
    RETURN QUERY SELECT false, greatest(v_policy.rate_limit - v_used, 0)::int, greatest(v_retry, v_now);
END
$$;
COMMENT ON FUNCTION pgq.take_tokens(text, int, text, timestamptz) IS
    'Takes tokens from a rate-limited entrypoint''s budget outside a job (all or nothing), so application code shares the limit with the entrypoint''s jobs: granted, starts remaining in the window, and when refused the time it would be granted.';

-- sql/functions/unregister_worker.sql
-- pgq.unregister_worker(worker_id)
-- Contract: a worker that stops cleanly removes its registry row; returns true if it existed.
--   Jobs it still holds are not touched (release or complete them first).
-- Locking: the registry row.
-- Errors: PQ009 NULL worker_id.
CREATE OR REPLACE FUNCTION pgq.unregister_worker(worker_id uuid)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    IF unregister_worker.worker_id IS NULL THEN
        RAISE EXCEPTION 'worker_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    DELETE FROM pgq.workers w WHERE w.worker_id = unregister_worker.worker_id;
    RETURN FOUND;
END
$$;
COMMENT ON FUNCTION pgq.unregister_worker(uuid) IS
    'Removes a worker from the registry (clean stop); returns true if it was registered.';

-- sql/functions/workflow.sql
-- pgq.workflow(job_id)
-- Contract: every job of a workflow, given its workflow id or any of its jobs: the jobs on its
--   edges (pgq.job_deps with that workflow_id; at most 100,000 jobs), live or finished, each
--   with its state (scheduled, waiting, queued, running, successful, failed, canceled;
--   'pruned' when it left history), entrypoint, attempt, finished_at, parents (the jobs it
--   waits or waited for in this workflow, with each edge's state: pending, satisfied, failed,
--   and run_anyway), children (in this workflow) and the workflow id. A workflow id is the id
--   of the first job of the pgq.enqueue_many call that started the graph; given a job that is
--   not one, the job's workflow (the oldest, when a later call joined it to another). Ordered
--   by id. Empty when the job has no dependency and no dependent (or does not exist).
-- Locking: none (reads only).
-- Errors: PQ009 NULL job_id.
CREATE OR REPLACE FUNCTION pgq.workflow(job_id bigint)
RETURNS TABLE (id bigint, entrypoint text, state text, attempt int, finished_at timestamptz,
               parents jsonb, children bigint[], workflow_id bigint)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_wf bigint;
BEGIN
    IF workflow.job_id IS NULL THEN
        RAISE EXCEPTION 'job_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    v_wf := CASE WHEN EXISTS (SELECT 1 FROM pgq.job_deps d WHERE d.workflow_id = workflow.job_id)
                 THEN workflow.job_id
                 ELSE pgq._workflow_of(workflow.job_id) END;
    RETURN QUERY
    WITH ids AS (
        SELECT m.id
          FROM (SELECT d.parent_id AS id FROM pgq.job_deps d WHERE d.workflow_id = v_wf
                UNION
                SELECT d.child_id FROM pgq.job_deps d WHERE d.workflow_id = v_wf) m
         ORDER BY m.id
         LIMIT 100000
    )
    SELECT i.id,
           coalesce(j.entrypoint, h.entrypoint),
           coalesce(j.status, h.status, 'pruned'),
           coalesce(j.attempt, h.attempt),
           h.finished_at,
           coalesce((SELECT jsonb_agg(jsonb_build_object('id', d.parent_id, 'state', d.state, 'run_anyway', d.run_anyway)
                                      ORDER BY d.parent_id)
                       FROM pgq.job_deps d WHERE d.child_id = i.id AND d.workflow_id = v_wf), '[]'),
           coalesce(ARRAY(SELECT d.child_id FROM pgq.job_deps d
                           WHERE d.parent_id = i.id AND d.workflow_id = v_wf ORDER BY d.child_id), '{}'),
           v_wf
      FROM ids i
      LEFT JOIN pgq.jobs j ON j.id = i.id
      LEFT JOIN pgq.job_history h ON h.id = i.id
     ORDER BY i.id;
END
$$;
COMMENT ON FUNCTION pgq.workflow(bigint) IS
    'Every job of a workflow (given its id or any of its jobs), live or finished: state, parents (with each edge''s state), children and the workflow id.';

RESET check_function_bodies;
-- END FUNCTIONS

-- ## The ring, continued: triggers and the copy of the live jobs

-- The triggers call the functions above; the copy fires the insert trigger, which creates the
-- lanes and their cursors (and the entrypoint rows).
CREATE TRIGGER jobs_after_insert AFTER INSERT ON pgq.jobs
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._jobs_after_insert();
CREATE TRIGGER jobs_after_update AFTER UPDATE ON pgq.jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._jobs_after_update();
CREATE TRIGGER jobs_after_delete AFTER DELETE ON pgq.jobs
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._jobs_after_delete();

INSERT INTO pgq.jobs (id, entrypoint, status, priority, run_at, enqueued_at, attempt, payload, headers,
                      dedupe_key, lease, worker_id, started_at, heartbeat_at, cancel_requested, errors,
                      claim_request, ready_seq, slot)
SELECT o.id, o.entrypoint, o.status, o.priority, o.run_at, o.enqueued_at, o.attempt, o.payload, o.headers,
       o.dedupe_key, o.lease, o.worker_id, o.started_at, o.heartbeat_at, o.cancel_requested, o.errors,
       NULL,
       CASE WHEN o.status = 'queued' THEN nextval('pgq.ready_seq') END,
       CASE WHEN o.status = 'scheduled' THEN 4 ELSE 0 END
  FROM (SELECT j.id, j.entrypoint,
               CASE WHEN j.status = 'queued' AND j.run_at > now() THEN 'scheduled' ELSE j.status END AS status,
               j.priority, j.run_at, j.enqueued_at, j.attempt, j.payload, j.headers, j.dedupe_key, j.lease,
               j.worker_id, j.started_at, j.heartbeat_at, j.cancel_requested, j.errors
          FROM pgq.jobs_old j
         ORDER BY j.priority DESC, j.run_at, j.id) o;
INSERT INTO pgq.live_keys (dedupe_key, job_id)
SELECT o.dedupe_key, o.id FROM pgq.jobs_old o WHERE o.dedupe_key IS NOT NULL;
DROP TABLE pgq.jobs_old;

-- ## Grants

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgq FROM PUBLIC;

-- Read side. Numbers without payloads: every pgq role. Payloads, errors and listings: readers
-- and operators. Job results by id: producers (and the rest).
GRANT SELECT ON pgq.queue_stats, pgq.worker_status TO pgq_reader, pgq_admin;
GRANT SELECT ON pgq.worker_status TO pgq_producer, pgq_worker;
GRANT SELECT ON pgq.schedules TO pgq_reader, pgq_admin;
GRANT EXECUTE ON FUNCTION
    pgq.metrics(text[], interval, timestamptz),
    pgq.job_results(bigint[])
    TO pgq_producer, pgq_worker, pgq_reader, pgq_admin;
GRANT EXECUTE ON FUNCTION pgq.history_summary(text[], bigint) TO pgq_reader, pgq_admin;
GRANT USAGE ON TYPE pgq.job_info, pgq.job_listing TO pgq_reader, pgq_admin;
GRANT EXECUTE ON FUNCTION
    pgq.job(bigint),
    pgq.list_jobs(text, text, text, int),
    pgq.find_history(text, text[], timestamptz, timestamptz, text, text, int)
    TO pgq_reader, pgq_admin;
-- Workers: registry and the maintenance steps their loop runs.
GRANT EXECUTE ON FUNCTION
    pgq.register_worker(uuid, text[], text, int, text, text, jsonb, interval, timestamptz),
    pgq.unregister_worker(uuid),
    pgq.prune_workers(timestamptz),
    pgq.rollup_metrics(int, timestamptz)
    TO pgq_worker;
-- Operator actions.
GRANT EXECUTE ON FUNCTION
    pgq.pause(text[], timestamptz),
    pgq.resume(text[]),
    pgq.requeue_history(text, text[], timestamptz, timestamptz, text, int, timestamptz),
    pgq.delete_history(text, text[], timestamptz, timestamptz, text, int),
    pgq.prune_workers(timestamptz),
    pgq.rollup_metrics(int, timestamptz)
    TO pgq_admin;

-- The web dashboard (docs/web.md): the policy's read side, search by dedupe key, delete
-- finished jobs by id, fire a schedule now. Operators also requeue and cancel by id and
-- manage schedules (before: owner, producers and workers only).
GRANT EXECUTE ON FUNCTION
    pgq.entrypoint_config(text[]),
    pgq.find_by_dedupe_key(text, int)
    TO pgq_reader, pgq_admin;
GRANT EXECUTE ON FUNCTION
    pgq.delete_jobs(bigint[]),
    pgq.fire_schedule_now(text, timestamptz),
    pgq.requeue(bigint[], timestamptz),
    pgq.cancel(bigint[], timestamptz),
    pgq.schedule(text, text, text, timestamptz, text, jsonb, int, jsonb, text, interval, interval),
    pgq.unschedule(text)
    TO pgq_admin;

-- Hostile input and hostile neighbours: registering, changing and removing schedules is an
-- operator's right (a schedule enqueues any job with any payload; granted to pgq_admin above),
-- no longer a worker's; the worker keeps claiming, firing and giving back ticks, and both
-- prune unused entrypoint rows.
REVOKE EXECUTE ON FUNCTION
    pgq.schedule(text, text, text, timestamptz, text, jsonb, int, jsonb, text, interval, interval)
    FROM pgq_worker;
GRANT EXECUTE ON FUNCTION pgq.release_schedule(uuid, text, bigint, text, interval, timestamptz) TO pgq_worker;
GRANT EXECUTE ON FUNCTION pgq.prune_entrypoints(interval, interval, timestamptz) TO pgq_worker, pgq_admin;

-- Re-signed functions (policy back in SQL): their grants again.
GRANT EXECUTE ON FUNCTION
    pgq.enqueue(text, jsonb, int, timestamptz, text, jsonb, text, interval, interval, text),
    pgq.enqueue_many(text[], jsonb, int[], timestamptz[], text[], jsonb, text, interval[], interval[], text[], jsonb),
    pgq.cancel(bigint[], timestamptz)
    TO pgq_producer;
GRANT EXECUTE ON FUNCTION
    pgq.claim(uuid, text[], int, timestamptz, uuid),
    pgq.complete(uuid, bigint[], bigint[], text[], jsonb, timestamptz),
    pgq.release(uuid, bigint[], bigint[], timestamptz)
    TO pgq_worker;

-- The ring's maintenance (pgq.maintain): the worker's maintenance loop, and operators.
-- pgq.compact_jobs (0.1.0 clients) keeps its grant to pgq_worker and now runs pgq.maintain.
GRANT EXECUTE ON FUNCTION pgq.maintain(timestamptz, interval) TO pgq_worker, pgq_admin;

-- Flow control: the busiest keys of key-limited entrypoints, for dashboards and operators.
GRANT EXECUTE ON FUNCTION pgq.key_stats(text[], int) TO pgq_reader, pgq_admin;
-- Rate limits: application code shares an entrypoint's budget (producers and workers alike).
GRANT EXECUTE ON FUNCTION pgq.take_tokens(text, int, text, timestamptz) TO pgq_producer, pgq_worker, pgq_admin;
GRANT EXECUTE ON FUNCTION pgq.rate_stats(text[], timestamptz) TO pgq_producer, pgq_worker, pgq_reader, pgq_admin;
GRANT EXECUTE ON FUNCTION pgq.rate_waits(text[], timestamptz) TO pgq_worker;
-- Workflows: the graph of a job's workflow, and the results its parents passed along.
GRANT EXECUTE ON FUNCTION pgq.workflow(bigint), pgq.parent_results(bigint)
    TO pgq_producer, pgq_worker, pgq_reader, pgq_admin;
GRANT EXECUTE ON FUNCTION pgq.cancel_workflow(bigint, timestamptz) TO pgq_producer, pgq_admin;
-- Operators requeue the failed part of a workflow, as they requeue jobs.
GRANT EXECUTE ON FUNCTION pgq.requeue_workflow(bigint, timestamptz) TO pgq_admin;

-- Operators configure entrypoints and read the dead jobs they redrive (pgq_admin is the
-- operators' role); readers see dead jobs as they see every finished job with its errors.
GRANT EXECUTE ON FUNCTION pgq.configure TO pgq_admin;
GRANT SELECT ON pgq.failed_jobs TO pgq_reader, pgq_admin;

-- pgq.next_schedule_at, re-signed (worker_id, at): the scheduler's call.
GRANT EXECUTE ON FUNCTION pgq.next_schedule_at(uuid, timestamptz) TO pgq_worker;

-- The charts' reader: every role that may read pgq.metrics.
GRANT EXECUTE ON FUNCTION pgq.metrics_series(text[], boolean, timestamptz)
    TO pgq_producer, pgq_worker, pgq_reader, pgq_admin;
