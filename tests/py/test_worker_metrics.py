"""A worker's own Prometheus metrics, scraped over real HTTP and checked against what ran."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers.wait import await_for
from prometheus_client.parser import text_string_to_metric_families

from pgq_thin.admin import Admin
from pgq_thin.job import CancelJob, Job
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

APP_DIR = Path(__file__).resolve().parent
RUN = [sys.executable, "-m", "pgq_thin", "run"]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(address: tuple[str, int] | None) -> Samples:
    """Every sample of the endpoint, by name and labels (sorted)."""
    assert address is not None
    host, port = address
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def ascrape(worker: ThinWorker) -> Samples:
    return await asyncio.to_thread(scrape, worker.metrics_address)


def job_count(samples: Samples, entrypoint: str, outcome: str) -> float:
    key = ("pgq_worker_jobs_total", (("entrypoint", entrypoint), ("outcome", outcome)))
    return samples.get(key, 0.0)


def handled(samples: Samples, entrypoint: str) -> float:
    key = ("pgq_worker_handler_duration_seconds_count", (("entrypoint", entrypoint),))
    return samples.get(key, 0.0)


def make_worker(dsn: str, **settings: Any) -> ThinWorker:
    worker = ThinWorker(dsn, metrics_port=0, poll_interval=0.5, **settings)

    @worker.entrypoint("m.ok")
    async def ok(job: Job[Any]) -> None:
        pass

    @worker.entrypoint("m.sync")
    def sync(job: Job[Any]) -> None:
        pass

    @worker.entrypoint("m.fail")
    async def fail(job: Job[Any]) -> None:
        raise ValueError("no")

    @worker.entrypoint("m.cancel")
    async def cancel(job: Job[Any]) -> None:
        raise CancelJob("no need")

    return worker


def test_metrics_count_what_ran(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure("m.fail", max_attempts=1)
        q.enqueue_many("m.ok", [{"i": i} for i in range(7)])
        q.enqueue_many("m.sync", [{"i": i} for i in range(3)])
        q.enqueue_many("m.fail", [{"i": i} for i in range(2)])
        q.enqueue("m.cancel", {})
    worker = make_worker(pgq_dsn)
    release = asyncio.Event()
    inside: list[int] = []

    @worker.entrypoint("m.block")
    async def block(job: Job[Any]) -> None:
        inside.append(job.id)
        await release.wait()

    async def main() -> tuple[Samples, Samples]:
        task = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            await await_for(
                lambda: asyncio.sleep(0, worker.stats.finished == 13), 20, "13 jobs written"
            )
            with Queue(pgq_dsn) as q:
                q.enqueue_many("m.block", [None, None])
            await await_for(lambda: asyncio.sleep(0, len(inside) == 2), 20, "two jobs blocking")
            during = await ascrape(worker)
            release.set()
            await await_for(lambda: asyncio.sleep(0, worker.stats.finished == 15), 20, "15 jobs")
            return during, await ascrape(worker)
        finally:
            worker.stop()
            await task

    during, after = asyncio.run(main())
    assert during[("pgq_worker_jobs_in_flight", ())] == 2
    assert after[("pgq_worker_jobs_in_flight", ())] == 0
    expected = {
        ("m.ok", "successful"): 7,
        ("m.sync", "successful"): 3,
        ("m.fail", "failed"): 2,
        ("m.cancel", "canceled"): 1,
        ("m.block", "successful"): 2,
    }
    for (entrypoint, outcome), n in expected.items():
        assert job_count(after, entrypoint, outcome) == n, (entrypoint, outcome)
    jobs = {k: v for k, v in after.items() if k[0] == "pgq_worker_jobs_total"}
    assert sum(jobs.values()) == 15  # nothing else counted
    for entrypoint, n in {"m.ok": 7, "m.sync": 3, "m.fail": 2, "m.cancel": 1}.items():
        assert handled(after, entrypoint) == n, entrypoint
    assert after[("pgq_worker_claimed_jobs_total", ())] == 15
    assert after[("pgq_worker_claim_duration_seconds_count", ())] >= 2
    assert after[("pgq_worker_complete_duration_seconds_count", ())] >= 1
    assert after[("pgq_worker_claim_duration_seconds_sum", ())] > 0
    assert after[("pgq_worker_reconnects_total", (("connection", "session"),))] == 0
    assert after[("pgq_worker_restarts_total", ())] == 0
    info = [k for k in after if k[0] == "pgq_worker_info"]
    assert info and ("worker_id", str(worker.worker_id)) in info[0][1]
    # The endpoint is gone once the worker stopped.
    assert worker.metrics_address is None


def test_reconnects_are_counted(pgq_dsn: str) -> None:
    worker = make_worker(pgq_dsn)

    async def main() -> Samples:
        task = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            await await_for(lambda: asyncio.sleep(0, worker.listening), 20, "the listener")
            pid = worker.backend_pids["session"]
            with psycopg.connect(pgq_dsn, autocommit=True) as conn:
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
            with Queue(pgq_dsn) as q:
                q.enqueue("m.ok", None)  # the next claim meets the broken connection
            await await_for(
                lambda: asyncio.sleep(0, worker.stats.reconnects == 1), 20, "a reconnect"
            )
            await await_for(lambda: asyncio.sleep(0, worker.stats.successful == 1), 20, "the job")
            return await ascrape(worker)
        finally:
            worker.stop()
            await task

    samples = asyncio.run(main())
    assert samples[("pgq_worker_reconnects_total", (("connection", "session"),))] == 1
    assert job_count(samples, "m.ok", "successful") == 1


def test_two_workers_in_one_process_keep_their_own_metrics(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as q:
        q.enqueue_many("m.ok", [None] * 4)
        q.enqueue_many("m.sync", [None] * 6)
    first, second = make_worker(pgq_dsn), make_worker(pgq_dsn)
    first.restrict(["m.ok"])
    second.restrict(["m.sync"])

    async def main() -> tuple[Samples, Samples]:
        tasks = [
            asyncio.create_task(w.arun(install_signal_handlers=False)) for w in (first, second)
        ]
        try:
            await await_for(
                lambda: asyncio.sleep(0, (first.stats.finished, second.stats.finished) == (4, 6)),
                20,
                "both workers' jobs",
            )
            assert first.metrics_address != second.metrics_address
            return await ascrape(first), await ascrape(second)
        finally:
            first.stop()
            second.stop()
            await asyncio.gather(*tasks)

    a, b = asyncio.run(main())
    assert (job_count(a, "m.ok", "successful"), job_count(a, "m.sync", "successful")) == (4, 0)
    assert (job_count(b, "m.ok", "successful"), job_count(b, "m.sync", "successful")) == (0, 6)
    assert first.metrics_registry is not second.metrics_registry


def test_without_metrics_port_nothing_is_served(pgq_dsn: str) -> None:
    worker = ThinWorker(pgq_dsn)
    assert worker.metrics_registry is None and worker.metrics_address is None


def test_a_port_in_use_is_one_clear_error(pgq_dsn: str) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [*RUN, "observe_app:worker", "--dsn", pgq_dsn, "--drain", "--metrics-port", str(port)],
            cwd=APP_DIR,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"pgq-thin run: cannot serve metrics on 127.0.0.1:{port}: Address already in use"
    ]


WITHOUT_PROMETHEUS = """
import sys
sys.modules["prometheus_client"] = None  # import prometheus_client now fails, as when absent
from pgq_thin.errors import ExtraNotInstalled
from pgq_thin.worker import ThinWorker

ThinWorker()  # no metrics asked for: fine
try:
    ThinWorker(metrics_port=9100)
except ExtraNotInstalled as err:
    print(err)
else:
    raise AssertionError("metrics_port was accepted without prometheus_client")
from pgq_thin.cli import main
sys.exit(main(["run", "observe_app:worker", "--metrics-port", "9100", "--dsn", {dsn!r}]))
"""


def test_without_the_extra_asking_for_a_port_names_it(pgq_dsn: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_PROMETHEUS.format(dsn=pgq_dsn)],
        cwd=APP_DIR,
        env={**os.environ, "PYTHONPATH": str(APP_DIR)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    fix = "pip install 'pgq-thin[metrics]'"
    assert proc.stdout.strip() == (
        f"metrics_port needs prometheus_client, which is not installed: {fix}"
    )
    assert proc.stderr.strip() == (
        f"pgq-thin run: metrics_port needs prometheus_client, which is not installed: {fix}"
    )


@pytest.mark.parametrize("port", ["-1", "70000"])
def test_a_bad_metrics_port_is_a_usage_error(port: str) -> None:
    proc = subprocess.run(
        [*RUN, "observe_app:worker", "--metrics-port", port],
        cwd=APP_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"pgq-thin run: --metrics-port must be a port number, got {port}"
