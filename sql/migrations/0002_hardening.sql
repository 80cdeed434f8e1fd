-- pgq-thin migration 0002 (not released yet): what this release changes after 0.1.0. Each change
-- adds its hand-written DDL below under a comment naming it.
-- Hand-written DDL before the functions section (tables, types, indexes, dropped or
-- re-signed functions), grants and triggers after it. Not released yet: see RELEASED.

-- Operate it: workers registry, metrics rollup, pause/resume, job lookup (docs/sql-api.md,
-- "Seeing and steering the queue"). New roles, tables, a column on pgq.entrypoints and one on
-- pgq.job_history; grants and views after the functions section.

-- Roles for dashboards (read only) and operators (actions). Cluster-wide, created once.
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

-- Paused entrypoints: claims skip them (queued and stale jobs alike) until pgq.resume; the
-- rest of the policy is left as configured.
ALTER TABLE pgq.entrypoints ADD COLUMN paused_at timestamptz;
ALTER TABLE pgq.entrypoints ADD COLUMN paused_by text;

-- Metrics rollup. Every history row records the transaction that wrote it (finished_xid);
-- pgq.rollup_metrics folds rows into 10-second buckets exactly once, in xid order, up to the
-- oldest transaction still running (rows of transactions below it are final). Added without a
-- table rewrite: rows finished before this migration keep NULL and are not rolled up.
ALTER TABLE pgq.job_history ADD COLUMN finished_xid xid8;
ALTER TABLE pgq.job_history ALTER COLUMN finished_xid SET DEFAULT pg_current_xact_id();
CREATE INDEX job_history_finished_xid_idx ON pgq.job_history (finished_xid)
    WHERE finished_xid IS NOT NULL;

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


-- BEGIN FUNCTIONS (written by scripts/new_migration.py from sql/functions/; do not edit here)
SET check_function_bodies = false;

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

-- sql/functions/_cursor.sql
-- pgq._cursor(after, kind): decode a paging cursor of pgq.list_jobs / pgq.find_history.
-- Contract: a cursor is the text the listing returned in its cursor column: 'q,<priority>,
--   <run_at>,<id>' (queued jobs, claim order), 'r,<id>' (running jobs, id order) or
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
        IF v_parts[1] = kind AND kind = 'q' AND cardinality(v_parts) = 4 THEN
            RETURN QUERY SELECT v_parts[2]::int, v_parts[3]::timestamptz, v_parts[4]::bigint;
            RETURN;
        ELSIF v_parts[1] = kind AND kind = 'r' AND cardinality(v_parts) = 2 THEN
            RETURN QUERY SELECT NULL::int, NULL::timestamptz, v_parts[2]::bigint;
            RETURN;
        ELSIF v_parts[1] = kind AND kind = 'h' AND cardinality(v_parts) = 3 THEN
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
    'Private. Decodes a paging cursor (q: priority, run_at, id; r: id; h: finished_at, id); PQ009 when it does not parse.';

-- sql/functions/_find_history.sql
-- pgq._find_history(entrypoint, statuses, since, until, error, after_at, after_id, n,
--                   requeueable)
-- Contract: the history rows matching a filter, newest first (finished_at desc, id desc), at
--   most n, strictly after the keyset position (after_at, after_id) when given (keyset paging,
--   no OFFSET). Filter: entrypoint (NULL: all), status among statuses, finished_at in
--   [since, until) (NULL: open), error (NULL: any) found case-insensitively in the details'
--   error, message or traceback (or the details themselves when they are a JSON string).
--   requeueable: leave out rows whose dedupe key a live job holds (they cannot be requeued).
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
            OR NOT EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.dedupe_key = h.dedupe_key))
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
-- Locking: none. Errors: none.
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
--   claims nothing at all. An entrypoint paused with pgq.pause is skipped entirely (no queued
--   job, no stale re-claim) until pgq.resume.
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
               AND e.paused_at IS NULL
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
           AND c.paused_at IS NULL
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
RETURNS SETOF bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
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
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT c.*
      FROM pgq.entrypoints c
     WHERE entrypoint_config.entrypoints IS NULL
        OR c.entrypoint = ANY (entrypoint_config.entrypoints)
     ORDER BY c.entrypoint;
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
-- Locking: none (reads only). Both lookups are index scans (jobs_dedupe_key_idx,
--   job_history_dedupe_key_idx).
-- Errors: PQ009 NULL dedupe_key; PQ002 max_rows outside 1..1000.
CREATE OR REPLACE FUNCTION pgq.find_by_dedupe_key(dedupe_key text, max_rows int DEFAULT 50)
RETURNS SETOF pgq.job_listing
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
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
                 THEN 'q,' || j.priority || ',' || (to_json(j.run_at) #>> '{}') || ',' || j.id
                 ELSE 'r,' || j.id END
       FROM pgq.jobs j
      WHERE j.dedupe_key = find_by_dedupe_key.dedupe_key)
    UNION ALL
    (SELECT h.id, h.entrypoint, h.status, h.priority, h.attempt, h.dedupe_key, h.enqueued_at, NULL::timestamptz,
            h.started_at, NULL::timestamptz, h.finished_at, h.worker_id, h.details ->> 'error', h.details ->> 'message',
            'h,' || (to_json(h.finished_at) #>> '{}') || ',' || h.id
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
           'h,' || (to_json(h.finished_at) #>> '{}') || ',' || h.id
      FROM pgq._find_history(find_history.entrypoint, find_history.statuses, find_history.since,
                             find_history.until, find_history.error, v_after.at, v_after.id,
                             find_history.page_size, false) AS h;
END
$$;
COMMENT ON FUNCTION pgq.find_history(text, text[], timestamptz, timestamptz, text, text, int) IS
    'Finished jobs (failed by default) by entrypoint, finish time and error text, newest first, keyset-paged through the cursor column.';

-- sql/functions/fire_schedule_now.sql
-- pgq.fire_schedule_now(name, at)
-- Contract: fires a schedule once, now, outside its cron rhythm (an operator's "run it now"):
--   enqueues the job a tick would (the schedule's entrypoint, payload, priority and headers,
--   plus "pgq_schedule" and "pgq_due_at" = at) with dedupe key "pgq:schedule:<name>@<at>", and
--   records it as the schedule's last job. The next run and the cron state are not touched:
--   the regular ticks go on as before. Firing twice at the same `at` gives the same job
--   (on_conflict 'existing'). Returns the job id. at NULL means now().
-- Locking: the schedule row (waits for a scheduler firing it right now); inserts the job.
-- Errors: PQ009 NULL name; PQ011 no schedule of that name.
CREATE OR REPLACE FUNCTION pgq.fire_schedule_now(name text, at timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(fire_schedule_now.at, now());
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
--   owned, but pgq.cancel asked it to stop) or 'lost' (re-claimed by another worker, finished
--   or gone). A lost job is never touched. at NULL means now(). Also refreshes the worker's
--   row in the workers registry (pgq.register_worker), once per call, also for empty arrays:
--   an idle worker stays visible by calling it with no jobs.
-- Locking: row locks on the owned jobs and the worker's registry row (both updates are HOT:
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
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_batch(heartbeat.worker_id, heartbeat.ids, heartbeat.leases);
    UPDATE pgq.workers w SET last_seen_at = coalesce(heartbeat.at, now()) WHERE w.worker_id = heartbeat.worker_id;
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

-- sql/functions/job.sql
-- pgq.job(id)
-- Contract: everything about one job, live (queued or running, from pgq.jobs) or finished
--   (from pgq.job_history): one row, or none for an unknown (or pruned) id. status is queued,
--   running, successful, failed or canceled. Timings: enqueued_at (first enqueue), run_at (when
--   the current attempt is or was due; live jobs only), started_at and heartbeat_at (the current
--   or last attempt), finished_at; wait_s = started_at - enqueued_at and run_s = finished_at (a
--   running job: now()) - started_at, in seconds. errors holds every failed attempt
--   ({"attempt", "at", "details"}: the handler's error, message, traceback), details what the
--   last completion stored, result the value a successful handler returned (details->'result').
--   schedule and schedule_due_at name the schedule tick that fired the job (NULL otherwise).
--   max_attempts is the entrypoint's current policy.
-- Locking: none (reads only).
-- Errors: PQ009 NULL id.
CREATE OR REPLACE FUNCTION pgq.job(id bigint)
RETURNS SETOF pgq.job_info
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
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
               j.worker_id, j.cancel_requested, NULL::jsonb AS details, j.errors
          FROM pgq.jobs j
         WHERE j.id = job.id
        UNION ALL
        SELECT h.id, h.entrypoint, h.status, h.priority, h.attempt, h.payload, h.headers, h.dedupe_key,
               h.enqueued_at, NULL, h.started_at, NULL, h.finished_at,
               h.worker_id, false, h.details, h.errors
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
           CASE WHEN o.dedupe_key LIKE 'pgq:schedule:%' THEN (o.headers ->> 'pgq_due_at')::timestamptz END
      FROM one o
      LEFT JOIN pgq.entrypoints e ON e.entrypoint = o.entrypoint
     LIMIT 1;
END
$$;
COMMENT ON FUNCTION pgq.job(bigint) IS
    'One job by id, live or finished: status, attempts, payload, timings (wait_s, run_s), worker, errors of every attempt, details, result, the schedule tick that fired it.';

-- sql/functions/job_results.sql
-- pgq.job_results(ids)
-- Contract: what a producer needs to wait for its jobs: one row per id, in input order:
--   status (queued, running, successful, failed, canceled, or unknown for an id that is not
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

-- sql/functions/list_jobs.sql
-- pgq.list_jobs(entrypoint, state, after, page_size)
-- Contract: one page of the jobs of one entrypoint in one state, with keyset paging (pass the
--   cursor column of the last row as `after` for the next page; never OFFSET):
--   - queued: in claim order (priority desc, run_at, id), due and delayed alike, read from the
--     claim index;
--   - running: by id;
--   - successful, failed, canceled: newest first (finished_at desc, id desc), as
--     pgq.find_history.
--   Columns: the job's id, entrypoint, status, priority, attempt, dedupe_key, enqueued_at,
--   run_at (live jobs), started_at, heartbeat_at (running jobs), finished_at (history),
--   worker_id, error and message (the last failure's details->>'error' / ->>'message': from the
--   error list of a live job, from details of a finished one), cursor. Payloads are left out:
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
AS $$
#variable_conflict use_column
DECLARE
    v_after record;
BEGIN
    PERFORM pgq._check_name(list_jobs.entrypoint, 'entrypoint', 'PQ001');
    IF list_jobs.state IS NULL OR list_jobs.state NOT IN ('queued', 'running', 'successful', 'failed', 'canceled') THEN
        RAISE EXCEPTION 'state must be queued, running, successful, failed or canceled, got %',
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

    SELECT * INTO v_after FROM pgq._cursor(list_jobs.after, CASE list_jobs.state WHEN 'queued' THEN 'q' ELSE 'r' END);
    RETURN QUERY
    WITH page AS (
        -- queued, first page
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'queued' AND v_after.id IS NULL
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'queued'
          ORDER BY j.priority DESC, j.run_at, j.id
          LIMIT list_jobs.page_size)
        UNION ALL
        -- queued, next pages: the rest of the cursor's priority, then lower priorities; each
        -- part starts where the cursor is in the claim index
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'queued' AND v_after.id IS NOT NULL
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'queued'
            AND j.priority = v_after.priority AND (j.run_at, j.id) > (v_after.at, v_after.id)
          ORDER BY j.run_at, j.id
          LIMIT list_jobs.page_size)
        UNION ALL
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'queued' AND v_after.id IS NOT NULL
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'queued'
            AND j.priority < v_after.priority
          ORDER BY j.priority DESC, j.run_at, j.id
          LIMIT list_jobs.page_size)
        UNION ALL
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'running'
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'running'
            AND (v_after.id IS NULL OR j.id > v_after.id)
          ORDER BY j.id
          LIMIT list_jobs.page_size)
    )
    SELECT p.id, p.entrypoint, p.status, p.priority, p.attempt, p.dedupe_key, p.enqueued_at, p.run_at,
           p.started_at, p.heartbeat_at, NULL::timestamptz, p.worker_id,
           p.errors -> -1 -> 'details' ->> 'error', p.errors -> -1 -> 'details' ->> 'message',
           CASE WHEN p.status = 'queued'
                THEN 'q,' || p.priority || ',' || (to_json(p.run_at) #>> '{}') || ',' || p.id
                ELSE 'r,' || p.id END
      FROM page p
     ORDER BY CASE WHEN p.status = 'queued' THEN -p.priority END, CASE WHEN p.status = 'queued' THEN p.run_at END, p.id
     LIMIT list_jobs.page_size;
END
$$;
COMMENT ON FUNCTION pgq.list_jobs(text, text, text, int) IS
    'One page of the jobs of an entrypoint in a state (queued in claim order, running by id, finished newest first), keyset-paged through the cursor column.';

-- sql/functions/metrics.sql
-- pgq.metrics(entrypoints, percentile_window, at)
-- Contract: one row per entrypoint (every entrypoint in pgq.entrypoints, or those given), the
--   numbers a dashboard or a Prometheus exporter shows, as typed columns:
--   - live, from pgq.jobs at `at`: paused; queued, split into due (run_at <= at) and delayed;
--     running; stale (running, heartbeat older than the entrypoint's heartbeat_timeout); lag_s,
--     the age of the oldest due job in seconds (how long it has been waiting since it became
--     due; 0 when nothing is due);
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
--     waiting, the next calls catch up).
--   First it advances the rollup by one bounded call (pgq.rollup_metrics, at most 100,000 rows;
--   skipped when another caller is doing it, and in a read-only or non-READ COMMITTED
--   transaction). Cost: the live part reads the queued jobs of each entrypoint from the claim
--   index (it grows with the backlog), the rest reads at most 90 buckets per entrypoint.
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
    rollup_caught_up  boolean
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
    v_now    timestamptz := coalesce(metrics.at, now());
    v_cur    timestamptz := date_bin(interval '10 seconds', coalesce(metrics.at, now()), timestamptz '2000-01-01 00:00:00+00');
    v_pstart timestamptz;
BEGIN
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
        SELECT e.entrypoint, e.paused_at, e.heartbeat_timeout
          FROM pgq.entrypoints e
         WHERE metrics.entrypoints IS NULL OR e.entrypoint = ANY (metrics.entrypoints)
    ), queued AS (
        SELECT e.entrypoint, x.queued, x.due, x.oldest_due
          FROM eps e
         CROSS JOIN LATERAL (
               SELECT count(*) AS queued,
                      count(*) FILTER (WHERE j.run_at <= v_now) AS due,
                      min(j.run_at) FILTER (WHERE j.run_at <= v_now) AS oldest_due
                 FROM pgq.jobs j
                WHERE j.entrypoint = e.entrypoint AND j.status = 'queued') AS x
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
           q.queued,
           q.due,
           q.queued - q.due,
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
           (SELECT s.caught_up FROM pgq.metrics_state s)
      FROM eps e
      JOIN queued q ON q.entrypoint = e.entrypoint
      LEFT JOIN running r ON r.entrypoint = e.entrypoint
      LEFT JOIN windows w ON w.entrypoint = e.entrypoint
      LEFT JOIN wait_hist wh ON wh.entrypoint = e.entrypoint
      LEFT JOIN run_hist rh ON rh.entrypoint = e.entrypoint
      LEFT JOIN totals t ON t.entrypoint = e.entrypoint
     ORDER BY e.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.metrics(text[], interval, timestamptz) IS
    'Per entrypoint: paused, queued/due/delayed, running, stale, lag_s; finished per status over 1/5/15 min and throughput (10-second buckets); wait/run p50/p95/p99 over percentile_window; totals. Advances the rollup first (bounded).';

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
    v_now  timestamptz := coalesce(register_worker.at, now());
    v_name text;
BEGIN
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
RETURNS SETOF bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
BEGIN
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

-- sql/functions/resume.sql
-- pgq.resume(entrypoints)
-- Contract: undoes pgq.pause: the entrypoints are claimed again at the next claim, with the
--   policy exactly as configured before the pause (pause never changed it). Sends
--   {"kind": "enqueued", "entrypoints": [...]} for the entrypoints it resumed, so idle workers
--   claim at once. Resuming an entrypoint that is not paused changes nothing. Returns the policy
--   rows of the known entrypoints among those given (unknown names are ignored), ordered by
--   entrypoint.
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
--   Buckets older than one hour are deleted (at most once a minute). Returns the rows counted,
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
    v_now     timestamptz := coalesce(rollup_metrics.at, now());
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

    RETURN QUERY SELECT v_n, v_caught, false;
END
$$;
COMMENT ON FUNCTION pgq.rollup_metrics(int, timestamptz) IS
    'Counts newly finished jobs (history rows in transaction order, exactly once) into 10-second metric buckets and totals; at most about max_rows per call; never waits for another caller. Returns rolled, caught_up, busy.';

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

RESET check_function_bodies;
-- END FUNCTIONS

-- Operate it: views and privileges (workers registry, metrics, pause/resume, job lookup).
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

-- queue_stats gains a last column: paused (pgq.pause).
CREATE OR REPLACE VIEW pgq.queue_stats AS
SELECT c.entrypoint,
       count(j.id) FILTER (WHERE j.status = 'queued')                             AS queued,
       count(j.id) FILTER (WHERE j.status = 'queued' AND j.run_at <= now())       AS due,
       count(j.id) FILTER (WHERE j.status = 'running')                            AS running,
       count(j.id) FILTER (WHERE j.status = 'running'
                             AND j.heartbeat_at < now() - c.heartbeat_timeout)     AS stale,
       now() - min(j.enqueued_at) FILTER (WHERE j.status = 'queued')              AS oldest_queued_age,
       c.concurrency_limit,
       c.max_attempts,
       c.heartbeat_timeout,
       c.paused_at IS NOT NULL                                                    AS paused
  FROM pgq.entrypoints c
  LEFT JOIN pgq.jobs j ON j.entrypoint = c.entrypoint
 GROUP BY c.entrypoint, c.concurrency_limit, c.max_attempts, c.heartbeat_timeout, c.paused_at;
COMMENT ON VIEW pgq.queue_stats IS
    'Per entrypoint: queued, due, running, stale (heartbeat older than its timeout), age of the oldest queued job, its policy, and whether it is paused.';

REVOKE ALL ON pgq.worker_status FROM PUBLIC;
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
