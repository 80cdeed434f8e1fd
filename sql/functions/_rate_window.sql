-- pgq._rate_window(entrypoint, key_hash, since)
-- Contract: one rate budget (an entrypoint and a key hash; -9223372036854775808: the whole
--   entrypoint, or the jobs without a key) as pgq.rate_starts records it, one row, or none
--   when the budget has no row (callers read used as 0 then): used, the starts later than
--   `since` (the newest row's cum minus the cum before the first row later than `since`: each
--   row's cum counts the budget's starts so far, and a budget's rows are recorded with rising
--   started_at and cum, pgq._rate_rows; 0 when none is later); last_cum and last_at, the
--   newest row's cum and started_at. One index probe for the newest row, and one more for the
--   window's first row only when the budget has rows: however many rows the window holds.
--   LANGUAGE sql, STABLE and without a SET clause, so a statement that reads it in FROM
--   inlines it: the key walk of pgq._keyed_candidates reads each key's window in its own
--   statement (a function call per key started a statement of its own per key and set
--   search_path: most of what a rate per key added to a claim, docs/performance.md). It names
--   pgq.rate_starts and pg_catalog objects only, qualified; EXECUTE is the owner's alone, and
--   every caller pins search_path.
-- Locking: none (the callers that decide hold the entrypoint's policy row: the count is exact).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._rate_window(entrypoint text, key_hash bigint, since timestamptz)
RETURNS TABLE (used bigint, last_cum bigint, last_at timestamptz)
LANGUAGE sql
STABLE
AS $$
    SELECT l.cum - coalesce((SELECT f.cum - f.tokens
                               FROM pgq.rate_starts f
                              WHERE f.entrypoint = $1 AND f.key_hash = $2
                                AND f.started_at > $3
                              ORDER BY f.started_at, f.cum
                              LIMIT 1), l.cum),
           l.cum, l.started_at
      FROM pgq.rate_starts l
     WHERE l.entrypoint = $1 AND l.key_hash = $2
     ORDER BY l.started_at DESC, l.cum DESC
     LIMIT 1;
$$;
COMMENT ON FUNCTION pgq._rate_window(text, bigint, timestamptz) IS
    'Private. One rate budget''s starts later than since (the newest row''s cum minus the cum before the window''s first row: two index probes) and its newest row, no row when it has none; inlined into the statements that read it.';
