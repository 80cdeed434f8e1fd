-- pgq._rate_rows(entrypoint, key_hash, rate_key, tokens, at)
-- Contract: the row that records `tokens` starts of one budget in pgq.rate_starts (the
--   entrypoint, the key hash, the key itself or NULL), for the caller to insert (INSERT INTO
--   pgq.rate_starts SELECT * FROM pgq._rate_rows(...), or one row per budget from a lateral
--   read of the budgets): started_at is `at`, or the budget's last recorded started_at when that is later (a claim
--   whose transaction began before another's but got the policy row after it), and cum the
--   budget's starts so far, this row's included. So a budget's rows rise in started_at and cum
--   together, which pgq._rate_window counts on. Exactness is kept: a start recorded later than
--   it happened stays in the window longer, never shorter (docs/decisions/0008).
--   LANGUAGE sql, STABLE and without a SET clause, so the INSERT that reads it inlines it: the
--   record is one statement of its caller (or a part of one, pgq._claim_keyed), not a call
--   that starts a statement of its own. It names pgq.rate_starts and pg_catalog objects only,
--   qualified; EXECUTE is the owner's alone, and every caller pins search_path.
-- Locking: none of its own; the callers (pgq.claim, pgq.take_tokens) hold the entrypoint's
--   policy row, so one recorder at a time per budget.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._rate_rows(entrypoint text, key_hash bigint, rate_key text, tokens int,
                                          at timestamptz)
RETURNS TABLE (entrypoint text, key_hash bigint, rate_key text, started_at timestamptz, tokens int, cum bigint)
LANGUAGE sql
STABLE
AS $$
    SELECT $1, $2, $3, greatest($5, l.started_at), $4, coalesce(l.cum, 0) + $4
      FROM (SELECT 1) AS one
      LEFT JOIN LATERAL (
           SELECT s.started_at, s.cum
             FROM pgq.rate_starts s
            WHERE s.entrypoint = $1 AND s.key_hash = $2
            ORDER BY s.started_at DESC, s.cum DESC
            LIMIT 1) AS l ON true;
$$;
COMMENT ON FUNCTION pgq._rate_rows(text, bigint, text, int, timestamptz) IS
    'Private. The rows that record starts of rate budgets (one each, with a running count and a time that never goes back); inlined into the INSERT that reads it.';
