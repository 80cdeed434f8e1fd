-- Workflows: depends_on at enqueue (pgq._add_deps), waiting jobs, settlement at the parent's end
-- (pgq._settle_deps from pgq._archive), pgq.workflow and pgq.parent_results, bad input.
BEGIN;
SELECT plan(39);

CREATE TEMP TABLE w AS
SELECT array_agg(id) AS ids FROM pgq.enqueue_many('{wf.split,wf.chunk,wf.chunk,wf.merge}',
                                                  depends_on => '[null, [1], [1], [2, {"position": 3}]]');
SELECT is((SELECT array_agg(status ORDER BY id) FROM pgq.jobs), '{queued,waiting,waiting,waiting}', 'the children wait');
SELECT is((SELECT array_agg(slot ORDER BY id) FROM pgq.jobs WHERE status = 'waiting'), '{4,4,4}'::smallint[],
          'waiting jobs are outside the ring');
SELECT is((SELECT array_agg(pending ORDER BY child_id) FROM pgq.job_waits), '{1,1,2}', 'pending edges per child');
SELECT is((SELECT count(*)::int FROM pgq.claim(gen_random_uuid(), '{wf.chunk,wf.merge}', 10)), 0, 'waiting jobs are not claimed');
SELECT is(pgq.next_run_at('{wf.chunk,wf.merge}'), NULL, 'and no worker is told to wait for them');

-- The split succeeds with a result: both chunks are released in the same transaction.
CREATE TEMP TABLE c AS SELECT * FROM pgq.claim('00000000-0000-0000-0000-00000000aaaa', '{wf.split}', 1);
SELECT is((SELECT status FROM pgq.complete('00000000-0000-0000-0000-00000000aaaa', (SELECT array_agg(id) FROM c),
                                           (SELECT array_agg(lease) FROM c), '{successful}', '[{"result": "s"}]')),
          'successful', 'the split completes');
SELECT is((SELECT array_agg(status ORDER BY id) FROM pgq.jobs), '{queued,queued,waiting}', 'the chunks are queued, the merge waits');
SELECT is((SELECT array_agg(state ORDER BY child_id) FROM pgq.job_deps WHERE parent_id = (SELECT ids[1] FROM w)),
          '{satisfied,satisfied}', 'the split''s edges are satisfied');
CREATE TEMP TABLE c2 AS SELECT * FROM pgq.claim('00000000-0000-0000-0000-00000000aaaa', '{wf.chunk,wf.merge}', 10);
SELECT is((SELECT count(*)::int FROM c2), 2, 'two chunks claimed, not the merge');
SELECT is((SELECT count(*)::int FROM pgq.complete('00000000-0000-0000-0000-00000000aaaa', (SELECT array_agg(id ORDER BY id) FROM c2),
                                                 (SELECT array_agg(lease ORDER BY id) FROM c2), '{successful,successful}',
                                                 '[{"result": 1}, {"result": 2}]')), 2, 'both chunks complete in one call');
SELECT is((SELECT status FROM pgq.jobs WHERE id = (SELECT ids[4] FROM w)), 'queued', 'the merge is released once both ended');
SELECT is((SELECT count(*)::int FROM pgq.job_waits), 0, 'no count left');
SELECT results_eq($$SELECT status, result FROM pgq.parent_results((SELECT ids[4] FROM w))$$,
                  $$VALUES ('successful'::text, '1'::jsonb), ('successful', '2'::jsonb)$$, 'parent_results: what the chunks returned');
SELECT results_eq($$SELECT entrypoint, state, children FROM pgq.workflow((SELECT ids[2] FROM w))$$,
                  $$VALUES ('wf.split'::text, 'successful'::text, (SELECT ids[2:3] FROM w)),
                           ('wf.chunk', 'successful', ARRAY[(SELECT ids[4] FROM w)]),
                           ('wf.chunk', 'successful', ARRAY[(SELECT ids[4] FROM w)]),
                           ('wf.merge', 'queued', '{}'::bigint[])$$,
                  'workflow: every job of the graph with its state and children');
SELECT is((SELECT count(*)::int FROM pgq.workflow((SELECT max(id) + 1000 FROM pgq.jobs))), 0, 'workflow of a job without edges: empty');

-- A parent already finished: successful counts as done; failed cancels, unless run_anyway.
SELECT pgq.configure('wf.dead', max_attempts => 1);
CREATE TEMP TABLE d AS SELECT pgq.enqueue('wf.dead', '{}') AS id;
CREATE TEMP TABLE dc AS SELECT * FROM pgq.claim('00000000-0000-0000-0000-00000000aaaa', '{wf.dead}', 1);
SELECT pgq.complete('00000000-0000-0000-0000-00000000aaaa', (SELECT array_agg(id) FROM dc), (SELECT array_agg(lease) FROM dc), '{failed}');
CREATE TEMP TABLE after_dead AS
SELECT array_agg(id) AS ids FROM pgq.enqueue_many('{wf.after,wf.after,wf.after}',
    depends_on => jsonb_build_array(jsonb_build_array(jsonb_build_object('job', (SELECT id FROM d))),
                                    jsonb_build_array(jsonb_build_object('job', (SELECT id FROM d), 'run_anyway', true)),
                                    jsonb_build_array(1)));
SELECT is((SELECT array_agg(h.status ORDER BY h.id) FROM pgq.job_history h WHERE h.id IN (SELECT unnest(ids[1:1] || ids[3:3]) FROM after_dead)),
          '{canceled,canceled}', 'a dead parent cancels its child at once, and that child''s child');
SELECT is((SELECT status FROM pgq.jobs WHERE id = (SELECT ids[2] FROM after_dead)), 'queued', 'run_anyway: it runs');

-- A requeued parent brings back what its failure canceled, waiting for it again.
SELECT is((SELECT count(*)::int FROM pgq.requeue(ARRAY[(SELECT id FROM d)])), 1, 'requeue the dead parent');
SELECT is((SELECT array_agg(status ORDER BY id) FROM pgq.jobs WHERE id IN (SELECT unnest(ids[1:1] || ids[3:3]) FROM after_dead)),
          '{waiting,waiting}', 'its canceled child and grandchild wait again');
CREATE TEMP TABLE dc2 AS SELECT * FROM pgq.claim('00000000-0000-0000-0000-00000000aaaa', '{wf.dead}', 1);
SELECT pgq.complete('00000000-0000-0000-0000-00000000aaaa', (SELECT array_agg(id) FROM dc2), (SELECT array_agg(lease) FROM dc2), '{successful}');
SELECT is((SELECT status FROM pgq.jobs WHERE id = (SELECT ids[1] FROM after_dead)), 'queued', 'the parent succeeded: the child is released');
SELECT is((SELECT status FROM pgq.jobs WHERE id = (SELECT ids[3] FROM after_dead)), 'waiting', 'the grandchild waits for the child');

-- Canceling a waiting job cancels what waits for it.
CREATE TEMP TABLE cw AS SELECT array_agg(id) AS ids FROM pgq.enqueue_many('{wf.a,wf.b,wf.c}', depends_on => '[null,[1],[2]]');
SELECT is((SELECT count(*)::int FROM pgq.cancel(ARRAY[(SELECT ids[2] FROM cw)])), 1, 'cancel the middle job');
SELECT is((SELECT array_agg(status ORDER BY id) FROM pgq.job_history WHERE id IN (SELECT unnest(ids[2:3]) FROM cw)),
          '{canceled,canceled}', 'its child is canceled with it');

-- cancel_workflow: every job of the graph that has not ended, from any of its jobs.
CREATE TEMP TABLE cwf AS SELECT array_agg(id) AS ids FROM pgq.enqueue_many('{wf.r,wf.s,wf.t}', depends_on => '[null,[1],[1,2]]');
SELECT is((SELECT count(*)::int FROM pgq.cancel_workflow((SELECT ids[3] FROM cwf))), 3, 'cancel_workflow from the last job: all three');
SELECT is((SELECT array_agg(status ORDER BY id) FROM pgq.job_history WHERE id IN (SELECT unnest(ids) FROM cwf)),
          '{canceled,canceled,canceled}', 'every job of the workflow ended canceled');
SELECT is((SELECT count(*)::int FROM pgq.cancel_workflow((SELECT ids[1] FROM cwf))), 0, 'again: nothing left to cancel');

-- requeue_workflow: the failed part of the graph in one call, each job waiting again for a
-- parent that comes back with it; the workflow id is the call's first job.
SELECT is((SELECT array_agg(DISTINCT workflow_id) FROM pgq.workflow((SELECT ids[3] FROM cwf))), (SELECT ids[1:1] FROM cwf),
          'the workflow id is the id of the call''s first job');
SELECT is((SELECT array_agg(id ORDER BY id) FROM pgq.requeue_workflow((SELECT ids[2] FROM cwf))), (SELECT ids FROM cwf),
          'requeue_workflow: every canceled job of it');
SELECT is((SELECT array_agg(status ORDER BY id) FROM pgq.jobs WHERE id IN (SELECT unnest(ids) FROM cwf)), '{queued,waiting,waiting}',
          'the first is queued, the others wait for their parents again');
SELECT is((SELECT array_agg(pending ORDER BY child_id) FROM pgq.job_waits WHERE child_id IN (SELECT unnest(ids) FROM cwf)), '{1,2}',
          'each counts its parents again');
SELECT is((SELECT count(*)::int FROM pgq.requeue_workflow((SELECT ids[1] FROM cwf))), 0, 'nothing failed: nothing requeued');
SELECT is((SELECT count(*)::int FROM pgq.requeue_workflow((SELECT max(id) + 1000 FROM pgq.jobs))), 0, 'a job outside any workflow: nothing');
SELECT throws_ok($$SELECT pgq.requeue_workflow(NULL)$$, 'PQ009', 'job_id must not be NULL', 'requeue_workflow of NULL: PQ009');

-- Bad input: nothing is added.
SELECT throws_ok($$SELECT pgq.enqueue_many('{wf.x,wf.x}', depends_on => '[[2], null]')$$, 'PQ009',
                 'job at position 1 depends on position 2: a job may only depend on jobs before it in the call (so no cycle can form)',
                 'a reference forward (a cycle could form): PQ009');
SELECT throws_ok($$SELECT pgq.enqueue_many('{wf.x}', depends_on => '[[{"job": 999999999}]]')$$, 'PQ009',
                 'job at position 1 depends on job 999999999, which does not exist (not live, not in history)', 'an unknown job: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue_many('{wf.x,wf.x}', depends_on => '[null]')$$, 'PQ003', NULL, 'another length: PQ003');
SELECT throws_ok($$SELECT pgq.enqueue_many('{wf.x,wf.x}', depends_on => '[null, ["1"]]')$$, 'PQ009', NULL, 'not a reference: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue_many('{wf.x,wf.x}', depends_on => '[null, [{"position": 1, "run_anyway": "yes"}]]')$$, 'PQ009',
                 'depends_on at position 2: {"position": 1, "run_anyway": "yes"} is not a reference (a position of an earlier job of this call, {"position": n} or {"job": id}, with an optional "run_anyway": true)',
                 'run_anyway not a boolean: PQ009 naming it');
SELECT throws_ok($$SELECT pgq.enqueue_many('{wf.x,wf.x}', dedupe_keys => '{k1,k2}', on_conflict => 'existing', depends_on => '[null,[1]]')$$,
                 'PQ009', NULL, 'with on_conflict existing: PQ009');

SELECT * FROM finish();
ROLLBACK;
