"""Several processes installing at once: one installs, the others wait on the advisory lock
and then find the work done."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import psycopg
import pytest
from helpers import catalog
from helpers.server import PgServer

from pgq_thin import migrate

PROCESSES = 4
INSTALL = "import sys; from pgq_thin import migrate; print(migrate.upgrade(sys.argv[1]))"


def start_installers(dsn: str, n: int) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            [sys.executable, "-c", INSTALL, dsn],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]


def finish(processes: list[subprocess.Popen[str]]) -> list[str]:
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, f"installer failed:\n{err}"
        outputs.append(out.strip())
    return outputs


def waiting_on_lock(conn: psycopg.Connection[Any]) -> int:
    """Sessions of this database waiting for the migration advisory lock."""
    row = conn.execute(
        "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
        " WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted"
        "   AND ((l.classid::bigint << 32) | l.objid::bigint) = %s",
        (migrate.LOCK_KEY,),
    ).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.slow
def test_installers_queue_on_the_lock_and_all_succeed(
    pg_server: PgServer, template_db: str, empty_db_dsn: str
) -> None:
    """Hold the migration lock, start the installers, see every one of them wait for it,
    release it: one installs, the others find the schema at head, all exit 0."""
    with psycopg.connect(empty_db_dsn, autocommit=True) as gate:
        gate.execute("SELECT pg_advisory_lock(%s)", (migrate.LOCK_KEY,))
        processes = start_installers(empty_db_dsn, PROCESSES)
        try:
            deadline = time.monotonic() + 60
            while waiting_on_lock(gate) < PROCESSES:
                exited = [p.args for p in processes if p.poll() is not None]
                assert not exited, "an installer finished while the lock was held"
                assert time.monotonic() < deadline, "installers never queued on the lock"
                time.sleep(0.05)  # polling a condition, not timing the race
            assert migrate.current(empty_db_dsn) is None  # nobody got past the lock
        finally:
            gate.execute("SELECT pg_advisory_unlock(%s)", (migrate.LOCK_KEY,))
        outputs = finish(processes)
    assert outputs == [migrate.head()] * PROCESSES
    with pg_server.database("ref", template=template_db) as reference:
        expected = catalog.snapshot_of(reference)
    difference = catalog.diff(expected, catalog.snapshot_of(empty_db_dsn), ("template", "raced"))
    assert not difference, difference


@pytest.mark.slow
def test_installers_started_together_all_succeed(empty_db_dsn: str) -> None:
    outputs = finish(start_installers(empty_db_dsn, PROCESSES))
    assert outputs == [migrate.head()] * PROCESSES
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT version_num FROM pgq.alembic_version").fetchall()
    assert rows == [(migrate.head(),)]
