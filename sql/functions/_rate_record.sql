-- pgq._rate_record(entrypoints, key_hashes, rate_keys, tokens, at)
-- Contract: records starts in pgq.rate_starts, one row per budget given (parallel arrays: the
--   entrypoint, the key hash, the key itself or NULL, how many starts): started_at is `at`, or the budget's last
--   recorded started_at when that is later (a claim whose transaction began before another's
--   but got the policy row after it), and cum the budget's starts so far, this row's included.
--   So a budget's rows rise in started_at and cum together, which pgq._rate_window counts on.
--   Exactness is kept: a start recorded later than it happened stays in the window longer,
--   never shorter (docs/decisions/0008).
-- Locking: none of its own; the callers (pgq.claim, pgq.take_tokens) hold the entrypoint's
--   policy row, so one recorder at a time per budget.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._rate_record(entrypoints text[], key_hashes bigint[], rate_keys text[],
                                            tokens int[], at timestamptz)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Called by pgq.claim and pgq.take_tokens, whose settings are in force here too.
AS $$
#variable_conflict use_column
BEGIN
    INSERT INTO pgq.rate_starts (entrypoint, key_hash, rate_key, started_at, tokens, cum)
    SELECT b.e, b.h, b.k, greatest(_rate_record.at, l.started_at), b.n, coalesce(l.cum, 0) + b.n
      FROM unnest(_rate_record.entrypoints, _rate_record.key_hashes, _rate_record.rate_keys,
                  _rate_record.tokens) AS b(e, h, k, n)
      LEFT JOIN LATERAL (
           SELECT s.started_at, s.cum
             FROM pgq.rate_starts s
            WHERE s.entrypoint = b.e AND s.key_hash = b.h
            ORDER BY s.started_at DESC, s.cum DESC
            LIMIT 1) AS l ON true;
END
$$;
COMMENT ON FUNCTION pgq._rate_record(text[], bigint[], text[], int[], timestamptz) IS
    'Private. Records starts of rate budgets (one row each, with a running count and a time that never goes back).';
