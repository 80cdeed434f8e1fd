-- Per-key concurrency and fair share: pgq.configure key_concurrency_limit, group keys at
-- enqueue, pgq.claim through pgq._keyed_candidates (keys in turn, each within its limit, the
-- jobs without a key after the last key), a swept stale job frees its slot, bad input.
BEGIN;
SELECT plan(27);

-- Policy and input ----------------------------------------------------------------------------
SELECT is((SELECT key_concurrency_limit FROM pgq.configure('kc', key_concurrency_limit => 2)), 2,
          'configure sets key_concurrency_limit');
SELECT throws_ok($$SELECT pgq.configure('kc', key_concurrency_limit => 0)$$, 'PQ008',
                 'key_concurrency_limit must be between 1 and 1000000, got 0', 'a limit of 0: PQ008 naming it');
SELECT throws_ok($$SELECT pgq.configure('kc', key_concurrency_limit => 2000000)$$, 'PQ008',
                 'key_concurrency_limit must be between 1 and 1000000, got 2000000', 'an absurd limit: PQ008 naming it');
SELECT throws_ok(format('SELECT pgq.enqueue(%L, group_key => %L)', 'kc', repeat('k', 201)), 'PQ009',
                 format('group key %L at position 1 is 201 bytes, over the 200-byte limit', repeat('k', 60) || '...'),
                 'a key over 200 bytes: PQ009 naming it');
SELECT throws_ok(format('SELECT * FROM pgq.enqueue_many(%L, group_keys => ARRAY[NULL, %L])', '{kc,kc}', repeat('k', 201)),
                 'PQ009', format('group key %L at position 2 is 201 bytes, over the 200-byte limit', repeat('k', 60) || '...'),
                 'enqueue_many names the position');
SELECT throws_ok($$SELECT * FROM pgq.enqueue_many('{kc,kc}', group_keys => '{a}')$$, 'PQ003',
                 'group_keys has 1 elements but entrypoints has 2', 'group_keys of another length: PQ003');

-- Keys in turn, each within its limit -----------------------------------------------------------
SELECT count(*) FROM pgq.enqueue_many(array_fill('kc'::text, ARRAY[20]), group_keys => array_fill('big'::text, ARRAY[20]));
SELECT count(*) FROM pgq.enqueue_many('{kc,kc,kc,kc}', group_keys => '{s1,s1,s2,s2}');
SELECT pgq.enqueue('kc') AS nokey \gset
SELECT is((SELECT group_key FROM pgq.jobs WHERE id = :nokey), NULL, 'a job without a key has none');

CREATE TEMP TABLE got AS
SELECT c.id, j.group_key FROM pgq.claim('00000000-0000-0000-0000-0000000000c1', '{kc}', 4) c JOIN pgq.jobs j USING (id);
SELECT is((SELECT count(DISTINCT coalesce(group_key, '-')) FROM got), 4::bigint,
          'a claim of 4 takes one job from each group (big, s1, s2, no key)');
INSERT INTO got SELECT c.id, j.group_key FROM pgq.claim('00000000-0000-0000-0000-0000000000c1', '{kc}', 10) c JOIN pgq.jobs j USING (id);
SELECT is((SELECT array_agg(n ORDER BY k) FROM (SELECT coalesce(group_key, '-') AS k, count(*) AS n FROM got GROUP BY 1) s),
          ARRAY[1, 2, 2, 2]::bigint[], 'then each key up to its limit of 2 (and the one job without a key)');
SELECT is((SELECT max(n) FROM (SELECT count(*) AS n FROM pgq.jobs WHERE entrypoint = 'kc' AND status = 'running'
                                  AND group_key IS NOT NULL GROUP BY group_key) s), 2::bigint,
          'no key has more than 2 running');
SELECT is((SELECT count(*) FROM pgq.claim('00000000-0000-0000-0000-0000000000c1', '{kc}', 10)), 0::bigint,
          'every key is full: nothing more is claimed');
SELECT ok((SELECT count(*) FROM pgq.jobs WHERE entrypoint = 'kc' AND status = 'queued') = 18,
          'the rest waits, queued');

-- A finished job frees its key's slot; the key's next job follows ----------------------------------
SELECT r.id AS done_id, r.lease AS done_lease
  FROM pgq.jobs r WHERE r.entrypoint = 'kc' AND r.group_key = 'big' AND r.status = 'running' ORDER BY r.id LIMIT 1 \gset
SELECT pgq.complete('00000000-0000-0000-0000-0000000000c1', ARRAY[:done_id]::bigint[], ARRAY[:done_lease]::bigint[], '{successful}');
SELECT is((SELECT j.group_key FROM pgq.claim('00000000-0000-0000-0000-0000000000c1', '{kc}', 10) c JOIN pgq.jobs j USING (id)),
          'big', 'a completion frees one slot of its key, and only that key gets a job');
SELECT is((SELECT group_key FROM pgq.job_history WHERE id = :done_id), 'big', 'history keeps the key');

-- A swept stale job frees its slot ------------------------------------------------------------------
SELECT is((SELECT count(*) FROM pgq.claim('00000000-0000-0000-0000-0000000000c1', '{kc}', 10,
                                          at => now() + interval '31 seconds') c
             JOIN pgq.jobs j USING (id) WHERE j.group_key = 's1'), 2::bigint,
          'after the heartbeat timeout the stale jobs are swept and the key''s slots are claimed again');
SELECT is((SELECT max(n) FROM (SELECT count(*) AS n FROM pgq.jobs WHERE entrypoint = 'kc' AND status = 'running'
                                  AND group_key IS NOT NULL GROUP BY group_key) s), 2::bigint,
          'still no key above its limit');

-- Round 1 passes over a key at its limit; keys in turn; a key capped across its lanes --------------
-- (hashtextextended order of the keys used here: e < h < c)
SELECT pgq.configure('kr', key_concurrency_limit => 1);
SELECT pgq.enqueue('kr', group_key => 'e');
SELECT count(*) FROM pgq.claim('00000000-0000-0000-0000-0000000000c2', '{kr}', 1);
SELECT count(*) FROM pgq.enqueue_many('{kr,kr,kr}', group_keys => '{e,h,c}');
SELECT setval(l.turn_seq, -9223372036854775808) FROM pgq.lanes l WHERE l.entrypoint = 'kr';  -- walk from e again
SELECT is((SELECT array_agg(j.group_key ORDER BY j.group_key)
             FROM pgq.claim('00000000-0000-0000-0000-0000000000c2', '{kr}', 2) c JOIN pgq.jobs j USING (id)),
          '{c,h}'::text[], 'a claim of 2 passes over e (at its limit) and takes h and c, not one job');
SELECT pgq.configure('kt', key_concurrency_limit => 10);
SELECT count(*) FROM pgq.enqueue_many(array_fill('kt'::text, ARRAY[6]), group_keys => '{e,e,h,h,c,c}');
CREATE TEMP TABLE turns (n serial, k text);
INSERT INTO turns (k) SELECT j.group_key FROM pgq.claim('00000000-0000-0000-0000-0000000000c2', '{kt}', 1) c JOIN pgq.jobs j USING (id);
INSERT INTO turns (k) SELECT j.group_key FROM pgq.claim('00000000-0000-0000-0000-0000000000c2', '{kt}', 1) c JOIN pgq.jobs j USING (id);
INSERT INTO turns (k) SELECT j.group_key FROM pgq.claim('00000000-0000-0000-0000-0000000000c2', '{kt}', 1) c JOIN pgq.jobs j USING (id);
INSERT INTO turns (k) SELECT j.group_key FROM pgq.claim('00000000-0000-0000-0000-0000000000c2', '{kt}', 1) c JOIN pgq.jobs j USING (id);
SELECT is(ARRAY(SELECT k FROM turns ORDER BY n), '{e,h,c,e}'::text[],
          'claims of one job take the keys in turn, from where the last one stopped');
SELECT pgq.configure('kl', key_concurrency_limit => 1);
SELECT pgq.enqueue('kl', priority => 0, group_key => 'e'), pgq.enqueue('kl', priority => 5, group_key => 'e');
SELECT is((SELECT array_agg(c.priority) FROM pgq.claim('00000000-0000-0000-0000-0000000000c2', '{kl}', 5) c),
          '{5}'::int[], 'a key queued at two priorities gets one job in all (its limit), the higher priority''s');
SELECT pgq.configure('kq', key_concurrency_limit => 1, concurrency_limit => 2);
SELECT pgq.enqueue('kq', priority => 5, group_key => 'e'), pgq.enqueue('kq', priority => 0, group_key => 'e'),
       pgq.enqueue('kq', priority => 0, group_key => 'h');
SELECT is((SELECT array_agg(j.group_key ORDER BY c.priority DESC)
             FROM pgq.claim('00000000-0000-0000-0000-0000000000c2', '{kq}', 3) c JOIN pgq.jobs j USING (id)),
          '{e,h}'::text[], 'a candidate the cap per key drops does not use up the entrypoint''s quota (2: e and h)');

-- Keys met at their limit: the walk goes on in another pass -----------------------------------
-- Six keys, limit 1, two jobs each; a claim of 6 runs one job of each. The keys at the 4th and
-- 5th place in hash order finish theirs. The next claim of 2 walks from the last key served (the
-- 6th): it meets the 1st, 2nd and 3rd at their limit before the 4th and 5th with room, so it
-- takes its two jobs only by walking on after keys met full (three passes of two keys).
SELECT pgq.configure('kpass', key_concurrency_limit => 1) IS NOT NULL;
SELECT count(*) FROM pgq.enqueue_many(array_fill('kpass'::text, ARRAY[12]),
                                      group_keys => ARRAY(SELECT 'p' || (g % 6) FROM generate_series(1, 12) g));
CREATE TEMP TABLE pass1 AS
SELECT c.id, c.lease, j.group_key FROM pgq.claim('00000000-0000-0000-0000-0000000000c3', '{kpass}', 6) c JOIN pgq.jobs j USING (id);
CREATE TEMP TABLE ranked AS
SELECT k, row_number() OVER (ORDER BY hashtextextended(k, 0)) AS r FROM (SELECT DISTINCT group_key AS k FROM pass1) s;
SELECT is((SELECT count(*) FROM ranked), 6::bigint, 'a claim of 6 over six keys at limit 1 takes one job of each');
SELECT pgq.complete('00000000-0000-0000-0000-0000000000c3', array_agg(p.id), array_agg(p.lease),
                    array_fill('successful'::text, ARRAY[count(*)::int]))
  FROM pass1 p JOIN ranked r ON r.k = p.group_key WHERE r.r IN (4, 5);
SELECT is((SELECT array_agg(r.r ORDER BY r.r)
             FROM pgq.claim('00000000-0000-0000-0000-0000000000c3', '{kpass}', 2) c
             JOIN pgq.jobs j USING (id) JOIN ranked r ON r.k = j.group_key),
          '{4,5}'::bigint[], 'keys met at their limit do not use up the claim: it walks on to the keys with room');

-- A key limit and a concurrency limit: the entrypoint's own limit holds too ----------------------
SELECT pgq.configure('kc_both', concurrency_limit => 3, key_concurrency_limit => 2);
SELECT count(*) FROM pgq.enqueue_many(array_fill('kc_both'::text, ARRAY[10]),
                                      group_keys => ARRAY(SELECT 'k' || (g % 5) FROM generate_series(1, 10) g));
SELECT is((SELECT count(*)::int FROM pgq.claim('00000000-0000-0000-0000-0000000000c4', '{kc_both}', 10)), 3,
          'a claim of 10 over 5 keys with room for 2 each takes 3: the concurrency limit of the entrypoint');
SELECT is((SELECT count(*)::int FROM pgq.claim('00000000-0000-0000-0000-0000000000c4', '{kc_both}', 10)), 0,
          'then none while the 3 run');

-- Keys survive the moves of a job ---------------------------------------------------------------
SELECT pgq.enqueue('kc_move', group_key => 'm', delay => '1 hour') AS moved \gset
SELECT is((SELECT group_key FROM pgq.jobs WHERE id = :moved AND status = 'scheduled'), 'm', 'a delayed job keeps its key');
SELECT pgq._promote('{kc_move}', now() + interval '2 hours', 10);
SELECT is((SELECT group_key FROM pgq.jobs WHERE id = :moved AND status = 'queued'), 'm', 'promotion keeps the key');
SELECT pgq.cancel(ARRAY[:moved]::bigint[]);
SELECT pgq.requeue(ARRAY[:moved]::bigint[]);
SELECT is((SELECT group_key FROM pgq.jobs WHERE id = :moved), 'm', 'requeue from history keeps the key');

SELECT * FROM finish();
ROLLBACK;
