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
