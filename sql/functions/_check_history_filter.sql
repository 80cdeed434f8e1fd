-- pgq._check_history_filter(entrypoint, statuses, since, until, n, max_n, n_name)
-- Contract: validates the filter arguments shared by pgq.find_history, pgq.requeue_history and
--   pgq.delete_history (and the page or batch size n, 1..max_n). Returns nothing.
-- Locking: none.
-- Errors: PQ001 bad entrypoint (NULL is allowed: all); PQ009 statuses NULL, empty, with NULL
--   or unknown elements, since after until; PQ002 n outside 1..max_n.
CREATE OR REPLACE FUNCTION pgq._check_history_filter(
    entrypoint  text,
    statuses    text[],
    since       timestamptz,
    until       timestamptz,
    n           int,
    max_n       int,
    n_name      text
)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF entrypoint IS NOT NULL THEN
        PERFORM pgq._check_name(entrypoint, 'entrypoint', 'PQ001');
    END IF;
    PERFORM pgq._check_dims(statuses, 'statuses');
    IF coalesce(cardinality(statuses), 0) = 0 OR array_position(statuses, NULL) IS NOT NULL
       OR NOT statuses <@ ARRAY['successful', 'failed', 'canceled'] THEN
        RAISE EXCEPTION 'statuses must be a non-empty array of successful, failed, canceled, got %',
            coalesce(statuses::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF since > until THEN
        RAISE EXCEPTION 'since % is after until %', since, until USING ERRCODE = 'PQ009';
    END IF;
    IF n IS NULL OR n NOT BETWEEN 1 AND max_n THEN
        RAISE EXCEPTION '% must be between 1 and %, got %', n_name, max_n, coalesce(n::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_history_filter(text, text[], timestamptz, timestamptz, int, int, text) IS
    'Private. Validates the history filter of find_history, requeue_history and delete_history.';
