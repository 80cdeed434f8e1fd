-- pgq.register_worker(worker_id, entrypoints, host, pid, application_name, version, metadata,
--                     timeout, at)
-- Contract: a worker announces itself in the workers registry (pgq.workers), in any language:
--   what it runs (entrypoints), where (host, pid, application_name: the session's
--   application_name when not given; client_addr: the address of this connection), its version
--   and free-form metadata (a JSON object: concurrency, batch size, whether it runs a
--   scheduler, ...). Calling it again (after a reconnect, or with new entrypoints) replaces
--   those fields and keeps started_at, the time of the first registration. The worker then
--   stays fresh through pgq.heartbeat, which it calls anyway (also with empty arrays when it
--   holds no job); it counts as gone once silent for longer than timeout (NULL: the stored
--   value, 30 seconds for a new worker). Returns started_at, last_seen_at, gone_after (the
--   timeout) and heartbeat_interval: how often to call pgq.heartbeat at the least (a third of
--   the timeout). at NULL means now().
-- Locking: the worker's registry row until commit.
-- Errors: PQ009 NULL worker_id, host/application_name/version too long, a bad pid, metadata
--   not a JSON object or over 8192 bytes; PQ001 a bad entrypoint name (or more than 1000);
--   PQ008 timeout outside 1 second .. 1 day.
CREATE OR REPLACE FUNCTION pgq.register_worker(
    worker_id         uuid,
    entrypoints       text[]      DEFAULT NULL,
    host              text        DEFAULT NULL,
    pid               int         DEFAULT NULL,
    application_name  text        DEFAULT NULL,
    version           text        DEFAULT NULL,
    metadata          jsonb       DEFAULT NULL,
    timeout           interval    DEFAULT NULL,
    at                timestamptz DEFAULT NULL
)
RETURNS TABLE (started_at timestamptz, last_seen_at timestamptz, gone_after interval,
               heartbeat_interval interval)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now  timestamptz := coalesce(pgq._check_time(register_worker.at, 'at'), now());
    v_name text;
BEGIN
    PERFORM pgq._check_dims(register_worker.entrypoints, 'entrypoints');
    IF register_worker.worker_id IS NULL THEN
        RAISE EXCEPTION 'worker_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF cardinality(register_worker.entrypoints) > 1000 THEN
        RAISE EXCEPTION 'entrypoints has % elements, at most 1000 are allowed', cardinality(register_worker.entrypoints)
            USING ERRCODE = 'PQ001';
    END IF;
    FOREACH v_name IN ARRAY coalesce(register_worker.entrypoints, '{}') LOOP
        PERFORM pgq._check_name(v_name, 'entrypoint', 'PQ001');
    END LOOP;
    IF octet_length(register_worker.host) > 255 THEN
        RAISE EXCEPTION 'host must be at most 255 bytes, got %', octet_length(register_worker.host) USING ERRCODE = 'PQ009';
    END IF;
    IF octet_length(register_worker.application_name) > 255 THEN
        RAISE EXCEPTION 'application_name must be at most 255 bytes, got %', octet_length(register_worker.application_name)
            USING ERRCODE = 'PQ009';
    END IF;
    IF octet_length(register_worker.version) > 255 THEN
        RAISE EXCEPTION 'version must be at most 255 bytes, got %', octet_length(register_worker.version) USING ERRCODE = 'PQ009';
    END IF;
    IF register_worker.pid <= 0 THEN
        RAISE EXCEPTION 'pid must be positive, got %', register_worker.pid USING ERRCODE = 'PQ009';
    END IF;
    IF register_worker.metadata IS NOT NULL
       AND (jsonb_typeof(register_worker.metadata) <> 'object' OR pg_column_size(register_worker.metadata) > 8192) THEN
        RAISE EXCEPTION 'metadata must be a JSON object of at most 8192 bytes, got % of % bytes',
            jsonb_typeof(register_worker.metadata), pg_column_size(register_worker.metadata)
            USING ERRCODE = 'PQ009';
    END IF;
    IF register_worker.timeout NOT BETWEEN interval '1 second' AND interval '1 day' THEN
        RAISE EXCEPTION 'timeout must be between 1 second and 1 day, got %', register_worker.timeout
            USING ERRCODE = 'PQ008';
    END IF;

    INSERT INTO pgq.workers (worker_id, started_at, last_seen_at)
    VALUES (register_worker.worker_id, v_now, v_now)
        ON CONFLICT (worker_id) DO NOTHING;
    RETURN QUERY
    UPDATE pgq.workers w
       SET host = register_worker.host,
           pid = register_worker.pid,
           application_name = coalesce(register_worker.application_name,
                                       nullif(current_setting('application_name'), '')),
           entrypoints = coalesce(register_worker.entrypoints, '{}'),
           version = register_worker.version,
           metadata = coalesce(register_worker.metadata, '{}'),
           client_addr = inet_client_addr(),
           timeout = coalesce(register_worker.timeout, w.timeout),
           last_seen_at = v_now
     WHERE w.worker_id = register_worker.worker_id
    RETURNING w.started_at, w.last_seen_at, w.timeout, w.timeout / 3;
END
$$;
COMMENT ON FUNCTION pgq.register_worker(uuid, text[], text, int, text, text, jsonb, interval, timestamptz) IS
    'Announces a worker in the registry (pgq.workers); idempotent, keeps started_at. pgq.heartbeat keeps it fresh; returns started_at, last_seen_at, gone_after (the timeout) and heartbeat_interval (timeout / 3).';
