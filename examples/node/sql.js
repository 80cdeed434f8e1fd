// Every statement the Node examples send: one call of a pgq function each, nothing else.
// See docs/any-language.md for what each call does and why it is written this way.
//
// Driver notes (node-postgres):
// - set-returning functions are called with `SELECT ... FROM pgq.f(...)`, so rows come back
//   as columns, not as one composite text value;
// - bigint ids and leases arrive as strings: keep them as strings, pass them back as they are;
// - JSON goes in as text encoded here (JSON.stringify): node-postgres sends a string as-is and
//   turns a JS array into a PostgreSQL array; a batch of JSON values is ONE JSON array
//   (element i for job i), which the functions take as one jsonb argument;
// - times are computed by the server (`now()`), never on the client clock.

// $1 worker id (uuid), $2 entrypoints (text[]), $3 batch size. Answers the claimed jobs with
// the heartbeat timeout in seconds, whether a failure now makes the job dead, the attempt's
// time limit in seconds (NULL: none) and, for a job taken over from a silent worker, who that
// was (JSON; NULL otherwise).
export const CLAIM = `
  SELECT id, lease, entrypoint, payload, attempt, last_attempt, heartbeat_timeout_s,
         run_timeout_s, taken_over
    FROM pgq.claim($1::uuid, $2::text[], $3::int)`;

// $1 worker id, $2 entrypoints served. The worker's row in the registry (pgq.workers): its
// entrypoints count as served (pgq.metrics' served column; a registered scheduler fires only
// schedules some live worker serves) while it stays fresh. Answers the heartbeat interval (s)
// that keeps it fresh: a heartbeat with empty arrays refreshes it while no job is held.
export const REGISTER = `
  SELECT extract(epoch FROM heartbeat_interval)::float8 AS interval_s
    FROM pgq.register_worker($1::uuid, $2::text[], application_name => 'node worker',
                             metadata => '{"client": "examples/node"}')`;

// $1 worker id. Leaves the registry at a clean stop.
export const UNREGISTER = 'SELECT pgq.unregister_worker($1::uuid)';

// $1 worker id, $2 ids, $3 leases (parallel arrays). One row per id: ok, lost, cancel_requested
// or timed_out (past its time limit: SQL failed the attempt; stop the handler, write nothing).
export const HEARTBEAT = `
  SELECT id, state FROM pgq.heartbeat($1::uuid, $2::bigint[], $3::bigint[])`;

// $1 worker id, $2 ids, $3 leases, $4 outcomes (successful, failed, interrupted, canceled,
// snoozed with details.snooze seconds, fatal), $5 details as one JSON array. Answers what SQL
// decided for each job accepted (status: successful, retry, snoozed, failed, canceled); a job
// missing from the answer was not ours any more.
export const COMPLETE = `
  SELECT id, status, retry_in_s
    FROM pgq.complete($1::uuid, $2::bigint[], $3::bigint[], $4::text[], $5::jsonb)`;

// $1 worker id, $2 ids, $3 leases of claimed jobs that never started.
export const RELEASE = `
  SELECT id, status FROM pgq.release($1::uuid, $2::bigint[], $3::bigint[])`;

// $1 entrypoints. Milliseconds until the next delayed job is due, or until a rate-limited
// entrypoint may start its next job (NULL: neither).
export const NEXT_DUE_MS = `
  SELECT (extract(epoch FROM pgq.next_run_at($1::text[]) - now()) * 1000)::float8 AS ms`;

// $1 entrypoints (one per job), $2 payloads as one JSON array, $3 seconds until due (the same
// for every job). Answers the new ids in input order.
export const ENQUEUE_MANY = `
  SELECT id FROM pgq.enqueue_many($1::text[], $2::jsonb,
    delays => array_fill(make_interval(secs => $3::float8), ARRAY[cardinality($1::text[])]))`;

// The queue's upkeep, every few seconds from some worker: stale sweep, promotion, and the ring's
// rotation and truncation that give the space back (autocommit: a truncation's lock lasts to
// the commit). Answers one row: what it did.
export const MAINTAIN = 'SELECT state FROM pgq.maintain()';

export const LISTEN = 'LISTEN pgq_events';

// Workflows. $1 entrypoints (text[], one per job), $2 payloads as one JSON array, $3 depends_on
// as one JSON array (element i: the 1-based positions of the earlier jobs of this call job i
// waits for, or null): a whole graph in one statement. Answers the ids in input order.
export const ENQUEUE_GRAPH = `
  SELECT id FROM pgq.enqueue_many($1::text[], $2::jsonb, depends_on => $3::jsonb)`;

// $1 job id. The jobs it depends on, with their status and what each returned: a fan-in step.
export const PARENT_RESULTS = `
  SELECT parent_id, status, result FROM pgq.parent_results($1::bigint)`;
