"""Every connection of the client says who it is (``application_name``), and a name the user
put in the DSN wins."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers.wait import await_for, wait_for
from psycopg.conninfo import make_conninfo

from pgq_thin.admin import Admin, AsyncAdmin
from pgq_thin.job import Job
from pgq_thin.queue import AsyncQueue, Queue
from pgq_thin.worker import ThinWorker

APP_DIR = Path(__file__).resolve().parent


def names_of(dsn: str, pids: list[int]) -> dict[int, str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT pid, application_name FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)
        ).fetchall()
    return {int(pid): str(name) for pid, name in rows}


def shown(conn: psycopg.Connection[Any]) -> str:
    row = conn.execute("SHOW application_name").fetchone()
    assert row is not None
    return str(row[0])


def test_worker_session_and_listener_are_named_after_the_worker(pgq_dsn: str) -> None:
    worker = ThinWorker(pgq_dsn, worker_id="1a2b3c4d-0000-4000-8000-000000000000")

    @worker.entrypoint("an.noop")
    async def noop(job: Job[Any]) -> None:
        pass

    async def main() -> dict[int, str]:
        task = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            await await_for(lambda: asyncio.sleep(0, worker.listening), 10, "the listener")
            pids = worker.backend_pids
            assert pids["session"] is not None and pids["listener"] is not None
            names = names_of(pgq_dsn, [pids["session"], pids["listener"]])
            return {0: names[pids["session"]], 1: names[pids["listener"]]}
        finally:
            worker.stop()
            await task

    names = asyncio.run(main())
    assert names == {0: "pgq-thin worker 1a2b3c4d", 1: "pgq-thin listener 1a2b3c4d"}


def test_queue_and_admin_name_their_connections(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue, Admin(pgq_dsn) as admin:
        assert shown(queue.connection) == "pgq-thin producer"
        assert shown(admin.connection) == "pgq-thin admin"
    with Queue(pgq_dsn, application_name="billing producer") as queue:
        assert shown(queue.connection) == "billing producer"

    async def main() -> tuple[str, str]:
        async with AsyncQueue(pgq_dsn) as aq, AsyncAdmin(pgq_dsn) as aa:
            q = await (await aq.connection()).execute("SHOW application_name")
            a = await (await aa.connection()).execute("SHOW application_name")
            return str((await q.fetchone() or [""])[0]), str((await a.fetchone() or [""])[0])

    assert asyncio.run(main()) == ("pgq-thin producer", "pgq-thin admin")


def test_a_name_in_the_dsn_or_pgappname_wins(pgq_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    named = make_conninfo(pgq_dsn, application_name="my app")
    with Queue(named) as queue:
        assert shown(queue.connection) == "my app"
    worker = ThinWorker(named)

    @worker.entrypoint("an.noop")
    async def noop(job: Job[Any]) -> None:
        pass

    async def session_name() -> str:
        async with worker:
            pid = worker.backend_pids["session"]
            assert pid is not None
            return names_of(pgq_dsn, [pid])[pid]

    assert asyncio.run(session_name()) == "my app"
    monkeypatch.setenv("PGAPPNAME", "from the environment")
    with Admin(pgq_dsn) as admin:
        assert shown(admin.connection) == "from the environment"


def test_cli_commands_are_named_after_the_command(pgq_dsn: str) -> None:
    """``pgq-thin enqueue`` waits on a lock the test holds, so its connection can be seen."""
    with psycopg.connect(pgq_dsn) as holder:
        holder.execute("LOCK TABLE pgq.jobs IN ACCESS EXCLUSIVE MODE")
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgq_thin", "enqueue", "an.cli", "--dsn", pgq_dsn],
            cwd=APP_DIR,
            env={k: v for k, v in os.environ.items() if k != "PGAPPNAME"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(
                lambda: _waiting(pgq_dsn, "pgq-thin enqueue"), 20, "the CLI's named connection"
            )
        finally:
            holder.rollback()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.strip().isdigit()


def _waiting(dsn: str, name: str) -> bool:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
            " AND wait_event_type = 'Lock'",
            (name,),
        ).fetchone()
    return bool(row and row[0])
