-- Prototype "ring" (candidate b of ADR 0006): pgq.jobs as a ring of 4 list partitions (slots),
-- each emptied by TRUNCATE once drained, with the keyset claims of prototype "keyset" inside.
-- Installed on top of a normal install (migrations 0001-0004), in a scratch database; the
-- live rows of the old table are copied over (the ADR's migration does the same in one
-- transaction under an exclusive lock).
--
-- * pgq.ring_seq: the current slot is last_value % 4 (a sequence: reading and moving it leaves
--   no row version behind). Enqueues stamp the current slot; maintenance moves it on.
-- * slot partitions jobs_0..jobs_3, fillfactor 50, autovacuum off (TRUNCATE is their vacuum).
-- * ids stay unique (one sequence) but no index can say so across partitions, and neither can
--   the dedupe index: dedupe keys of live jobs live in pgq.live_keys (insert on enqueue,
--   delete when the job leaves).

-- pgq.ready_seq, pgq.lanes, the ready_seq column and the lanes of the queued rows come from
-- ../keyset/01_storage.sql and 02_lanes.sql (include.txt), installed first on the old table.
CREATE SEQUENCE pgq.ring_seq AS bigint MINVALUE 0 START 0;
CREATE SEQUENCE pgq.ring_rotated_at AS bigint MINVALUE 0 START 0;   -- epoch ms of the last rotation

-- The slot new rows go to: the ring's current slot.
CREATE FUNCTION pgq._slot() RETURNS int
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pgq, pg_temp
AS $$ SELECT (last_value % 4)::int FROM pgq.ring_seq $$;

CREATE TABLE pgq.live_keys (
    dedupe_key  text   NOT NULL,
    job_id      bigint NOT NULL,
    CONSTRAINT live_keys_pkey PRIMARY KEY (dedupe_key)
);

DROP VIEW pgq.queue_stats;
ALTER SEQUENCE pgq.job_id_seq OWNED BY NONE;
ALTER TABLE pgq.jobs RENAME TO jobs_old;
ALTER INDEX pgq.jobs_pkey RENAME TO jobs_old_pkey;
ALTER INDEX pgq.jobs_dedupe_key_idx RENAME TO jobs_old_dedupe_key_idx;
ALTER INDEX pgq.jobs_ready_idx RENAME TO jobs_old_ready_idx;
ALTER INDEX pgq.jobs_scheduled_idx RENAME TO jobs_old_scheduled_idx;
ALTER INDEX pgq.jobs_running_idx RENAME TO jobs_old_running_idx;

CREATE TABLE pgq.jobs (
    id                bigint      NOT NULL DEFAULT nextval('pgq.job_id_seq'),
    entrypoint        text        NOT NULL,
    status            text        NOT NULL DEFAULT 'queued',
    priority          int         NOT NULL DEFAULT 0,
    run_at            timestamptz NOT NULL DEFAULT now(),
    enqueued_at       timestamptz NOT NULL DEFAULT now(),
    attempt           int         NOT NULL DEFAULT 0,
    payload           jsonb,
    headers           jsonb,
    dedupe_key        text,
    lease             bigint,
    worker_id         uuid,
    started_at        timestamptz,
    heartbeat_at      timestamptz,
    cancel_requested  boolean     NOT NULL DEFAULT false,
    errors            jsonb       NOT NULL DEFAULT '[]',
    ready_seq         bigint,
    slot              int         NOT NULL DEFAULT pgq._slot(),
    CONSTRAINT jobs_status_check CHECK (status IN ('queued', 'running')),
    CONSTRAINT jobs_running_has_lease_check CHECK (
        (status = 'running') = (lease IS NOT NULL AND worker_id IS NOT NULL AND heartbeat_at IS NOT NULL)
    ),
    CONSTRAINT jobs_attempt_check CHECK (attempt >= 0),
    CONSTRAINT jobs_priority_check CHECK (priority BETWEEN -32768 AND 32767),
    CONSTRAINT jobs_entrypoint_check CHECK (octet_length(entrypoint) BETWEEN 1 AND 200)
) PARTITION BY LIST (slot);
ALTER SEQUENCE pgq.job_id_seq OWNED BY pgq.jobs.id;

CREATE TABLE pgq.jobs_0 PARTITION OF pgq.jobs FOR VALUES IN (0)
    WITH (fillfactor = 50, autovacuum_enabled = false);
CREATE TABLE pgq.jobs_1 PARTITION OF pgq.jobs FOR VALUES IN (1)
    WITH (fillfactor = 50, autovacuum_enabled = false);
CREATE TABLE pgq.jobs_2 PARTITION OF pgq.jobs FOR VALUES IN (2)
    WITH (fillfactor = 50, autovacuum_enabled = false);
CREATE TABLE pgq.jobs_3 PARTITION OF pgq.jobs FOR VALUES IN (3)
    WITH (fillfactor = 50, autovacuum_enabled = false);

CREATE INDEX jobs_id_idx ON pgq.jobs (id);
CREATE INDEX jobs_ready_idx ON pgq.jobs (entrypoint, priority, ready_seq)
    WHERE status = 'queued' AND ready_seq IS NOT NULL;
CREATE INDEX jobs_scheduled_idx ON pgq.jobs (entrypoint, run_at)
    WHERE status = 'queued' AND ready_seq IS NULL;
CREATE INDEX jobs_running_idx ON pgq.jobs (entrypoint)
    WHERE status = 'running';

INSERT INTO pgq.jobs (id, entrypoint, status, priority, run_at, enqueued_at, attempt, payload, headers,
                      dedupe_key, lease, worker_id, started_at, heartbeat_at, cancel_requested, errors,
                      ready_seq, slot)
SELECT o.id, o.entrypoint, o.status, o.priority, o.run_at, o.enqueued_at, o.attempt, o.payload, o.headers,
       o.dedupe_key, o.lease, o.worker_id, o.started_at, o.heartbeat_at, o.cancel_requested, o.errors,
       o.ready_seq, 0
  FROM pgq.jobs_old o;
INSERT INTO pgq.live_keys (dedupe_key, job_id)
SELECT o.dedupe_key, o.id FROM pgq.jobs_old o WHERE o.dedupe_key IS NOT NULL;
DROP TABLE pgq.jobs_old;

CREATE TRIGGER jobs_after_insert AFTER INSERT ON pgq.jobs
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._jobs_after_insert();
CREATE TRIGGER jobs_after_update AFTER UPDATE ON pgq.jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._jobs_after_update();
CREATE TRIGGER jobs_after_delete AFTER DELETE ON pgq.jobs
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._jobs_after_delete();

CREATE VIEW pgq.queue_stats AS
SELECT c.entrypoint,
       count(j.id) FILTER (WHERE j.status = 'queued')                             AS queued,
       count(j.id) FILTER (WHERE j.status = 'queued' AND j.run_at <= now())       AS due,
       count(j.id) FILTER (WHERE j.status = 'running')                            AS running,
       count(j.id) FILTER (WHERE j.status = 'running'
                             AND j.heartbeat_at < now() - c.heartbeat_timeout)     AS stale,
       now() - min(j.enqueued_at) FILTER (WHERE j.status = 'queued')              AS oldest_queued_age,
       c.concurrency_limit,
       c.max_attempts,
       c.heartbeat_timeout
  FROM pgq.entrypoints c
  LEFT JOIN pgq.jobs j ON j.entrypoint = c.entrypoint
 GROUP BY c.entrypoint, c.concurrency_limit, c.max_attempts, c.heartbeat_timeout;

REVOKE ALL ON ALL TABLES IN SCHEMA pgq FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA pgq FROM PUBLIC;
GRANT SELECT ON pgq.queue_stats TO pgq_producer, pgq_worker;
