-- pgq.prune_workers: rows of workers gone for over 15 minutes go, unless they still hold jobs.
BEGIN;
SELECT plan(7);

-- active (seen now), gone 10 minutes (kept), gone 20 minutes (pruned), gone 20 minutes holding a job (kept),
-- gone 20 minutes with a 10-minute timeout (15 + 10 = 25 minutes: kept).
SELECT pgq.register_worker('11111111-1111-1111-1111-111111111111');
SELECT pgq.register_worker('22222222-2222-2222-2222-222222222222', at => now() - interval '10 minutes');
SELECT pgq.register_worker('33333333-3333-3333-3333-333333333333', at => now() - interval '20 minutes');
SELECT pgq.register_worker('44444444-4444-4444-4444-444444444444', '{pw}', at => now() - interval '20 minutes');
SELECT pgq.register_worker('55555555-5555-5555-5555-555555555555', timeout => interval '10 minutes',
                           at => now() - interval '20 minutes');
SELECT pgq.enqueue('pw', run_at => now() - interval '1 hour');
SELECT count(*) FROM pgq.claim('44444444-4444-4444-4444-444444444444', '{pw}', 1, now() - interval '20 minutes');

SELECT is(pgq.prune_workers(), 1::bigint, 'one row pruned');
SELECT set_eq($$SELECT worker_id::text FROM pgq.workers$$,
              ARRAY['11111111-1111-1111-1111-111111111111', '22222222-2222-2222-2222-222222222222',
                    '44444444-4444-4444-4444-444444444444', '55555555-5555-5555-5555-555555555555'],
              'active, gone for 10 minutes, gone but holding a job, and gone for less than timeout + 15 minutes stay');
SELECT is(pgq.prune_workers(), 0::bigint, 'again: nothing');
SELECT is(pgq.prune_workers(now() + interval '20 minutes'), 3::bigint, '20 minutes later the idle ones go too');
SELECT results_eq($$SELECT worker_id::text FROM pgq.workers$$, ARRAY['44444444-4444-4444-4444-444444444444'],
                  'the one holding a job stays');
SELECT pgq.cancel(ARRAY(SELECT id FROM pgq.jobs WHERE entrypoint = 'pw'));
SELECT is(pgq.prune_workers(now() + interval '20 minutes'), 0::bigint, 'a cancel request does not free the job');
SELECT count(*) FROM pgq.claim('66666666-6666-6666-6666-666666666666', '{pw}', 1, now());
SELECT is(pgq.prune_workers(now()), 1::bigint, 'once its job left (archived as canceled by a claim), it goes');

SELECT * FROM finish();
ROLLBACK;
