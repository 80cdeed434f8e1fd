-- pgq._check_jobs(entrypoints, payloads, priorities, run_ats, dedupe_keys, headers)
-- Contract: the rules pgq.enqueue and pgq.enqueue_many check beyond pgq._check_job (which
--   keeps the entrypoint, priority and headers-type rules), element by element, raising for the
--   first element that breaks one and naming its position: every array one-dimensional;
--   payload at most 1 MiB and headers at most 64 KiB as JSON text (uncompressed), nested at most
--   64 levels, numbers a double holds (pgq._json_problem); run_at within
--   pgq._check_time's range; dedupe keys within pgq._check_dedupe_key's rules. Arrays may be
--   NULL (defaults); their lengths are checked by the caller.
-- Locking: none.
-- Errors: PQ006 payload or headers too large; PQ009 other bad values or dimensions.
CREATE OR REPLACE FUNCTION pgq._check_jobs(
    entrypoints  text[],
    payloads     jsonb[],
    priorities   int[],
    run_ats      timestamptz[],
    dedupe_keys  text[],
    headers      jsonb[]
)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_bad record;
BEGIN
    IF array_ndims(_check_jobs.entrypoints) > 1 OR array_ndims(_check_jobs.payloads) > 1
       OR array_ndims(_check_jobs.priorities) > 1 OR array_ndims(_check_jobs.run_ats) > 1
       OR array_ndims(_check_jobs.dedupe_keys) > 1 OR array_ndims(_check_jobs.headers) > 1 THEN
        PERFORM pgq._check_dims(_check_jobs.entrypoints, 'entrypoints');
        PERFORM pgq._check_dims(_check_jobs.payloads, 'payloads');
        PERFORM pgq._check_dims(_check_jobs.priorities, 'priorities');
        PERFORM pgq._check_dims(_check_jobs.run_ats, 'run_ats');
        PERFORM pgq._check_dims(_check_jobs.dedupe_keys, 'dedupe_keys');
        PERFORM pgq._check_dims(_check_jobs.headers, 'headers');
    END IF;
    -- One job (pgq.enqueue, pgq.schedule): plain expressions, no query.
    IF coalesce(cardinality(_check_jobs.payloads), 0) <= 1 AND coalesce(cardinality(_check_jobs.headers), 0) <= 1
       AND coalesce(cardinality(_check_jobs.run_ats), 0) <= 1 AND coalesce(cardinality(_check_jobs.dedupe_keys), 0) <= 1
       AND pgq._json_ok(_check_jobs.payloads[1], 1048576) AND pgq._json_ok(_check_jobs.headers[1], 65536)
       AND coalesce(_check_jobs.run_ats[1] >= timestamptz '1970-01-01 00:00:00+00'
                    AND _check_jobs.run_ats[1] < timestamptz '9000-01-01 00:00:00+00', true)
       AND coalesce(octet_length(_check_jobs.dedupe_keys[1]) <= 1000
                    AND NOT starts_with(_check_jobs.dedupe_keys[1], 'pgq:schedule:'), true) THEN
        RETURN;
    END IF;

    SELECT u.ord, pgq._json_problem(u.p, 1048576) AS p_problem, pgq._json_problem(u.h, 65536) AS h_problem,
           u.ra, u.dk
      INTO v_bad
      FROM unnest(_check_jobs.payloads, _check_jobs.headers, _check_jobs.run_ats, _check_jobs.dedupe_keys)
           WITH ORDINALITY AS u(p, h, ra, dk, ord)
     WHERE NOT pgq._json_ok(u.p, 1048576)
        OR NOT pgq._json_ok(u.h, 65536)
        OR u.ra < timestamptz '1970-01-01 00:00:00+00' OR u.ra >= timestamptz '9000-01-01 00:00:00+00'
        OR octet_length(u.dk) > 1000 OR starts_with(u.dk, 'pgq:schedule:')
     ORDER BY u.ord
     LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_bad.p_problem IS NOT NULL THEN
        RAISE EXCEPTION 'payload at position % %', v_bad.ord, v_bad.p_problem
            USING ERRCODE = CASE WHEN v_bad.p_problem LIKE 'is % bytes%' THEN 'PQ006' ELSE 'PQ009' END;
    END IF;
    IF v_bad.h_problem IS NOT NULL THEN
        RAISE EXCEPTION 'headers at position % %', v_bad.ord, v_bad.h_problem
            USING ERRCODE = CASE WHEN v_bad.h_problem LIKE 'is % bytes%' THEN 'PQ006' ELSE 'PQ009' END;
    END IF;
    PERFORM pgq._check_time(v_bad.ra, format('run_at at position %s', v_bad.ord));
    PERFORM pgq._check_dedupe_key(v_bad.dk, v_bad.ord);
END
$$;
COMMENT ON FUNCTION pgq._check_jobs(text[], jsonb[], int[], timestamptz[], text[], jsonb[]) IS
    'Private. Raises PQ006/PQ009 for the first job breaking the size, nesting, number, time, dedupe-key or dimension rules.';
