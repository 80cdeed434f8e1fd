-- Rate limits (pgq.configure rate_limit, rate_period, rate_per_key): what configure accepts,
-- what a claim takes and records (pgq._quota, pgq._keyed_candidates, pgq.rate_starts), what
-- maintain removes. Times are passed as `at`; the window is (at - rate_period, ...].
BEGIN;
SELECT plan(42);

-- configure: bounds, pairs, removal.
SELECT throws_ok($$SELECT pgq.configure('rl.bad', rate_limit => -1, rate_period => '1 second')$$, 'PQ008',
                 'rate_limit must be between 1 and 1000000 (0 removes it), got -1', 'a negative limit: PQ008');
SELECT throws_ok($$SELECT pgq.configure('rl.bad', rate_limit => 1000001, rate_period => '1 second')$$, 'PQ008', NULL,
                 'an absurd limit: PQ008');
SELECT throws_ok($$SELECT pgq.configure('rl.bad', rate_limit => 5, rate_period => '2 days')$$, 'PQ008',
                 'rate_period must be between 00:00:00.001 and 1 day, got 2 days', 'a period over a day: PQ008');
SELECT throws_ok($$SELECT pgq.configure('rl.bad', rate_limit => 5, rate_period => '0')$$, 'PQ008', NULL,
                 'a zero period: PQ008');
SELECT throws_ok($$SELECT pgq.configure('rl.bad', rate_limit => 5)$$, 'PQ008',
                 'rate_limit 5 needs a rate_period (the window it counts starts in)', 'a limit without a period: PQ008');
SELECT throws_ok($$SELECT pgq.configure('rl.bad', rate_period => '1 minute')$$, 'PQ008',
                 'rate_period 00:01:00 needs a rate_limit (0 removed it)', 'a period without a limit: PQ008');
SELECT is((SELECT count(*)::int FROM pgq.entrypoints WHERE entrypoint = 'rl.bad'), 0, 'refused calls changed nothing');

SELECT results_eq($$SELECT rate_limit, rate_period, rate_per_key FROM pgq.configure('rl.mail', rate_limit => 3, rate_period => '10 seconds')$$,
                  $$VALUES (3, interval '10 seconds', false)$$, 'set together');
SELECT results_eq($$SELECT rate_limit, rate_period FROM pgq.configure('rl.mail', rate_limit => 4)$$,
                  $$VALUES (4, interval '10 seconds')$$, 'the limit alone once a period is set');

-- Whole entrypoint: a claim takes at most the limit minus the window's starts.
SELECT pgq.enqueue('rl.mail', '{}'::jsonb) FROM generate_series(1, 10);
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{rl.mail}', 3, '2030-01-01 00:00:00+00')), 3, 'batch 3 of 4');
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{rl.mail}', 10, '2030-01-01 00:00:04+00')), 1, 'one left in the window');
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{rl.mail}', 10, '2030-01-01 00:00:09.999+00')), 0, 'none left');
SELECT results_eq($$SELECT rate_key, started_at, tokens FROM pgq.rate_starts WHERE entrypoint = 'rl.mail' ORDER BY started_at$$,
                  $$VALUES (NULL::text, timestamptz '2030-01-01 00:00:00+00', 3), (NULL, '2030-01-01 00:00:04+00', 1)$$,
                  'one row per claim and budget, with the jobs it started');
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{rl.mail}', 10, '2030-01-01 00:00:10+00')), 3,
          'at 00:00:10 the 3 of 00:00:00 left the window');
SELECT is(pgq._quota('rl.mail', NULL, 4, interval '10 seconds', false, 10, '2030-01-01 00:00:13.5+00'), 0,
          '_quota: 4 starts in (00:00:03.5, ...]');
SELECT is(pgq._quota('rl.mail', 2, 4, interval '10 seconds', false, 10, '2030-01-01 00:00:30+00'), 0,
          '_quota: the concurrency limit (7 running of 2) as well');

-- A claim whose clock is behind another's (its transaction began earlier) counts the starts
-- stamped after its own time too: else the two windows would hold more than the limit.
SELECT pgq.configure('rl.late', rate_limit => 2, rate_period => '10 seconds');
SELECT pgq.enqueue('rl.late', '{}'::jsonb, run_at => '2030-01-01 00:00:00+00') FROM generate_series(1, 4);
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{rl.late}', 2, '2030-01-01 00:00:08+00')), 2,
          'a claim at 00:00:08 takes the two starts');
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{rl.late}', 2, '2030-01-01 00:00:05+00')), 0,
          'a claim stamped 00:00:05 (after it) finds them in its window');

-- Recorded times never go back within a budget (the later of the claim's time and the last
-- recorded one), so the window's count stays two probes and exact.
SELECT pgq.configure('rl.late2', rate_limit => 3, rate_period => '10 seconds');
SELECT pgq.enqueue('rl.late2', '{}'::jsonb, run_at => '2030-01-01 00:00:00+00') FROM generate_series(1, 6);
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{rl.late2}', 1, '2030-01-01 00:00:08+00'))
          + (SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{rl.late2}', 1, '2030-01-01 00:00:05+00')), 2,
          'a start at 00:00:08, then one stamped 00:00:05');
SELECT results_eq($$SELECT started_at, cum FROM pgq.rate_starts WHERE entrypoint = 'rl.late2' ORDER BY cum$$,
                  $$VALUES (timestamptz '2030-01-01 00:00:08+00', 1::bigint), ('2030-01-01 00:00:08+00', 2)$$,
                  'the second is recorded at 00:00:08, the budget''s last time');
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{rl.late2}', 10, '2030-01-01 00:00:14+00')), 1,
          'at 00:00:14 both are in the window: one more fits, not three');

-- pgq.metrics: what waits on a limit.
SELECT results_eq($$SELECT rate_remaining, rate_wait_s, rate_keys_used_up, keys_at_limit, key_limited
                      FROM pgq.metrics('{rl.mail}', at => '2030-01-01 00:00:13.5+00')$$,
                  $$VALUES (0::bigint, 0.5::float8, NULL::bigint, NULL::bigint, NULL::bigint)$$,
                  'metrics: the budget is used up; one more start fits in 0.5 s');
SELECT pgq.configure('rl.keys', key_concurrency_limit => 1);
SELECT pgq.enqueue('rl.keys', '{}'::jsonb, group_key => k) FROM (VALUES ('a'), ('a'), ('a'), ('b'), ('b')) v(k);
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{rl.keys}', 10)), 2, 'one job per key runs');
SELECT results_eq($$SELECT rate_remaining, rate_keys_used_up, keys_at_limit, key_limited FROM pgq.metrics('{rl.keys}')$$,
                  $$VALUES (NULL::bigint, NULL::bigint, 2::bigint, 3::bigint)$$,
                  'metrics: two keys at their limit, three jobs wait on them');

-- Per key: each key its budget, the jobs without a key one more; fair share still applies.
SELECT pgq.configure('rl.api', rate_limit => 2, rate_period => '1 minute', rate_per_key => true);
SELECT pgq.enqueue('rl.api', '{}'::jsonb, group_key => k) FROM (VALUES ('a'), ('a'), ('a'), ('b'), ('b'), ('b')) v(k);
SELECT pgq.enqueue('rl.api', '{}'::jsonb) FROM generate_series(1, 3);
SELECT results_eq($$SELECT j.group_key, count(*)::int
                      FROM pgq.claim(gen_random_uuid(), '{rl.api}', 10, '2030-01-01 00:00:00+00') c
                      JOIN pgq.jobs j USING (id) GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('a'::text, 2), ('b', 2), (NULL, 1)$$,
                  'two per key; one job without a key (its turn), with room for one more');
SELECT results_eq($$SELECT j.group_key, count(*)::int
                      FROM pgq.claim(gen_random_uuid(), '{rl.api}', 10, '2030-01-01 00:00:30+00') c
                      JOIN pgq.jobs j USING (id) GROUP BY 1 ORDER BY 1$$,
                  $$VALUES (NULL::text, 1)$$, 'then only the jobs without a key have room');
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{rl.api}', 10, '2030-01-01 00:00:35+00')), 0,
          'then the jobs without a key have used up their budget too (one job of each group still queued)');
SELECT results_eq($$SELECT rate_key, sum(tokens)::int FROM pgq.rate_starts WHERE entrypoint = 'rl.api' GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('a'::text, 2), ('b', 2), (NULL, 2)$$, 'the starts per key');

-- pgq._rate_window: one budget's window, from its newest row and the window's first.
SELECT is_empty($$SELECT * FROM pgq._rate_window('rl.w', 7, '2030-01-01 00:00:00+00')$$,
                'a budget without rows: no row');
INSERT INTO pgq.rate_starts SELECT * FROM pgq._rate_rows('rl.w', 7, 'k', 2, '2030-01-01 00:00:00+00');
INSERT INTO pgq.rate_starts SELECT * FROM pgq._rate_rows('rl.w', 7, 'k', 3, '2030-01-01 00:00:10+00');
INSERT INTO pgq.rate_starts SELECT * FROM pgq._rate_rows('rl.w', 7, 'k', 4, '2030-01-01 00:00:05+00');
INSERT INTO pgq.rate_starts SELECT * FROM pgq._rate_rows('rl.w', 8, 'j', 1, '2030-01-01 00:00:05+00');
SELECT results_eq($$SELECT * FROM pgq._rate_window('rl.w', 7, '2029-12-31 23:59:59+00')$$,
                  $$VALUES (9::bigint, 9::bigint, timestamptz '2030-01-01 00:00:10+00')$$,
                  'every start in the window: 9, the newest row cum 9 (a start recorded late keeps the later time)');
SELECT results_eq($$SELECT used FROM pgq._rate_window('rl.w', 7, '2030-01-01 00:00:00+00')$$,
                  $$VALUES (7::bigint)$$, 'the window begins after the first row: 7');
SELECT results_eq($$SELECT used, last_cum FROM pgq._rate_window('rl.w', 7, '2030-01-01 00:00:10+00')$$,
                  $$VALUES (0::bigint, 9::bigint)$$, 'no row later than since: 0 used, the newest row still read');
SELECT results_eq($$SELECT used FROM pgq._rate_window('rl.w', 8, '2029-12-31 23:59:59+00')$$,
                  $$VALUES (1::bigint)$$, 'another key: its own budget');

-- rate_stats: what the window holds, per entrypoint.
SELECT results_eq($$SELECT entrypoint, started, remaining, budgets, budgets_used_up, next_start_at
                      FROM pgq.rate_stats('{rl.api, rl.mail}', '2030-01-01 00:00:40+00')$$,
                  $$VALUES ('rl.api'::text, 6::bigint, NULL::bigint, 3::bigint, 3::bigint, timestamptz '2030-01-01 00:01:00+00'),
                           ('rl.mail', 0, 4, 0, 0, NULL)$$,
                  'rate_stats: starts, what is left, budgets used up, when the budget grows');
SELECT throws_ok($$SELECT * FROM pgq.rate_stats('{{a}}')$$, 'PQ009', NULL, 'rate_stats: a 2-D array is refused');

-- rate_waits: whole budgets used up, and when one more start fits; per-key budgets never.
SELECT results_eq($$SELECT * FROM pgq.rate_waits('{rl.mail, rl.api, rl.none}', '2030-01-01 00:00:13+00')$$,
                  $$VALUES ('rl.mail'::text, timestamptz '2030-01-01 00:00:14+00')$$,
                  'rl.mail: 4 starts in (00:00:03, ...]; one more fits when the one of 00:00:04 leaves');
SELECT is((SELECT count(*)::int FROM pgq.rate_waits('{rl.mail}', '2030-01-01 00:00:15+00')), 0, 'room again at 00:00:15');
SELECT throws_ok($$SELECT * FROM pgq.rate_waits('{}')$$, 'PQ001', NULL, 'rate_waits: empty entrypoints: PQ001');

-- maintain removes what left the window; configure forgets the starts of a removed limit.
SELECT is((SELECT state FROM pgq.maintain('2030-01-01 00:00:50+00')), 'ok', 'maintain at 00:00:50');
SELECT is((SELECT array_agg(entrypoint || '@' || to_char(started_at, 'MI:SS') ORDER BY entrypoint, started_at) FROM pgq.rate_starts),
          ARRAY['rl.api@00:00', 'rl.api@00:00', 'rl.api@00:00', 'rl.api@00:30'],
          'rl.mail''s starts (all before 00:00:40) are gone; rl.api''s minute is not over');
SELECT pgq.configure('rl.api', rate_limit => 0);
SELECT is((SELECT count(*)::int FROM pgq.rate_starts WHERE entrypoint = 'rl.api'), 0, 'rate_limit 0 removes the limit and its starts');
SELECT pgq.configure('rl.late2', reset => true);
SELECT is((SELECT count(*)::int FROM pgq.rate_starts WHERE entrypoint = 'rl.late2'), 0, 'a reset removes them too');

SELECT * FROM finish();
ROLLBACK;
