-- pgq._rate_due(entrypoint, rate_limit, rate_period, rate_per_key, at)
-- Contract: for pgq.next_run_at, when a rate-limited entrypoint's budget next grows, so that a
--   worker whose claim came back short because of the rate limit sleeps until then instead of
--   polling. Whole-entrypoint budget: NULL while the window (at - rate_period, ...] holds no
--   start; when it is used up, the time enough of its starts have left it (start + rate_period,
--   oldest first) for one more to fit; else the time its oldest start leaves it (a worker that
--   lost the policy row to another claimer looks again then, not at its next poll). Per key: the first time a start of a key that has queued jobs leaves the window,
--   among the 100 oldest starts of the window (beyond them, the 100th's time: a worker wakes
--   then and asks again), the jobs without a key counted as queued; NULL when none is found.
--   Never earlier than `at`.
-- Locking: none (reads only).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._rate_due(
    entrypoint    text,
    rate_limit    int,
    rate_period   interval,
    rate_per_key  boolean,
    at            timestamptz
)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq.next_run_at, whose settings are in force here too.
AS $$
#variable_conflict use_column
DECLARE
    c_whole constant bigint := -9223372036854775808;
    v_due   timestamptz;
    v_last  timestamptz;
    v_n     int;
    v_used  bigint;
BEGIN
    IF NOT _rate_due.rate_per_key THEN
        v_used := coalesce((SELECT w.used
                              FROM pgq._rate_window(_rate_due.entrypoint, c_whole,
                                                    _rate_due.at - _rate_due.rate_period) AS w), 0);
        IF v_used = 0 THEN
            RETURN NULL;
        END IF;
        -- The first start of the window whose leaving makes room for one more (with room now:
        -- the oldest). Rows rise in started_at and cum together: a scan from the window's start.
        SELECT s.started_at + _rate_due.rate_period INTO v_due
          FROM pgq.rate_starts s
         WHERE s.entrypoint = _rate_due.entrypoint AND s.key_hash = c_whole
           AND s.started_at > _rate_due.at - _rate_due.rate_period
           AND s.cum >= (SELECT f.cum - f.tokens
                           FROM pgq.rate_starts f
                          WHERE f.entrypoint = _rate_due.entrypoint AND f.key_hash = c_whole
                            AND f.started_at > _rate_due.at - _rate_due.rate_period
                          ORDER BY f.started_at, f.cum
                          LIMIT 1) + greatest(v_used - _rate_due.rate_limit + 1, 1)
         ORDER BY s.started_at, s.cum
         LIMIT 1;
        RETURN CASE WHEN v_due IS NOT NULL THEN greatest(v_due, _rate_due.at) END;
    END IF;
    -- The window's starts oldest first, up to the first whose key waits (lazily: with a backlog,
    -- the first start's key). Whether a key has a queued job: its entries of jobs_key_idx above
    -- the lane's cursor (every job at or below it is settled), newest first (a backward scan):
    -- the entries of its jobs claimed since (dead, and under a held vacuum horizon not yet
    -- marked so) are its oldest, and most lie below the cursor.
    SELECT o.started_at INTO v_due
      FROM (SELECT s.started_at, s.key_hash
              FROM pgq.rate_starts s
             WHERE s.entrypoint = _rate_due.entrypoint
               AND s.started_at > _rate_due.at - _rate_due.rate_period
             ORDER BY s.started_at
             LIMIT 100) o
     WHERE o.key_hash = c_whole
        OR EXISTS (SELECT 1
                     FROM pgq.lanes l
                    CROSS JOIN LATERAL (
                          SELECT coalesce(pg_sequence_last_value(l.cursor_seq), 0) AS c
                          OFFSET 0) AS cur  -- (read once, then a bound of the index scan)
                    CROSS JOIN LATERAL (
                          SELECT 1
                            FROM pgq.jobs j
                           WHERE hashtext(j.entrypoint) = hashtext(l.entrypoint)  -- (jobs_key_idx)
                             AND j.entrypoint = l.entrypoint
                             AND j.priority = l.priority
                             AND j.status = 'queued'
                             AND j.group_key IS NOT NULL
                             AND j.slot <> 4
                             AND hashtextextended(j.group_key, 0) = o.key_hash
                             AND j.ready_seq > cur.c
                           ORDER BY j.ready_seq DESC
                           LIMIT 1) q
                    WHERE l.entrypoint = _rate_due.entrypoint)
     ORDER BY o.started_at
     LIMIT 1;
    IF v_due IS NULL THEN
        SELECT max(o.started_at), count(*) INTO v_last, v_n
          FROM (SELECT s.started_at
                  FROM pgq.rate_starts s
                 WHERE s.entrypoint = _rate_due.entrypoint
                   AND s.started_at > _rate_due.at - _rate_due.rate_period
                 ORDER BY s.started_at
                 LIMIT 100) o;
    END IF;
    IF v_due IS NULL AND v_n = 100 THEN
        v_due := v_last;
    END IF;
    RETURN CASE WHEN v_due IS NOT NULL THEN greatest(v_due + _rate_due.rate_period, _rate_due.at) END;
END
$$;
COMMENT ON FUNCTION pgq._rate_due(text, int, interval, boolean, timestamptz) IS
    'Private. For pgq.next_run_at: when a rate-limited entrypoint''s budget (or, per key, the budget of a key with queued jobs) next grows; NULL while it has room.';
