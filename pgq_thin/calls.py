"""Every SQL statement the client runs: one-line calls of the ``pgq`` functions.

This is the only module of the package (besides the schema bootstrap in ``migrate``) that
holds SQL text; ``tests/py/test_layering.py`` enforces it. Each statement is one call of a
public function or view, so it is one transaction on an autocommit connection and works
through a transaction-mode pooler. The queue logic lives in those functions, not here.

Each operation has a sync and an async variant taking an open psycopg connection. Errors of
class ``PQ`` are re-raised as :mod:`pgq_thin.errors` exceptions (by the runner of
:mod:`pgq_thin._sql_runner`). The calls of the other functions are generated from the
manifest (:mod:`pgq_thin._api`); the statements here are the measured hot-path overrides
(projection, casts, comma-joined arrays) and the few not of one function.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from psycopg.rows import dict_row

from pgq_thin._call_args import (
    Decision,
    complete_args,
    configure_args,
    decisions,
    enqueue_args,
    enqueue_many_args,
    jsonb,
    schedule_args,
)
from pgq_thin._sql_runner import translated
from pgq_thin._statements import AConn, Conn, Row

# A delay travels as an interval and is resolved on the server's clock.
ENQUEUE = (
    "SELECT pgq.enqueue(%s::text, %s::jsonb, %s::int, %s::timestamptz, %s::text, %s::jsonb,"
    " %s::text, %s::interval)"
)
# Payloads and headers travel as one JSON array each (element i for job i, null for none).
ENQUEUE_MANY = (
    "SELECT id FROM pgq.enqueue_many(%s::text[], %s::jsonb, %s::int[], %s::timestamptz[],"
    " %s::text[], %s::jsonb, %s::text, %s::interval[])"
)
CANCEL = "SELECT id FROM pgq.cancel(%s::bigint[])"
# The columns of pgq.claimed_job in their declared order (Job.from_claimed unpacks tuples), in
# forms that cannot fail for the whole batch: JSON as text (decoded per job), and a timestamp
# outside what Python's datetime can hold (infinity, BC dates; a day of margin for the
# session's time zone) as NULL with a note in a last column. A value Python cannot hold then
# fails its own job, not the claim. The request id makes a re-sent claim answer the same jobs.
CLAIM = (
    "SELECT id, lease, entrypoint, payload::text, headers::text, priority, attempt,"
    " CASE WHEN e THEN enqueued_at END, CASE WHEN r THEN run_at END, dedupe_key, max_attempts,"
    " heartbeat_timeout_s, last_attempt,"
    " nullif(concat_ws(', ', CASE WHEN NOT e THEN 'enqueued_at ' || enqueued_at END,"
    " CASE WHEN NOT r THEN 'run_at ' || run_at END), '')"
    " FROM pgq.claim(%s::uuid, %s::text[], %s::int, request_id => %s::uuid) c,"
    " LATERAL (SELECT c.enqueued_at BETWEEN '0001-01-02+00' AND '9999-12-30+00' AS e,"
    " coalesce(c.run_at BETWEEN '0001-01-02+00' AND '9999-12-30+00', true) AS r) holdable"
)
#: The columns of :data:`CLAIM`, by name: those of pgq.claimed_job (``sql/api.json``) it sends,
#: in its order, and the note. :meth:`pgq_thin.job.Job.from_claimed` decodes by these names.
CLAIM_COLUMNS = (
    "id", "lease", "entrypoint", "payload", "headers", "priority", "attempt", "enqueued_at",
    "run_at", "dedupe_key", "max_attempts", "heartbeat_timeout_s", "last_attempt", "unholdable",
)  # fmt: skip
HEARTBEAT = "SELECT id, state FROM pgq.heartbeat(%s::uuid, %s::bigint[], %s::bigint[])"
# ids, leases and outcomes travel as comma-separated text (joined in C: a tenth of the cost of
# dumping three lists), details as one JSON array (NULL when there are none); see complete_args.
# The answer: what SQL decided per job accepted (see Decision).
COMPLETE = (
    "SELECT id, status, attempt, max_attempts, retry_in_s FROM pgq.complete(%s::uuid,"
    " string_to_array(%s, ',')::bigint[], string_to_array(%s, ',')::bigint[],"
    " string_to_array(%s, ','), %s::jsonb)"
)
RELEASE = "SELECT id FROM pgq.release(%s::uuid, %s::bigint[], %s::bigint[])"
# Seconds until the next delayed job is due, measured on the server's clock (NULL: none waits).
NEXT_DUE_IN = "SELECT extract(epoch FROM pgq.next_run_at(%s::text[]) - now())::float8"
REQUEUE = "SELECT id FROM pgq.requeue(%s::bigint[])"
CONFIGURE = (
    "SELECT * FROM pgq.configure(%s::text, %s::int, %s::int, %s::interval, %s::interval,"
    " %s::interval, %s::boolean)"
)
QUEUE_STATS = "SELECT * FROM pgq.queue_stats ORDER BY entrypoint"
FAILED_JOBS = "SELECT * FROM pgq.failed_jobs ORDER BY finished_at DESC, id DESC LIMIT %s"
HISTORY_SUMMARY = "SELECT * FROM pgq.history_summary(%s::text[], %s::bigint)"
PRUNE_BATCH = 10000
PRUNE_HISTORY = "SELECT pgq.prune_history(%s::interval, %s::timestamptz, %s::int)"
# One row: state, swept, promoted, carried, truncated, rotated, lock_wait_ms, bytes.
MAINTAIN = "SELECT * FROM pgq.maintain()"
SCHEDULE = (
    "SELECT * FROM pgq.schedule(%s::text, %s::text, %s::text, %s::timestamptz, %s::text,"
    " %s::jsonb, %s::int, %s::jsonb, %s::text, %s::interval, %s::interval)"
)
UNSCHEDULE = "SELECT pgq.unschedule(%s::text)"
CLAIM_SCHEDULES = "SELECT * FROM pgq.claim_schedules(%s::uuid, %s::int, %s::timestamptz)"
FIRE_SCHEDULE = (
    "SELECT * FROM pgq.fire_schedule(%s::uuid, %s::text, %s::bigint, %s::timestamptz,"
    " %s::timestamptz, %s::timestamptz)"
)
RELEASE_SCHEDULE = "SELECT pgq.release_schedule(%s::uuid, %s::text, %s::bigint, %s::text) AS state"
# Seconds until a schedule is due (or a silent claimer may be taken over); NULL: no schedules.
NEXT_SCHEDULE_IN = "SELECT extract(epoch FROM pgq.next_schedule_at() - now())::float8"
SCHEDULES = "SELECT * FROM pgq.schedules ORDER BY name"
LISTEN = "LISTEN pgq_events"
# The listener's health check: a round trip on its own connection.
PING = "SELECT 1"
# Is the server a hot standby? Asked once per new connection when the server did not report
# ``in_hot_standby`` (PostgreSQL before 14, or a pooler that does not pass it on).
IN_RECOVERY = "SELECT pg_is_in_recovery()"

CHANNEL = "pgq_events"

# The argument builders live in pgq_thin._call_args (no SQL there); callers use them as calls.X.
__all__ = [
    "AConn",
    "Conn",
    "Decision",
    "Row",
    "complete_args",
    "configure_args",
    "decisions",
    "enqueue_args",
    "enqueue_many_args",
    "jsonb",
    "schedule_args",
]


# --- sync ---------------------------------------------------------------------------------------


_translated = translated  # who may run what: _api.NEEDS, from the grants


def _rows(conn: Conn, query: str, args: Sequence[Any] = ()) -> list[Row]:
    with _translated(conn, query), conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, args)
        return cur.fetchall()


def _column(conn: Conn, query: str, args: Sequence[Any] = ()) -> list[Any]:
    with _translated(conn, query), conn.cursor() as cur:
        cur.execute(query, args)
        return [row[0] for row in cur.fetchall()]


def enqueue(conn: Conn, args: tuple[Any, ...]) -> int:
    """``pgq.enqueue`` with :func:`enqueue_args`. Returns the job id."""
    return int(_column(conn, ENQUEUE, args)[0])


def enqueue_many(conn: Conn, args: tuple[Any, ...]) -> list[int]:
    """``pgq.enqueue_many`` with :func:`enqueue_many_args`. Ids in input order."""
    return [int(i) for i in _column(conn, ENQUEUE_MANY, args)]


def cancel(conn: Conn, ids: Sequence[int]) -> list[int]:
    return [int(i) for i in _column(conn, CANCEL, (list(ids),))]


def configure(conn: Conn, args: tuple[Any, ...]) -> Row:
    """``pgq.configure`` with :func:`configure_args`. Returns the policy row."""
    return _rows(conn, CONFIGURE, args)[0]


# --- async --------------------------------------------------------------------------------------


async def _arows(conn: AConn, query: str, args: Sequence[Any] = ()) -> list[Row]:
    with _translated(conn, query):
        async with conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(query, args)
            return await cur.fetchall()


async def _acolumn(conn: AConn, query: str, args: Sequence[Any] = ()) -> list[Any]:
    with _translated(conn, query):
        async with conn.cursor() as cur:
            await cur.execute(query, args)
            return [row[0] for row in await cur.fetchall()]


async def aenqueue(conn: AConn, args: tuple[Any, ...]) -> int:
    return int((await _acolumn(conn, ENQUEUE, args))[0])


async def aenqueue_many(conn: AConn, args: tuple[Any, ...]) -> list[int]:
    return [int(i) for i in await _acolumn(conn, ENQUEUE_MANY, args)]


async def acancel(conn: AConn, ids: Sequence[int]) -> list[int]:
    return [int(i) for i in await _acolumn(conn, CANCEL, (list(ids),))]


async def aconfigure(conn: AConn, args: tuple[Any, ...]) -> Row:
    return (await _arows(conn, CONFIGURE, args))[0]


async def aclaim(
    conn: AConn,
    worker_id: uuid.UUID,
    entrypoints: Sequence[str],
    batch_size: int,
    request_id: uuid.UUID | None = None,
) -> list[tuple[Any, ...]]:
    """``pgq.claim``: rows of ``pgq.claimed_job`` as tuples (see :data:`CLAIM`). Sent again
    with the same ``request_id`` (its answer was lost), it answers the same jobs."""
    with _translated(conn, CLAIM):
        async with conn.cursor() as cur:
            await cur.execute(CLAIM, (worker_id, list(entrypoints), batch_size, request_id))
            return await cur.fetchall()


async def aheartbeat(
    conn: AConn, worker_id: uuid.UUID, ids: Sequence[int], leases: Sequence[int]
) -> list[tuple[int, str]]:
    """``pgq.heartbeat``: ``(id, state)`` per input id, state ok, lost or cancel_requested."""
    with _translated(conn, HEARTBEAT):
        async with conn.cursor() as cur:
            await cur.execute(HEARTBEAT, (worker_id, list(ids), list(leases)))
            return [(int(r[0]), str(r[1])) for r in await cur.fetchall()]


async def acomplete(
    conn: AConn,
    worker_id: uuid.UUID,
    ids: Sequence[int],
    leases: Sequence[int],
    outcomes: Sequence[str],
    details: Sequence[Any],
) -> dict[int, Decision]:
    """``pgq.complete``: what SQL decided for each job accepted (a stale lease is ignored by
    the server and gets no answer)."""
    args = complete_args(worker_id, ids, leases, outcomes, details)
    with _translated(conn, COMPLETE):
        async with conn.cursor() as cur:
            await cur.execute(COMPLETE, args)
            return decisions(await cur.fetchall())


async def acomplete_and_claim(
    conn: AConn,
    worker_id: uuid.UUID,
    done: tuple[Sequence[int], Sequence[int], Sequence[str], Sequence[Any]],
    entrypoints: Sequence[str],
    batch_size: int,
    request_id: uuid.UUID | None = None,
) -> tuple[dict[int, Decision], list[tuple[Any, ...]]]:
    """``pgq.complete`` of finished jobs and ``pgq.claim`` of the next batch in one round trip
    (a pipeline). Returns (what SQL decided per job accepted, claimed rows)."""
    with _translated(conn, CLAIM):
        async with conn.pipeline():
            finished = conn.cursor()
            claimed = conn.cursor()
            await finished.execute(COMPLETE, complete_args(worker_id, *done))
            await claimed.execute(CLAIM, (worker_id, list(entrypoints), batch_size, request_id))
        accepted = decisions(await finished.fetchall())
        return accepted, await claimed.fetchall()


async def arelease(
    conn: AConn, worker_id: uuid.UUID, ids: Sequence[int], leases: Sequence[int]
) -> list[int]:
    return [int(i) for i in await _acolumn(conn, RELEASE, (worker_id, list(ids), list(leases)))]


async def anext_due_in(conn: AConn, entrypoints: Sequence[str]) -> float | None:
    """Seconds until the next delayed job of these entrypoints is due, or None."""
    value = (await _acolumn(conn, NEXT_DUE_IN, (list(entrypoints),)))[0]
    return None if value is None else float(value)


async def alisten(conn: AConn) -> None:
    """Subscribe an autocommit connection to the ``pgq_events`` channel."""
    await conn.execute(LISTEN)


async def aping(conn: AConn) -> None:
    """One round trip (the listener's health check)."""
    await conn.execute(PING)


def in_recovery(conn: Conn) -> bool:
    """``pg_is_in_recovery()``: true on a hot standby."""
    row = conn.execute(IN_RECOVERY).fetchone()
    return bool(row and row[0])


async def ain_recovery(conn: AConn) -> bool:
    row = await (await conn.execute(IN_RECOVERY)).fetchone()
    return bool(row and row[0])


async def aschedule(conn: AConn, args: tuple[Any, ...]) -> Row:
    return (await _arows(conn, SCHEDULE, args))[0]


async def aclaim_schedules(
    conn: AConn, worker_id: uuid.UUID, batch_size: int, at: datetime | None = None
) -> list[Row]:
    """``pgq.claim_schedules``: name, lease, entrypoint, cron, timezone, due_at, db_now."""
    return await _arows(conn, CLAIM_SCHEDULES, (worker_id, batch_size, at))


async def afire_schedule(
    conn: AConn,
    worker_id: uuid.UUID,
    name: str,
    lease: int,
    next_after_due: datetime,
    next_after_now: datetime,
    at: datetime | None = None,
) -> Row:
    """``pgq.fire_schedule``: one row, state fired (with job_id), skipped or lost."""
    args = (worker_id, name, lease, next_after_due, next_after_now, at)
    return (await _arows(conn, FIRE_SCHEDULE, args))[0]


async def arelease_schedule(
    conn: AConn, worker_id: uuid.UUID, name: str, lease: int, error: str
) -> str:
    """``pgq.release_schedule``: released, or lost when the lease no longer holds."""
    return str((await _acolumn(conn, RELEASE_SCHEDULE, (worker_id, name, lease, error)))[0])


async def anext_schedule_in(conn: AConn) -> float | None:
    """Seconds until a schedule needs a scheduler, or None when there are no schedules."""
    value = (await _acolumn(conn, NEXT_SCHEDULE_IN))[0]
    return None if value is None else float(value)


async def aprune_history(conn: AConn, older_than: timedelta, at: datetime | None = None) -> int:
    """``pgq.prune_history``: history rows deleted (at most :data:`PRUNE_BATCH`)."""
    return int((await _acolumn(conn, PRUNE_HISTORY, (older_than, at, PRUNE_BATCH)))[0])


async def amaintain(conn: AConn) -> Row:
    """``pgq.maintain``: one row (state, swept, promoted, carried, truncated, rotated,
    lock_wait_ms, bytes)."""
    return (await _arows(conn, MAINTAIN))[0]
