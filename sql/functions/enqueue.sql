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
