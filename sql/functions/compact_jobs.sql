-- pgq.compact_jobs(max_rows, max_bytes, lock_wait, at): the 0.1.0 name of pgq.maintain.
-- Contract: kept for clients of 0.1.0, whose workers call it every few seconds: runs
--   pgq.maintain(at) and answers in the old columns: compacted = a slot of the ring was
--   truncated, reason = pgq.maintain's state ('ok' or 'busy'), rows = jobs carried forward,
--   bytes_before = the ring's size before the truncation, bytes_after = its size after (NULL
--   when busy before any work). The arguments are checked as before and otherwise unused: the
--   ring has its own bounds (1,000 rows carried, a 5 ms lock wait). New clients call
--   pgq.maintain.
-- Locking: as pgq.maintain.
-- Errors: PQ008 max_rows or max_bytes NULL or negative, lock_wait NULL, negative or over 1
--   minute; pgq.maintain's.
CREATE OR REPLACE FUNCTION pgq.compact_jobs(
    max_rows   int         DEFAULT 20000,
    max_bytes  bigint      DEFAULT 67108864,
    lock_wait  interval    DEFAULT interval '100 milliseconds',
    at         timestamptz DEFAULT NULL
)
RETURNS TABLE (compacted boolean, reason text, rows bigint, bytes_before bigint, bytes_after bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_m record;
BEGIN
    IF compact_jobs.max_rows IS NULL OR compact_jobs.max_rows < 0 THEN
        RAISE EXCEPTION 'max_rows must be a non-negative number of rows, got %',
            coalesce(compact_jobs.max_rows::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    IF compact_jobs.max_bytes IS NULL OR compact_jobs.max_bytes < 0 THEN
        RAISE EXCEPTION 'max_bytes must be a non-negative number of bytes, got %',
            coalesce(compact_jobs.max_bytes::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    IF compact_jobs.lock_wait IS NULL OR compact_jobs.lock_wait < interval '0'
       OR compact_jobs.lock_wait > interval '1 minute' THEN
        RAISE EXCEPTION 'lock_wait must be between 0 and 1 minute, got %',
            coalesce(compact_jobs.lock_wait::text, 'NULL')
            USING ERRCODE = 'PQ008';
    END IF;
    SELECT * INTO v_m FROM pgq.maintain(compact_jobs.at) m;
    -- The size after: a few file sizes read under the truncation's lock (microseconds).
    RETURN QUERY
    SELECT v_m.truncated IS NOT NULL, v_m.state, v_m.carried::bigint, v_m.bytes,
           CASE WHEN v_m.bytes IS NOT NULL THEN
               (SELECT sum(pg_total_relation_size(format('pgq.jobs_%s', k)::regclass))::bigint
                  FROM generate_series(0, 3) AS k)
           END;
END
$$;
COMMENT ON FUNCTION pgq.compact_jobs(int, bigint, interval, timestamptz) IS
    'The 0.1.0 name of pgq.maintain, answering in its old columns (compacted = a slot truncated, reason = state, rows = jobs carried, bytes before and after).';
