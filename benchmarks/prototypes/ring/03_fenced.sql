-- Lease-fenced calls of prototype "ring": as sql/functions/, plus a second look for the jobs
-- the first statement missed (see 02_ring.sql). Release also gives a new ready number.

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
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_ok     bigint[] := '{}';
    v_cancel bigint[] := '{}';
    v_pass   record;
    v_round  int;
BEGIN
    PERFORM pgq._check_batch(heartbeat.worker_id, heartbeat.ids, heartbeat.leases);
    -- Two passes: the second looks again for jobs carried into the current slot meanwhile.
    FOR v_round IN 1..2 LOOP
        WITH beat AS (
            UPDATE pgq.jobs j
               SET heartbeat_at = coalesce(heartbeat.at, now())
              FROM unnest(heartbeat.ids, heartbeat.leases) AS i(id, lease)
             WHERE j.id = i.id
               AND j.lease = i.lease
               AND j.status = 'running'
               AND j.worker_id = heartbeat.worker_id
               AND j.id <> ALL (v_ok)
            RETURNING j.id, j.cancel_requested
        )
        SELECT coalesce(array_agg(b.id), '{}') AS ok,
               coalesce(array_agg(b.id) FILTER (WHERE b.cancel_requested), '{}') AS cancel
          INTO v_pass
          FROM beat b;
        v_ok := v_ok || v_pass.ok;
        v_cancel := v_cancel || v_pass.cancel;
        EXIT WHEN cardinality(v_ok) >= cardinality(heartbeat.ids);
    END LOOP;
    RETURN QUERY
    SELECT i.id,
           CASE WHEN i.id <> ALL (v_ok) THEN 'lost'
                WHEN i.id = ANY (v_cancel) THEN 'cancel_requested'
                ELSE 'ok' END
      FROM unnest(heartbeat.ids) WITH ORDINALITY AS i(id, ord)
     ORDER BY i.ord;
END
$$;

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
    v_accepted bigint[] := '{}';
    v_pass     bigint[];
    v_ids      bigint[];
    v_leases   bigint[];
    v_statuses text[];
    v_details  jsonb[];
    v_round    int;
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

    -- Two passes: the second looks again (a new statement, a new snapshot) for the jobs the
    -- first missed, in case maintenance carried one into the current slot meanwhile (the same
    -- row, id and lease, in another partition). A stale lease misses twice.
    v_ids := complete.ids;
    v_leases := complete.leases;
    v_statuses := complete.statuses;
    v_details := complete.details;
    FOR v_round IN 1..2 LOOP
        v_pass := NULL;
        -- Failures with attempts left go back to the queue. Each step is one statement whose
        -- WHERE clause is the lease fence, re-checked by PostgreSQL on concurrent updates: no
        -- separate locking pass.
        IF 'failed' = ANY (v_statuses) THEN
            WITH retried AS (
                UPDATE pgq.jobs j
                   SET status = 'queued',
                       ready_seq = NULL,   -- not yet due: pgq._promote numbers it at run_at
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
                  FROM unnest(v_ids, v_leases, v_statuses, v_details)
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
            SELECT array_agg(r.id) INTO v_pass FROM retried r;
        END IF;

        -- Everything else this worker still owns moves to history (retried jobs are queued now,
        -- so the lease fence of _archive leaves them alone).
        SELECT coalesce(v_pass, '{}') || coalesce(array_agg(a.id), '{}') INTO v_pass
          FROM pgq._archive(v_ids, v_statuses, v_details, v_now,
                            complete.worker_id, v_leases) AS a(id);

        v_accepted := v_accepted || v_pass;
        EXIT WHEN cardinality(v_accepted) >= v_n;
        SELECT array_agg(u.id ORDER BY u.ord), array_agg(u.lease ORDER BY u.ord),
               array_agg(u.status ORDER BY u.ord), array_agg(u.details ORDER BY u.ord)
          INTO v_ids, v_leases, v_statuses, v_details
          FROM unnest(complete.ids, complete.leases, complete.statuses, complete.details)
               WITH ORDINALITY AS u(id, lease, status, details, ord)
         WHERE u.id <> ALL (v_accepted);
        IF complete.details IS NULL THEN
            v_details := NULL;
        END IF;
    END LOOP;

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
    v_done     bigint[] := '{}';
    v_round    int;
BEGIN
    PERFORM pgq._check_batch(release.worker_id, release.ids, release.leases);
    FOR v_round IN 1..2 LOOP
        SELECT array_agg(l.id) FILTER (WHERE l.cancel_requested),
               array_agg(l.id ORDER BY l.id) FILTER (WHERE NOT l.cancel_requested),
               array_agg(DISTINCT l.entrypoint) FILTER (WHERE NOT l.cancel_requested)
          INTO v_canceled, v_ids, v_eps
          FROM (SELECT j.id, j.entrypoint, j.cancel_requested
                  FROM pgq.jobs j
                  JOIN unnest(release.ids, release.leases) AS u(id, lease) ON j.id = u.id AND j.lease = u.lease
                 WHERE j.status = 'running'
                   AND j.worker_id = release.worker_id
                   AND j.id <> ALL (v_done)
                 ORDER BY j.id
                   FOR UPDATE OF j) AS l;
        IF v_canceled IS NOT NULL THEN
            v_done := v_done || ARRAY(SELECT pgq._archive(v_canceled, array_fill('canceled'::text, ARRAY[cardinality(v_canceled)]),
                                                         NULL, now()));
        END IF;
        IF v_ids IS NOT NULL THEN
            PERFORM pgq._ready_lock(v_eps);
            WITH back AS (
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
                RETURNING j.id
            )
            SELECT v_done || coalesce(array_agg(b.id), '{}') INTO v_done FROM back b;
        END IF;
        EXIT WHEN cardinality(v_done) >= cardinality(release.ids);
    END LOOP;
    RETURN QUERY SELECT unnest(v_done);
END
$$;

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
    v_done   bigint[] := '{}';
    v_round  int;
BEGIN
    IF cancel.ids IS NULL OR array_position(cancel.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(cancel.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;

    -- Two passes: the second looks again for jobs carried into the current slot meanwhile.
    FOR v_round IN 1..2 LOOP
        SELECT array_agg(l.id) INTO v_queued
          FROM (SELECT j.id FROM pgq.jobs j
                 WHERE j.id = ANY (cancel.ids) AND j.status = 'queued' AND j.id <> ALL (v_done)
                 ORDER BY j.id
                   FOR UPDATE) AS l;
        IF v_queued IS NOT NULL THEN
            v_done := v_done || ARRAY(SELECT pgq._archive(v_queued, array_fill('canceled'::text, ARRAY[cardinality(v_queued)]),
                                                         NULL, coalesce(cancel.at, now())));
        END IF;
        WITH flagged AS (
            UPDATE pgq.jobs j
               SET cancel_requested = true
             WHERE j.id = ANY (cancel.ids)
               AND j.status = 'running'
               AND j.id <> ALL (v_done)
            RETURNING j.id
        )
        SELECT v_done || coalesce(array_agg(f.id), '{}') INTO v_done FROM flagged f;
        EXIT WHEN cardinality(v_done) >= cardinality(cancel.ids);
    END LOOP;
    RETURN QUERY SELECT unnest(v_done);
END
$$;
COMMENT ON FUNCTION pgq.cancel(bigint[], timestamptz) IS
    'Cancels jobs: queued ones go to history as canceled, running ones are flagged and their worker notified. Returns the ids affected.';
