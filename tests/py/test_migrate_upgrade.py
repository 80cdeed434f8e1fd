"""Upgrading from every released revision (sql/migrations/RELEASED) to head with live work.

At the released revision, using that revision's SQL API: jobs queued, delayed, running
(claimed, with leases), running with a stale heartbeat, a cron schedule registered and one of
its ticks claimed (firing, with a lease). Then the upgrade, through ``pgq_thin.migrate.upgrade``
or through the DBA script ``pgq-thin sql --from REV`` applied with psql. Afterwards, with head:

- the catalog equals a fresh install's (``helpers.catalog``, row counts aside);
- the old leases still hold: a heartbeat answers ok, one job is completed with its old lease,
  one is released with it and re-claimed by a worker, the claimed tick is fired with its lease;
- a ThinWorker finishes everything else (the delayed job once due, the stale job by re-claim,
  whose old lease is then fenced out) and the schedule keeps firing;
- every job finished exactly once, with the expected status and attempt.

Written for any released revision and whatever the unreleased migration holds: the seed uses
only calls that 0001 already had.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import catalog
from helpers.server import PgServer
from helpers.wait import wait_for

from pgq_thin import Job, ThinWorker, migrate
from scripts import new_migration

RELEASED = [entry.revision for entry in new_migration.released()]
OLD_WORKER = uuid.UUID("0ff1ce00-0000-4000-8000-000000000001")
SCHEDULE = "up.every-second"
CRON = "* * * * * *"


@pytest.fixture(scope="module")
def fresh_catalog(pg_server: PgServer, template_db: str) -> dict[str, list[str]]:
    with pg_server.database("upref", template=template_db) as dsn:
        snapshot = catalog.snapshot_of(dsn)
    snapshot.pop("row_counts")
    return snapshot


def scalar(conn: psycopg.Connection[Any], query: str, *args: Any) -> Any:
    row = conn.execute(query, args).fetchone()
    assert row is not None, query
    return row[0]


def column(conn: psycopg.Connection[Any], query: str, *args: Any) -> list[Any]:
    return [row[0] for row in conn.execute(query, args).fetchall()]


def seed(dsn: str) -> dict[str, Any]:
    """Live work at the installed (old) revision, through its SQL API (as of 0001)."""
    w = OLD_WORKER
    with psycopg.connect(dsn, autocommit=True) as conn:
        queued = column(conn, "SELECT * FROM pgq.enqueue_many(ARRAY['up.q', 'up.q', 'up.q'])")
        delayed = scalar(conn, "SELECT pgq.enqueue('up.d', run_at => now() + interval '2 seconds')")
        running = column(conn, "SELECT * FROM pgq.enqueue_many(ARRAY['up.r', 'up.r'])")
        claimed = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY['up.r'], 2)", (w,)
        ).fetchall()
        leases = dict(claimed)
        assert sorted(leases) == sorted(running)
        # Claimed an hour ago and silent since: stale, re-claimed by the next worker.
        stale = scalar(conn, "SELECT pgq.enqueue('up.stale', run_at => now() - interval '2 hours')")
        stale_lease = scalar(
            conn,
            "SELECT lease FROM pgq.claim(%s, ARRAY['up.stale'], 1, now() - interval '1 hour')",
            w,
        )
        conn.execute(
            "SELECT pgq.schedule(%s, 'up.s', %s, now() - interval '1 second')", (SCHEDULE, CRON)
        )
        tick = conn.execute(
            "SELECT name, lease, due_at FROM pgq.claim_schedules(%s)", (w,)
        ).fetchall()
        assert [t[0] for t in tick] == [SCHEDULE]
        state = column(conn, "SELECT status FROM pgq.jobs ORDER BY id")
        assert sorted(state) == ["queued"] * 4 + ["running"] * 3
    return {
        "queued": queued,
        "delayed": delayed,
        "completed_with_lease": running[0],
        "released": running[1],
        "leases": leases,
        "stale": stale,
        "stale_lease": stale_lease,
        "tick": tick[0],
    }


def upgrade_with_migrate(pg_server: PgServer, dsn: str, revision: str, folder: Path) -> None:
    assert migrate.upgrade(dsn) == migrate.head()


def upgrade_with_script(pg_server: PgServer, dsn: str, revision: str, folder: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pgq_thin", "sql", "--from", revision],
        capture_output=True,
        text=True,
        check=True,
    )
    script = folder / f"upgrade-from-{revision}.sql"
    script.write_text(result.stdout)
    applied = pg_server.psql(dsn, "-q", "-f", str(script), check=False)
    assert applied.returncode == 0, applied.stderr
    assert migrate.current(dsn) == migrate.head()


UPGRADES = {"migrate.upgrade": upgrade_with_migrate, "pgq-thin sql --from": upgrade_with_script}


@contextmanager
def worker_running(worker: ThinWorker) -> Iterator[None]:
    """Run the worker on its own event loop in a thread; stop it gracefully afterwards."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(worker.arun(install_signal_handlers=False))
        except BaseException as err:  # reported by the test thread
            errors.append(err)

    thread = threading.Thread(target=run, name="upgrade-test-worker")
    thread.start()
    try:
        yield
    finally:
        worker.stop()
        thread.join(60)
        assert not thread.is_alive(), "the worker did not stop within 60 s"
    assert not errors, f"the worker failed: {errors[0]!r}"


def history(dsn: str) -> dict[int, tuple[str, str, int]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT id, entrypoint, status, attempt FROM pgq.job_history")
        return {int(r[0]): (str(r[1]), str(r[2]), int(r[3])) for r in rows.fetchall()}


@pytest.mark.slow
@pytest.mark.parametrize("how", list(UPGRADES))
@pytest.mark.parametrize("revision", RELEASED)
def test_upgrade_with_live_jobs_and_schedules(
    pg_server: PgServer,
    empty_db_dsn: str,
    fresh_catalog: dict[str, list[str]],
    revision: str,
    how: str,
    tmp_path: Path,
) -> None:
    dsn = empty_db_dsn
    assert migrate.upgrade(dsn, revision) == revision
    seeded = seed(dsn)

    UPGRADES[how](pg_server, dsn, revision, tmp_path)

    after = catalog.snapshot_of(dsn)
    after.pop("row_counts")
    difference = catalog.diff(fresh_catalog, after, ("fresh install", f"upgraded from {revision}"))
    assert not difference, "the upgraded catalog differs from a fresh install:\n" + difference

    w = OLD_WORKER
    done, released = seeded["completed_with_lease"], seeded["released"]
    leases = seeded["leases"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        beats = conn.execute(
            "SELECT * FROM pgq.heartbeat(%s, %s, %s)",
            (w, [done, released], [leases[done], leases[released]]),
        ).fetchall()
        assert [(int(r[0]), str(r[1])) for r in beats] == [(done, "ok"), (released, "ok")]
        assert column(
            conn,
            "SELECT id FROM pgq.complete(%s, %s, %s, %s)",
            w,
            [done],
            [leases[done]],
            ["successful"],
        ) == [done]
        assert column(
            conn, "SELECT * FROM pgq.release(%s, %s, %s)", w, [released], [leases[released]]
        ) == [released]
        name, lease, due_at = seeded["tick"]
        next_tick = due_at.replace(microsecond=0) + timedelta(seconds=1)  # cron: every second
        fired = conn.execute(
            "SELECT * FROM pgq.fire_schedule(%s, %s, %s, %s, %s)",
            (w, name, lease, next_tick, next_tick),
        ).fetchone()
        assert fired is not None and fired[0] == "fired", fired
        tick_job = int(fired[1])

    runs: Counter[int] = Counter()
    ticks: list[int] = []
    worker = ThinWorker(dsn, poll_interval=0.5, maintain_interval=None, history_retention=None)

    @worker.entrypoint("up.q")
    @worker.entrypoint("up.d")
    @worker.entrypoint("up.r")
    @worker.entrypoint("up.stale")
    async def handle(job: Job[Any]) -> None:
        runs[job.id] += 1

    @worker.schedule(CRON, "up.s", name=SCHEDULE)
    async def tick(job: Job[Any]) -> None:
        runs[job.id] += 1
        ticks.append(job.id)

    by_worker = [*seeded["queued"], seeded["delayed"], released, seeded["stale"], tick_job]
    with worker_running(worker):
        wait_for(
            lambda: set(by_worker) <= set(history(dsn)) and len(ticks) >= 2,
            30,
            "every seeded job finished and the schedule firing again",
        )
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert (
            column(
                conn,
                "SELECT id FROM pgq.complete(%s, %s, %s, %s)",
                w,
                [seeded["stale"]],
                [seeded["stale_lease"]],
                ["successful"],
            )
            == []
        ), "the stale job's old lease must be fenced out after its re-claim"
        left = column(conn, "SELECT id FROM pgq.jobs WHERE entrypoint <> 'up.s'")
    assert left == []

    finished = history(dsn)
    expected = {
        **{job: ("up.q", "successful", 1) for job in seeded["queued"]},
        seeded["delayed"]: ("up.d", "successful", 1),
        done: ("up.r", "successful", 1),
        released: ("up.r", "successful", 1),  # a release does not count an attempt
        seeded["stale"]: ("up.stale", "successful", 2),  # the stale claim was attempt 1
        tick_job: ("up.s", "successful", 1),
    }
    assert {job: finished.get(job) for job in expected} == expected
    assert {job: runs[job] for job in by_worker} == dict.fromkeys(by_worker, 1)
    assert runs[done] == 0, "the job completed with its old lease must not run again"
    assert max(runs.values()) == 1, f"a job ran twice: {runs}"
    assert tick_job in ticks and len(ticks) >= 2


def test_upgrade_stops_on_live_names_the_one_name_rule_refuses(empty_db_dsn: str) -> None:
    """0.1.0 accepted entrypoint names with commas and braces; head's name rule (pgq._valid_name,
    also a CHECK constraint) refuses them. Live jobs with such a name stop the upgrade, naming
    them, and leave the database at the released revision (nothing half done)."""
    dsn = empty_db_dsn
    first = RELEASED[0]
    assert migrate.upgrade(dsn, first) == first
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.enqueue('reports,daily')")
        conn.execute("SELECT pgq.enqueue('fine.name')")
    with pytest.raises(psycopg.errors.RaiseException, match=r"'reports,daily'") as raised:
        migrate.upgrade(dsn)
    assert "fine.name" not in str(raised.value)
    assert migrate.current(dsn) == first
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM pgq.jobs WHERE entrypoint = 'reports,daily'")
    assert migrate.upgrade(dsn) == migrate.head()
