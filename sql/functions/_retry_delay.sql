-- pgq._retry_delay(attempt, backoff_base, backoff_max, details): the retry policy, in seconds.
-- Contract: the delay before a failed attempt runs again. details->'retry_after' (a JSON number
--   of seconds, checked by pgq.complete) when the handler asked for it; else the entrypoint's
--   backoff, least(backoff_max, backoff_base * 2^(attempt-1)), with equal jitter: a random
--   factor in [0.5, 1.0), so half the delay is guaranteed and the other half spreads a burst of
--   failures out. Intervals count in seconds (a month as 30 days); the doubling is numeric and
--   stops at 2^40 (base * 2^40 as an interval overflows for a base of a few seconds or more).
--   LANGUAGE sql without a SET clause, so pgq.complete inlines it into its statement (as
--   pgq._json_ok: it names pg_catalog functions only, qualified; EXECUTE is the owner's alone).
--   See docs/architecture.md#retry-backoff.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._retry_delay(attempt int, backoff_base interval, backoff_max interval,
                                            details jsonb)
RETURNS float8
LANGUAGE sql
VOLATILE
AS $$
    SELECT CASE WHEN pg_catalog.jsonb_typeof(details) = 'object' AND details ? 'retry_after'
                THEN (details ->> 'retry_after')::pg_catalog.float8
                ELSE least(EXTRACT(epoch FROM backoff_max),
                                      EXTRACT(epoch FROM backoff_base)
                                      * 2::pg_catalog.numeric ^ least(attempt - 1, 40))::pg_catalog.float8
                     * (0.5 + pg_catalog.random() * 0.5)
           END;
$$;
COMMENT ON FUNCTION pgq._retry_delay(int, interval, interval, jsonb) IS
    'Private. The retry policy: seconds before a failed attempt runs again (retry_after, else backoff with equal jitter). Inlined into pgq.complete.';
