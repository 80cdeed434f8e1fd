-- pgq._check_batch(worker_id, ids, leases): validate the arguments every lease-guarded call takes.
-- Contract: worker_id is not NULL; ids and leases are arrays of the same length without NULLs;
--   ids hold no duplicates. Returns the number of elements (0 for two empty arrays).
-- Locking: none.
-- Errors: PQ009 NULL worker_id, NULL or multi-dimensional array, NULL element or duplicate id;
--   PQ003 ids and leases of unequal length.
CREATE OR REPLACE FUNCTION pgq._check_batch(worker_id uuid, ids bigint[], leases bigint[])
RETURNS int
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_n int := cardinality(ids);
BEGIN
    IF worker_id IS NULL THEN
        RAISE EXCEPTION 'worker_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF ids IS NULL OR leases IS NULL THEN
        RAISE EXCEPTION 'ids and leases must not be NULL (ids %, leases %)',
            coalesce(ids::text, 'NULL'), coalesce(leases::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF array_ndims(ids) > 1 OR array_ndims(leases) > 1 THEN
        PERFORM pgq._check_dims(ids, 'ids');
        PERFORM pgq._check_dims(leases, 'leases');
    END IF;
    IF cardinality(leases) <> v_n THEN
        RAISE EXCEPTION 'leases has % elements but ids has %', cardinality(leases), v_n
            USING ERRCODE = 'PQ003';
    END IF;
    IF array_position(ids, NULL) IS NOT NULL OR array_position(leases, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids and leases must not contain NULL (ids %, leases %)', ids, leases
            USING ERRCODE = 'PQ009';
    END IF;
    IF v_n > 1 AND (SELECT count(DISTINCT u) FROM unnest(ids) AS u) <> v_n THEN
        RAISE EXCEPTION 'ids must not repeat, got %', ids USING ERRCODE = 'PQ009';
    END IF;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq._check_batch(uuid, bigint[], bigint[]) IS
    'Private. Validates worker_id, ids and leases of lease-guarded calls (PQ009, PQ003); returns the batch size.';
