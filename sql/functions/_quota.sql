-- pgq._quota(entrypoint, concurrency_limit, rate_limit, rate_period, rate_per_key, batch_size, at)
-- Contract: how many jobs a claim that holds the entrypoint's policy row may take of it: at most
--   batch_size, at most what fits beside its running jobs under concurrency_limit (NULL: no
--   limit), and, for an entrypoint-wide rate limit (rate_limit set, rate_per_key false), at most
--   rate_limit minus the starts recorded in pgq.rate_starts later than at - rate_period
--   (pgq._rate_window: any start recorded later counts, whatever its time, so a claim whose clock is
--   behind another's still sees it). Never negative. Per-key rooms are pgq._keyed_candidates'.
-- Locking: none (the caller, pgq.claim, holds the policy row: the counts are exact).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._quota(
    entrypoint         text,
    concurrency_limit  int,
    rate_limit         int,
    rate_period        interval,
    rate_per_key       boolean,
    batch_size         int,
    at                 timestamptz
)
RETURNS int
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq.claim and pgq._claim_keyed, whose settings (generic plans, no JIT, no
-- sequential scans) are in force here too: setting them again would cost every call.
AS $$
#variable_conflict use_column
DECLARE
    c_whole constant bigint := -9223372036854775808;  -- pgq.rate_starts.key_hash of the whole entrypoint
    v_room  int := _quota.batch_size;
BEGIN
    IF _quota.concurrency_limit IS NOT NULL THEN
        v_room := least(v_room, _quota.concurrency_limit - (SELECT count(*)
                                                             FROM pgq.jobs r
                                                            WHERE r.entrypoint = _quota.entrypoint
                                                              AND r.status = 'running'
                                                              AND r.slot <> 4));
    END IF;
    IF _quota.rate_limit IS NOT NULL AND NOT _quota.rate_per_key AND v_room > 0 THEN
        v_room := least(v_room, _quota.rate_limit
                                - coalesce((SELECT w.used
                                              FROM pgq._rate_window(_quota.entrypoint, c_whole,
                                                                    _quota.at - _quota.rate_period) AS w), 0));
    END IF;
    RETURN greatest(v_room, 0);
END
$$;
COMMENT ON FUNCTION pgq._quota(text, int, int, interval, boolean, int, timestamptz) IS
    'Private. How many jobs a claim holding the policy row may take of a limited entrypoint: batch_size within its concurrency limit and its entrypoint-wide rate limit.';
