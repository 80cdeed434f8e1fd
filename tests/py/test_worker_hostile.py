"""A running ThinWorker survives whatever arrives: notifications of any shape (any role may
NOTIFY on any channel), claimed rows that Python cannot hold, and it ends at once, without
restarts, on what no retry can fix (schema missing, grant missing)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers.db import aio
from helpers.wait import await_for
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgq_thin.admin import Admin
from pgq_thin.errors import SetupError
from pgq_thin.job import Job
from pgq_thin.listener import CancelRequested, Enqueued, SchedulesChanged, parse_event
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker


def execute(dsn: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(sql, args)
        return cur.fetchall() if cur.description else []


async def truthy(predicate: Callable[[], Any]) -> Any:
    return predicate()


# --- notifications ------------------------------------------------------------------------------

HOSTILE_NOTIFICATIONS = [
    '{"kind": "enqueued", "entrypoints": 5}',
    '{"kind": "enqueued", "entrypoints": [1, ["x"]]}',
    '{"kind": "enqueued", "entrypoints": "hn.job"}',
    '{"kind": "enqueued"}',
    '{"kind": "cancel", "ids": [[1]]}',
    '{"kind": "cancel", "ids": [1.5, true, "1"]}',
    '{"kind": "cancel", "ids": {"a": 1}}',
    '{"kind": ["schedules"]}',
    "[1, 2, 3]",
    '"enqueued"',
    "null",
    "not json at all",
    "[" * 7999,
    '{"kind": "enqueued", "entrypoints": ["' + "x" * 7900,  # near the limit, cut short
]


@pytest.mark.parametrize("payload", HOSTILE_NOTIFICATIONS, ids=range(len(HOSTILE_NOTIFICATIONS)))
@aio
async def test_a_notification_of_any_shape_is_ignored(
    pgq_dsn: str, payload: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Sent while the worker listens (several times): the worker keeps running, its listener
    keeps its connection, and a real job is still picked up by its notification (the poll is
    60 s away)."""
    caplog.set_level(logging.DEBUG, logger="pgq_thin.listener")
    worker = ThinWorker(pgq_dsn, poll_interval=60, restart_delay=0.05)
    done: list[int] = []

    @worker.entrypoint("hn.job")
    async def job(job: Job[Any]) -> None:
        done.append(job.id)

    run = asyncio.create_task(worker.arun(install_signal_handlers=False))
    try:
        await await_for(lambda: truthy(lambda: worker.listening), 10, "the listener to listen")
        for _ in range(3):
            await asyncio.to_thread(
                execute, pgq_dsn, "SELECT pg_notify('pgq_events', %s)", (payload,)
            )
        with Queue(pgq_dsn) as q:
            job_id = q.enqueue("hn.job")
        await await_for(lambda: truthy(lambda: done), 10, "the job run after the notifications")
        assert done == [job_id]
        assert not run.done()
        assert (worker.stats.restarts, worker.stats.listener_reconnects) == (0, 0)
        assert "ignored a pgq_events payload" in caplog.text
    finally:
        worker.stop()
        await asyncio.wait_for(run, 10)


def test_parse_event_takes_only_the_shapes_sql_sends() -> None:
    assert parse_event('{"kind": "enqueued", "entrypoints": ["a", "b"]}') == Enqueued(
        frozenset({"a", "b"})
    )
    assert parse_event('{"kind": "cancel", "ids": [1, 2]}') == CancelRequested(frozenset({1, 2}))
    assert parse_event('{"kind": "schedules"}') == SchedulesChanged()
    assert [parse_event(p) for p in HOSTILE_NOTIFICATIONS] == [None] * len(HOSTILE_NOTIFICATIONS)


# --- claimed rows Python cannot hold --------------------------------------------------------------

# Each poison: a column of the job set (as the superuser, after a plain enqueue, so the test
# does not depend on what pgq.enqueue accepts) to a value PostgreSQL stores and Python cannot
# turn into a value of its own; and a word the failure's message must contain.
POISONS = {
    "run_at -infinity": ("run_at = '-infinity'", "run_at"),
    "run_at BC": ("run_at = '0044-03-15 BC'", "run_at"),
    "enqueued_at BC": ("enqueued_at = '0044-03-15 BC'", "enqueued_at"),
    "payload nested 3000 deep": (
        "payload = (repeat('[', 3000) || repeat(']', 3000))::jsonb",
        "payload",
    ),
    "payload number of 5000 digits": (
        "payload = ('{\"n\": ' || repeat('9', 5000) || '}')::jsonb",
        "payload",
    ),
    "headers number of 5000 digits": (
        "headers = ('{\"n\": ' || repeat('7', 5000) || '}')::jsonb",
        "headers",
    ),
}


@pytest.mark.parametrize("poison", list(POISONS))
def test_a_claimed_row_python_cannot_hold_fails_that_job_alone(pgq_dsn: str, poison: str) -> None:
    assignment, column = POISONS[poison]
    ran: list[int] = []
    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure(
            "hp.job", max_attempts=2, backoff_base=timedelta(0), backoff_max=timedelta(0)
        )
        ids = q.enqueue_many("hp.job", [{"n": i} for i in range(6)])
    bad = ids[2]
    execute(pgq_dsn, f"UPDATE pgq.jobs SET {assignment} WHERE id = %s", (bad,))
    worker = ThinWorker(pgq_dsn, batch_size=10, concurrency=10, restart_delay=0.05)

    @worker.entrypoint("hp.job")
    async def job(job: Job[Any]) -> None:
        ran.append(job.id)

    worker.run(until_empty=True)
    rest = sorted(i for i in ids if i != bad)
    assert sorted(i for i in ran if i != bad) == rest  # the rest of the batch ran, once each
    assert ran.count(bad) == (1 if column == "run_at" else 0)
    rows = {
        r[0]: r[1:]
        for r in execute(
            pgq_dsn, "SELECT id, status, attempt, details, errors FROM pgq.job_history"
        )
    }
    assert {i: rows[i][0] for i in ids if i != bad} == dict.fromkeys(set(ids) - {bad}, "successful")
    status, attempt, details, errors = rows[bad]
    first = errors[0]["details"]
    assert first["error"] == "UndecodableJob"
    assert column in first["message"] and f"job {bad}" in first["message"]
    if column == "run_at":  # a retry is due at a normal time again: the job heals
        assert (status, attempt) == ("successful", 2)
    else:  # failed on every attempt, as SQL's retry policy says: dead after 2 of 2
        assert (status, attempt, details["error"], len(errors)) == (
            "failed",
            2,
            "UndecodableJob",
            2,
        )
    assert worker.stats.restarts == 0
    assert worker.stats.undecodable == (1 if column == "run_at" else 2)


# --- what no retry can fix ------------------------------------------------------------------------


def test_missing_schema_ends_the_run_at_once(empty_db_dsn: str) -> None:
    worker = ThinWorker(empty_db_dsn, restart_delay=0.05, poll_interval=0.1)

    @worker.entrypoint("ms.job")
    async def job(job: Job[Any]) -> None:  # pragma: no cover - nothing can be claimed
        raise AssertionError

    began = time.monotonic()
    with pytest.raises(SetupError, match=r"schema pgq is not installed.*pgq-thin install"):
        worker.run()
    assert time.monotonic() - began < 5
    assert worker.stats.restarts == 0


@pytest.fixture
def producer_only_dsn(pgq_dsn: str) -> Iterator[tuple[str, str]]:
    """A login role without pgq_worker, connecting to the test database (no membership at
    all: roles are cluster-wide, and a member of pgq_producer would show in other tests'
    catalog snapshots while it exists)."""
    role = f"pgq_t_nogrant_{uuid.uuid4().hex[:8]}"
    execute(pgq_dsn, f"CREATE ROLE {role} LOGIN")
    params = conninfo_to_dict(pgq_dsn)
    params["user"] = role
    params.pop("password", None)
    dsn = make_conninfo(**params)  # type: ignore[arg-type]
    try:
        try:
            execute(dsn, "SELECT 1")
        except psycopg.OperationalError as err:
            pytest.skip(f"cannot log in as a new role on this server: {err}")
        yield dsn, role
    finally:
        execute(pgq_dsn, f"DROP OWNED BY {role}")
        execute(pgq_dsn, f"DROP ROLE {role}")


def test_missing_grant_ends_the_run_at_once(producer_only_dsn: tuple[str, str]) -> None:
    dsn, role = producer_only_dsn
    worker = ThinWorker(dsn, restart_delay=0.05, poll_interval=0.1)

    @worker.entrypoint("mg.job")
    async def job(job: Job[Any]) -> None:  # pragma: no cover - nothing can be claimed
        raise AssertionError

    began = time.monotonic()
    with pytest.raises(
        SetupError, match=f"role {role} lacks pgq_worker.*GRANT pgq_worker TO {role}"
    ):
        worker.run()
    assert time.monotonic() - began < 5
    assert worker.stats.restarts == 0


# --- results the server refuses -------------------------------------------------------------------


def test_a_result_the_server_refuses_is_written_alone_with_a_note(pgq_dsn: str) -> None:
    """A handler returns a string with a NUL character: JSON allows it, jsonb refuses it
    (a data error). The batch it was in is written one result at a time; the refused one is
    written with its details replaced by a note; the others keep theirs."""
    with Queue(pgq_dsn) as q:
        ids = q.enqueue_many("rr.job", [{"n": i} for i in range(5)])
    bad = ids[3]
    worker = ThinWorker(pgq_dsn, batch_size=10, concurrency=10, restart_delay=0.05)

    @worker.entrypoint("rr.job")
    async def job(job: Job[Any]) -> str:
        return "nul \x00 inside" if job.id == bad else f"ok {job.payload['n']}"

    worker.run(until_empty=True)
    rows = dict(
        execute(pgq_dsn, "SELECT id, details FROM pgq.job_history WHERE status = 'successful'")
    )
    assert sorted(rows) == sorted(ids)
    assert rows[bad]["error"] == "UnstorableDetails"
    assert {rows[i]["result"] for i in ids if i != bad} == {"ok 0", "ok 1", "ok 2", "ok 4"}
    assert (worker.stats.successful, worker.stats.restarts) == (5, 0)
