-- pgq.take_tokens(entrypoint, tokens, rate_key, at)
-- Contract: takes `tokens` starts from a rate-limited entrypoint's budget outside a job, so that
--   application code calling the same API as the entrypoint's jobs shares its rate limit
--   (pgq.configure rate_limit, rate_period, rate_per_key). All or nothing: when the window
--   (at - rate_period, ...] holds at most rate_limit - tokens starts, records them in
--   pgq.rate_starts (as a claim records its jobs) and answers granted true with the starts left
--   in the window (remaining); else records nothing and answers granted false, remaining (what
--   the window has left now) and retry_at, the first time at which the same request would be
--   granted if nothing else took from the budget meanwhile. rate_key: the group key whose
--   budget to take from, for an entrypoint with rate_per_key (NULL: the budget of the jobs
--   without a key); it must be NULL for an entrypoint whose one budget covers all its jobs.
--   at NULL means now(). Call it in its own short transaction (autocommit): the policy row stays
--   locked until commit, and claims of the entrypoint skip it meanwhile.
-- Locking: the entrypoint's policy row FOR UPDATE (waits for a claim of the entrypoint, which
--   holds it for one statement's time; claims skip it while this call's transaction lasts).
-- Errors: PQ001 bad entrypoint; PQ008 an entrypoint without a rate limit; PQ009 tokens NULL or
--   outside 1..rate_limit, a rate_key for an entrypoint without rate_per_key, a rate_key over
--   200 bytes, at out of range.
CREATE OR REPLACE FUNCTION pgq.take_tokens(
    entrypoint  text,
    tokens      int         DEFAULT 1,
    rate_key    text        DEFAULT NULL,
    at          timestamptz DEFAULT NULL
)
RETURNS TABLE (granted boolean, remaining int, retry_at timestamptz)
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
    c_whole  constant bigint := -9223372036854775808;
    v_now    timestamptz := coalesce(pgq._check_time(take_tokens.at, 'at'), now());
    v_policy pgq.entrypoints;
    v_hash   bigint := c_whole;
    v_used   bigint;
    v_retry  timestamptz;
BEGIN
    PERFORM pgq._check_name(take_tokens.entrypoint, 'entrypoint', 'PQ001');
    SELECT * INTO v_policy FROM pgq.entrypoints e WHERE e.entrypoint = take_tokens.entrypoint FOR UPDATE;
    IF v_policy.rate_limit IS NULL THEN
        RAISE EXCEPTION 'entrypoint % has no rate limit (pgq.configure rate_limit, rate_period)',
            quote_literal(take_tokens.entrypoint)
            USING ERRCODE = 'PQ008';
    END IF;
    IF take_tokens.tokens IS NULL OR take_tokens.tokens NOT BETWEEN 1 AND v_policy.rate_limit THEN
        RAISE EXCEPTION 'tokens must be between 1 and the rate_limit of %, %, got %',
            quote_literal(take_tokens.entrypoint), v_policy.rate_limit, coalesce(take_tokens.tokens::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF take_tokens.rate_key IS NOT NULL THEN
        IF NOT v_policy.rate_per_key THEN
            RAISE EXCEPTION 'entrypoint % has one rate budget for all its jobs (rate_per_key false): rate_key must be NULL, got %',
                quote_literal(take_tokens.entrypoint), quote_literal(left(take_tokens.rate_key, 60))
                USING ERRCODE = 'PQ009';
        END IF;
        IF octet_length(take_tokens.rate_key) > 200 THEN
            RAISE EXCEPTION 'rate_key %... is % bytes, over the 200-byte limit of group keys',
                quote_literal(left(take_tokens.rate_key, 60)), octet_length(take_tokens.rate_key)
                USING ERRCODE = 'PQ009';
        END IF;
        v_hash := hashtextextended(take_tokens.rate_key, 0);
    END IF;

    v_used := coalesce((SELECT w.used
                          FROM pgq._rate_window(take_tokens.entrypoint, v_hash,
                                                v_now - v_policy.rate_period) AS w), 0);
    IF v_used + take_tokens.tokens <= v_policy.rate_limit THEN
        INSERT INTO pgq.rate_starts (entrypoint, key_hash, rate_key, started_at, tokens, cum)
        SELECT * FROM pgq._rate_rows(take_tokens.entrypoint, v_hash, take_tokens.rate_key, take_tokens.tokens, v_now);
        RETURN QUERY SELECT true, (v_policy.rate_limit - v_used - take_tokens.tokens)::int, NULL::timestamptz;
        RETURN;
    END IF;
    -- Not now: granted once enough of the window's starts have left it, oldest first (rows rise
    -- in started_at and cum together: the first row whose cum reaches the starts to shed).
    SELECT s.started_at + v_policy.rate_period INTO v_retry
      FROM pgq.rate_starts s
     WHERE s.entrypoint = take_tokens.entrypoint AND s.key_hash = v_hash
       AND s.started_at > v_now - v_policy.rate_period
       AND s.cum >= (SELECT f.cum - f.tokens
                       FROM pgq.rate_starts f
                      WHERE f.entrypoint = take_tokens.entrypoint AND f.key_hash = v_hash
                        AND f.started_at > v_now - v_policy.rate_period
                      ORDER BY f.started_at, f.cum
                      LIMIT 1) + (v_used + take_tokens.tokens - v_policy.rate_limit)
     ORDER BY s.started_at, s.cum
     LIMIT 1;
    RETURN QUERY SELECT false, greatest(v_policy.rate_limit - v_used, 0)::int, greatest(v_retry, v_now);
END
$$;
COMMENT ON FUNCTION pgq.take_tokens(text, int, text, timestamptz) IS
    'Takes tokens from a rate-limited entrypoint''s budget outside a job (all or nothing), so application code shares the limit with the entrypoint''s jobs: granted, starts remaining in the window, and when refused the time it would be granted.';
