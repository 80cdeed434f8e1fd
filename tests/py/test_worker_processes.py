"""Workers as separate processes (``pgq-thin run``): exactly-once across processes, SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
from helpers.wait import wait_for

from pgq_thin.queue import Queue

APP_DIR = Path(__file__).resolve().parent


def spawn(dsn: str, target: str, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pgq_thin", "run", target, "--dsn", dsn, *args],
        cwd=APP_DIR,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def scalar(dsn: str, query: str) -> Any:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(query).fetchone()
        return None if row is None else row[0]


def test_three_worker_processes_process_1000_jobs_exactly_once(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as q:
        ids = q.enqueue_many("proc.work", [{"sleep": 0.01, "n": i} for i in range(1000)])
    procs = [
        spawn(pgq_dsn, "client_app:worker", "--drain", "--concurrency", "10"),
        spawn(pgq_dsn, "client_app:make_worker", "--drain", "--concurrency", "10"),
        spawn(pgq_dsn, "client_app:lifespan", "--drain", "--concurrency", "10"),
    ]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "Traceback" not in err

    with psycopg.connect(pgq_dsn) as conn:
        rows = conn.execute(
            "SELECT id, status, attempt, worker_id FROM pgq.job_history ORDER BY id"
        ).fetchall()
        assert conn.execute("SELECT count(*) FROM pgq.jobs").fetchone() == (0,)
    assert [r[0] for r in rows] == ids  # every job once, none twice (id is the primary key)
    assert {(r[1], r[2]) for r in rows} == {("successful", 1)}
    # All three processes took part (each had a share of about 1000 x 10 ms / 10 slots).
    assert len({r[3] for r in rows}) == 3


def test_sigterm_finishes_running_jobs_and_leaves_nothing_running(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as q:
        ids = q.enqueue_many("proc.work", [{"sleep": 1.0}] * 10)
    proc = spawn(pgq_dsn, "client_app:worker", "--concurrency", "4")
    try:
        wait_for(
            lambda: scalar(pgq_dsn, "SELECT count(*) FROM pgq.jobs WHERE status = 'running'") == 4,
            15,
            "four running jobs",
        )
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err

    with psycopg.connect(pgq_dsn) as conn:
        done = conn.execute("SELECT id, status, attempt FROM pgq.job_history").fetchall()
        left = conn.execute("SELECT id, status, attempt FROM pgq.jobs").fetchall()
    assert len(done) == 4 and {(s, a) for _, s, a in done} == {("successful", 1)}
    assert len(left) == 6 and {(s, a) for _, s, a in left} == {("queued", 0)}
    assert sorted(i for i, *_ in done + left) == ids


def test_sigterm_past_grace_period_reports_jobs_interrupted_for_immediate_retry(
    pgq_dsn: str,
) -> None:
    with Queue(pgq_dsn) as q:
        q.enqueue_many("proc.work", [{"sleep": 60}] * 2)
        q.enqueue_many("proc.sync_sleep", [{"sleep": 60}] * 2)
    proc = spawn(pgq_dsn, "client_app:worker", "--concurrency", "4", "--grace-period", "0.5")
    try:
        wait_for(
            lambda: scalar(pgq_dsn, "SELECT count(*) FROM pgq.jobs WHERE status = 'running'") == 4,
            15,
            "four running jobs",
        )
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    with psycopg.connect(pgq_dsn) as conn:
        rows = conn.execute(
            "SELECT status, attempt, run_at <= now(), errors -> 0 ->> 'outcome',"
            " errors -> 0 -> 'details' ->> 'error' FROM pgq.jobs"
        ).fetchall()
    # Reported interrupted: SQL put them back in the queue, due at once, the attempt not
    # counted (no retry_after chosen by the worker).
    assert rows and {r for r in rows} == {("queued", 0, True, "interrupted", "WorkerShutdown")}
    assert len(rows) == 4


def test_second_signal_exits_at_once(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as q:
        q.enqueue("proc.work", {"sleep": 60})
    proc = spawn(pgq_dsn, "client_app:worker", "--grace-period", "60")
    try:
        wait_for(
            lambda: scalar(pgq_dsn, "SELECT count(*) FROM pgq.jobs WHERE status = 'running'") == 1,
            15,
            "a running job",
        )
        proc.send_signal(signal.SIGTERM)
        wait_for(lambda: "exit at once" in (proc.stderr.readline() if proc.stderr else ""), 10)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGINT
    # Exited without writing anything: the heartbeat going stale is the safety net.
    assert scalar(pgq_dsn, "SELECT status FROM pgq.jobs") == "running"
