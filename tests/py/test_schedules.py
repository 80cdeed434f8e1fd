"""Cron schedules end to end: many schedulers, one fire per tick; takeover after a crash; DST
through the real SQL path; every worker fires schedules added from SQL or the CLI (and looks
rarely when there are none); a worker that opts out sends no schedule queries."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
import pytest
from helpers.wait import await_for, wait_for

from pgq_thin.cron import CronSchedule
from pgq_thin.errors import InvalidSchedule
from pgq_thin.scheduler import Scheduler, ScheduleSpec
from pgq_thin.worker import ThinWorker

APP_DIR = Path(__file__).resolve().parent


def spawn(dsn: str, target: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pgq_thin", "run", target, "--dsn", dsn],
        cwd=APP_DIR,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def fired_ticks(dsn: str, entrypoint: str) -> list[tuple[datetime, int]]:
    """(due time, number of jobs) per tick fired for an entrypoint, live or finished."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT (headers ->> 'pgq_due_at')::timestamptz AS due, count(*) FROM ("
            " SELECT headers FROM pgq.jobs WHERE entrypoint = %s"
            " UNION ALL SELECT headers FROM pgq.job_history WHERE entrypoint = %s) j"
            " GROUP BY 1 ORDER BY 1",
            (entrypoint, entrypoint),
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


def a_consumer_of_the_ticks(dsn: str) -> None:
    """A live worker that serves tick.every_second (registered, fresh for an hour): a
    scheduler fires only schedules whose entrypoint a live worker serves, and the
    scheduler-only processes of these tests serve none."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT pgq.register_worker(gen_random_uuid(), ARRAY['tick.every_second'],"
            " timeout => interval '1 hour')"
        )


def test_five_scheduler_processes_fire_every_tick_exactly_once(pgq_dsn: str) -> None:
    a_consumer_of_the_ticks(pgq_dsn)
    procs = [spawn(pgq_dsn, "schedule_app:worker") for _ in range(5)]
    try:
        wait_for(
            lambda: len(fired_ticks(pgq_dsn, "tick.every_second")) >= 12,
            timeout=60,
            what="12 ticks of the per-second schedule",
        )
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        errors = [p.communicate(timeout=30)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    assert not any("Traceback" in e for e in errors), errors
    ticks = fired_ticks(pgq_dsn, "tick.every_second")
    assert len(ticks) >= 12
    assert {count for _, count in ticks} == {1}, "a tick produced more than one job"
    dues = [due for due, _ in ticks]
    steps = {b - a for a, b in itertools.pairwise(dues)}
    assert steps == {timedelta(seconds=1)}, f"ticks missing between {dues[0]} and {dues[-1]}"
    with psycopg.connect(pgq_dsn) as conn:
        fired_by = conn.execute(
            "SELECT count(DISTINCT worker_id) FROM pgq.schedules WHERE name = 'every-second'"
        ).fetchone()
        state = conn.execute("SELECT count(*) FROM pgq.schedules WHERE state = 'firing'").fetchone()
    assert fired_by is not None and state == (0,)


def test_a_scheduler_killed_between_claim_and_fire_is_taken_over_once(pgq_dsn: str) -> None:
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT pgq.schedule('every-second', 'tick.every_second', '* * * * * *',"
            " now() + interval '1 second', fire_timeout => '2 seconds')"
        )
    # A scheduler process that claims the due tick and is SIGKILLed before it can fire it.
    crash = (
        "import os, signal, uuid, psycopg, sys\n"
        "conn = psycopg.connect(sys.argv[1], autocommit=True)\n"
        "while True:\n"
        "    rows = conn.execute('SELECT name, due_at FROM pgq.claim_schedules(%s)',"
        " (uuid.uuid4(),)).fetchall()\n"
        "    if rows:\n"
        "        print(rows[0][1].isoformat(), flush=True)\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    victim = subprocess.run(
        [sys.executable, "-c", crash, pgq_dsn], capture_output=True, text=True, timeout=30
    )
    assert victim.returncode == -signal.SIGKILL
    orphan_due = datetime.fromisoformat(victim.stdout.strip())
    with psycopg.connect(pgq_dsn) as conn:
        claimed_at = conn.execute(
            "SELECT heartbeat_at FROM pgq.schedules"
            " WHERE name = 'every-second' AND state = 'firing'"
        ).fetchone()
    assert claimed_at is not None, "the killed scheduler left its claim behind"

    a_consumer_of_the_ticks(pgq_dsn)
    survivor = spawn(pgq_dsn, "schedule_app:worker")
    try:
        wait_for(
            lambda: any(due == orphan_due for due, _ in fired_ticks(pgq_dsn, "tick.every_second")),
            timeout=30,
            what="the orphaned tick to be fired by the survivor",
        )
    finally:
        survivor.send_signal(signal.SIGTERM)
        _, err = survivor.communicate(timeout=30)
    assert survivor.returncode == 0, err
    ticks = dict(fired_ticks(pgq_dsn, "tick.every_second"))
    assert ticks[orphan_due] == 1
    with psycopg.connect(pgq_dsn) as conn:
        enqueued = conn.execute(
            "SELECT min(enqueued_at) FROM pgq.jobs"
            " WHERE (headers ->> 'pgq_due_at')::timestamptz = %s",
            (orphan_due,),
        ).fetchone()
    assert enqueued is not None and enqueued[0] >= claimed_at[0] + timedelta(seconds=2), (
        "the tick was taken over before the killed scheduler's fire_timeout ran out"
    )


async def _fire_through_night(
    dsn: str, expression: str, start: datetime, end: datetime
) -> list[str]:
    """Run a Scheduler through [start, end] on the database's `at` clock; local due times."""
    zone = ZoneInfo("Europe/Berlin")
    spec = ScheduleSpec(CronSchedule(expression, "Europe/Berlin"), "dst.job", "dst")
    scheduler = Scheduler(uuid.uuid4(), [spec])
    fired: list[str] = []
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await scheduler.register(conn, now=start)
        at = start
        while at <= end:
            for row in await scheduler.fire_due(conn, at):
                assert row["state"] == "fired"
                fired.append(row["due_at"].astimezone(zone).isoformat())
            cur = await conn.execute("SELECT next_run_at FROM pgq.schedules WHERE name = 'dst'")
            nxt = (await cur.fetchone())[0]
            at = max(nxt, at + timedelta(seconds=1))
    return fired


def test_dst_fall_back_fires_a_repeated_wall_time_once(pgq_dsn: str) -> None:
    zone = ZoneInfo("Europe/Berlin")
    fired = asyncio.run(
        _fire_through_night(
            pgq_dsn,
            "30 2 * * *",
            datetime(2026, 10, 23, 12, tzinfo=zone),
            datetime(2026, 10, 26, 12, tzinfo=zone),
        )
    )
    assert fired == [
        "2026-10-24T02:30:00+02:00",
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
    ]


def test_dst_spring_forward_fires_a_skipped_wall_time_after_the_gap(pgq_dsn: str) -> None:
    zone = ZoneInfo("Europe/Berlin")
    fired = asyncio.run(
        _fire_through_night(
            pgq_dsn,
            "30 2 * * *",
            datetime(2026, 3, 27, 12, tzinfo=zone),
            datetime(2026, 3, 30, 12, tzinfo=zone),
        )
    )
    assert fired == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]


def _function_calls(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT funcname, calls FROM pg_stat_user_functions"
            " WHERE schemaname = 'pgq' AND calls > 0"
        ).fetchall()
    return {r[0]: r[1] for r in rows}


async def _run_until_claims(
    worker: ThinWorker, dsn: str, claims: int, also: tuple[str, ...] = ()
) -> dict[str, int]:
    """Run the worker until the statistics show ``claims`` claim calls (and a call of each
    function in ``also``: statistics are flushed between statements, so wait for all)."""
    task = asyncio.create_task(worker.arun(install_signal_handlers=False))

    def seen() -> dict[str, int] | None:
        c = _function_calls(dsn)
        return c if c.get("claim", 0) >= claims and all(c.get(f, 0) for f in also) else None

    try:
        return await await_for(
            lambda: asyncio.to_thread(seen), timeout=30, what=f"{claims} claims and {also}"
        )
    finally:
        worker.stop()
        await task


@pytest.fixture
def tracked_dsn(pgq_dsn: str) -> str:
    """The test database with function call counting on for every new session."""
    dbname = psycopg.conninfo.conninfo_to_dict(pgq_dsn)["dbname"]
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE \"{dbname}\" SET track_functions = 'all'")
    return pgq_dsn


def test_idle_worker_with_no_schedules_in_the_database_looks_rarely(tracked_dsn: str) -> None:
    """Every worker runs the scheduler loop, but with no schedule at all it sleeps (up to a
    minute, or until a ``schedules`` notification): a look at start, not one per poll."""
    worker = ThinWorker(tracked_dsn, poll_interval=0.05)

    @worker.entrypoint("idle.job")
    async def handler(job: Any) -> None:  # pragma: no cover - never called
        raise AssertionError("no job was enqueued")

    calls = asyncio.run(
        _run_until_claims(
            worker, tracked_dsn, claims=20, also=("claim_schedules", "next_schedule_at")
        )
    )
    assert calls["claim"] >= 20
    # one look at start, and one more if the listener connected during it
    assert calls["claim_schedules"] <= 2 and calls["next_schedule_at"] <= 2, calls
    assert {"schedule", "fire_schedule"}.isdisjoint(calls), calls


def test_idle_worker_that_fires_no_schedules_sends_no_schedule_queries(
    tracked_dsn: str,
) -> None:
    worker = ThinWorker(tracked_dsn, poll_interval=0.05, run_schedules=False)

    @worker.entrypoint("idle.job")
    async def handler(job: Any) -> None:  # pragma: no cover - never called
        raise AssertionError("no job was enqueued")

    calls = asyncio.run(_run_until_claims(worker, tracked_dsn, claims=10))
    assert calls["claim"] >= 10
    schedule_functions = {"schedule", "claim_schedules", "fire_schedule", "next_schedule_at"}
    assert schedule_functions.isdisjoint(calls), calls


def test_a_worker_without_schedules_fires_one_added_through_sql(tracked_dsn: str) -> None:
    """No ``@worker.schedule`` anywhere: a schedule added with plain SQL fires, also while the
    worker's scheduler loop sleeps its longest (no schedules existed: the ``schedules``
    notification wakes it)."""
    dsn = tracked_dsn
    worker = ThinWorker(dsn, poll_interval=0.5)
    ran: list[int] = []

    @worker.entrypoint("sql.tick")
    async def tick(job: Any) -> None:
        ran.append(job.id)

    async def main() -> None:
        task = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            await await_for(
                lambda: asyncio.to_thread(
                    lambda: worker.listening and _function_calls(dsn).get("next_schedule_at")
                ),
                20,
                "the scheduler asleep (it asked when the next schedule is due: none)",
            )
            assert worker.scheduling
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(
                    "SELECT pgq.schedule('sql-tick', 'sql.tick', '* * * * * *',"
                    " now() + interval '1 second', 'UTC')"
                )
            await await_for(lambda: asyncio.sleep(0, len(ran) >= 2), 15, "two ticks run")
        finally:
            worker.stop()
            await task

    asyncio.run(main())
    assert not worker.scheduling  # stopped
    assert len(fired_ticks(dsn, "sql.tick")) >= 2


def test_a_worker_may_opt_out_of_firing_schedules(pgq_dsn: str) -> None:
    """``run_schedules=False`` (``pgq-thin run --no-schedules``): no scheduler loop; the
    worker's own schedules are still registered, for other workers to fire."""
    worker = ThinWorker(pgq_dsn, poll_interval=0.2, run_schedules=False)
    worker.schedule("0 0 1 1 *", "yearly.job")(lambda job: None)

    async def main() -> bool:
        task = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            await await_for(
                lambda: asyncio.to_thread(lambda: "yearly.job" in _schedule_names(pgq_dsn)),
                20,
                "the worker's schedule registered",
            )
            return worker.scheduling
        finally:
            worker.stop()
            await task

    assert asyncio.run(main()) is False

    from pgq_thin.cli import build_parser
    from pgq_thin.cli.run import configure_worker

    cli_worker = ThinWorker("postgresql://unused")
    args = build_parser().parse_args(["run", "app:worker", "--no-schedules"])
    configure_worker(cli_worker, args)
    assert cli_worker.run_schedules is False and cli_worker.settings.run_schedules is False
    assert ThinWorker("postgresql://unused").run_schedules is True


def _schedule_names(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM pgq.schedules").fetchall()}


def test_a_worker_with_a_schedule_does_query_schedules(tracked_dsn: str) -> None:
    """The control for the test above: the counters do see the scheduler when there is one."""
    worker = ThinWorker(tracked_dsn, poll_interval=0.05)
    worker.schedule("0 0 1 1 *", "yearly.job")

    @worker.entrypoint("idle.job")
    async def handler(job: Any) -> None:  # pragma: no cover - never called
        raise AssertionError("no job was enqueued")

    calls = asyncio.run(
        _run_until_claims(worker, tracked_dsn, claims=10, also=("schedule", "next_schedule_at"))
    )
    assert calls["schedule"] >= 1
    assert calls["next_schedule_at"] >= 1


def test_bad_cron_and_time_zone_are_refused_at_registration() -> None:
    worker = ThinWorker("postgresql://unused")
    with pytest.raises(InvalidSchedule, match="invalid cron expression"):
        worker.schedule("61 * * * *", "x")
    with pytest.raises(InvalidSchedule, match="unknown time zone"):
        worker.schedule("* * * * *", "x", timezone="Mars/Olympus")
    with pytest.raises(InvalidSchedule, match="catch_up"):
        worker.schedule("* * * * *", "x", catch_up="sometimes")
    worker.schedule("* * * * *", "x")
    with pytest.raises(ValueError, match="already registered"):
        worker.schedule("*/5 * * * *", "x")
    assert [s.name for s in worker.schedules] == ["x"]


def test_missed_ticks_after_downtime_fire_once(pgq_dsn: str) -> None:
    """Down for 3 hours: catch_up once fires one job, then the schedule moves on from now."""

    async def scenario() -> list[Any]:
        start = datetime(2030, 1, 1, 0, 0, tzinfo=UTC)
        spec = ScheduleSpec(CronSchedule("0 * * * *"), "hourly.job", "hourly")
        scheduler = Scheduler(uuid.uuid4(), [spec])
        async with await psycopg.AsyncConnection.connect(pgq_dsn, autocommit=True) as conn:
            await scheduler.register(conn, now=start)
            first = await scheduler.fire_due(conn, start + timedelta(hours=3, minutes=10))
            again = await scheduler.fire_due(conn, start + timedelta(hours=3, minutes=11))
            cur = await conn.execute("SELECT next_run_at FROM pgq.schedules")
            return [first, again, (await cur.fetchone())[0]]

    first, again, next_run = asyncio.run(scenario())
    assert [(r["state"], r["due_at"].hour) for r in first] == [("fired", 1)]
    assert again == []
    assert next_run == datetime(2030, 1, 1, 4, 0, tzinfo=UTC)


def test_misfire_grace_and_fire_timeout_reach_the_schedule_row(pgq_dsn: str) -> None:
    spec = ScheduleSpec(
        CronSchedule("*/5 * * * *"),
        "tuned.job",
        "tuned",
        misfire_grace=timedelta(seconds=5),
        fire_timeout=timedelta(seconds=2),
    )
    plain = ScheduleSpec(CronSchedule("*/5 * * * *"), "tuned.job", "tuned")

    async def register(s: ScheduleSpec) -> tuple[Any, ...]:
        async with await psycopg.AsyncConnection.connect(pgq_dsn, autocommit=True) as conn:
            await Scheduler(uuid.uuid4(), [s]).register(conn)
            cur = await conn.execute("SELECT misfire_grace, fire_timeout FROM pgq.schedules")
            row = await cur.fetchone()
            assert row is not None
            return tuple(row)

    assert asyncio.run(register(spec)) == (timedelta(seconds=5), timedelta(seconds=2))
    # Registering again without them keeps the stored values.
    assert asyncio.run(register(plain)) == (timedelta(seconds=5), timedelta(seconds=2))
