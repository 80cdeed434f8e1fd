-- Variant of prototype "ring": the hot functions plan without sequential scans. Their generic
-- plans are made once per session (and again after each TRUNCATE invalidates them); a
-- partition that was empty at that moment gets a sequential scan, which a nested loop then
-- repeats for every job of a batch once the partition has filled up (autovacuum is off on the
-- partitions, so nothing re-analyzes them).
ALTER FUNCTION pgq.claim(uuid, text[], int, timestamptz) SET enable_seqscan = off;
ALTER FUNCTION pgq.complete(uuid, bigint[], bigint[], text[], jsonb[], timestamptz) SET enable_seqscan = off;
ALTER FUNCTION pgq._archive(bigint[], text[], jsonb[], timestamptz, uuid, bigint[]) SET enable_seqscan = off;
ALTER FUNCTION pgq.heartbeat(uuid, bigint[], bigint[], timestamptz) SET enable_seqscan = off;
ALTER FUNCTION pgq.release(uuid, bigint[], bigint[]) SET enable_seqscan = off;
ALTER FUNCTION pgq._lane_cursor(text, int, regclass) SET enable_seqscan = off;
ALTER FUNCTION pgq._promote(text[], timestamptz, int) SET enable_seqscan = off;
