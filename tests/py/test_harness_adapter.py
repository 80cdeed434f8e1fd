"""The adapter for the public job-queue benchmark harness (benchmarks/harness/pgq-thin-bench):
it keeps the harness's contract (environment in, JSONL out, harness pacing, a prompt exit), so
its figures mean what the harness's other adapters' figures mean."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = ROOT / "benchmarks" / "harness" / "pgq-thin-bench" / "main.py"
REQUIRED = {
    "claim_p50_ms",
    "claim_p95_ms",
    "claim_p99_ms",
    "enqueue_rate",
    "completion_rate",
    "queue_depth",
}


class Adapter:
    """The adapter as the harness runs it: a process, its stdout read line by line."""

    def __init__(self, dsn: str, **env: str) -> None:
        full = {
            **os.environ,
            "DATABASE_URL": dsn,
            "SAMPLE_EVERY_S": "1",
            "JOB_WORK_MS": "0",
            "PYTHONPATH": str(ROOT),
            **env,
        }
        self.proc = subprocess.Popen(
            [sys.executable, str(ADAPTER)],
            env=full,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def until(self, done: Any, timeout: float = 60) -> list[dict[str, Any]]:
        """Records up to the first for which done(record) holds (bounded wait)."""
        seen, deadline = [], time.monotonic() + timeout
        while True:
            rec = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            seen.append(rec)
            if done(rec):
                return seen

    def stop(self) -> float:
        """SIGTERM; the seconds it took to exit."""
        start = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        return time.monotonic() - start


@pytest.fixture
def adapters(empty_db_dsn: str) -> Iterator[list[Adapter]]:
    started: list[Adapter] = []
    yield started
    for a in started:
        if a.proc.poll() is None:
            a.proc.kill()
            a.proc.wait()


def jobs_seen(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM pgq.jobs) + (SELECT count(*) FROM pgq.job_history)"
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_the_adapter_reports_in_the_harness_contract_and_exits_promptly(
    empty_db_dsn: str, adapters: list[Adapter]
) -> None:
    adapter = Adapter(
        empty_db_dsn, PRODUCER_MODE="depth-target", TARGET_DEPTH="200", WORKER_COUNT="8"
    )
    adapters.append(adapter)
    first = adapter.until(lambda r: r.get("kind") == "descriptor")[-1]
    assert first["system"] == "pgq-thin"
    assert first["db_name"] == psycopg.conninfo.conninfo_to_dict(empty_db_dsn)["dbname"]
    # the harness checks that the tables it was told of (adapter.json) are reported at start
    manifest = json.loads((ADAPTER.parent / "adapter.json").read_text())
    assert manifest["system"] == first["system"]
    assert set(manifest["event_tables"]) <= set(first["event_tables"])
    assert len(set(first["event_tables"])) == len(first["event_tables"])
    samples = adapter.until(
        lambda r: r.get("metric") == "completion_rate" and r["value"] > 0, timeout=90
    )
    samples += adapter.until(lambda r: r.get("metric") == "producer_target_rate")  # tick's end
    metrics = {r["metric"] for r in samples if "metric" in r}
    assert metrics >= REQUIRED
    for rec in samples:
        assert {"t", "system", "kind", "metric", "value", "window_s", "instance_id"} <= set(rec)
        assert rec["t"].endswith("Z") and rec["instance_id"] == 0
    assert adapter.stop() < 5  # the contract: out within 5 s of SIGTERM
    assert adapter.proc.returncode == 0


def test_harness_pacing_enqueues_exactly_the_tokens_sent(
    empty_db_dsn: str, adapters: list[Adapter]
) -> None:
    adapter = Adapter(
        empty_db_dsn,
        PRODUCER_MODE="fixed",
        PRODUCER_PACING="harness",
        PRODUCER_RATE="100000",  # would flood the queue if the adapter paced itself
        PRODUCER_BATCH_MAX="10",
        WORKER_COUNT="4",
    )
    adapters.append(adapter)
    adapter.until(lambda r: r.get("kind") == "descriptor")
    assert adapter.proc.stdin is not None
    for line in ("ENQUEUE 7", "noise", "ENQUEUE 25", "ENQUEUE 0", "ENQUEUE 3"):
        adapter.proc.stdin.write(line + "\n")
    adapter.proc.stdin.flush()
    # 7 + min(25, PRODUCER_BATCH_MAX) + 3 jobs, and no more: wait until they ran, then a sample
    # taken after they ran must say so
    deadline = time.monotonic() + 60
    while jobs_seen(empty_db_dsn) < 20 and time.monotonic() < deadline:
        adapter.until(lambda r: r.get("metric") == "completion_rate")
    adapter.until(lambda r: r.get("metric") == "completion_rate")
    assert jobs_seen(empty_db_dsn) == 20
    adapter.stop()


def test_the_adapter_rides_through_its_connections_being_killed(
    empty_db_dsn: str, adapters: list[Adapter]
) -> None:
    """The harness's chaos cells kill the adapter's backends (pg_terminate_backend): its
    producer, depth poll and worker reconnect, and jobs flow again."""
    adapter = Adapter(
        empty_db_dsn, PRODUCER_MODE="depth-target", TARGET_DEPTH="100", WORKER_COUNT="8"
    )
    adapters.append(adapter)
    adapter.until(lambda r: r.get("metric") == "completion_rate" and r["value"] > 0, timeout=90)
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert killed is not None and killed[0] >= 3  # producer, depth poll, worker's session
    before = jobs_seen(empty_db_dsn)
    # samples after the kill: jobs are enqueued and completed again
    after = adapter.until(lambda r: r.get("metric") == "producer_target_rate")
    rates: dict[str, float] = {}
    deadline = time.monotonic() + 60
    while not (rates.get("enqueue_rate", 0) > 0 and rates.get("completion_rate", 0) > 0):
        assert time.monotonic() < deadline, after
        after = adapter.until(lambda r: r.get("metric") == "producer_target_rate")
        rates = {r["metric"]: r["value"] for r in after if "metric" in r}
    assert jobs_seen(empty_db_dsn) > before
    assert adapter.stop() < 5
    assert adapter.proc.returncode == 0
