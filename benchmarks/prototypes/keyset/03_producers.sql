-- Producers (prototype "keyset"): enqueue and enqueue_many draw a ready number for jobs due
-- now, behind the fence; the insert trigger creates new lanes. Otherwise as sql/functions/.

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

    -- New lanes (entrypoint, priority) get their cursor.
    PERFORM pgq._add_lanes(array_agg(l.entrypoint), array_agg(l.priority))
       FROM (SELECT DISTINCT n.entrypoint, n.priority FROM new_rows n
              WHERE NOT EXISTS (SELECT 1 FROM pgq.lanes x
                                 WHERE x.entrypoint = n.entrypoint AND x.priority = n.priority)) l
     HAVING count(*) > 0;

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
    v_id     bigint;
    v_ready  boolean := false;
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

    -- Due now: a ready number, drawn behind the fence (pgq._ready_lock); later: none yet
    -- (pgq._promote gives it one when run_at comes).
    IF enqueue.run_at IS NULL OR enqueue.run_at <= now() THEN
        PERFORM pgq._ready_lock(ARRAY[enqueue.entrypoint]);
        v_ready := true;
    END IF;
    INSERT INTO pgq.jobs (entrypoint, payload, priority, run_at, dedupe_key, headers, ready_seq)
    VALUES (enqueue.entrypoint, enqueue.payload, coalesce(enqueue.priority, 0),
            coalesce(enqueue.run_at, now()), enqueue.dedupe_key, enqueue.headers,
            CASE WHEN v_ready THEN nextval('pgq.ready_seq') END)
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
    -- The fence for every entrypoint with a job due now (see pgq._ready_lock).
    IF enqueue_many.run_ats IS NULL THEN
        PERFORM pgq._ready_lock(enqueue_many.entrypoints);
    ELSE
        PERFORM pgq._ready_lock(ARRAY(SELECT u.e FROM unnest(enqueue_many.entrypoints, enqueue_many.run_ats) AS u(e, ra)
                                       WHERE u.ra IS NULL OR u.ra <= now()));
    END IF;
    INSERT INTO pgq.jobs (id, entrypoint, payload, priority, run_at, dedupe_key, headers, ready_seq)
    SELECT u.id, u.e, u.p, coalesce(u.pr, 0), coalesce(u.ra, now()), u.dk, u.h,
           CASE WHEN u.ra IS NULL OR u.ra <= now() THEN nextval('pgq.ready_seq') END
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

-- complete: a retried job waits for its run_at without a ready number (pgq._promote).
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
