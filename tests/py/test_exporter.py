"""``pgq-thin metrics --port N``: the queue's SQL metrics over real HTTP, in Prometheus's text
format, with the numbers that ``pgq.metrics()`` and ``pgq.worker_status`` report."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pgq_thin import Admin, Queue
from pgq_thin.exporter import HELP, QueueCollector

REPO = Path(__file__).resolve().parents[2]
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.fixture
def exporter(pgq_dsn: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgq_thin", "metrics", "--port", "0", "--dsn", pgq_dsn],
        cwd=REPO,
        env={**os.environ, "PGQ_THIN_DATA": "/nonexistent/pgq-thin-test"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until it serves (or exits)
    assert line.startswith("pgq-thin metrics: serving http://127.0.0.1:"), proc.stderr
    url = line.split()[3]
    try:
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def finish(dsn: str, entrypoint: str, statuses: list[str]) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.configure(%s, max_attempts => 1)", (entrypoint,))
        worker = "9a9a0000-0000-4000-8000-000000000001"
        conn.execute(
            "SELECT pgq.register_worker(%s, ARRAY[%s], host => 'exp-host')", (worker, entrypoint)
        )
        claimed = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], %s) ORDER BY id",
            (worker, entrypoint, len(statuses)),
        ).fetchall()
        for (job_id, lease), status in zip(claimed, statuses, strict=True):
            conn.execute(
                "SELECT pgq.complete(%s, ARRAY[%s::bigint], ARRAY[%s::bigint], ARRAY[%s])",
                (worker, job_id, lease, status),
            )


def test_the_exporter_serves_what_sql_reports(
    pgq_dsn: str, exporter: tuple[subprocess.Popen[str], str]
) -> None:
    proc, url = exporter
    with Queue(pgq_dsn) as queue:
        queue.enqueue_many("exp.a", [{} for _ in range(6)])
        queue.enqueue_many("exp.a", [{}, {}], run_ats=3600.0)
        queue.enqueue("exp.b")
    finish(pgq_dsn, "exp.a", ["successful", "successful", "failed", "canceled"])
    with Admin(pgq_dsn) as admin:
        admin.pause("exp.b")
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:  # one job left running
        conn.execute("SELECT pgq.claim('9a9a0000-0000-4000-8000-000000000001', '{exp.a}', 1)")

    got = scrape(url)
    with Admin(pgq_dsn) as admin:  # after the scrape, which advanced the rollup
        sql = {m.entrypoint: m for m in admin.metrics()}
        workers = admin.workers()
    a = sql["exp.a"]
    assert got[("pgq_up", ())] == 1.0
    for state in ("due", "delayed", "running"):
        key = ("pgq_queue_jobs", (("entrypoint", "exp.a"), ("state", state)))
        assert got[key] == getattr(a, state)
    assert (a.due, a.delayed, a.running) == (1, 2, 1)
    assert got[("pgq_queue_stale_jobs", (("entrypoint", "exp.a"),))] == a.stale
    assert got[("pgq_queue_lag_seconds", (("entrypoint", "exp.a"),))] >= 0
    assert got[("pgq_queue_paused", (("entrypoint", "exp.b"),))] == 1.0
    assert got[("pgq_queue_paused", (("entrypoint", "exp.a"),))] == 0.0
    # exp.a has a live registered worker; nobody serves exp.b, whose job is due
    assert (a.served, sql["exp.b"].served) == (True, False)
    assert got[("pgq_queue_served", (("entrypoint", "exp.a"),))] == 1.0
    assert got[("pgq_queue_served", (("entrypoint", "exp.b"),))] == 0.0
    unserved = got[("pgq_queue_unserved_seconds", (("entrypoint", "exp.b"),))]
    assert 0 <= unserved <= sql["exp.b"].unserved_s  # type: ignore[operator]
    assert ("pgq_queue_unserved_seconds", (("entrypoint", "exp.a"),)) not in got
    for status, n in (("successful", 2), ("failed", 1), ("canceled", 1)):
        key = ("pgq_jobs_finished_total", (("entrypoint", "exp.a"), ("status", status)))
        assert got[key] == n == getattr(a, f"{status}_total")
    assert got[("pgq_queue_workers", (("state", "active"),))] == 1.0
    [w] = workers
    key = (
        "pgq_queue_worker_jobs",
        (("host", "exp-host"), ("state", "active"), ("worker_id", str(w.worker_id))),
    )
    assert got[key] == w.running == 1
    assert got[("pgq_metrics_rollup_caught_up", ())] == 1.0
    assert got[("pgq_exporter_scrape_duration_seconds", ())] > 0
    names = {name for name, _ in got}
    assert names <= {"pgq_jobs_finished_total", *HELP}, names

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0


def test_quantiles_are_the_percentile_columns(pgq_dsn: str) -> None:
    """The p50/p95/p99 columns become samples labelled quantile 0.5/0.95/0.99 with the same
    values; a column without samples (NULL until a whole 10-second bucket has some) gives no
    sample. The row is a real one from pgq.metrics, with percentiles filled in."""
    from pgq_thin.exporter import queue_families
    from pgq_thin.records import EntrypointMetrics

    with Admin(pgq_dsn) as admin:
        admin.pause("exp.q")
        [row] = admin.metrics("exp.q")
    assert row.wait_p50_s is None  # no sample: no quantile sample at all
    families = {f.name: f for f in queue_families([row])}
    assert families["pgq_job_wait_seconds"].samples == []
    values = {**vars(row), "wait_p50_s": 0.5, "wait_p95_s": 1.5, "wait_p99_s": 2.5}
    families = {f.name: f for f in queue_families([EntrypointMetrics(**values)])}
    samples = {s.labels["quantile"]: s.value for s in families["pgq_job_wait_seconds"].samples}
    assert samples == {"0.5": 0.5, "0.95": 1.5, "0.99": 2.5}


def test_a_database_that_cannot_be_read_is_pgq_up_0(
    empty_db_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    with Admin(empty_db_dsn) as admin:
        collector = QueueCollector(admin)
        families = list(collector.collect())
    assert [(f.name, [s.value for s in f.samples]) for f in families] == [("pgq_up", [0.0])]
    assert (
        collector.last_error is not None and "schema pgq is not installed" in collector.last_error
    )


def test_the_command_says_what_is_wrong(empty_db_dsn: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pgq_thin", "metrics", "--port", "0", "--dsn", empty_db_dsn],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("pgq-thin metrics: schema pgq is not installed")


def test_the_exporter_serves_what_waits_on_a_limit(
    pgq_dsn: str, exporter: tuple[subprocess.Popen[str], str]
) -> None:
    """Flow control: a used-up rate limit (what is left, how long until the next start) and a
    key limit (keys at it, jobs waiting on them), as pgq.metrics reports them; entrypoints
    without such a limit have no sample."""
    _, url = exporter
    worker = "9a9a0000-0000-4000-8000-000000000002"
    with Admin(pgq_dsn) as admin, Queue(pgq_dsn) as queue:
        admin.configure("exp.rate", rate_limit=2, rate_period=timedelta(hours=1))
        admin.configure("exp.keys", key_concurrency_limit=1)
        queue.enqueue_many("exp.rate", [{}] * 3)
        queue.enqueue_many("exp.keys", [{}] * 3, group_keys=["a", "a", "b"])
        queue.enqueue("exp.free")
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.claim(%s, '{exp.rate,exp.keys}', 10)", (worker,))
    got = scrape(url)
    with Admin(pgq_dsn) as admin:
        sql = {m.entrypoint: m for m in admin.metrics()}
    rate, keys = sql["exp.rate"], sql["exp.keys"]
    assert (rate.rate_remaining, keys.keys_at_limit, keys.key_limited) == (0, 2, 1)
    assert got[("pgq_queue_rate_remaining", (("entrypoint", "exp.rate"),))] == 0.0
    wait = got[("pgq_queue_rate_wait_seconds", (("entrypoint", "exp.rate"),))]
    assert 3500 < wait <= 3600
    assert got[("pgq_queue_keys_at_limit", (("entrypoint", "exp.keys"),))] == 2.0
    assert got[("pgq_queue_key_limited_jobs", (("entrypoint", "exp.keys"),))] == 1.0
    flow = {name for name, labels in got if ("entrypoint", "exp.free") in labels}
    assert flow.isdisjoint({"pgq_queue_rate_remaining", "pgq_queue_keys_at_limit"})
