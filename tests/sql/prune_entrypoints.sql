-- pgq.prune_entrypoints: removes entrypoint rows nobody needs; keeps configured, paused, used and
-- scheduled ones; a removed entrypoint comes back with the next enqueue. Its lanes and their cursor
-- sequences go with it.
BEGIN;
SELECT plan(13);

-- Lanes: written directly (an entrypoint unused for two days with two lanes, one in use).
INSERT INTO pgq.entrypoints (entrypoint, updated_at) VALUES ('pl.gone', now() - interval '2 days'),
                                                            ('pl.used', now() - interval '2 days');
INSERT INTO pgq.jobs (entrypoint, status, slot, ready_seq) VALUES ('pl.used', 'queued', 0, nextval('pgq.ready_seq'));
SELECT pgq._add_lanes('{pl.gone, pl.gone, pl.used}', '{0, 5, 0}');
CREATE TEMP TABLE pl_seqs AS SELECT entrypoint, cursor_seq::oid AS seq FROM pgq.lanes WHERE entrypoint LIKE 'pl.%';
SELECT is(pgq.prune_entrypoints(), 1::bigint, 'lanes: the unused entrypoint is removed');
SELECT is((SELECT array_agg(entrypoint ORDER BY entrypoint) FROM pgq.lanes WHERE entrypoint LIKE 'pl.%'), ARRAY['pl.used'],
          'its two lanes are gone, the used one''s lane stays');
SELECT is((SELECT count(*)::int FROM pl_seqs s JOIN pg_class c ON c.oid = s.seq WHERE s.entrypoint = 'pl.gone'), 0,
          'their cursor sequences are dropped');
SELECT is((SELECT count(*)::int FROM pl_seqs s JOIN pg_class c ON c.oid = s.seq WHERE s.entrypoint = 'pl.used'), 1,
          'the kept lane''s sequence is still there');
DELETE FROM pgq.jobs WHERE entrypoint = 'pl.used';
UPDATE pgq.entrypoints SET updated_at = now() WHERE entrypoint = 'pl.used';

SELECT count(*) FROM pgq.enqueue_many(ARRAY['pe.done', 'pe.live', 'pe.conf', 'pe.paused', 'pe.sched']);
SELECT count(*) FROM pgq.cancel(ARRAY(SELECT id FROM pgq.jobs WHERE entrypoint <> 'pe.live'));
SELECT pgq.configure('pe.conf', max_attempts => 3);
SELECT pgq.pause('{pe.paused}');
SELECT pgq.schedule('pe.s', 'pe.sched', '* * * * *', now());
UPDATE pgq.entrypoints SET updated_at = now() - interval '2 days' WHERE entrypoint LIKE 'pe.%';

SELECT is(pgq.prune_entrypoints(at => now() - interval '3 days'), 0::bigint, 'nothing unchanged for a day before that');
SELECT is(pgq.prune_entrypoints(), 1::bigint, 'one row removed');
SELECT results_eq($$SELECT entrypoint FROM pgq.entrypoints WHERE entrypoint LIKE 'pe.%' ORDER BY 1$$,
                  $$VALUES ('pe.conf'::text), ('pe.live'), ('pe.paused'), ('pe.sched')$$,
                  'kept: configured, with a live job, paused, named by a schedule');
SELECT is((SELECT count(*)::int FROM pgq.job_history WHERE entrypoint = 'pe.done'), 1, 'history keeps the name');
SELECT lives_ok($$SELECT pgq.enqueue('pe.done')$$, 'the next enqueue works');
SELECT is((SELECT max_attempts FROM pgq.entrypoints WHERE entrypoint = 'pe.done'), 5, 'and brings the row back with the defaults');
SELECT throws_ok($$SELECT pgq.prune_entrypoints('-1 day')$$, 'PQ008', NULL, 'negative older_than: PQ008');
SELECT throws_ok($$SELECT pgq.prune_entrypoints(lock_wait => '2 minutes')$$, 'PQ008', NULL, 'lock_wait over a minute: PQ008');
SELECT throws_ok($$SELECT pgq.prune_entrypoints(at => 'infinity')$$, 'PQ009', NULL, 'at infinity: PQ009');

SELECT * FROM finish();
ROLLBACK;
