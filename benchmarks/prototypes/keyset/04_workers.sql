-- Worker side (prototype "keyset"): claim reads each lane past its cursor; release gives a
-- job a new ready number; stale jobs are swept by maintenance (pgq.compact_jobs, which the
-- worker already calls every 5 s) instead of being looked up by every claim.

-- pgq.claim: same signature, result and errors as sql/functions/claim.sql. Differences:
-- * order: priority (higher first), then ready order (the order in which jobs became
--   runnable: enqueue order for jobs due at once, run_at order for promoted ones);
-- * stale jobs are not re-claimed here: pgq._sweep queues them again (maintenance);
-- * due not-yet-numbered jobs of these entrypoints are promoted first (pgq._promote).
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

    SELECT array_agg(c.entrypoint) INTO v_limited
      FROM (SELECT e.entrypoint
              FROM pgq.entrypoints e
             WHERE e.entrypoint = ANY (claim.entrypoints)
               AND e.concurrency_limit IS NOT NULL
             ORDER BY e.entrypoint
               FOR UPDATE SKIP LOCKED) AS c;

    -- Jobs whose run_at has come get ready numbers (an index probe when there are none).
    PERFORM pgq._promote(claim.entrypoints, v_now, 1000);

    WITH eps AS (
        SELECT c.entrypoint,
               CASE WHEN c.concurrency_limit IS NULL THEN claim.batch_size
                    WHEN c.entrypoint = ANY (v_limited) THEN
                         greatest(0, least(claim.batch_size,
                                           c.concurrency_limit - (SELECT count(*)
                                                                    FROM pgq.jobs r
                                                                   WHERE r.entrypoint = c.entrypoint
                                                                     AND r.status = 'running')))
                    ELSE 0 END AS quota
          FROM pgq.entrypoints c
         WHERE c.entrypoint = ANY (claim.entrypoints)
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
                  AND j.ready_seq IS NOT NULL
                  AND j.ready_seq > lanes.cursor
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
               attempt = j.attempt + 1
          FROM pgq.entrypoints c
         WHERE j.id = ANY (v_ids)
           AND c.entrypoint = j.entrypoint
        RETURNING j.id, j.lease, j.entrypoint, j.payload, j.headers, j.priority, j.attempt,
                  j.enqueued_at, j.run_at, j.dedupe_key, c.max_attempts, c.heartbeat_timeout,
                  j.ready_seq
    )
    SELECT c.id, c.lease, c.entrypoint, c.payload, c.headers, c.priority, c.attempt,
           c.enqueued_at, c.run_at, c.dedupe_key, c.max_attempts, c.heartbeat_timeout
      FROM claimed c ORDER BY c.priority DESC, c.ready_seq;
END
$$;

-- pgq.release: as sql/functions/release.sql, but a released job gets a new ready number (it
-- cannot keep its place: the cursor may have passed it), drawn behind the fence.
CREATE OR REPLACE FUNCTION pgq.release(worker_id uuid, ids bigint[], leases bigint[])
RETURNS SETOF bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_canceled bigint[];
    v_ids      bigint[];
    v_eps      text[];
BEGIN
    PERFORM pgq._check_batch(release.worker_id, release.ids, release.leases);

    SELECT array_agg(l.id) FILTER (WHERE l.cancel_requested),
           array_agg(l.id ORDER BY l.id) FILTER (WHERE NOT l.cancel_requested),
           array_agg(DISTINCT l.entrypoint) FILTER (WHERE NOT l.cancel_requested)
      INTO v_canceled, v_ids, v_eps
      FROM (SELECT j.id, j.entrypoint, j.cancel_requested
              FROM pgq.jobs j
              JOIN unnest(release.ids, release.leases) AS u(id, lease) ON j.id = u.id AND j.lease = u.lease
             WHERE j.status = 'running'
               AND j.worker_id = release.worker_id
             ORDER BY j.id
               FOR UPDATE OF j) AS l;
    IF v_canceled IS NOT NULL THEN
        RETURN QUERY SELECT pgq._archive(v_canceled, array_fill('canceled'::text, ARRAY[cardinality(v_canceled)]),
                                         NULL, now());
    END IF;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    PERFORM pgq._ready_lock(v_eps);
    RETURN QUERY
    UPDATE pgq.jobs j
       SET status = 'queued',
           attempt = j.attempt - 1,
           lease = NULL,
           worker_id = NULL,
           started_at = NULL,
           heartbeat_at = NULL,
           ready_seq = CASE WHEN j.run_at <= now() THEN r.seq END
      FROM (SELECT u.id, nextval('pgq.ready_seq') AS seq
              FROM unnest(v_ids) WITH ORDINALITY AS u(id, ord) ORDER BY u.ord) r
     WHERE j.id = r.id
    RETURNING j.id;
END
$$;

-- pgq.compact_jobs: the maintenance step the worker calls every 5 s. Sweeps stale jobs,
-- promotes due jobs of every entrypoint (a worker may wait for next_run_at), then compacts
-- as before (CLUSTER; today's body as pgq._compact_cluster, 05_compact_cluster.sql).
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
BEGIN
    PERFORM pgq._sweep(coalesce(compact_jobs.at, now()));
    PERFORM pgq._promote(NULL, coalesce(compact_jobs.at, now()), 10000);
    RETURN QUERY SELECT * FROM pgq._compact_cluster(compact_jobs.max_rows, compact_jobs.max_bytes,
                                                    compact_jobs.lock_wait, compact_jobs.at);
END
$$;
GRANT EXECUTE ON FUNCTION pgq.compact_jobs(int, bigint, interval, timestamptz) TO pgq_worker;
