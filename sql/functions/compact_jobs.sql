-- pgq.compact_jobs(max_rows, max_bytes, lock_wait, at)
-- Contract: gives pgq.jobs (heap, TOAST and indexes) back its compact size when dead row
--   versions have bloated it; autovacuum makes that space reusable but never shrinks an index,
--   and at a high job rate it comes too late to keep the heap small. Decides in steps, cheapest
--   first, and returns one row (compacted, reason, rows, bytes_before, bytes_after):
--   1. One compactor at a time (the row lock of pgq.compaction, which no role but the owner
--      can take): else 'busy' at once.
--   2. Without reading the table: the total size (pg_total_relation_size: heap, TOAST,
--      indexes) at most 1 MiB, or at most twice what the last compaction left when that was
--      less than 5 minutes before at -> 'not bloated'. This is all most calls cost. (The
--      second rule also holds back a compaction that could not shrink the table, because a
--      long transaction kept the old row versions alive, until the table has doubled again.)
--   3. An exact count of the live rows and their size (a plain read: claims go on; the count
--      stops past max_rows; the size is their variable-length columns as stored, compressed or
--      in TOAST, plus 100 bytes a row): over max_rows -> 'too many rows', over max_bytes ->
--      'too much data' (both bound how long the rewrite holds the lock); the total size at
--      most twice rows x bytes per row (learned at the last compaction of at least 1,000 rows,
--      512 until then) -> 'not bloated'. Statistics (n_live_tup) are not used: they drift.
--   4. ACCESS EXCLUSIVE lock on pgq.jobs.
--   5. CLUSTER pgq.jobs USING jobs_pkey: copies the rows some transaction can still see, in id
--      order, into new files and rebuilds the indexes. Every column stays as it was (leases,
--      heartbeats, attempts, errors) and so do the rows' transaction ids, so it is MVCC-safe
--      (unlike TRUNCATE, a snapshot taken before still sees every row); no trigger fires, no
--      notification is sent, pgq.job_id_seq is not touched. fillfactor 50 is kept.
--   No lock of steps 2 to 4 is waited for longer than lock_wait (0: 1 ms): else 'busy'.
--   A compaction is recorded in pgq.compaction (time at, rows, sizes, bytes per row) and
--   returned with reason 'bloated'. Otherwise rows and bytes_before are the figures the decision
--   was made on (NULL when not read yet) and bytes_after is NULL. at NULL means now(). Run it in
--   its own transaction (autocommit): the lock is held until commit.
-- Locking: until step 4 only share locks (AccessShare on pgq.jobs, like any reader); then
--   ACCESS EXCLUSIVE on pgq.jobs until commit: every claim, heartbeat, completion and enqueue
--   waits for the rewrite (about 40 ms for 10,000 live rows, 250 ms for 50,000), and queues
--   behind the lock request for at most lock_wait before that.
-- Errors: PQ008 max_rows or max_bytes NULL or negative, lock_wait NULL, negative or over 1 minute.
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
    c_floor      constant bigint := 1048576;      -- never compact a table under 1 MiB
    c_default_bpr constant bigint := 512;         -- bytes per row before any learned figure
    c_learn_rows constant bigint := 1000;         -- learn bytes per row from this many rows
    v_now        timestamptz := coalesce(pgq._check_time(compact_jobs.at, 'at'), now());
    v_state      pgq.compaction;
    v_size       bigint;
    v_reason     text;
    v_bar        bigint;
    v_rows       bigint;
    v_data       bigint;
    v_after      bigint;
    v_old_wait   text;
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

    -- No lock is waited for longer than lock_wait (0: 1 ms), not even the share lock the size
    -- functions take. The setting is restored before the rewrite; on a timeout the sub-block's
    -- rollback undoes it.
    v_old_wait := current_setting('lock_timeout');
    BEGIN
        PERFORM set_config('lock_timeout',
            greatest(1, ceil(extract(epoch FROM compact_jobs.lock_wait) * 1000))::bigint::text, true);

        -- 1. One compactor at a time; the others return at once instead of queueing for the lock.
        -- The lock is the row of pgq.compaction: only the owner may lock it (an advisory lock
        -- could be taken by any role that can connect, keeping compaction 'busy' forever).
        SELECT * INTO v_state FROM pgq.compaction FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            v_reason := 'busy';
        END IF;

        -- 2. Without reading the table: file sizes and the last compaction.
        IF v_reason IS NULL THEN
            v_size := pg_total_relation_size('pgq.jobs');
            v_bar := c_floor;
            IF v_state.compacted_at > v_now - interval '5 minutes' THEN
                v_bar := greatest(v_bar, 2 * v_state.bytes_after);
            END IF;
            IF v_size <= v_bar THEN
                v_reason := 'not bloated';
            END IF;
        END IF;

        -- 3. Exact figures, read without blocking anyone; stops counting past max_rows.
        IF v_reason IS NULL THEN
            SELECT count(*),
                   coalesce(sum(100 + pg_column_size(s.entrypoint) + coalesce(pg_column_size(s.payload), 0)
                                + coalesce(pg_column_size(s.headers), 0)
                                + coalesce(pg_column_size(s.dedupe_key), 0) + pg_column_size(s.errors)), 0)
              INTO v_rows, v_data
              FROM (SELECT j.entrypoint, j.payload, j.headers, j.dedupe_key, j.errors
                      FROM pgq.jobs j
                     LIMIT compact_jobs.max_rows::bigint + 1) s;
            IF v_rows > compact_jobs.max_rows THEN
                v_reason := 'too many rows';
            ELSIF v_data > compact_jobs.max_bytes THEN
                v_reason := 'too much data';
            ELSIF v_size <= 2 * v_rows * coalesce(v_state.bytes_per_row, c_default_bpr) THEN
                v_reason := 'not bloated';
            END IF;
        END IF;

        -- 4. The table lock. Claims queue behind the request while it waits.
        IF v_reason IS NULL THEN
            LOCK TABLE pgq.jobs IN ACCESS EXCLUSIVE MODE;
        END IF;
        PERFORM set_config('lock_timeout', v_old_wait, true);
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
        v_reason := 'busy';
    END;
    IF v_reason IS NOT NULL THEN
        RETURN QUERY SELECT false, v_reason, v_rows, v_size, NULL::bigint;
        RETURN;
    END IF;

    -- 5. Rewrite. The size is measured again under the lock: rows added while waiting count.
    v_size := pg_total_relation_size('pgq.jobs');
    CLUSTER pgq.jobs USING jobs_pkey;
    SELECT count(*) INTO v_rows FROM pgq.jobs;
    v_after := pg_total_relation_size('pgq.jobs');

    INSERT INTO pgq.compaction AS c (id, compacted_at, rows, bytes_before, bytes_after, bytes_per_row,
                                     compactions)
    VALUES (true, v_now, v_rows, v_size, v_after,
            CASE WHEN v_rows >= c_learn_rows THEN v_after / v_rows END, 1)
    ON CONFLICT (id) DO UPDATE
       SET compacted_at = excluded.compacted_at,
           rows = excluded.rows,
           bytes_before = excluded.bytes_before,
           bytes_after = excluded.bytes_after,
           bytes_per_row = coalesce(excluded.bytes_per_row, c.bytes_per_row),
           compactions = c.compactions + 1;

    RETURN QUERY SELECT true, 'bloated', v_rows, v_size, v_after;
END
$$;
COMMENT ON FUNCTION pgq.compact_jobs(int, bigint, interval, timestamptz) IS
    'Rewrites pgq.jobs and its indexes to their compact size (CLUSTER) when bloated; waits at most lock_wait for the lock. Returns compacted, reason, rows, bytes before and after.';
