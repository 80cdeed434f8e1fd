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
