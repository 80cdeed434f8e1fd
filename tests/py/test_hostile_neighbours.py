"""Hostile neighbours: what one role or one bad row must not be able to do to everyone else.

- A claim never waits for a row another transaction has locked (SKIP LOCKED), shown
  deterministically: a second connection holds FOR UPDATE on a due job, the claim answers at
  once with the other job, under a statement_timeout that would cancel a waiting claim.
- Maintenance (``pgq.maintain``) cannot be kept busy by a role that merely can connect (its
  lock is a row only the owner can lock, not an advisory lock anyone can take).
- The install lock, which anyone can take, makes ``upgrade`` fail within its lock timeout with
  an error naming the holder instead of hanging.
- A scheduler gives back a schedule it cannot compute a time for and fires the others of the
  batch; a worker role without pgq_admin fires schedules although it may not register them.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from pgq_thin import migrate
from pgq_thin.cron import CronSchedule
from pgq_thin.errors import MigrationError
from pgq_thin.scheduler import Scheduler, ScheduleSpec


def test_a_claim_never_waits_for_a_row_locked_elsewhere(pgq_dsn: str) -> None:
    with psycopg.connect(pgq_dsn, autocommit=True) as conn, psycopg.connect(pgq_dsn) as holder:
        locked, free = (
            row[0]
            for row in conn.execute(
                "SELECT pgq.enqueue_many(ARRAY['sk.a', 'sk.a'], priorities => '{9, 1}')"
            ).fetchall()
        )
        holder.execute("SELECT 1 FROM pgq.jobs WHERE id = %s FOR UPDATE", (locked,))
        conn.execute("SET statement_timeout = '3s'")
        started = time.monotonic()
        claimed = conn.execute(
            "SELECT id FROM pgq.claim(%s, '{sk.a}', 2)", (uuid.uuid4(),)
        ).fetchall()
        elapsed = time.monotonic() - started
        holder.rollback()
    assert claimed == [(free,)], "the locked (higher priority) job is skipped, the other claimed"
    assert elapsed < 1.0, f"the claim waited {elapsed:.2f} s"


def test_maintenance_cannot_be_kept_busy_by_any_role(pgq_dsn: str, login_role: Any) -> None:
    nobody = login_role()  # may connect, holds no pgq role
    worker = login_role("pgq_worker")
    with (
        psycopg.connect(nobody, autocommit=True) as squatter,
        psycopg.connect(pgq_dsn, autocommit=True) as conn,
    ):
        # Advisory locks anyone can take, on the keys a maintainer might have used.
        for rel in ("pgq.jobs", "pgq.ring_seq", "pgq.maintenance"):
            oid = conn.execute("SELECT %s::regclass::oid::int", (rel,)).fetchone()[0]  # type: ignore[index]
            squatter.execute("SELECT pg_advisory_lock(%s, 0), pg_advisory_lock(%s)", (oid, oid))
        row = conn.execute("SELECT state FROM pgq.maintain()").fetchone()
        assert row == ("ok",), row
        # The real lock is a row only the owner can lock.
        for dsn in (nobody, worker):
            with psycopg.connect(dsn) as other, pytest.raises(psycopg.errors.InsufficientPrivilege):
                other.execute("SELECT 1 FROM pgq.maintenance FOR UPDATE")
        # A second maintainer holding it makes the other one busy, at once.
        with psycopg.connect(pgq_dsn) as first:
            first.execute("SELECT 1 FROM pgq.maintenance FOR UPDATE")
            started = time.monotonic()
            row = conn.execute("SELECT state, swept, truncated FROM pgq.maintain()").fetchone()
            assert row == ("busy", 0, None)
            assert time.monotonic() - started < 1.0
            row = conn.execute("SELECT compacted, reason FROM pgq.compact_jobs()").fetchone()
            assert row == (False, "busy")


def test_upgrade_fails_within_its_lock_timeout_naming_the_holder(
    pgq_dsn: str, login_role: Any
) -> None:
    nobody = login_role()
    with psycopg.connect(nobody, autocommit=True) as squatter:
        squatter.execute("SELECT pg_advisory_lock(%s)", (migrate.LOCK_KEY,))
        pid = squatter.info.backend_pid
        started = time.monotonic()
        with pytest.raises(MigrationError, match=rf"not free within 0.5 s; held by pid {pid} "):
            migrate.upgrade(pgq_dsn, lock_timeout=0.5)
        assert time.monotonic() - started < 10
        squatter.execute("SELECT pg_advisory_unlock_all()")
    assert migrate.upgrade(pgq_dsn, lock_timeout=5) == migrate.head()  # free again: works


def test_uninstall_knows_every_role() -> None:
    assert set(migrate.ROLES) == {"pgq_producer", "pgq_worker", "pgq_reader", "pgq_admin"}


def test_a_schedule_without_a_next_time_is_released_and_the_others_fire(
    pgq_dsn: str, login_role: Any, caplog: pytest.LogCaptureFixture
) -> None:
    worker_dsn = login_role("pgq_worker")
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        for name in ("hn.a", "hn.bad", "hn.z"):
            conn.execute(
                "SELECT pgq.schedule(%s, 'hn.job', '* * * * *', '2030-01-01 10:00:00+00')", (name,)
            )
        # Written past the checks of pgq.schedule, as a row stored before them could be.
        conn.execute("UPDATE pgq.schedules SET cron = '99 99 99 99 99' WHERE name = 'hn.bad'")
    at = datetime(2030, 1, 1, 10, 0, 5, tzinfo=UTC)
    scheduler = Scheduler(uuid.uuid4(), [], batch_size=10)

    async def fire() -> list[dict[str, Any]]:
        async with await psycopg.AsyncConnection.connect(worker_dsn, autocommit=True) as aconn:
            return await scheduler.fire_due(aconn, at)

    with caplog.at_level(logging.WARNING, logger="pgq_thin"):
        results = asyncio.run(fire())
    assert sorted((r["name"], r["state"]) for r in results) == [
        ("hn.a", "fired"),
        ("hn.bad", "released"),
        ("hn.z", "fired"),
    ]
    assert "hn.bad" in caplog.text and "cannot fire" in caplog.text
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        state, retry_at, error = conn.execute(
            "SELECT state, retry_at, last_error FROM pgq.schedules WHERE name = 'hn.bad'"
        ).fetchone()  # type: ignore[misc]
    assert state == "idle" and retry_at is not None and error


def test_a_worker_role_fires_schedules_it_may_not_register(
    pgq_dsn: str, login_role: Any, caplog: pytest.LogCaptureFixture
) -> None:
    worker_dsn = login_role("pgq_worker")
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT pgq.schedule('hn.sql', 'hn.job', '* * * * *', now() - interval '1 minute')"
        )
    spec = ScheduleSpec(CronSchedule("* * * * *"), "hn.code", name="hn.code")
    scheduler = Scheduler(uuid.uuid4(), [spec])
    stopping, wake = asyncio.Event(), asyncio.Event()

    async def main() -> None:
        async with await psycopg.AsyncConnection.connect(worker_dsn, autocommit=True) as aconn:

            async def call(step: Any) -> Any:
                result = await step(aconn)
                stopping.set()  # one pass of the loop
                return result

            await asyncio.wait_for(scheduler.run(call, wake, stopping), 20)

    with caplog.at_level(logging.WARNING, logger="pgq_thin"):
        asyncio.run(main())
    assert "not registered" in caplog.text and "pgq_admin" in caplog.text
    assert scheduler.fired == 1
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM pgq.schedules ORDER BY 1")]
    assert names == ["hn.sql"]
