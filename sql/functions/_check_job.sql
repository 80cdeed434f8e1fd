-- pgq._check_job(entrypoint, payload, priority, headers, ord)
-- Contract: raises the error for the first rule this job breaks, naming the value and its
--   position in the call; returns nothing when the job is valid. The rules: entrypoint of 1 to
--   pgq._valid_name (PQ001), priority within smallint range (PQ005),
--   payload of at most 1 MiB (PQ006), headers NULL or a JSON object (PQ009). One place for the
--   messages of pgq.enqueue and pgq.enqueue_many.
-- Locking: none.
-- Errors: PQ001, PQ005, PQ006, PQ009.
CREATE OR REPLACE FUNCTION pgq._check_job(
    entrypoint  text,
    payload     jsonb,
    priority    int,
    headers     jsonb,
    ord         bigint
)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF NOT coalesce(pgq._valid_name(entrypoint), false) THEN
        RAISE EXCEPTION 'invalid entrypoint % at position %: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL',
            coalesce(quote_literal(left(entrypoint, 220)), 'NULL'), ord
            USING ERRCODE = 'PQ001';
    END IF;
    IF priority NOT BETWEEN -32768 AND 32767 THEN
        RAISE EXCEPTION 'priority % at position % is out of range (-32768 to 32767)', priority, ord
            USING ERRCODE = 'PQ005';
    END IF;
    IF pg_column_size(payload) > 1048576 THEN
        RAISE EXCEPTION 'payload at position % is % bytes, over the 1048576-byte limit',
            ord, pg_column_size(payload)
            USING ERRCODE = 'PQ006';
    END IF;
    IF headers IS NOT NULL AND jsonb_typeof(headers) <> 'object' THEN
        RAISE EXCEPTION 'headers at position % must be a JSON object, got %', ord, jsonb_typeof(headers)
            USING ERRCODE = 'PQ009';
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_job(text, jsonb, int, jsonb, bigint) IS
    'Private. Raises PQ001/PQ005/PQ006/PQ009 for the first rule a job to enqueue breaks, naming its position.';
