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
    PERFORM pgq._check_time(complete.at, 'at');
    PERFORM pgq._check_details(complete.statuses, complete.details);
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
