// Every statement the Node examples send: one call of a pgq function each, nothing else.
// See docs/any-language.md for what each call does and why it is written this way.
//
// Driver notes (node-postgres):
// - set-returning functions are called with `SELECT ... FROM pgq.f(...)`, so rows come back
//   as columns, not as one composite text value;
// - bigint ids and leases arrive as strings: keep them as strings, pass them back as they are;
// - JSON goes in as ONE text parameter (JSON.stringify) holding an array, unpacked in order
//   in SQL: node-postgres does not JSON-encode array elements, so a JS array of payloads
//   passed as jsonb[] fails (strings) or is read as a multi-dimensional array (arrays);
// - times are computed by the server (`now()`), never on the client clock.

// $1 worker id (uuid), $2 entrypoints (text[]), $3 batch size.
// Answers the claimed jobs with the heartbeat timeout in seconds (a number, not an interval).
export const CLAIM = `
  SELECT id, lease, entrypoint, payload, attempt, max_attempts,
         extract(epoch FROM heartbeat_timeout)::float8 AS heartbeat_timeout_s
    FROM pgq.claim($1::uuid, $2::text[], $3::int)`;

// $1 worker id, $2 ids, $3 leases (parallel arrays). One row per id: ok, lost, cancel_requested.
export const HEARTBEAT = `
  SELECT id, state FROM pgq.heartbeat($1::uuid, $2::bigint[], $3::bigint[])`;

// $1 worker id, $2 ids, $3 leases, $4 statuses, $5 details as one JSON array.
// Answers the ids accepted; a job missing from the answer was not ours any more (fenced).
export const COMPLETE = `
  SELECT id FROM pgq.complete($1::uuid, $2::bigint[], $3::bigint[], $4::text[],
    ARRAY(SELECT e FROM jsonb_array_elements($5::jsonb) WITH ORDINALITY t(e, i) ORDER BY i)) AS id`;

// $1 worker id, $2 ids, $3 leases of claimed jobs that never started.
export const RELEASE = `
  SELECT id FROM pgq.release($1::uuid, $2::bigint[], $3::bigint[]) AS id`;

// $1 entrypoints. Milliseconds until the next delayed job is due (NULL: none waits).
export const NEXT_DUE_MS = `
  SELECT (extract(epoch FROM pgq.next_run_at($1::text[]) - now()) * 1000)::float8 AS ms`;

// $1 entrypoints (one per job), $2 payloads as one JSON array, $3 seconds until due.
// Answers the new ids in input order.
export const ENQUEUE_MANY = `
  SELECT id FROM pgq.enqueue_many($1::text[],
    ARRAY(SELECT nullif(e, 'null') FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY t(e, i)
          ORDER BY i),
    run_ats => array_fill(now() + make_interval(secs => $3::float8),
                          ARRAY[cardinality($1::text[])])) AS id`;

export const LISTEN = 'LISTEN pgq_events';
