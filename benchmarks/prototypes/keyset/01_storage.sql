-- Prototype "keyset" (candidate c of ADR 0006): keyset claims on the current pgq.jobs table.
-- Installed on top of a normal install (migrations 0001-0004), in a scratch database.
--
-- Storage changes:
-- * pgq.ready_seq: every job gets a ready number when it becomes runnable (enqueued due,
--   promoted when its run_at comes, released, re-queued after a stale heartbeat). A lane is
--   (entrypoint, priority); claims read a lane in ready order, starting past its cursor.
-- * pgq.lanes: one row per lane (insert-once), naming the lane's cursor sequence. A cursor is
--   a sequence (not MVCC: moving it leaves no dead row version behind).
-- * jobs_ready_idx replaces jobs_queued_idx and holds only runnable rows; a not-yet-due row
--   (ready_seq NULL) sits in jobs_scheduled_idx, out of the claim's way.
-- Migration of rows already queued: due ones get ready numbers in today's claim order.

CREATE SEQUENCE pgq.ready_seq AS bigint;          -- CACHE 1: numbers in call order
CREATE SEQUENCE pgq.lane_id_seq AS bigint;

CREATE TABLE pgq.lanes (
    entrypoint  text     NOT NULL,
    priority    int      NOT NULL,
    lane_id     bigint   NOT NULL,
    cursor_seq  regclass NOT NULL,
    CONSTRAINT lanes_pkey PRIMARY KEY (entrypoint, priority)
);
REVOKE ALL ON pgq.lanes FROM PUBLIC;

ALTER TABLE pgq.jobs ADD COLUMN ready_seq bigint;

UPDATE pgq.jobs j
   SET ready_seq = r.seq
  FROM (SELECT id, nextval('pgq.ready_seq') AS seq
          FROM (SELECT id FROM pgq.jobs
                 WHERE status = 'queued' AND run_at <= now()
                 ORDER BY priority DESC, run_at, id) o) r
 WHERE j.id = r.id;

DROP INDEX pgq.jobs_queued_idx;
CREATE INDEX jobs_ready_idx ON pgq.jobs (entrypoint, priority, ready_seq)
    WHERE status = 'queued' AND ready_seq IS NOT NULL;
CREATE INDEX jobs_scheduled_idx ON pgq.jobs (entrypoint, run_at)
    WHERE status = 'queued' AND ready_seq IS NULL;
