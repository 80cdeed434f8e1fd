-- pgq.next_run_at: the earliest scheduled run_at after `at`, read from jobs_scheduled through
-- jobs_scheduled_idx, one probe per entrypoint (the ring's partitions are not visited).
-- Scheduled jobs are written straight into their partition (slot 4).
BEGIN;
SELECT plan(11);

INSERT INTO pgq.jobs (entrypoint, status, slot, run_at)
SELECT 'nr.' || (g % 4), 'scheduled', 4, timestamptz '2030-01-01 00:00:00+00' + g * interval '1 minute'
  FROM generate_series(1, 4000) g;
INSERT INTO pgq.jobs (entrypoint, status, slot, ready_seq)
SELECT 'nr.' || (g % 4), 'queued', 0, nextval('pgq.ready_seq') FROM generate_series(1, 100) g;

SELECT is(pgq.next_run_at('{nr.1, nr.2}', '2030-01-01 00:00:00+00'), timestamptz '2030-01-01 00:01:00+00',
          'the earliest of the two entrypoints');
SELECT is(pgq.next_run_at('{nr.2}', '2030-01-01 00:10:00+00'), timestamptz '2030-01-01 00:14:00+00',
          'after at only');
SELECT is(pgq.next_run_at('{nr.none}', '2030-01-01 00:00:00+00'), NULL::timestamptz, 'none waiting: NULL');
SELECT throws_ok($$SELECT pgq.next_run_at('{}')$$, 'PQ001', NULL, 'empty entrypoints: PQ001');

-- What it read (this transaction's statistics).
CREATE TEMP VIEW nr_stats AS
SELECT c.relname, pg_stat_get_xact_numscans(c.oid) AS idx_scan, pg_stat_get_xact_tuples_returned(c.oid) AS idx_tup_read
  FROM pg_class c WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind = 'i';
CREATE TEMP TABLE nr_before AS SELECT * FROM nr_stats;
SELECT pgq.next_run_at('{nr.0, nr.1, nr.3}', '2030-01-01 00:00:00+00');
CREATE TEMP TABLE nr_read AS
SELECT a.relname, a.idx_scan - coalesce(b.idx_scan, 0) AS scans, a.idx_tup_read - coalesce(b.idx_tup_read, 0) AS tuples
  FROM nr_stats a LEFT JOIN nr_before b USING (relname)
 WHERE a.idx_scan - coalesce(b.idx_scan, 0) > 0
   AND a.relname <> 'entrypoints_pkey';  -- the policies (rate limits), one probe per entrypoint
SELECT is((SELECT array_agg(relname::text ORDER BY relname) FROM nr_read), ARRAY['jobs_scheduled_entrypoint_run_at_id_idx'],
          'only jobs_scheduled''s index was read (no ring partition)');
SELECT is((SELECT scans FROM nr_read), 3::bigint, 'one probe per entrypoint');
SELECT ok((SELECT tuples <= 6 FROM nr_read), 'reading a tuple or two each, not the 3,000 scheduled jobs');


-- A rate limit whose budget is used up: when the oldest start leaves the window.
SELECT pgq.configure('nr.1', rate_limit => 2, rate_period => '10 minutes');
INSERT INTO pgq.rate_starts SELECT * FROM pgq._rate_rows('nr.1', -9223372036854775808, NULL, 1, '2029-12-31 23:52:00+00');
INSERT INTO pgq.rate_starts SELECT * FROM pgq._rate_rows('nr.1', -9223372036854775808, NULL, 1, '2029-12-31 23:58:00+00');
SELECT is(pgq.next_run_at('{nr.1}', '2030-01-01 00:00:00+00'), timestamptz '2030-01-01 00:01:00+00',
          'a scheduled job before the budget grows: the job');
SELECT is(pgq.next_run_at('{nr.1}', '2030-01-01 00:01:30+00'), timestamptz '2030-01-01 00:02:00+00',
          'the budget (used up) grows at the oldest start + period, before the next scheduled job (00:05)');
SELECT is(pgq.next_run_at('{nr.1}', '2030-01-01 00:05:30+00'), timestamptz '2030-01-01 00:08:00+00',
          'with room in the window: when its oldest start leaves it (00:08), before the next job (00:09)');
SELECT is(pgq.next_run_at('{nr.1}', '2030-01-01 00:08:30+00'), timestamptz '2030-01-01 00:09:00+00',
          'no start in the window: only scheduled jobs count');

SELECT * FROM finish();
ROLLBACK;
