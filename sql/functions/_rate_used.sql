-- pgq._rate_used(entrypoint, key_hash, since)
-- Contract: the starts recorded in pgq.rate_starts for one budget (an entrypoint and a key hash;
--   -9223372036854775808: the whole entrypoint, or the jobs without a key) later than `since`:
--   the newest row's cum minus the cum before the first row later than `since` (each row's cum
--   counts the budget's starts so far, and a budget's rows are recorded with rising started_at
--   and cum: pgq._rate_record). Two index probes, however many rows the window holds. 0 when
--   none is later.
-- Locking: none (the callers hold the entrypoint's policy row: the count is exact).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._rate_used(entrypoint text, key_hash bigint, since timestamptz)
RETURNS bigint
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
-- Called by the claim and the rate-limit functions, whose settings (generic plans, no JIT, no
-- sequential scans) are in force here too.
AS $$
#variable_conflict use_column
BEGIN
    RETURN coalesce((SELECT l.cum - f.cum + f.tokens
                       FROM (SELECT s.cum
                               FROM pgq.rate_starts s
                              WHERE s.entrypoint = _rate_used.entrypoint AND s.key_hash = _rate_used.key_hash
                              ORDER BY s.started_at DESC, s.cum DESC
                              LIMIT 1) AS l,
                            (SELECT s.cum, s.tokens
                               FROM pgq.rate_starts s
                              WHERE s.entrypoint = _rate_used.entrypoint AND s.key_hash = _rate_used.key_hash
                                AND s.started_at > _rate_used.since
                              ORDER BY s.started_at, s.cum
                              LIMIT 1) AS f), 0);
END
$$;
COMMENT ON FUNCTION pgq._rate_used(text, bigint, timestamptz) IS
    'Private. The starts one rate budget recorded later than since: the newest row''s cum minus the cum before the window''s first row (two index probes).';
