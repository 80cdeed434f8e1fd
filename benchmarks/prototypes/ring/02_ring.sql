-- Ring functions (prototype "ring"). The keyset claim, lanes, promotion and sweep come from
-- ../keyset (include.txt) and work on the partitioned parent unchanged. Here:
-- * enqueue / enqueue_many stamp the current slot and keep dedupe keys in pgq.live_keys;
-- * _archive frees a finished job's dedupe key;
-- * heartbeat, complete, release and cancel look again (one more statement, a new snapshot)
--   for the jobs they missed: maintenance may have carried a straggler into the current slot
--   (DELETE + INSERT of the same row, same id and lease) while the call waited for it;
-- * compact_jobs is the ring's maintenance: sweep, promote, carry stragglers forward, TRUNCATE
--   one drained slot (lock wait at most 5 ms), rotate.

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
    v_new    bigint;
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

    v_new := nextval('pgq.job_id_seq');
    IF enqueue.dedupe_key IS NOT NULL THEN
        -- Live dedupe keys: one row each (point lookups only, fine under a held horizon).
        INSERT INTO pgq.live_keys (dedupe_key, job_id) VALUES (enqueue.dedupe_key, v_new)
            ON CONFLICT (dedupe_key) DO NOTHING;
        IF NOT FOUND THEN
            v_id := NULL;
        ELSE
            v_id := v_new;
        END IF;
    ELSE
        v_id := v_new;
    END IF;
    IF v_id IS NOT NULL THEN
        IF enqueue.run_at IS NULL OR enqueue.run_at <= now() THEN
            PERFORM pgq._ready_lock(ARRAY[enqueue.entrypoint]);
            v_ready := true;
        END IF;
        INSERT INTO pgq.jobs (id, entrypoint, payload, priority, run_at, dedupe_key, headers, ready_seq, slot)
        VALUES (v_id, enqueue.entrypoint, enqueue.payload, coalesce(enqueue.priority, 0),
                coalesce(enqueue.run_at, now()), enqueue.dedupe_key, enqueue.headers,
                CASE WHEN v_ready THEN nextval('pgq.ready_seq') END, pgq._slot());
        RETURN v_id;
    END IF;

    -- The dedupe key is held by a live job.
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
    v_skip     bigint[];
    v_slot     int;
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
    IF enqueue_many.dedupe_keys IS NOT NULL THEN
        -- Claim the keys first; an element whose key is held is not inserted.
        WITH taken AS (
            INSERT INTO pgq.live_keys (dedupe_key, job_id)
            SELECT x.dk, x.id FROM unnest(v_ids, enqueue_many.dedupe_keys) AS x(id, dk)
             WHERE x.dk IS NOT NULL
            ON CONFLICT (dedupe_key) DO NOTHING
            RETURNING job_id
        )
        SELECT array_agg(x.id ORDER BY x.ord) FILTER (WHERE x.dk IS NOT NULL AND t.job_id IS NULL),
               array_agg(x.dk ORDER BY x.ord) FILTER (WHERE x.dk IS NOT NULL AND t.job_id IS NULL)
          INTO v_skip, v_missing
          FROM unnest(v_ids, enqueue_many.dedupe_keys) WITH ORDINALITY AS x(id, dk, ord)
          LEFT JOIN taken t ON t.job_id = x.id;
        IF v_missing IS NOT NULL AND enqueue_many.on_conflict = 'raise' THEN
            RAISE EXCEPTION 'dedupe key % is already held by a live job', quote_literal(v_missing[1])
                USING ERRCODE = 'PQ007',
                      HINT = 'Pass on_conflict => ''existing'' to get the id of the live job instead.';
        END IF;
    END IF;
    IF enqueue_many.run_ats IS NULL THEN
        PERFORM pgq._ready_lock(enqueue_many.entrypoints);
    ELSE
        PERFORM pgq._ready_lock(ARRAY(SELECT u.e FROM unnest(enqueue_many.entrypoints, enqueue_many.run_ats) AS u(e, ra)
                                       WHERE u.ra IS NULL OR u.ra <= now()));
    END IF;
    v_slot := pgq._slot();
    INSERT INTO pgq.jobs (id, entrypoint, payload, priority, run_at, dedupe_key, headers, ready_seq, slot)
    SELECT u.id, u.e, u.p, coalesce(u.pr, 0), coalesce(u.ra, now()), u.dk, u.h,
           CASE WHEN u.ra IS NULL OR u.ra <= now() THEN nextval('pgq.ready_seq') END, v_slot
      FROM unnest(v_ids, enqueue_many.entrypoints, enqueue_many.payloads, enqueue_many.priorities,
                  enqueue_many.run_ats, enqueue_many.dedupe_keys, enqueue_many.headers)
           AS u(id, e, p, pr, ra, dk, h)
     WHERE v_skip IS NULL OR u.id <> ALL (v_skip);

    IF v_missing IS NOT NULL THEN
        -- 'existing': the id of the live job holding the key (or of an earlier element of
        -- this call with the same key).
        SELECT array_agg(CASE WHEN x.id = ANY (v_skip) THEN k.job_id ELSE x.id END ORDER BY x.ord) INTO v_ids
          FROM unnest(v_ids, enqueue_many.dedupe_keys) WITH ORDINALITY AS x(id, dk, ord)
          LEFT JOIN pgq.live_keys k ON x.id = ANY (v_skip) AND k.dedupe_key = x.dk;
        IF array_position(v_ids, NULL) IS NOT NULL THEN
            RAISE EXCEPTION 'dedupe key % was released while enqueueing; retry the call', quote_literal(enqueue_many.dedupe_keys[array_position(v_ids, NULL)])
                USING ERRCODE = 'PQ007';
        END IF;
    END IF;
    RETURN QUERY SELECT unnest(v_ids);
END
$$;
COMMENT ON FUNCTION pgq.enqueue_many(text[], jsonb[], int[], timestamptz[], text[], jsonb[], text) IS
    'Adds many jobs in one statement; returns their ids in input order. Optional arrays must match entrypoints in length. on_conflict: raise (PQ007) or existing.';

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
        RETURNING j.id, j.entrypoint, j.priority, j.attempt, j.payload, j.headers, j.dedupe_key,
                  j.enqueued_at, j.started_at, j.worker_id, j.lease, j.errors, j.cancel_requested,
                  CASE WHEN i.status = 'failed' AND j.cancel_requested THEN 'canceled'
                       ELSE i.status END AS final_status,
                  i.details AS final_details
    ), keys AS (
        DELETE FROM pgq.live_keys k
         USING gone g
         WHERE g.dedupe_key IS NOT NULL AND k.dedupe_key = g.dedupe_key AND k.job_id = g.id
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
