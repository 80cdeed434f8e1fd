-- pgq-thin migration 0001: schema pgq as first released (0.1.0): roles, tables, indexes, types,
-- every function, triggers, views and privileges. Released: this file never changes again
-- (sql/migrations/RELEASED holds its checksum and a test enforces it); later changes go into a
-- new migration written with scripts/new_migration.py (see sql/migrations/README.md).

-- Refuse a foreign schema named pgq (SkyTools PgQ uses that name). Ours carries this comment.
DO $guard$
BEGIN
    IF EXISTS (
        SELECT 1
          FROM pg_catalog.pg_namespace n
         WHERE n.nspname = 'pgq'
           AND coalesce(pg_catalog.obj_description(n.oid, 'pg_namespace'), '') NOT LIKE 'pgq-thin%'
    ) THEN
        RAISE EXCEPTION 'schema "pgq" already exists and does not belong to pgq-thin'
            USING ERRCODE = 'PQ900',
                  HINT = 'Another product (for example SkyTools PgQ) uses schema pgq in this database; '
                         'install pgq-thin into another database.';
    END IF;
END
$guard$;

CREATE SCHEMA IF NOT EXISTS pgq;
COMMENT ON SCHEMA pgq IS 'pgq-thin job queue: see docs/sql-api.md';
REVOKE ALL ON SCHEMA pgq FROM PUBLIC;

-- Roles are cluster-wide: create them once, keep them across databases.
DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'pgq_producer') THEN
        CREATE ROLE pgq_producer NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'pgq_worker') THEN
        CREATE ROLE pgq_worker NOLOGIN;
    END IF;
END
$roles$;

GRANT USAGE ON SCHEMA pgq TO pgq_producer, pgq_worker;

CREATE SEQUENCE pgq.job_id_seq AS bigint;
CREATE SEQUENCE pgq.lease_seq AS bigint;

-- Per-entrypoint policy. A row appears automatically the first time an entrypoint is enqueued,
-- carrying the defaults below; pgq.configure changes it.
CREATE TABLE pgq.entrypoints (
    entrypoint         text        NOT NULL,
    concurrency_limit  int,
    max_attempts       int         NOT NULL DEFAULT 5,
    backoff_base       interval    NOT NULL DEFAULT interval '1 second',
    backoff_max        interval    NOT NULL DEFAULT interval '5 minutes',
    heartbeat_timeout  interval    NOT NULL DEFAULT interval '30 seconds',
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT entrypoints_pkey PRIMARY KEY (entrypoint),
    CONSTRAINT entrypoints_concurrency_limit_check CHECK (concurrency_limit IS NULL OR concurrency_limit >= 0),
    CONSTRAINT entrypoints_max_attempts_check CHECK (max_attempts >= 1),
    CONSTRAINT entrypoints_backoff_check CHECK (backoff_base >= interval '0' AND backoff_max >= backoff_base),
    CONSTRAINT entrypoints_heartbeat_timeout_check CHECK (heartbeat_timeout >= interval '1 second')
);

-- Live jobs only: queued or running. A finished job leaves this table for pgq.job_history.
-- heartbeat_at is in no index, and half of each page stays free (fillfactor 50) so that a
-- heartbeat call covering every job of a page still finds room there: heartbeats are HOT updates.
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
    CONSTRAINT jobs_pkey PRIMARY KEY (id),
    CONSTRAINT jobs_status_check CHECK (status IN ('queued', 'running')),
    CONSTRAINT jobs_running_has_lease_check CHECK (
        (status = 'running') = (lease IS NOT NULL AND worker_id IS NOT NULL AND heartbeat_at IS NOT NULL)
    ),
    CONSTRAINT jobs_attempt_check CHECK (attempt >= 0),
    CONSTRAINT jobs_priority_check CHECK (priority BETWEEN -32768 AND 32767),
    CONSTRAINT jobs_entrypoint_check CHECK (octet_length(entrypoint) BETWEEN 1 AND 200)
) WITH (fillfactor = 50);
ALTER SEQUENCE pgq.job_id_seq OWNED BY pgq.jobs.id;
-- Every job leaves dead row versions here (the claim is not a HOT update, completion deletes).
-- Let autovacuum come early and run at full speed on this small, hot table.
ALTER TABLE pgq.jobs SET (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0.02
);

-- Claim path: queued jobs of one entrypoint in claim order (priority, due time, enqueue order).
CREATE INDEX jobs_queued_idx ON pgq.jobs (entrypoint, priority DESC, run_at, id)
    WHERE status = 'queued';
-- Stale lookup and concurrency counting: the (small) set of running jobs.
CREATE INDEX jobs_running_idx ON pgq.jobs (entrypoint)
    WHERE status = 'running';
-- Dedupe keys are unique among live jobs; a finished job frees its key.
CREATE UNIQUE INDEX jobs_dedupe_key_idx ON pgq.jobs (dedupe_key)
    WHERE dedupe_key IS NOT NULL;

-- One row per finished job: successful, failed (dead: attempts used up) or canceled.
CREATE TABLE pgq.job_history (
    id           bigint      NOT NULL,
    entrypoint   text        NOT NULL,
    status       text        NOT NULL,
    priority     int         NOT NULL,
    attempt      int         NOT NULL,
    payload      jsonb,
    headers      jsonb,
    dedupe_key   text,
    enqueued_at  timestamptz NOT NULL,
    started_at   timestamptz,
    finished_at  timestamptz NOT NULL,
    worker_id    uuid,
    lease        bigint,
    details      jsonb,
    errors       jsonb       NOT NULL DEFAULT '[]',
    CONSTRAINT job_history_pkey PRIMARY KEY (id),
    CONSTRAINT job_history_status_check CHECK (status IN ('successful', 'failed', 'canceled'))
);
CREATE INDEX job_history_finished_at_idx ON pgq.job_history (finished_at);
CREATE INDEX job_history_failed_idx ON pgq.job_history (entrypoint, finished_at)
    WHERE status = 'failed';

REVOKE ALL ON ALL TABLES IN SCHEMA pgq FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA pgq FROM PUBLIC;

-- What pgq.claim hands a worker.
CREATE TYPE pgq.claimed_job AS (
    id                 bigint,
    lease              bigint,
    entrypoint         text,
    payload            jsonb,
    headers            jsonb,
    priority           int,
    attempt            int,
    enqueued_at        timestamptz,
    run_at             timestamptz,
    dedupe_key         text,
    max_attempts       int,
    heartbeat_timeout  interval
);

-- Cron schedules. The schedule rows and their locking live here; a client computes cron
-- times (the Python client with croniter) and hands them back. A fire is an ordinary job,
-- deduplicated by schedule and due time.
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

-- Online compaction of pgq.jobs: pgq.compact_jobs rewrites the live table with CLUSTER when it
-- has grown well past the size its live rows need; this table remembers the last compaction.
CREATE TABLE pgq.compaction (
    id             boolean     NOT NULL DEFAULT true,
    compacted_at   timestamptz,
    rows           bigint,
    bytes_before   bigint,
    bytes_after    bigint,
    bytes_per_row  bigint,
    compactions    bigint      NOT NULL DEFAULT 0,
    CONSTRAINT compaction_pkey PRIMARY KEY (id),
    CONSTRAINT compaction_one_row_check CHECK (id)
);
COMMENT ON TABLE pgq.compaction IS
    'One row: the last compaction of pgq.jobs by pgq.compact_jobs (time, rows, total size before and after, bytes per row learned, how many so far).';
INSERT INTO pgq.compaction DEFAULT VALUES;

-- pgq.compact_jobs clusters on the primary key (id order is enqueue order, close to claim
-- order); marking it here keeps the first compaction from changing the catalog.
ALTER TABLE pgq.jobs CLUSTER ON jobs_pkey;

-- BEGIN FUNCTIONS (written by scripts/new_migration.py from sql/functions/; do not edit here)
SET check_function_bodies = false;

-- sql/functions/_archive.sql
-- pgq._archive(ids, statuses, details, at, worker_id, leases): move live jobs to pgq.job_history.
-- Contract: deletes the given jobs from pgq.jobs and writes one history row each with the final
--   status (successful, failed or canceled), details and finished_at = at. Returns the ids moved.
--   Without worker_id and leases, callers must already hold the row locks (a vanished row is
--   skipped). With them, only jobs still running under that worker and lease move (the lease
--   fence of pgq.complete, checked again by the DELETE itself under concurrent updates), and a
--   'failed' job whose cancellation was requested ends as 'canceled', and the history row keeps
--   the lease (pgq.complete recognises a repeated call by it). Without leases (cancel, release,
--   the claim path archiving a stale job) no lease is recorded: an attempt that did not finish
--   the job cannot pass for one that did. A failed job's details are also appended to its error
--   list. One statement: no separate locking pass.
-- Locking: row locks on the deleted jobs.
-- Errors: none of its own; the history CHECK constraint rejects an unknown status.
CREATE OR REPLACE FUNCTION pgq._archive(
    ids        bigint[],
    statuses   text[],
    details    jsonb[],
    at         timestamptz,
    worker_id  uuid     DEFAULT NULL,
    leases     bigint[] DEFAULT NULL
)
RETURNS SETOF bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans: planning these statements on every call cost more than running them. No JIT:
-- a generic plan's estimates (unknown LIMIT, large backlog) would compile it on every call.
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
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
           AND (_archive.leases IS NULL
                OR (j.lease = i.lease AND j.status = 'running' AND j.worker_id = _archive.worker_id))
        RETURNING j.*,
                  CASE WHEN i.status = 'failed' AND j.cancel_requested THEN 'canceled'
                       ELSE i.status END AS final_status,
                  i.details AS final_details
    )
    INSERT INTO pgq.job_history AS h (id, entrypoint, status, priority, attempt, payload, headers,
                                      dedupe_key, enqueued_at, started_at, finished_at, worker_id,
                                      lease, details, errors)
    SELECT g.id, g.entrypoint, g.final_status, g.priority, g.attempt, g.payload, g.headers,
           g.dedupe_key, g.enqueued_at, g.started_at, _archive.at, g.worker_id,
           CASE WHEN _archive.leases IS NULL THEN NULL ELSE g.lease END, g.final_details,
           CASE WHEN g.final_status = 'failed'
                THEN g.errors || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                         'attempt', g.attempt, 'at', _archive.at,
                         'lease', CASE WHEN _archive.leases IS NULL THEN NULL ELSE g.lease END))
                         || jsonb_build_object('details', g.final_details))
                ELSE g.errors END
      FROM gone g
    RETURNING h.id;
END
$$;
COMMENT ON FUNCTION pgq._archive(bigint[], text[], jsonb[], timestamptz, uuid, bigint[]) IS
    'Private. Moves jobs from pgq.jobs to pgq.job_history with their final status (lease-checked when leases are given); returns the ids moved.';

-- sql/functions/_check_batch.sql
-- pgq._check_batch(worker_id, ids, leases): validate the arguments every lease-guarded call takes.
-- Contract: worker_id is not NULL; ids and leases are arrays of the same length without NULLs;
--   ids hold no duplicates. Returns the number of elements (0 for two empty arrays).
-- Locking: none.
-- Errors: PQ009 NULL worker_id, NULL array, NULL element or duplicate id;
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

-- sql/functions/_check_job.sql
-- pgq._check_job(entrypoint, payload, priority, headers, ord)
-- Contract: raises the error for the first rule this job breaks, naming the value and its
--   position in the call; returns nothing when the job is valid. The rules: entrypoint of 1 to
--   200 bytes without control characters (PQ001), priority within smallint range (PQ005),
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
    IF entrypoint IS NULL OR entrypoint = '' OR octet_length(entrypoint) > 200
       OR entrypoint ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'invalid entrypoint % at position %: must be 1 to 200 bytes without control characters',
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

-- sql/functions/_check_name.sql
-- pgq._check_name(value, what, errcode): validate an entrypoint or schedule name.
-- Contract: a name is 1 to 200 bytes without control characters (so notifications naming it
--   stay small). Raises errcode with a message naming the bad value; returns nothing otherwise.
--   enqueue_many checks whole arrays of entrypoints itself, in one pass, with the same rule.
-- Locking: none.
-- Errors: errcode (PQ001 for entrypoints, PQ011 for schedule names).
CREATE OR REPLACE FUNCTION pgq._check_name(value text, what text, errcode text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF value IS NULL OR value = '' OR octet_length(value) > 200 OR value ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'invalid % %: must be 1 to 200 bytes without control characters',
            what, coalesce(quote_literal(left(value, 220)), 'NULL')
            USING ERRCODE = errcode;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_name(text, text, text) IS
    'Private. Raises errcode unless the name is 1 to 200 bytes without control characters.';

-- sql/functions/_jobs_after_delete.sql
-- pgq._jobs_after_delete(): statement-level AFTER DELETE trigger on pgq.jobs.
-- Contract: when running jobs of an entrypoint with a concurrency limit leave the table, a slot
--   is free again: sends {"kind": "enqueued", "entrypoints": [...]} so waiting workers claim at
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
     WHERE c.concurrency_limit IS NOT NULL
       AND c.entrypoint IN (SELECT o.entrypoint FROM old_rows o WHERE o.status = 'running');
    IF v_eps IS NOT NULL THEN
        PERFORM pgq._notify('enqueued', 'entrypoints', v_eps);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._jobs_after_delete() IS
    'Private trigger: notifies pgq_events when a running job of a concurrency-limited entrypoint leaves.';

-- sql/functions/_jobs_after_insert.sql
-- pgq._jobs_after_insert(): statement-level AFTER INSERT trigger on pgq.jobs.
-- Contract: registers every new entrypoint in pgq.entrypoints with the default policy, then
--   sends {"kind": "enqueued", "entrypoints": [...]} naming the entrypoints that got queued jobs.
--   Never carries payload data (any role may LISTEN).
-- Locking: a first-time entrypoint briefly holds its new pgq.entrypoints key until commit.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._jobs_after_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_eps jsonb;
BEGIN
    INSERT INTO pgq.entrypoints (entrypoint)
    SELECT DISTINCT n.entrypoint FROM new_rows n
    ON CONFLICT (entrypoint) DO NOTHING;

    SELECT jsonb_agg(DISTINCT n.entrypoint) INTO v_eps
      FROM new_rows n
     WHERE n.status = 'queued';
    IF v_eps IS NOT NULL THEN
        PERFORM pgq._notify('enqueued', 'entrypoints', v_eps);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._jobs_after_insert() IS
    'Private trigger: registers new entrypoints and sends {"kind":"enqueued"} on pgq_events.';

-- sql/functions/_jobs_after_update.sql
-- pgq._jobs_after_update(): statement-level AFTER UPDATE trigger on pgq.jobs.
-- Contract: when a statement puts running jobs back in the queue (retry, release), sends
--   {"kind": "enqueued", "entrypoints": [...]}; when it flags running jobs for cancellation,
--   sends {"kind": "cancel", "ids": [...]}. Claims and heartbeats (rows left running, no new
--   cancel flag) return after one scan of the transition table and send nothing.
-- Locking: none.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._jobs_after_update()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_eps jsonb;
    v_ids jsonb;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.status = 'queued' OR n.cancel_requested) THEN
        RETURN NULL;
    END IF;

    SELECT jsonb_agg(DISTINCT n.entrypoint) FILTER (WHERE n.status = 'queued' AND o.status = 'running'),
           jsonb_agg(n.id ORDER BY n.id) FILTER (WHERE n.cancel_requested AND NOT o.cancel_requested)
      INTO v_eps, v_ids
      FROM new_rows n
      JOIN old_rows o ON o.id = n.id;

    IF v_eps IS NOT NULL THEN
        PERFORM pgq._notify('enqueued', 'entrypoints', v_eps);
    END IF;
    IF v_ids IS NOT NULL THEN
        PERFORM pgq._notify('cancel', 'ids', v_ids);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._jobs_after_update() IS
    'Private trigger: notifies pgq_events when jobs become runnable again or are flagged for cancellation.';

-- sql/functions/_notify.sql
-- pgq._notify(kind, field, vals): send {"kind": kind, field: [...]} on channel pgq_events.
-- Contract: values are split into chunks so each payload stays far below NOTIFY's 8000-byte
--   limit (15 entrypoints of at most 200 bytes, or 300 ids, per notification). Sends nothing for
--   an empty or NULL array. Identical payloads in one transaction are folded by PostgreSQL.
-- Locking: none. NOTIFY is delivered at commit, never before.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._notify(kind text, field text, vals jsonb)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF _notify.vals IS NULL OR jsonb_array_length(_notify.vals) = 0 THEN
        RETURN;
    END IF;
    PERFORM pg_notify('pgq_events', jsonb_build_object('kind', _notify.kind, _notify.field, chunk.vals)::text)
       FROM (SELECT jsonb_agg(v.value ORDER BY v.ord) AS vals
               FROM jsonb_array_elements(_notify.vals) WITH ORDINALITY AS v(value, ord)
              GROUP BY (v.ord - 1) / CASE WHEN _notify.field = 'ids' THEN 300 ELSE 15 END) AS chunk;
END
$$;
COMMENT ON FUNCTION pgq._notify(text, text, jsonb) IS
    'Private. Sends {"kind": kind, field: vals} on pgq_events in chunks well under the NOTIFY size limit.';

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

-- sql/functions/cancel.sql
-- pgq.cancel(ids, at)
-- Contract: queued jobs move to history as canceled at once; running jobs are flagged
--   (cancel_requested) and their worker is told through pgq_events ({"kind": "cancel"}) and
--   through the next heartbeat answer; the worker then completes them as canceled (or the claim
--   path archives them once their heartbeat goes stale). Returns the ids canceled or flagged;
--   ids that are unknown or already finished are ignored. Calling it again is harmless.
--   at NULL means now().
-- Locking: row locks on the affected jobs; waits for a transaction that holds one of them.
-- Errors: PQ009 NULL ids or NULL element.
CREATE OR REPLACE FUNCTION pgq.cancel(ids bigint[], at timestamptz DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_queued bigint[];
BEGIN
    IF cancel.ids IS NULL OR array_position(cancel.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(cancel.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;

    SELECT array_agg(l.id) INTO v_queued
      FROM (SELECT j.id FROM pgq.jobs j
             WHERE j.id = ANY (cancel.ids) AND j.status = 'queued'
             ORDER BY j.id
               FOR UPDATE) AS l;
    IF v_queued IS NOT NULL THEN
        RETURN QUERY SELECT pgq._archive(v_queued, array_fill('canceled'::text, ARRAY[cardinality(v_queued)]),
                                         NULL, coalesce(cancel.at, now()));
    END IF;

    RETURN QUERY
    UPDATE pgq.jobs j
       SET cancel_requested = true
     WHERE j.id = ANY (cancel.ids)
       AND j.status = 'running'
    RETURNING j.id;
END
$$;
COMMENT ON FUNCTION pgq.cancel(bigint[], timestamptz) IS
    'Cancels jobs: queued ones go to history as canceled, running ones are flagged and their worker notified. Returns the ids affected.';

-- sql/functions/claim.sql
-- pgq.claim(worker_id, entrypoints, batch_size, at)
-- Contract: claims up to batch_size runnable jobs of the given entrypoints, highest priority
--   first, then earliest due, then enqueue order. Runnable: queued with run_at <= at, or running
--   with a heartbeat older than the entrypoint's heartbeat_timeout (stale: its worker is gone).
--   Each claimed job gets status running, heartbeat = at, this worker, a new lease and attempt + 1
--   (a re-claim counts as an attempt). A stale job whose attempts are used up goes to history as
--   failed, and a stale job flagged for cancellation as canceled, instead of being claimed.
--   An entrypoint's concurrency_limit holds across all workers: one claimer at a time takes the
--   entrypoint's policy row (SKIP LOCKED: the others skip that entrypoint for this call). It also
--   bounds stale re-claims: they must fit beside the live running jobs, so limit 0 (paused)
--   claims nothing at all.
--   at NULL means now(); tests pass a time to move the clock.
-- Locking: FOR UPDATE SKIP LOCKED on candidate jobs and on limited entrypoints' policy rows;
--   never waits for another claimer. Must run in READ COMMITTED so each step sees the last commit.
-- Errors: PQ001 bad entrypoints, PQ002 batch_size outside 1..10000, PQ009 NULL worker_id,
--   PQ010 not READ COMMITTED.
CREATE OR REPLACE FUNCTION pgq.claim(
    worker_id    uuid,
    entrypoints  text[],
    batch_size   int         DEFAULT 1,
    at           timestamptz DEFAULT NULL
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
AS $$
#variable_conflict use_column
DECLARE
    v_now     timestamptz := coalesce(claim.at, now());
    v_limited text[];
    v_ids     bigint[];
BEGIN
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

    -- Limited entrypoints: one claimer at a time per entrypoint. The lock is held to commit.
    SELECT array_agg(c.entrypoint) INTO v_limited
      FROM (SELECT e.entrypoint
              FROM pgq.entrypoints e
             WHERE e.entrypoint = ANY (claim.entrypoints)
               AND e.concurrency_limit IS NOT NULL
             ORDER BY e.entrypoint
               FOR UPDATE SKIP LOCKED) AS c;

    -- Stale jobs that may not run again leave for history.
    PERFORM pgq._archive(array_agg(s.id),
                         array_agg(CASE WHEN s.cancel_requested THEN 'canceled' ELSE 'failed' END),
                         array_agg(jsonb_build_object('error', 'heartbeat timeout',
                                                      'worker_id', s.worker_id,
                                                      'heartbeat_at', s.heartbeat_at)),
                         v_now)
       FROM (SELECT j.id, j.cancel_requested, j.worker_id, j.heartbeat_at
               FROM pgq.entrypoints c
               JOIN pgq.jobs j ON j.entrypoint = c.entrypoint AND j.status = 'running'
              WHERE c.entrypoint = ANY (claim.entrypoints)
                AND j.heartbeat_at < v_now - c.heartbeat_timeout
                AND (j.attempt >= c.max_attempts OR j.cancel_requested)
                FOR UPDATE OF j SKIP LOCKED) AS s
     HAVING count(*) > 0;

    -- Lock the jobs to take. (Their ids go to an array: the UPDATE below then finds them by
    -- primary key whatever the planner guesses about the LIMITs.)
    WITH eps AS (
        SELECT c.entrypoint, c.heartbeat_timeout, c.max_attempts,
               CASE WHEN c.concurrency_limit IS NULL THEN claim.batch_size
                    WHEN c.entrypoint = ANY (v_limited) THEN
                         greatest(0, least(claim.batch_size,
                                           c.concurrency_limit - (SELECT count(*)
                                                                    FROM pgq.jobs r
                                                                   WHERE r.entrypoint = c.entrypoint
                                                                     AND r.status = 'running')))
                    ELSE 0 END AS quota,
               -- Re-claiming a stale job leaves the running count as it is, but it must still fit
               -- beside the live (non-stale) running jobs: a paused entrypoint re-claims nothing.
               CASE WHEN c.concurrency_limit IS NULL THEN claim.batch_size
                    WHEN c.entrypoint = ANY (v_limited) THEN
                         greatest(0, least(claim.batch_size,
                                           c.concurrency_limit - (SELECT count(*)
                                                                    FROM pgq.jobs r
                                                                   WHERE r.entrypoint = c.entrypoint
                                                                     AND r.status = 'running'
                                                                     AND r.heartbeat_at >= v_now - c.heartbeat_timeout)))
                    ELSE 0 END AS stale_quota
          FROM pgq.entrypoints c
         WHERE c.entrypoint = ANY (claim.entrypoints)
    ), candidates AS (
        SELECT q.id, q.priority, q.run_at
          FROM eps
         CROSS JOIN LATERAL (
               SELECT j.id, j.priority, j.run_at
                 FROM pgq.jobs j
                WHERE j.entrypoint = eps.entrypoint
                  AND j.status = 'queued'
                  AND j.run_at <= v_now
                ORDER BY j.priority DESC, j.run_at, j.id
                LIMIT eps.quota
                  FOR UPDATE SKIP LOCKED) AS q
        UNION ALL
        SELECT s.id, s.priority, s.run_at
          FROM eps
         CROSS JOIN LATERAL (
               SELECT j.id, j.priority, j.run_at
                 FROM pgq.jobs j
                WHERE j.entrypoint = eps.entrypoint
                  AND j.status = 'running'
                  AND j.heartbeat_at < v_now - eps.heartbeat_timeout
                  AND j.attempt < eps.max_attempts
                  AND NOT j.cancel_requested
                ORDER BY j.priority DESC, j.run_at, j.id
                LIMIT eps.stale_quota
                  FOR UPDATE SKIP LOCKED) AS s
    )
    SELECT array_agg(p.id) INTO v_ids
      FROM (SELECT c.id
              FROM candidates c
             ORDER BY c.priority DESC, c.run_at, c.id
             LIMIT claim.batch_size) AS p;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH claimed AS (
        UPDATE pgq.jobs j
           SET status = 'running',
               lease = nextval('pgq.lease_seq'),
               worker_id = claim.worker_id,
               started_at = v_now,
               heartbeat_at = v_now,
               attempt = j.attempt + 1,
               -- A re-claimed stale job notes the timeout; no lease in the entry: a lease in
               -- the error list means that attempt's result was applied (see pgq.complete).
               errors = CASE WHEN j.status = 'running'
                             THEN j.errors || jsonb_build_array(jsonb_build_object(
                                      'attempt', j.attempt, 'at', v_now,
                                      'details', jsonb_build_object('error', 'heartbeat timeout',
                                                                    'worker_id', j.worker_id,
                                                                    'heartbeat_at', j.heartbeat_at)))
                             ELSE j.errors END
          FROM pgq.entrypoints c
         WHERE j.id = ANY (v_ids)
           AND c.entrypoint = j.entrypoint
        RETURNING j.id, j.lease, j.entrypoint, j.payload, j.headers, j.priority, j.attempt,
                  j.enqueued_at, j.run_at, j.dedupe_key, c.max_attempts, c.heartbeat_timeout
    )
    SELECT c.* FROM claimed c ORDER BY c.priority DESC, c.run_at, c.id;
END
$$;
COMMENT ON FUNCTION pgq.claim(uuid, text[], int, timestamptz) IS
    'Claims up to batch_size runnable jobs (queued and due, or running with a stale heartbeat): priority desc, then due time, then id. SKIP LOCKED; respects concurrency limits; each claim gets a new lease.';

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

-- sql/functions/compact_jobs.sql
-- pgq.compact_jobs(max_rows, max_bytes, lock_wait, at)
-- Contract: gives pgq.jobs (heap, TOAST and indexes) back its compact size when dead row
--   versions have bloated it; autovacuum makes that space reusable but never shrinks an index,
--   and at a high job rate it comes too late to keep the heap small. Decides in steps, cheapest
--   first, and returns one row (compacted, reason, rows, bytes_before, bytes_after):
--   1. One compactor at a time (a transaction advisory lock): else 'busy' at once.
--   2. Without reading the table: the total size (pg_total_relation_size: heap, TOAST,
--      indexes) at most 1 MiB, or at most twice what the last compaction left when that was
--      less than 5 minutes before at -> 'not bloated'. This is all most calls cost. (The
--      second rule also holds back a compaction that could not shrink the table, because a
--      long transaction kept the old row versions alive, until the table has doubled again.)
--   3. An exact count of the live rows and their size (a plain read: claims go on; the count
--      stops past max_rows; the size is their variable-length columns as stored, compressed or
--      in TOAST, plus 100 bytes a row): over max_rows -> 'too many rows', over max_bytes ->
--      'too much data' (both bound how long the rewrite holds the lock); the total size at
--      most twice rows x bytes per row (learned at the last compaction of at least 1,000 rows,
--      512 until then) -> 'not bloated'. Statistics (n_live_tup) are not used: they drift.
--   4. ACCESS EXCLUSIVE lock on pgq.jobs.
--   5. CLUSTER pgq.jobs USING jobs_pkey: copies the rows some transaction can still see, in id
--      order, into new files and rebuilds the indexes. Every column stays as it was (leases,
--      heartbeats, attempts, errors) and so do the rows' transaction ids, so it is MVCC-safe
--      (unlike TRUNCATE, a snapshot taken before still sees every row); no trigger fires, no
--      notification is sent, pgq.job_id_seq is not touched. fillfactor 50 is kept.
--   No lock of steps 2 to 4 is waited for longer than lock_wait (0: 1 ms): else 'busy'.
--   A compaction is recorded in pgq.compaction (time at, rows, sizes, bytes per row) and
--   returned with reason 'bloated'. Otherwise rows and bytes_before are the figures the decision
--   was made on (NULL when not read yet) and bytes_after is NULL. at NULL means now(). Run it in
--   its own transaction (autocommit): the lock is held until commit.
-- Locking: until step 4 only share locks (AccessShare on pgq.jobs, like any reader); then
--   ACCESS EXCLUSIVE on pgq.jobs until commit: every claim, heartbeat, completion and enqueue
--   waits for the rewrite (about 40 ms for 10,000 live rows, 250 ms for 50,000), and queues
--   behind the lock request for at most lock_wait before that.
-- Errors: PQ008 max_rows or max_bytes NULL or negative, lock_wait NULL, negative or over 1 minute.
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
    c_floor      constant bigint := 1048576;      -- never compact a table under 1 MiB
    c_default_bpr constant bigint := 512;         -- bytes per row before any learned figure
    c_learn_rows constant bigint := 1000;         -- learn bytes per row from this many rows
    v_now        timestamptz := coalesce(compact_jobs.at, now());
    v_state      pgq.compaction;
    v_size       bigint;
    v_reason     text;
    v_bar        bigint;
    v_rows       bigint;
    v_data       bigint;
    v_after      bigint;
    v_old_wait   text;
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

    -- No lock is waited for longer than lock_wait (0: 1 ms), not even the share lock the size
    -- functions take. The setting is restored before the rewrite; on a timeout the sub-block's
    -- rollback undoes it.
    v_old_wait := current_setting('lock_timeout');
    BEGIN
        PERFORM set_config('lock_timeout',
            greatest(1, ceil(extract(epoch FROM compact_jobs.lock_wait) * 1000))::bigint::text, true);

        -- 1. One compactor at a time; the others return at once instead of queueing for the lock.
        IF NOT pg_try_advisory_xact_lock('pgq.jobs'::regclass::oid::int, 0) THEN
            v_reason := 'busy';
        END IF;

        -- 2. Without reading the table: file sizes and the last compaction.
        IF v_reason IS NULL THEN
            SELECT * INTO v_state FROM pgq.compaction;
            v_size := pg_total_relation_size('pgq.jobs');
            v_bar := c_floor;
            IF v_state.compacted_at > v_now - interval '5 minutes' THEN
                v_bar := greatest(v_bar, 2 * v_state.bytes_after);
            END IF;
            IF v_size <= v_bar THEN
                v_reason := 'not bloated';
            END IF;
        END IF;

        -- 3. Exact figures, read without blocking anyone; stops counting past max_rows.
        IF v_reason IS NULL THEN
            SELECT count(*),
                   coalesce(sum(100 + pg_column_size(s.entrypoint) + coalesce(pg_column_size(s.payload), 0)
                                + coalesce(pg_column_size(s.headers), 0)
                                + coalesce(pg_column_size(s.dedupe_key), 0) + pg_column_size(s.errors)), 0)
              INTO v_rows, v_data
              FROM (SELECT j.entrypoint, j.payload, j.headers, j.dedupe_key, j.errors
                      FROM pgq.jobs j
                     LIMIT compact_jobs.max_rows::bigint + 1) s;
            IF v_rows > compact_jobs.max_rows THEN
                v_reason := 'too many rows';
            ELSIF v_data > compact_jobs.max_bytes THEN
                v_reason := 'too much data';
            ELSIF v_size <= 2 * v_rows * coalesce(v_state.bytes_per_row, c_default_bpr) THEN
                v_reason := 'not bloated';
            END IF;
        END IF;

        -- 4. The table lock. Claims queue behind the request while it waits.
        IF v_reason IS NULL THEN
            LOCK TABLE pgq.jobs IN ACCESS EXCLUSIVE MODE;
        END IF;
        PERFORM set_config('lock_timeout', v_old_wait, true);
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
        v_reason := 'busy';
    END;
    IF v_reason IS NOT NULL THEN
        RETURN QUERY SELECT false, v_reason, v_rows, v_size, NULL::bigint;
        RETURN;
    END IF;

    -- 5. Rewrite. The size is measured again under the lock: rows added while waiting count.
    v_size := pg_total_relation_size('pgq.jobs');
    CLUSTER pgq.jobs USING jobs_pkey;
    SELECT count(*) INTO v_rows FROM pgq.jobs;
    v_after := pg_total_relation_size('pgq.jobs');

    INSERT INTO pgq.compaction AS c (id, compacted_at, rows, bytes_before, bytes_after, bytes_per_row,
                                     compactions)
    VALUES (true, v_now, v_rows, v_size, v_after,
            CASE WHEN v_rows >= c_learn_rows THEN v_after / v_rows END, 1)
    ON CONFLICT (id) DO UPDATE
       SET compacted_at = excluded.compacted_at,
           rows = excluded.rows,
           bytes_before = excluded.bytes_before,
           bytes_after = excluded.bytes_after,
           bytes_per_row = coalesce(excluded.bytes_per_row, c.bytes_per_row),
           compactions = c.compactions + 1;

    RETURN QUERY SELECT true, 'bloated', v_rows, v_size, v_after;
END
$$;
COMMENT ON FUNCTION pgq.compact_jobs(int, bigint, interval, timestamptz) IS
    'Rewrites pgq.jobs and its indexes to their compact size (CLUSTER) when bloated; waits at most lock_wait for the lock. Returns compacted, reason, rows, bytes before and after.';

-- sql/functions/complete.sql
-- pgq.complete(worker_id, ids, leases, statuses, details, at)
-- Contract: ends the attempts this worker still owns under those leases; returns the ids
--   accepted. A stale lease (the job was re-claimed, or is gone) is ignored, never applied.
--   statuses: 'successful' and 'canceled' move the job to history with its details.
--   'failed' applies the entrypoint's retry policy: while attempt < max_attempts the job is
--   queued again after backoff_base * 2^(attempt-1), capped at backoff_max, with equal jitter
--   (a delay between half and all of that; computed in seconds, a month counting as 30 days),
--   or after details->'retry_after' seconds when the handler asked for it; otherwise it moves
--   to history as failed (dead). A failed job whose cancellation was requested (pgq.cancel)
--   is not retried: it moves to history as canceled. Every failure's details are kept in the
--   job's error list. at NULL means now(). Idempotent: repeating a call whose answer was lost
--   (the connection dropped after the commit) finds the results already applied under the same
--   leases, returns those ids again and changes nothing.
-- Locking: row locks on the owned jobs; waits only for a claimer that holds one of them at
--   this instant, and then sees its new lease (and leaves the job alone).
-- Errors: PQ009, PQ003 (arguments), PQ004 unknown status, PQ009 bad retry_after.
CREATE OR REPLACE FUNCTION pgq.complete(
    worker_id  uuid,
    ids        bigint[],
    leases     bigint[],
    statuses   text[],
    details    jsonb[]     DEFAULT NULL,
    at         timestamptz DEFAULT NULL
)
RETURNS SETOF bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans: planning these statements on every call cost more than running them. No JIT:
-- a generic plan's estimates (unknown LIMIT, large backlog) would compile it on every call.
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_now   timestamptz := coalesce(complete.at, now());
    v_n     int := pgq._check_batch(complete.worker_id, complete.ids, complete.leases);
    v_bad   record;
    v_accepted bigint[];
BEGIN
    IF complete.statuses IS NULL THEN
        RAISE EXCEPTION 'statuses must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF cardinality(complete.statuses) <> v_n THEN
        RAISE EXCEPTION 'statuses has % elements but ids has %', coalesce(cardinality(complete.statuses)::text, 'NULL'), v_n
            USING ERRCODE = 'PQ003';
    END IF;
    IF complete.details IS NOT NULL AND cardinality(complete.details) <> v_n THEN
        RAISE EXCEPTION 'details has % elements but ids has %', cardinality(complete.details), v_n
            USING ERRCODE = 'PQ003';
    END IF;
    SELECT u.s, u.d, u.ord INTO v_bad
      FROM unnest(complete.statuses, complete.details) WITH ORDINALITY AS u(s, d, ord)
     WHERE u.s IS NULL OR u.s NOT IN ('successful', 'failed', 'canceled')
        OR (jsonb_typeof(u.d) = 'object' AND u.d ? 'retry_after'
            AND (jsonb_typeof(u.d -> 'retry_after') <> 'number'
                 OR (u.d ->> 'retry_after')::numeric NOT BETWEEN 0 AND 31536000))
     ORDER BY u.ord
     LIMIT 1;
    IF FOUND THEN
        IF v_bad.s IS NULL OR v_bad.s NOT IN ('successful', 'failed', 'canceled') THEN
            RAISE EXCEPTION 'unknown status % at position %: use successful, failed or canceled',
                coalesce(quote_literal(v_bad.s), 'NULL'), v_bad.ord
                USING ERRCODE = 'PQ004';
        END IF;
        RAISE EXCEPTION 'retry_after at position % must be a number of seconds from 0 to 31536000, got %',
            v_bad.ord, v_bad.d -> 'retry_after'
            USING ERRCODE = 'PQ009';
    END IF;

    -- Failures with attempts left go back to the queue. Each step is one statement whose
    -- WHERE clause is the lease fence, re-checked by PostgreSQL on concurrent updates: no
    -- separate locking pass.
    IF 'failed' = ANY (complete.statuses) THEN
        WITH retried AS (
            UPDATE pgq.jobs j
               SET status = 'queued',
                   run_at = v_now
                            + CASE WHEN jsonb_typeof(i.details) = 'object' AND i.details ? 'retry_after'
                                   THEN make_interval(secs => (i.details ->> 'retry_after')::double precision)
                                   -- In seconds (numeric): base * 2^40 as an interval overflows
                                   -- for a base of a few seconds or more.
                                   ELSE make_interval(secs => least(extract(epoch FROM c.backoff_max),
                                                                    extract(epoch FROM c.backoff_base)
                                                                    * 2::numeric ^ least(j.attempt - 1, 40))::double precision
                                                              * (0.5 + random() * 0.5)) END,
                   lease = NULL,
                   worker_id = NULL,
                   started_at = NULL,
                   heartbeat_at = NULL,
                   errors = j.errors || jsonb_build_array(jsonb_build_object(
                                'attempt', j.attempt, 'at', v_now, 'lease', j.lease, 'details', i.details))
              FROM unnest(complete.ids, complete.leases, complete.statuses, complete.details)
                   AS i(id, lease, status, details),
                   pgq.entrypoints c
             WHERE j.id = i.id
               AND j.lease = i.lease
               AND j.status = 'running'
               AND j.worker_id = complete.worker_id
               AND i.status = 'failed'
               AND c.entrypoint = j.entrypoint
               AND j.attempt < c.max_attempts
               AND NOT j.cancel_requested
            RETURNING j.id
        )
        SELECT array_agg(r.id) INTO v_accepted FROM retried r;
    END IF;

    -- Everything else this worker still owns moves to history (retried jobs are queued now,
    -- so the lease fence of _archive leaves them alone).
    SELECT coalesce(v_accepted, '{}') || coalesce(array_agg(a.id), '{}') INTO v_accepted
      FROM pgq._archive(complete.ids, complete.statuses, complete.details, v_now,
                        complete.worker_id, complete.leases) AS a(id);

    -- A repeated call (its first answer was lost with the connection) finds its own results
    -- already applied under the same lease: accepted again, nothing changes.
    IF cardinality(v_accepted) < v_n THEN
        SELECT v_accepted || coalesce(array_agg(i.id), '{}') INTO v_accepted
          FROM unnest(complete.ids, complete.leases) AS i(id, lease)
         WHERE i.id <> ALL (v_accepted)
           AND (EXISTS (SELECT 1 FROM pgq.job_history h
                         WHERE h.id = i.id AND h.lease = i.lease AND h.worker_id = complete.worker_id)
                OR EXISTS (SELECT 1 FROM pgq.jobs j
                            WHERE j.id = i.id AND j.lease IS DISTINCT FROM i.lease
                              AND j.errors @> jsonb_build_array(jsonb_build_object('lease', i.lease))));
    END IF;
    RETURN QUERY SELECT unnest(v_accepted);
END
$$;
COMMENT ON FUNCTION pgq.complete(uuid, bigint[], bigint[], text[], jsonb[], timestamptz) IS
    'Ends attempts owned under these leases: successful/canceled go to history; failed is retried with capped, jittered exponential backoff until max_attempts, then dead. Returns the ids accepted; stale leases are ignored.';

-- sql/functions/configure.sql
-- pgq.configure(entrypoint, concurrency_limit, max_attempts, backoff_base, backoff_max,
--               heartbeat_timeout, reset)
-- Contract: stores the policy of one entrypoint in pgq.entrypoints, the same for every worker in
--   any language, and returns the resulting row. NULL leaves a setting unchanged; reset => true
--   first returns every setting to its default (no concurrency limit, 5 attempts, 1 s base,
--   5 min cap, 30 s heartbeat timeout) and then applies the given ones. concurrency_limit 0
--   pauses the entrypoint (nothing is claimed). Entrypoints never configured use the defaults.
-- Locking: the entrypoint's policy row, until commit (claims of limited entrypoints skip it).
-- Errors: PQ001 bad entrypoint, PQ008 a value out of range (named in the message).
CREATE OR REPLACE FUNCTION pgq.configure(
    entrypoint         text,
    concurrency_limit  int      DEFAULT NULL,
    max_attempts       int      DEFAULT NULL,
    backoff_base       interval DEFAULT NULL,
    backoff_max        interval DEFAULT NULL,
    heartbeat_timeout  interval DEFAULT NULL,
    reset              boolean  DEFAULT false
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
BEGIN
    PERFORM pgq._check_name(configure.entrypoint, 'entrypoint', 'PQ001');
    IF configure.concurrency_limit < 0 THEN
        RAISE EXCEPTION 'concurrency_limit must be >= 0 (0 pauses), got %', configure.concurrency_limit
            USING ERRCODE = 'PQ008';
    END IF;
    IF configure.max_attempts < 1 THEN
        RAISE EXCEPTION 'max_attempts must be >= 1, got %', configure.max_attempts USING ERRCODE = 'PQ008';
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
    IF configure.reset THEN
        -- Column defaults are the one place the default policy is written down.
        UPDATE pgq.entrypoints e
           SET concurrency_limit = DEFAULT, max_attempts = DEFAULT, backoff_base = DEFAULT,
               backoff_max = DEFAULT, heartbeat_timeout = DEFAULT
         WHERE e.entrypoint = configure.entrypoint;
    END IF;
    SELECT * INTO v_row FROM pgq.entrypoints e WHERE e.entrypoint = configure.entrypoint FOR UPDATE;

    v_row.concurrency_limit := coalesce(configure.concurrency_limit, v_row.concurrency_limit);
    v_row.max_attempts := coalesce(configure.max_attempts, v_row.max_attempts);
    v_row.backoff_base := coalesce(configure.backoff_base, v_row.backoff_base);
    v_row.backoff_max := coalesce(configure.backoff_max, v_row.backoff_max);
    v_row.heartbeat_timeout := coalesce(configure.heartbeat_timeout, v_row.heartbeat_timeout);
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
           updated_at = now()
     WHERE e.entrypoint = configure.entrypoint
    RETURNING * INTO v_row;
    RETURN v_row;
END
$$;
COMMENT ON FUNCTION pgq.configure(text, int, int, interval, interval, interval, boolean) IS
    'Sets the policy of one entrypoint for every worker: concurrency_limit (0 pauses), max_attempts, backoff_base, backoff_max, heartbeat_timeout. NULL leaves a setting unchanged; reset => true restores defaults first.';

-- sql/functions/enqueue.sql
-- pgq.enqueue(entrypoint, payload, priority, run_at, dedupe_key, headers, on_conflict)
-- Contract: adds one job and returns its id; the same rules, defaults and errors as
--   pgq.enqueue_many for one element (the messages come from the same pgq._check_job), without
--   its array handling: one INSERT. run_at NULL means now.
-- Locking: as pgq.enqueue_many.
-- Errors: PQ001, PQ005, PQ006, PQ007, PQ009 (see docs/errors.md). Any error adds nothing.
CREATE OR REPLACE FUNCTION pgq.enqueue(
    entrypoint   text,
    payload      jsonb       DEFAULT NULL,
    priority     int         DEFAULT 0,
    run_at       timestamptz DEFAULT NULL,
    dedupe_key   text        DEFAULT NULL,
    headers      jsonb       DEFAULT NULL,
    on_conflict  text        DEFAULT 'raise'
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_id  bigint;
BEGIN
    IF enqueue.on_conflict IS NULL OR enqueue.on_conflict NOT IN ('raise', 'existing') THEN
        RAISE EXCEPTION 'on_conflict must be ''raise'' or ''existing'', got %', coalesce(quote_literal(enqueue.on_conflict), 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF enqueue.entrypoint IS NULL OR enqueue.entrypoint = '' OR octet_length(enqueue.entrypoint) > 200
       OR enqueue.entrypoint ~ '[[:cntrl:]]' OR enqueue.priority NOT BETWEEN -32768 AND 32767
       OR pg_column_size(enqueue.payload) > 1048576
       OR (enqueue.headers IS NOT NULL AND jsonb_typeof(enqueue.headers) <> 'object') THEN
        PERFORM pgq._check_job(enqueue.entrypoint, enqueue.payload, enqueue.priority, enqueue.headers, 1);
    END IF;

    INSERT INTO pgq.jobs (entrypoint, payload, priority, run_at, dedupe_key, headers)
    VALUES (enqueue.entrypoint, enqueue.payload, coalesce(enqueue.priority, 0),
            coalesce(enqueue.run_at, now()), enqueue.dedupe_key, enqueue.headers)
        ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
    RETURNING id INTO v_id;
    IF v_id IS NOT NULL THEN
        RETURN v_id;
    END IF;

    -- The dedupe key is held by a live job.
    IF enqueue.on_conflict = 'raise' THEN
        RAISE EXCEPTION 'dedupe key % is already held by a live job', quote_literal(enqueue.dedupe_key)
            USING ERRCODE = 'PQ007',
                  HINT = 'Pass on_conflict => ''existing'' to get the id of the live job instead.';
    END IF;
    -- 'existing': a new statement sees the holder that made our insert skip.
    SELECT j.id INTO v_id FROM pgq.jobs j WHERE j.dedupe_key = enqueue.dedupe_key;
    IF v_id IS NULL THEN
        -- The holder finished between our insert and this look-up: its key is free now.
        RAISE EXCEPTION 'dedupe key % was released while enqueueing; retry the call', quote_literal(enqueue.dedupe_key)
            USING ERRCODE = 'PQ007';
    END IF;
    RETURN v_id;
END
$$;
COMMENT ON FUNCTION pgq.enqueue(text, jsonb, int, timestamptz, text, jsonb, text) IS
    'Adds one job; returns its id. run_at NULL means now; dedupe_key is unique among live jobs (on_conflict: raise or existing).';

-- sql/functions/enqueue_many.sql
-- pgq.enqueue_many(entrypoints, payloads, priorities, run_ats, dedupe_keys, headers, on_conflict)
-- Contract: adds one job per element of entrypoints in one statement and returns their ids in
--   input order. Every other array is optional (NULL: defaults for all) and, when given, must
--   have the same length. Element defaults: payload NULL, priority 0, run_at now(), no dedupe
--   key, headers NULL. Jobs are due at run_at and claimed by priority (higher first), then due
--   time, then enqueue order. A dedupe key is unique among live (queued or running) jobs:
--   on_conflict => 'raise' (default) raises PQ007 and adds nothing; 'existing' returns the id of
--   the live job that holds the key instead of adding one.
-- Locking: inserts only; a clashing dedupe key waits for the transaction that holds it.
-- Errors: PQ001 bad entrypoint, PQ003 arrays of unequal length, PQ005 priority out of range,
--   PQ006 payload over 1 MiB, PQ007 dedupe key taken, PQ009 bad headers or on_conflict.
--   Any error adds nothing.
CREATE OR REPLACE FUNCTION pgq.enqueue_many(
    entrypoints  text[],
    payloads     jsonb[]       DEFAULT NULL,
    priorities   int[]         DEFAULT NULL,
    run_ats      timestamptz[] DEFAULT NULL,
    dedupe_keys  text[]        DEFAULT NULL,
    headers      jsonb[]       DEFAULT NULL,
    on_conflict  text          DEFAULT 'raise'
)
RETURNS SETOF bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans: planning these statements on every call cost more than running them. No JIT:
-- a generic plan's estimates (unknown LIMIT, large backlog) would compile it on every call.
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_n        int := coalesce(cardinality(enqueue_many.entrypoints), 0);
    v_bad      record;
    v_ids      bigint[];
    v_missing  text[];
    v_count    bigint;
BEGIN
    IF v_n = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(enqueue_many.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    IF enqueue_many.on_conflict IS NULL OR enqueue_many.on_conflict NOT IN ('raise', 'existing') THEN
        RAISE EXCEPTION 'on_conflict must be ''raise'' or ''existing'', got %', coalesce(quote_literal(enqueue_many.on_conflict), 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    SELECT a.name, a.len INTO v_bad
      FROM (VALUES ('payloads', cardinality(enqueue_many.payloads)),
                   ('priorities', cardinality(enqueue_many.priorities)),
                   ('run_ats', cardinality(enqueue_many.run_ats)),
                   ('dedupe_keys', cardinality(enqueue_many.dedupe_keys)),
                   ('headers', cardinality(enqueue_many.headers))) AS a(name, len)
     WHERE a.len IS NOT NULL AND a.len <> v_n
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% has % elements but entrypoints has %', v_bad.name, v_bad.len, v_n
            USING ERRCODE = 'PQ003';
    END IF;

    -- One pass over the input finds the first bad element, if any.
    SELECT u.ord, u.e, u.p, u.pr, u.h INTO v_bad
      FROM unnest(enqueue_many.entrypoints, enqueue_many.payloads, enqueue_many.priorities,
                  enqueue_many.headers) WITH ORDINALITY AS u(e, p, pr, h, ord)
     WHERE u.e IS NULL OR u.e = '' OR octet_length(u.e) > 200 OR u.e ~ '[[:cntrl:]]'
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

    -- Ids first, in input order, so the insert needs no join to report them.
    v_ids := ARRAY(SELECT nextval('pgq.job_id_seq') FROM generate_series(1, v_n));
    INSERT INTO pgq.jobs (id, entrypoint, payload, priority, run_at, dedupe_key, headers)
    SELECT u.id, u.e, u.p, coalesce(u.pr, 0), coalesce(u.ra, now()), u.dk, u.h
      FROM unnest(v_ids, enqueue_many.entrypoints, enqueue_many.payloads, enqueue_many.priorities,
                  enqueue_many.run_ats, enqueue_many.dedupe_keys, enqueue_many.headers)
           AS u(id, e, p, pr, ra, dk, h)
        ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING;
    GET DIAGNOSTICS v_count = ROW_COUNT;

    IF v_count < v_n THEN
        -- A dedupe key was taken: find the elements the insert skipped.
        SELECT array_agg(CASE WHEN j.id IS NULL THEN NULL ELSE x.id END ORDER BY x.ord),
               array_agg(x.dk ORDER BY x.ord) FILTER (WHERE j.id IS NULL)
          INTO v_ids, v_missing
          FROM unnest(v_ids, enqueue_many.dedupe_keys) WITH ORDINALITY AS x(id, dk, ord)
          LEFT JOIN pgq.jobs j ON j.id = x.id;
    END IF;

    IF v_missing IS NOT NULL THEN
        IF enqueue_many.on_conflict = 'raise' THEN
            RAISE EXCEPTION 'dedupe key % is already held by a live job', quote_literal(v_missing[1])
                USING ERRCODE = 'PQ007',
                      HINT = 'Pass on_conflict => ''existing'' to get the id of the live job instead.';
        END IF;
        -- 'existing': a new statement sees the holders that made our insert skip.
        SELECT array_agg(coalesce(x.id, j.id) ORDER BY x.ord) INTO v_ids
          FROM unnest(v_ids, enqueue_many.dedupe_keys) WITH ORDINALITY AS x(id, dk, ord)
          LEFT JOIN pgq.jobs j ON x.id IS NULL AND j.dedupe_key = x.dk;
        IF array_position(v_ids, NULL) IS NOT NULL THEN
            -- The holder finished between our insert and this look-up: its key is free now.
            RAISE EXCEPTION 'dedupe key % was released while enqueueing; retry the call', quote_literal(enqueue_many.dedupe_keys[array_position(v_ids, NULL)])
                USING ERRCODE = 'PQ007';
        END IF;
    END IF;
    RETURN QUERY SELECT unnest(v_ids);
END
$$;
COMMENT ON FUNCTION pgq.enqueue_many(text[], jsonb[], int[], timestamptz[], text[], jsonb[], text) IS
    'Adds many jobs in one statement; returns their ids in input order. Optional arrays must match entrypoints in length. on_conflict: raise (PQ007) or existing.';

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

-- sql/functions/heartbeat.sql
-- pgq.heartbeat(worker_id, ids, leases, at)
-- Contract: refreshes heartbeat_at = at for each job this worker still owns under that lease,
--   and answers one row per input id, in input order: state 'ok', 'cancel_requested' (still
--   owned, but pgq.cancel asked it to stop) or 'lost' (re-claimed by another worker, finished
--   or gone). A lost job is never touched. at NULL means now().
-- Locking: row locks on the owned jobs (the update is HOT: heartbeat_at is in no index).
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
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_batch(heartbeat.worker_id, heartbeat.ids, heartbeat.leases);
    RETURN QUERY
    WITH input AS (
        SELECT u.id, u.lease, u.ord
          FROM unnest(heartbeat.ids, heartbeat.leases) WITH ORDINALITY AS u(id, lease, ord)
    ), beat AS (
        UPDATE pgq.jobs j
           SET heartbeat_at = coalesce(heartbeat.at, now())
          FROM input i
         WHERE j.id = i.id
           AND j.lease = i.lease
           AND j.status = 'running'
           AND j.worker_id = heartbeat.worker_id
        RETURNING j.id, j.cancel_requested
    )
    SELECT i.id,
           CASE WHEN b.id IS NULL THEN 'lost'
                WHEN b.cancel_requested THEN 'cancel_requested'
                ELSE 'ok' END
      FROM input i
      LEFT JOIN beat b ON b.id = i.id
     ORDER BY i.ord;
END
$$;
COMMENT ON FUNCTION pgq.heartbeat(uuid, bigint[], bigint[], timestamptz) IS
    'Refreshes the heartbeat of jobs this lease still owns; one row per id: ok, cancel_requested or lost.';

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
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT h.entrypoint, h.status, count(*), max(h.attempt),
           avg(extract(epoch FROM h.finished_at - h.enqueued_at))::float8
      FROM pgq.job_history h
     WHERE (history_summary.entrypoints IS NULL OR h.entrypoint = ANY (history_summary.entrypoints))
       AND h.id >= coalesce(history_summary.since_id, 0)
     GROUP BY h.entrypoint, h.status
     ORDER BY h.entrypoint, h.status;
$$;
COMMENT ON FUNCTION pgq.history_summary(text[], bigint) IS
    'Finished jobs per entrypoint and status: count, most attempts, mean enqueue-to-finish seconds (ids >= since_id).';

-- sql/functions/next_run_at.sql
-- pgq.next_run_at(entrypoints, at)
-- Contract: the earliest run_at after `at` among queued jobs of the given entrypoints, or NULL
--   when none is waiting. An idle worker sleeps until then (or until a notification) instead of
--   polling at a fixed interval. Jobs already due are not considered: claim takes those.
--   at NULL means now().
-- Locking: none (reads only).
-- Errors: PQ001 NULL or empty entrypoints.
CREATE OR REPLACE FUNCTION pgq.next_run_at(entrypoints text[], at timestamptz DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    IF coalesce(cardinality(next_run_at.entrypoints), 0) = 0 THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array, got %', coalesce(next_run_at.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    RETURN (SELECT min(j.run_at)
              FROM pgq.jobs j
             WHERE j.entrypoint = ANY (next_run_at.entrypoints)
               AND j.status = 'queued'
               AND j.run_at > coalesce(next_run_at.at, now()));
END
$$;
COMMENT ON FUNCTION pgq.next_run_at(text[], timestamptz) IS
    'Earliest run_at after at among queued jobs of these entrypoints (NULL if none): how long an idle worker may sleep.';

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

-- sql/functions/prune_history.sql
-- pgq.prune_history(older_than, at, batch)
-- Contract: deletes up to `batch` history rows that finished before at - older_than and returns
--   how many it deleted; call it until it returns less than `batch` (the worker's maintenance
--   step does). Keeps the history table bounded. at NULL means now().
-- Locking: row locks on the deleted history rows (SKIP LOCKED: two pruners never wait).
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
AS $$
#variable_conflict use_column
DECLARE
    v_n bigint;
BEGIN
    IF prune_history.older_than IS NULL OR prune_history.older_than < interval '0' THEN
        RAISE EXCEPTION 'older_than must be a non-negative interval, got %', coalesce(prune_history.older_than::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    IF prune_history.batch IS NULL OR prune_history.batch NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION 'batch must be between 1 and 100000, got %', coalesce(prune_history.batch::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    DELETE FROM pgq.job_history h
     WHERE h.id IN (SELECT o.id
                      FROM pgq.job_history o
                     WHERE o.finished_at < coalesce(prune_history.at, now()) - prune_history.older_than
                     ORDER BY o.finished_at
                     LIMIT prune_history.batch
                       FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq.prune_history(interval, timestamptz, int) IS
    'Deletes up to batch history rows finished more than older_than ago; returns how many. Call until it returns less than batch.';

-- sql/functions/release.sql
-- pgq.release(worker_id, ids, leases)
-- Contract: gives back claimed jobs that never started (a shutting-down worker): each job this
--   worker still owns under that lease returns to queued, keeps its place (run_at unchanged) and
--   its attempt count is restored (a release is not an attempt). A job whose cancellation was
--   requested moves to history as canceled instead. Returns the ids released (or canceled); a
--   stale lease is ignored.
-- Locking: row locks on the released jobs.
-- Errors: PQ009, PQ003 (see pgq._check_batch).
CREATE OR REPLACE FUNCTION pgq.release(worker_id uuid, ids bigint[], leases bigint[])
RETURNS SETOF bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans: planning these statements on every call cost more than running them. No JIT:
-- a generic plan's estimates (unknown LIMIT, large backlog) would compile it on every call.
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_canceled bigint[];
BEGIN
    PERFORM pgq._check_batch(release.worker_id, release.ids, release.leases);

    -- A job whose cancellation was requested is not queued again: it ends as canceled.
    SELECT array_agg(l.id) INTO v_canceled
      FROM (SELECT j.id
              FROM pgq.jobs j
              JOIN unnest(release.ids, release.leases) AS u(id, lease) ON j.id = u.id AND j.lease = u.lease
             WHERE j.status = 'running'
               AND j.worker_id = release.worker_id
               AND j.cancel_requested
             ORDER BY j.id
               FOR UPDATE OF j) AS l;
    IF v_canceled IS NOT NULL THEN
        RETURN QUERY SELECT pgq._archive(v_canceled, array_fill('canceled'::text, ARRAY[cardinality(v_canceled)]),
                                         NULL, now());
    END IF;

    RETURN QUERY
    UPDATE pgq.jobs j
       SET status = 'queued',
           attempt = j.attempt - 1,
           lease = NULL,
           worker_id = NULL,
           started_at = NULL,
           heartbeat_at = NULL
      FROM unnest(release.ids, release.leases) AS u(id, lease)
     WHERE j.id = u.id
       AND j.lease = u.lease
       AND j.status = 'running'
       AND j.worker_id = release.worker_id
    RETURNING j.id;
END
$$;
COMMENT ON FUNCTION pgq.release(uuid, bigint[], bigint[]) IS
    'Returns claimed, never-started jobs to the queue without counting an attempt; returns the ids released.';

-- sql/functions/requeue.sql
-- pgq.requeue(ids, at)
-- Contract: puts finished jobs that failed (dead) or were canceled back in the queue: each
--   leaves pgq.job_history and becomes a queued job again with the same id, payload, headers,
--   priority and dedupe key, attempt 0, due at `at`, and its error list kept. Successful jobs
--   and unknown ids are ignored. Returns the ids requeued. at NULL means now().
-- Locking: row locks on the history rows; inserts into pgq.jobs (fires the enqueue notice).
-- Errors: PQ009 NULL ids or NULL element; PQ007 when a live job already holds the dedupe key
--   (nothing is requeued).
CREATE OR REPLACE FUNCTION pgq.requeue(ids bigint[], at timestamptz DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_ids   bigint[];
    v_clash text;
BEGIN
    IF requeue.ids IS NULL OR array_position(requeue.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(requeue.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;

    WITH back AS (
        DELETE FROM pgq.job_history h
         WHERE h.id = ANY (requeue.ids)
           AND h.status IN ('failed', 'canceled')
        RETURNING h.*
    ), ins AS (
        INSERT INTO pgq.jobs (id, entrypoint, priority, run_at, enqueued_at, payload, headers,
                              dedupe_key, errors)
        SELECT b.id, b.entrypoint, b.priority, coalesce(requeue.at, now()), b.enqueued_at,
               b.payload, b.headers, b.dedupe_key, b.errors
          FROM back b
         ORDER BY b.id
            ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
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
    RETURN QUERY SELECT unnest(v_ids);
END
$$;
COMMENT ON FUNCTION pgq.requeue(bigint[], timestamptz) IS
    'Puts failed (dead) or canceled jobs from history back in the queue with attempt 0; returns the ids requeued.';

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

-- Triggers: small, data-free notifications on channel pgq_events, one per statement (and chunk).
CREATE TRIGGER jobs_after_insert AFTER INSERT ON pgq.jobs
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._jobs_after_insert();
CREATE TRIGGER jobs_after_update AFTER UPDATE ON pgq.jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._jobs_after_update();
CREATE TRIGGER jobs_after_delete AFTER DELETE ON pgq.jobs
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._jobs_after_delete();

-- Views.
CREATE VIEW pgq.queue_stats AS
SELECT c.entrypoint,
       count(j.id) FILTER (WHERE j.status = 'queued')                             AS queued,
       count(j.id) FILTER (WHERE j.status = 'queued' AND j.run_at <= now())       AS due,
       count(j.id) FILTER (WHERE j.status = 'running')                            AS running,
       count(j.id) FILTER (WHERE j.status = 'running'
                             AND j.heartbeat_at < now() - c.heartbeat_timeout)     AS stale,
       now() - min(j.enqueued_at) FILTER (WHERE j.status = 'queued')              AS oldest_queued_age,
       c.concurrency_limit,
       c.max_attempts,
       c.heartbeat_timeout
  FROM pgq.entrypoints c
  LEFT JOIN pgq.jobs j ON j.entrypoint = c.entrypoint
 GROUP BY c.entrypoint, c.concurrency_limit, c.max_attempts, c.heartbeat_timeout;
COMMENT ON VIEW pgq.queue_stats IS
    'Per entrypoint: queued, due, running, stale (heartbeat older than its timeout), age of the oldest queued job, and its policy.';

CREATE VIEW pgq.failed_jobs AS
SELECT h.id, h.entrypoint, h.attempt, h.payload, h.headers, h.priority, h.dedupe_key,
       h.enqueued_at, h.started_at, h.finished_at, h.worker_id, h.details, h.errors
  FROM pgq.job_history h
 WHERE h.status = 'failed';
COMMENT ON VIEW pgq.failed_jobs IS
    'Dead jobs: attempts used up. pgq.requeue(ids) puts them back in the queue.';

-- Privileges: nothing for PUBLIC; producers enqueue, cancel and read stats; workers run jobs.
REVOKE ALL ON ALL TABLES IN SCHEMA pgq FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA pgq FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgq FROM PUBLIC;
REVOKE ALL ON TYPE pgq.claimed_job FROM PUBLIC;

GRANT SELECT ON pgq.queue_stats TO pgq_producer, pgq_worker;
GRANT EXECUTE ON FUNCTION pgq.history_summary(text[], bigint) TO pgq_producer, pgq_worker;
GRANT USAGE ON TYPE pgq.claimed_job TO pgq_worker;
GRANT EXECUTE ON FUNCTION
    pgq.enqueue(text, jsonb, int, timestamptz, text, jsonb, text),
    pgq.enqueue_many(text[], jsonb[], int[], timestamptz[], text[], jsonb[], text),
    pgq.cancel(bigint[], timestamptz)
    TO pgq_producer;
GRANT EXECUTE ON FUNCTION
    pgq.claim(uuid, text[], int, timestamptz),
    pgq.heartbeat(uuid, bigint[], bigint[], timestamptz),
    pgq.complete(uuid, bigint[], bigint[], text[], jsonb[], timestamptz),
    pgq.release(uuid, bigint[], bigint[]),
    pgq.next_run_at(text[], timestamptz),
    pgq.prune_history(interval, timestamptz, int)
    TO pgq_worker;

CREATE TRIGGER schedules_changed AFTER INSERT OR DELETE OR UPDATE OF cron, timezone ON pgq.schedules
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._schedules_changed();

REVOKE ALL ON pgq.schedules FROM PUBLIC;
GRANT SELECT ON pgq.schedules TO pgq_producer, pgq_worker;
GRANT EXECUTE ON FUNCTION
    pgq.schedule(text, text, text, timestamptz, text, jsonb, int, jsonb, text, interval, interval),
    pgq.claim_schedules(uuid, int, timestamptz),
    pgq.fire_schedule(uuid, text, bigint, timestamptz, timestamptz, timestamptz),
    pgq.next_schedule_at()
    TO pgq_worker;

REVOKE ALL ON pgq.compaction FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgq.compact_jobs(int, bigint, interval, timestamptz) TO pgq_worker;
