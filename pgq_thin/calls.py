"""The worker's calls, and the few statements that are not one call of a ``pgq`` function.

Every call of a ``pgq`` function is built by the generated :mod:`pgq_thin._api` (from
``sql/api.json``) and sent by :mod:`pgq_thin._sql_runner`, which turns errors of class ``PQ``
into :mod:`pgq_thin.errors` exceptions. Written here by hand are only the measured hot path of
the worker (:data:`CLAIM` and :data:`COMPLETE`: projection, casts, comma-joined arrays, tuples
instead of dicts; ``tests/py/test_calls.py`` pins their columns to the manifest) and what is
not one function call: the server-clock deltas, the parents' results of several jobs,
``LISTEN``, the health check, the recovery probe. SQL text lives only in the statement
modules (``tests/py/test_layering.py``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from psycopg.types.json import Jsonb

from pgq_thin import _api
from pgq_thin._sql_runner import arun, translated
from pgq_thin._statements import AConn, Conn, Row

__all__ = ["AConn", "Conn", "Decision", "Row"]

# --- the hot path: hand-tuned overrides of pgq.claim and pgq.complete --------------------------

# The columns of pgq.claimed_job in their declared order (Job.from_claimed unpacks tuples), in
# forms that cannot fail for the whole batch: JSON as text (decoded per job), and a timestamp
# outside what Python's datetime can hold (infinity, BC dates; a day of margin for the
# session's time zone) as NULL with a note in a last column. A value Python cannot hold then
# fails its own job, not the claim. The request id makes a re-sent claim answer the same jobs.
CLAIM = (
    "SELECT id, lease, entrypoint, payload::text, headers::text, priority, attempt,"
    " CASE WHEN e THEN enqueued_at END, CASE WHEN r THEN run_at END, dedupe_key, max_attempts,"
    " heartbeat_timeout_s, last_attempt, run_timeout_s, taken_over::text,"
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
    "run_at", "dedupe_key", "max_attempts", "heartbeat_timeout_s", "last_attempt", "run_timeout_s",
    "taken_over", "unholdable",
)  # fmt: skip
# ids, leases and outcomes travel as comma-separated text (joined in C: a tenth of the cost of
# dumping three lists), details as one JSON array (NULL when there are none); see complete_args.
COMPLETE = (
    "SELECT id, status, attempt, max_attempts, retry_in_s FROM pgq.complete(%s::uuid,"
    " string_to_array(%s, ',')::bigint[], string_to_array(%s, ',')::bigint[],"
    " string_to_array(%s, ','), %s::jsonb)"
)
#: The columns of :data:`COMPLETE` (those of pgq.complete it sends, in its order).
COMPLETE_COLUMNS = ("id", "status", "attempt", "max_attempts", "retry_in_s")


class Decision(NamedTuple):
    """What ``pgq.complete`` decided for one job: ``status`` successful, failed (dead),
    canceled, retry or snoozed; the attempt that ended; and for a retry or a snooze, in how
    many seconds it runs again (on the server's clock)."""

    status: str
    attempt: int
    max_attempts: int
    retry_in_s: float | None


def complete_args(
    worker_id: uuid.UUID,
    ids: Sequence[int],
    leases: Sequence[int],
    outcomes: Sequence[str],
    details: Sequence[Any] | None = None,
) -> tuple[Any, ...]:
    """Parameters of :data:`COMPLETE`."""
    packed = None if details is None or all(d is None for d in details) else Jsonb(list(details))
    joined = (",".join(map(str, ids)), ",".join(map(str, leases)), ",".join(outcomes))
    return (worker_id, *joined, packed)


def decisions(rows: Sequence[Sequence[Any]]) -> dict[int, Decision]:
    """The rows of :data:`COMPLETE` by job id."""
    return {
        int(r[0]): Decision(str(r[1]), int(r[2]), int(r[3]), None if r[4] is None else float(r[4]))
        for r in rows
    }


async def aclaim(
    conn: AConn,
    worker_id: uuid.UUID,
    entrypoints: Sequence[str],
    batch_size: int,
    request_id: uuid.UUID | None = None,
) -> list[tuple[Any, ...]]:
    """``pgq.claim``: rows of ``pgq.claimed_job`` as tuples (see :data:`CLAIM`). Sent again
    with the same ``request_id`` (its answer was lost), it answers the same jobs."""
    with translated(conn, CLAIM):
        async with conn.cursor() as cur:
            await cur.execute(CLAIM, (worker_id, list(entrypoints), batch_size, request_id))
            return await cur.fetchall()


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
    with translated(conn, COMPLETE):
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
    with translated(conn, CLAIM):
        async with conn.pipeline():
            finished = conn.cursor()
            claimed = conn.cursor()
            await finished.execute(COMPLETE, complete_args(worker_id, *done))
            await claimed.execute(CLAIM, (worker_id, list(entrypoints), batch_size, request_id))
        accepted = decisions(await finished.fetchall())
        return accepted, await claimed.fetchall()


# --- the worker's other calls (generated statements) -----------------------------------------


async def aheartbeat(
    conn: AConn, worker_id: uuid.UUID, ids: Sequence[int], leases: Sequence[int]
) -> list[tuple[int, str]]:
    """``pgq.heartbeat``: ``(id, state)`` per input id, state ok, lost, cancel_requested or
    timed_out (SQL ended the attempt past its time limit)."""
    call = _api.heartbeat(worker_id, ids, leases)
    return [(int(r["id"]), str(r["state"])) for r in await arun(conn, call)]


async def arelease(
    conn: AConn, worker_id: uuid.UUID, ids: Sequence[int], leases: Sequence[int]
) -> list[int]:
    """``pgq.release``: the ids given back."""
    return [int(r["id"]) for r in await arun(conn, _api.release(worker_id, ids, leases))]


# pgq.parent_results of several jobs in one statement (a fan-in job's parents, read by the
# worker before its handler starts), each row with the job it is for.
PARENT_RESULTS = (
    "SELECT j.id, r.parent_id, r.status, r.result::text"
    " FROM unnest(%s::bigint[]) AS j(id) CROSS JOIN LATERAL pgq.parent_results(j.id) r"
)


async def aparent_results(conn: AConn, job_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """``pgq.parent_results`` of each job, in one round trip: {job id: its parents' rows, each
    ``{"parent_id", "status", "result"}``}."""
    answer: dict[int, list[dict[str, Any]]] = {job_id: [] for job_id in job_ids}
    with translated(conn, PARENT_RESULTS):
        async with conn.cursor() as cur:
            await cur.execute(PARENT_RESULTS, (list(job_ids),))
            for job_id, parent_id, status, result in await cur.fetchall():
                answer[job_id].append(
                    {
                        "parent_id": parent_id,
                        "status": status,
                        "result": None if result is None else json.loads(result),
                    }
                )
    return answer


PRUNE_BATCH = 10000


async def aprune_history(conn: AConn, older_than: timedelta, at: datetime | None = None) -> int:
    """``pgq.prune_history``: history rows deleted (at most :data:`PRUNE_BATCH`)."""
    call = _api.prune_history(older_than=older_than, at=at, batch=PRUNE_BATCH)
    return await arun(conn, call)


async def amaintain(conn: AConn, min_interval: timedelta | None = None) -> Row:
    """``pgq.maintain``: one row (state, swept, promoted, carried, truncated, rotated,
    lock_wait_ms, bytes); with ``min_interval``, ``recent`` when the last pass is younger."""
    return await arun(conn, _api.maintain(min_interval=min_interval))


# --- statements not of one function ----------------------------------------------------------

# Seconds until the next delayed job is due or a rate limit's budget grows (NULL: neither); and
# the entrypoints whose whole rate budget is used up, each with the seconds until one more start
# fits (pgq.rate_waits). Both on the server's clock.
NEXT_DUE_IN = (
    "SELECT extract(epoch FROM pgq.next_run_at(%s::text[]) - now())::float8,"
    " (SELECT coalesce(jsonb_object_agg(w.entrypoint,"
    "                                   extract(epoch FROM w.next_start_at - now())::float8), '{}')"
    "    FROM pgq.rate_waits(%s::text[]) w)"
)
# Seconds until a schedule is due (or a silent claimer may be taken over); NULL: no schedules.
NEXT_SCHEDULE_IN = (
    "SELECT extract(epoch FROM pgq.next_schedule_at(worker_id => %s::uuid) - now())::float8"
)
LISTEN = "LISTEN pgq_events"
CHANNEL = "pgq_events"
# The listener's health check: a round trip on its own connection.
PING = "SELECT 1"
# Is the server a hot standby? Asked once per new connection when the server did not report
# ``in_hot_standby`` (PostgreSQL before 14, or a pooler that does not pass it on).
IN_RECOVERY = "SELECT pg_is_in_recovery()"


async def _seconds(conn: AConn, query: str, args: tuple[Any, ...] = ()) -> float | None:
    with translated(conn, query):
        row = await (await conn.execute(query, args)).fetchone()
    return None if row is None or row[0] is None else float(row[0])


async def anext_due_in(
    conn: AConn, entrypoints: Sequence[str]
) -> tuple[float | None, dict[str, float]]:
    """Seconds until the next delayed job of these entrypoints is due or a rate limit lets one
    more start (None: neither), and the entrypoints whose rate budget is used up with the
    seconds until it is not (a claim of them finds nothing before)."""
    names = list(entrypoints)
    with translated(conn, NEXT_DUE_IN):
        row = await (await conn.execute(NEXT_DUE_IN, (names, names))).fetchone()
    if row is None:
        return None, {}
    return (None if row[0] is None else float(row[0])), {k: float(v) for k, v in row[1].items()}


async def anext_schedule_in(conn: AConn, worker_id: uuid.UUID) -> float | None:
    """Seconds until a schedule this worker may fire needs a scheduler, or None when there is
    none (``pgq.next_schedule_at``: schedules whose entrypoint nobody serves are left out)."""
    return await _seconds(conn, NEXT_SCHEDULE_IN, (worker_id,))


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
