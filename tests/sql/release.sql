-- pgq.release: claimed jobs go back to the queue without counting an attempt; stale leases ignored.
BEGIN;
SELECT plan(23);

SELECT pgq.enqueue('rl', '{"n": 1}', run_at => now() - interval '1 minute') AS r1 \gset
SELECT pgq.enqueue('rl', '{"n": 2}', run_at => now() - interval '30 seconds') AS r2 \gset
CREATE TEMP TABLE c AS SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{rl}', 2, now());
SELECT lease AS l1 FROM c WHERE id = :r1 \gset
SELECT lease AS l2 FROM c WHERE id = :r2 \gset

SELECT results_eq(format($$SELECT id FROM pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[])$$,
                         :r1, :l1),
                  format('VALUES (%s::bigint)', :r1), 'release returns the id released');
SELECT row_eq(format('SELECT status, attempt, lease, worker_id, heartbeat_at, started_at, run_at FROM pgq.jobs WHERE id = %s', :r1),
              ROW('queued'::text, 0, NULL::bigint, NULL::uuid, NULL::timestamptz, NULL::timestamptz, now() - interval '1 minute'),
              'back to queued, attempt restored, lease/owner/heartbeat cleared, run_at unchanged');
SELECT is((SELECT errors FROM pgq.jobs WHERE id = :r1), '[]'::jsonb, 'a release records no error');
SELECT is((SELECT id FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{rl}', 1, now())), :r1::bigint,
          'the released job is claimed again');
SELECT is((SELECT attempt FROM pgq.jobs WHERE id = :r1), 1, 'claimed again as attempt 1');

-- Stale lease, wrong worker, unknown id: ignored.
SELECT is((SELECT count(*)::int FROM pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[:r1]::bigint[], ARRAY[:l1]::bigint[])), 0,
          'the old lease of a job claimed again: ignored');
SELECT is((SELECT count(*)::int FROM pgq.release('22222222-2222-2222-2222-222222222222', ARRAY[:r2]::bigint[], ARRAY[:l2]::bigint[])), 0,
          'another worker''s job: ignored');
SELECT is((SELECT count(*)::int FROM pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[-1]::bigint[], ARRAY[1]::bigint[])), 0,
          'an unknown id: ignored');
SELECT row_eq(format('SELECT status, worker_id, attempt FROM pgq.jobs WHERE id = %s', :r1),
              ROW('running'::text, '22222222-2222-2222-2222-222222222222'::uuid, 1), 'the re-claimed job is untouched');
SELECT row_eq(format('SELECT status, lease FROM pgq.jobs WHERE id = %s', :r2),
              ROW('running'::text, :l2::bigint), 'the other worker''s job is untouched');

-- A stale re-claim released: attempt goes back to the count before this claim; the error entry stays.
SELECT pgq.enqueue('rl_stale') AS s \gset
SELECT lease AS sl1 FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{rl_stale}', 1, now()) \gset
SELECT lease AS sl2 FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{rl_stale}', 1, now() + interval '31 seconds') \gset
SELECT is((SELECT count(*)::int FROM pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[:s]::bigint[], ARRAY[:sl1]::bigint[])), 0,
          'a zombie cannot release the new attempt');
SELECT is((SELECT count(*)::int FROM pgq.release('22222222-2222-2222-2222-222222222222', ARRAY[:s]::bigint[], ARRAY[:sl2]::bigint[])), 1,
          'the new owner releases it');
SELECT row_eq(format('SELECT status, attempt, jsonb_array_length(errors) FROM pgq.jobs WHERE id = %s', :s),
              ROW('queued'::text, 1, 1), 'attempt 2 released: attempt 1, the heartbeat-timeout entry kept');

-- Argument errors change nothing.
SELECT status AS r2_status, coalesce(lease, 0) AS r2_lease, attempt AS r2_attempt FROM pgq.jobs WHERE id = :r2 \gset
SELECT throws_ok(format($$SELECT pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], '{}')$$, :r2),
    'PQ003', 'leases has 0 elements but ids has 1', 'unequal lengths: PQ003');
SELECT throws_ok(format($$SELECT pgq.release(NULL, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[])$$, :r2, :l2),
    'PQ009', 'worker_id must not be NULL', 'NULL worker: PQ009');
SELECT row_eq(format('SELECT status, coalesce(lease, 0), attempt FROM pgq.jobs WHERE id = %s', :r2),
              ROW(:'r2_status'::text, :r2_lease::bigint, :r2_attempt), 'failed releases changed nothing');

-- A job whose cancellation was requested is not queued again: it ends as canceled.
SELECT pgq.enqueue('rl_cancel') AS rc \gset
SELECT lease AS rcl FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{rl_cancel}', 1, now()) \gset
SELECT pgq.cancel(ARRAY[:rc]::bigint[]);
SELECT is((SELECT array_agg(r.id) FROM pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[:rc]::bigint[], ARRAY[:rcl]::bigint[]) r),
          ARRAY[:rc]::bigint[], 'releasing a job flagged for cancellation returns its id');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.jobs WHERE id = :rc)
          AND (SELECT status FROM pgq.job_history WHERE id = :rc) = 'canceled',
          'and it ends in history as canceled, not back in the queue');
SELECT row_eq(format('SELECT attempt, lease, worker_id, started_at, errors FROM pgq.job_history WHERE id = %s', :rc),
              ROW(0, NULL::bigint, NULL::uuid, NULL::timestamptz, '[]'::jsonb),
              'a release is not an attempt: attempt 0, no lease, worker or start time, nothing in the error list');

-- A released job goes to the back of its lane: a new ready number, after the jobs that became
-- runnable before the release (a claim's cursor may have passed its old place).
SELECT pgq.enqueue('rl_lane', '{"n": "first"}') AS first \gset
SELECT lease AS first_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{rl_lane}', 1, now()) \gset
SELECT ready_seq AS first_seq FROM pgq.jobs WHERE id = :first \gset
SELECT pgq.enqueue('rl_lane', '{"n": "second"}') AS second \gset
SELECT pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[:first]::bigint[], ARRAY[:first_l]::bigint[]);
SELECT ok((SELECT ready_seq FROM pgq.jobs WHERE id = :first) > (SELECT ready_seq FROM pgq.jobs WHERE id = :second),
          'the released job''s ready number is behind the job enqueued after its claim');
SELECT ok((SELECT ready_seq FROM pgq.jobs WHERE id = :first) > :first_seq, 'a new ready number, not its old one');
SELECT row_eq(format('SELECT status, slot < 4 FROM pgq.jobs WHERE id = %s', :first), ROW('queued'::text, true),
              'queued in a ring slot');
SELECT is((SELECT id FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{rl_lane}', 1, now())), :second::bigint,
          'the next claim takes the job enqueued after the claim, not the released one');

SELECT * FROM finish();
ROLLBACK;
