-- Unique by period (pgq.configure dedupe_period, dedupe_states): a job finished within the
-- period in a listed state keeps its dedupe key; enqueue and enqueue_many refuse it or answer
-- 'existing'; after the period the key is free; bad values are PQ008.
BEGIN;
SELECT plan(26);

-- Policy: defaults, set, read back, bad values ---------------------------------------------------
SELECT pgq.enqueue('ubp_default');
SELECT row_eq($$SELECT dedupe_period, dedupe_states FROM pgq.entrypoints WHERE entrypoint = 'ubp_default'$$,
              ROW(interval '0', '{successful}'::text[]), 'by default keys are freed when the job finishes');
SELECT row_eq($$SELECT dedupe_period, dedupe_states
                  FROM pgq.configure('ubp', dedupe_period => '24 hours', dedupe_states => '{successful,failed}')$$,
              ROW(interval '24 hours', '{successful,failed}'::text[]), 'configure sets dedupe_period and dedupe_states');
SELECT row_eq($$SELECT dedupe_period, dedupe_states FROM pgq.configure('ubp', max_attempts => 1)$$,
              ROW(interval '24 hours', '{successful,failed}'::text[]), 'NULL leaves them unchanged');
SELECT throws_ok($$SELECT pgq.configure('ubp', dedupe_period => '-1 second')$$, 'PQ008',
                 'dedupe_period must be between 00:00:00 and 3650 days, got -00:00:01', 'a negative period: PQ008 naming it');
SELECT throws_ok($$SELECT pgq.configure('ubp', dedupe_period => '3651 days')$$, 'PQ008',
                 'dedupe_period must be between 00:00:00 and 3650 days, got 3651 days', 'an absurd period: PQ008 naming it');
SELECT throws_ok($$SELECT pgq.configure('ubp', dedupe_states => '{successful,done}')$$, 'PQ008',
                 'dedupe_states must be distinct end states among successful, failed, canceled, got {successful,done}',
                 'an unknown state: PQ008 naming the value');
SELECT throws_ok($$SELECT pgq.configure('ubp', dedupe_states => '{}')$$, 'PQ008',
                 'dedupe_states must be distinct end states among successful, failed, canceled, got {}', 'no state: PQ008');
SELECT throws_ok($$SELECT pgq.configure('ubp', dedupe_states => '{failed,failed}')$$, 'PQ008',
                 'dedupe_states must be distinct end states among successful, failed, canceled, got {failed,failed}', 'a state twice: PQ008');
SELECT throws_ok($$SELECT pgq.configure('ubp', dedupe_states => ARRAY[NULL]::text[])$$, 'PQ008',
                 'dedupe_states must be distinct end states among successful, failed, canceled, got {NULL}', 'a NULL state: PQ008');
SELECT is((SELECT dedupe_period FROM pgq.entrypoints WHERE entrypoint = 'ubp'), interval '24 hours',
          'a refused configure changes nothing');

-- A successful job keeps its key for the period ------------------------------------------------
SELECT pgq.enqueue('ubp', dedupe_key => 'daily-report:2026-12-01') AS j1 \gset
SELECT c.lease AS l1 FROM pgq.claim('00000000-0000-0000-0000-0000000000b1', '{ubp}') c \gset
SELECT pgq.complete('00000000-0000-0000-0000-0000000000b1', ARRAY[:j1]::bigint[], ARRAY[:l1]::bigint[], '{successful}');
SELECT is((SELECT count(*) FROM pgq.live_keys WHERE dedupe_key = 'daily-report:2026-12-01'), 0::bigint,
          'the live key is freed as ever (the history row keeps it)');
SELECT throws_ok($$SELECT pgq.enqueue('ubp', dedupe_key => 'daily-report:2026-12-01')$$, 'PQ007',
                 format('dedupe key ''daily-report:2026-12-01'' is kept until %s by job %s, finished at %s (dedupe_period 24:00:00)',
                        now() + interval '24 hours', :j1, now()),
                 'a second job with the key is refused, naming the job that keeps it and until when');
SELECT is(pgq.enqueue('ubp', dedupe_key => 'daily-report:2026-12-01', on_conflict => 'existing'), :j1::bigint,
          'on_conflict => existing answers the finished job''s id');
SELECT throws_ok($$SELECT * FROM pgq.enqueue_many('{ubp}', dedupe_keys => '{daily-report:2026-12-01}')$$, 'PQ007',
                 format('dedupe key ''daily-report:2026-12-01'' is kept until %s by job %s, finished at %s (dedupe_period 24:00:00)',
                        now() + interval '24 hours', :j1, now()),
                 'enqueue_many refuses it too');
SELECT is((SELECT array_agg(x) FROM pgq.enqueue_many('{ubp,ubp,ubp}', dedupe_keys => '{other-1,daily-report:2026-12-01,daily-report:2026-12-01}',
                                                       on_conflict => 'existing') x)[2:3],
          ARRAY[:j1, :j1]::bigint[], 'enqueue_many existing answers the finished job''s id (twice for a key given twice)');
SELECT is((SELECT count(*) FROM pgq.jobs WHERE dedupe_key = 'daily-report:2026-12-01'), 0::bigint,
          'no live job was added for the kept key');
SELECT is((SELECT count(*) FROM pgq.live_keys WHERE dedupe_key = 'daily-report:2026-12-01'), 0::bigint,
          'and no live key is left behind by the refused enqueues');
SELECT is((SELECT count(*) FROM pgq.jobs WHERE dedupe_key = 'other-1'), 1::bigint,
          'the other element of the batch was added');
SELECT is((SELECT f.id FROM pgq.find_by_dedupe_key('daily-report:2026-12-01') f), :j1::bigint,
          'find_by_dedupe_key finds the finished job');
SELECT ok(pgq.enqueue('ubp_default', dedupe_key => 'daily-report:2026-12-01') IS NOT NULL,
          'an entrypoint without a period accepts the key (the new job''s entrypoint decides)');

-- States not listed do not keep the key: canceled is not listed --------------------------------
SELECT pgq.enqueue('ubp', dedupe_key => 'ubp-cancel') AS j2 \gset
SELECT pgq.cancel(ARRAY[:j2]::bigint[]);
SELECT isnt(pgq.enqueue('ubp', dedupe_key => 'ubp-cancel'), :j2::bigint, 'a job canceled (not in dedupe_states) keeps no key');

-- A failed (dead) job keeps its key -------------------------------------------------------------
SELECT pgq.enqueue('ubp', dedupe_key => 'ubp-fail') AS j3 \gset
SELECT c.lease AS l3 FROM pgq.claim('00000000-0000-0000-0000-0000000000b1', '{ubp}', 10) c WHERE c.id = :j3 \gset
SELECT pgq.complete('00000000-0000-0000-0000-0000000000b1', ARRAY[:j3]::bigint[], ARRAY[:l3]::bigint[], '{failed}');
SELECT is((SELECT status FROM pgq.job_history WHERE id = :j3), 'failed', 'the job is dead (max_attempts 1)');
SELECT is(pgq.enqueue('ubp', dedupe_key => 'ubp-fail', on_conflict => 'existing'), :j3::bigint,
          'a failed job keeps its key (failed is listed)');
SELECT is((SELECT array_agg(r.id) FROM pgq.requeue(ARRAY[:j3]::bigint[]) r), ARRAY[:j3]::bigint[],
          'requeue of the job that keeps the key goes through (an operator''s explicit action)');

-- Expiry: the period is measured from finished_at -----------------------------------------------
SELECT pgq.enqueue('ubp', dedupe_key => 'ubp-old') AS j5 \gset
SELECT c.lease AS l5 FROM pgq.claim('00000000-0000-0000-0000-0000000000b1', '{ubp}', 10) c WHERE c.id = :j5 \gset
SELECT pgq.complete('00000000-0000-0000-0000-0000000000b1', ARRAY[:j5]::bigint[], ARRAY[:l5]::bigint[], '{successful}',
                    at => now() - interval '25 hours');
SELECT isnt(pgq.enqueue('ubp', dedupe_key => 'ubp-old'), :j5::bigint, 'after the period a new job gets the key');
SELECT pgq.enqueue('ubp', dedupe_key => 'ubp-zero') AS j7 \gset
SELECT c.lease AS l7 FROM pgq.claim('00000000-0000-0000-0000-0000000000b1', '{ubp}', 10) c WHERE c.id = :j7 \gset
SELECT pgq.complete('00000000-0000-0000-0000-0000000000b1', ARRAY[:j7]::bigint[], ARRAY[:l7]::bigint[], '{successful}');
SELECT pgq.configure('ubp', dedupe_period => '0');
SELECT isnt(pgq.enqueue('ubp', dedupe_key => 'ubp-zero', on_conflict => 'existing'), :j7::bigint, 'period 0 turns it off');

SELECT * FROM finish();
ROLLBACK;
