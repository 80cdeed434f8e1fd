-- pgq.take_tokens: all or nothing from a rate-limited entrypoint's budget, shared with claims;
-- the answer when refused; bad input refused with nothing recorded.
BEGIN;
SELECT plan(16);

SELECT pgq.configure('tt.api', rate_limit => 5, rate_period => '1 minute');
SELECT pgq.configure('tt.keyed', rate_limit => 2, rate_period => '1 minute', rate_per_key => true);
SELECT pgq.configure('tt.free');

SELECT results_eq($$SELECT * FROM pgq.take_tokens('tt.api', 3, NULL, '2030-01-01 00:00:00+00')$$,
                  $$VALUES (true, 2, NULL::timestamptz)$$, 'granted: 2 of 5 left');
SELECT results_eq($$SELECT * FROM pgq.take_tokens('tt.api', 3, NULL, '2030-01-01 00:00:20+00')$$,
                  $$VALUES (false, 2, timestamptz '2030-01-01 00:01:00+00')$$,
                  'refused (3 > 2 left): retry when the 3 taken at 00:00 leave the window');
SELECT is((SELECT sum(tokens)::int FROM pgq.rate_starts WHERE entrypoint = 'tt.api'), 3, 'a refusal records nothing');
SELECT results_eq($$SELECT * FROM pgq.take_tokens('tt.api', 2, NULL, '2030-01-01 00:00:30+00')$$,
                  $$VALUES (true, 0, NULL::timestamptz)$$, 'the last 2 granted');
SELECT results_eq($$SELECT * FROM pgq.take_tokens('tt.api', 4, NULL, '2030-01-01 00:00:40+00')$$,
                  $$VALUES (false, 0, timestamptz '2030-01-01 00:01:30+00')$$,
                  '4 need both earlier starts gone: at 00:01:30');
SELECT results_eq($$SELECT * FROM pgq.take_tokens('tt.api', 3, NULL, '2030-01-01 00:01:00+00')$$,
                  $$VALUES (true, 0, NULL::timestamptz)$$, 'at 00:01:00 the first 3 have left the window (it is half-open)');

-- Claims share the budget.
SELECT pgq.enqueue('tt.api', '{}'::jsonb, run_at => '2030-01-01 00:00:00+00') FROM generate_series(1, 3);
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{tt.api}', 10, '2030-01-01 00:01:10+00')), 0,
          'the tokens taken leave no room for claims');
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{tt.api}', 10, '2030-01-01 00:01:31+00')), 2,
          'two leave the window at 00:01:30: two claimed');

-- Per key: one budget per key, one for no key.
SELECT results_eq($$SELECT granted, remaining FROM pgq.take_tokens('tt.keyed', 2, 'a', '2030-01-01 00:00:00+00')$$,
                  $$VALUES (true, 0)$$, 'key a used up');
SELECT results_eq($$SELECT granted, remaining FROM pgq.take_tokens('tt.keyed', 1, 'b', '2030-01-01 00:00:00+00')$$,
                  $$VALUES (true, 1)$$, 'key b has its own budget');
SELECT results_eq($$SELECT granted, remaining FROM pgq.take_tokens('tt.keyed', 2, NULL, '2030-01-01 00:00:00+00')$$,
                  $$VALUES (true, 0)$$, 'the jobs without a key have theirs');

-- Bad input.
SELECT throws_ok($$SELECT * FROM pgq.take_tokens('tt.free')$$, 'PQ008',
                 'entrypoint ''tt.free'' has no rate limit (pgq.configure rate_limit, rate_period)', 'no rate limit: PQ008');
SELECT throws_ok($$SELECT * FROM pgq.take_tokens('tt.api', 6)$$, 'PQ009',
                 'tokens must be between 1 and the rate_limit of ''tt.api'', 5, got 6', 'more than the limit: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.take_tokens('tt.api', NULL)$$, 'PQ009', NULL, 'NULL tokens: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.take_tokens('tt.api', 1, 'k')$$, 'PQ009',
                 'entrypoint ''tt.api'' has one rate budget for all its jobs (rate_per_key false): rate_key must be NULL, got ''k''',
                 'a key for a whole-entrypoint budget: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.take_tokens('tt.keyed', 1, repeat('k', 201))$$, 'PQ009', NULL, 'a key over 200 bytes: PQ009');

SELECT * FROM finish();
ROLLBACK;
