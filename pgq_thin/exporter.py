"""The queue's SQL metrics as Prometheus metrics, for a whole database (``pgq-thin metrics``).

One exporter per database (not per worker): at each scrape, :class:`QueueCollector` reads
``pgq.metrics()`` and ``pgq.worker_status`` through the admin API and turns every row into
gauges and counters; nothing is counted or kept in Python, so two exporters, ``psql`` and the
dashboards show the same numbers. A worker's own process metrics (handler durations, round
trips) are the worker's (``ThinWorker(metrics_port=...)``, names ``pgq_worker_*``).

Needs ``prometheus_client`` (the extra ``metrics``). Embed the collector in an application's
own registry, or serve it with :func:`serve`::

    registry = CollectorRegistry()
    registry.register(QueueCollector(Admin(dsn)))
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pgq_thin.admin import Admin
from pgq_thin.errors import PgqThinError, one_line
from pgq_thin.records import EntrypointMetrics, WorkerStatus

__all__ = ["HELP", "QueueCollector", "serve"]

#: Every metric the exporter serves, with its help text (docs/operations.md lists them).
HELP = {
    "pgq_up": "1 when the last scrape read the database, else 0 (and no other pgq_ metric)",
    "pgq_queue_jobs": "Live jobs by entrypoint and state: due (queued and due), delayed (queued, "
    "not due yet: delayed or waiting for a retry), running (stale ones included)",
    "pgq_queue_stale_jobs": "Running jobs whose heartbeat is older than the entrypoint's "
    "heartbeat_timeout",
    "pgq_queue_lag_seconds": "Age of the oldest due job since it became due (0: none is due)",
    "pgq_queue_paused": "1 when the entrypoint is paused (pgq.pause)",
    "pgq_queue_served": "1 when a live worker serves the entrypoint (a registered worker that "
    "announced it, or a running job with a fresh heartbeat), else 0",
    "pgq_queue_unserved_seconds": "How long due jobs have waited with no live worker serving "
    "the entrypoint (only for entrypoints with due jobs and no live worker)",
    "pgq_queue_rate_remaining": "Starts a whole-entrypoint rate limit has left in its window "
    "(only for entrypoints with one)",
    "pgq_queue_rate_wait_seconds": "Seconds until a used-up rate limit lets one more job start "
    "(only while it is used up: its due jobs wait on the limit, not on a worker)",
    "pgq_queue_rate_keys_used_up": "Group keys whose rate budget is used up (rate_per_key)",
    "pgq_queue_keys_at_limit": "Group keys whose running jobs are at key_concurrency_limit",
    "pgq_queue_key_limited_jobs": "Queued jobs of keys at their key_concurrency_limit (waiting on "
    "the key's limit; exact up to 10,000)",
    "pgq_jobs_finished": "Jobs finished by entrypoint and final status (failed: dead, attempts "
    "used up) since the metrics rollup started",
    "pgq_job_wait_seconds": "Wait time (enqueue to start of the last attempt) quantiles over the "
    "last 5 minutes, by entrypoint",
    "pgq_job_run_seconds": "Run time (start to finish of the last attempt) quantiles over the "
    "last 5 minutes, by entrypoint",
    "pgq_queue_workers": "Workers in the registry by state (active, gone, unregistered)",
    "pgq_queue_worker_jobs": "Running jobs held by each worker in the registry",
    "pgq_metrics_rollup_caught_up": "1 when the rollup had counted every finished job when it "
    "last ran (0: behind, or held back by a long transaction)",
    "pgq_exporter_scrape_duration_seconds": "Time the last scrape took to read the database",
}
QUANTILES = (("0.5", "p50"), ("0.95", "p95"), ("0.99", "p99"))
#: Flow control: each gauge and its pgq.metrics column (only entrypoints with such a limit).
FLOW = (
    ("pgq_queue_rate_remaining", "rate_remaining"),
    ("pgq_queue_rate_wait_seconds", "rate_wait_s"),
    ("pgq_queue_rate_keys_used_up", "rate_keys_used_up"),
    ("pgq_queue_keys_at_limit", "keys_at_limit"),
    ("pgq_queue_key_limited_jobs", "key_limited"),
)

log = logging.getLogger(__name__)


class QueueCollector:
    """A Prometheus collector reading the queue at each scrape (one scrape at a time)."""

    def __init__(self, admin: Admin) -> None:
        self.admin = admin
        self._lock = threading.Lock()
        #: The last scrape's error (None when it read the database).
        self.last_error: str | None = None

    def describe(self) -> list[Metric]:
        return []  # no fixed set: families come and go with entrypoints

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            began = time.monotonic()
            try:
                rows = self.admin.metrics()
                workers = self.admin.workers()
            except Exception as err:  # a scrape reports the database down, never crashes
                self.last_error = one_line(err)
                log.warning("pgq-thin metrics: the scrape could not read the database: %s", err)
                yield _gauge("pgq_up", [], [((), 0.0)])
                return
            self.last_error = None
            took = time.monotonic() - began
        yield _gauge("pgq_up", [], [((), 1.0)])
        yield from queue_families(rows)
        yield from worker_families(workers)
        caught_up = all(r.rollup_caught_up for r in rows)
        yield _gauge("pgq_metrics_rollup_caught_up", [], [((), float(caught_up))])
        yield _gauge("pgq_exporter_scrape_duration_seconds", [], [((), took)])


def _gauge(
    name: str, labels: list[str], samples: list[tuple[tuple[str, ...], float]]
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, HELP[name], labels=labels)
    for values, value in samples:
        family.add_metric(list(values), value)
    return family


def queue_families(rows: list[EntrypointMetrics]) -> Iterator[Metric]:
    """The families of ``pgq.metrics()`` rows (one sample per entrypoint and label)."""
    yield _gauge(
        "pgq_queue_jobs",
        ["entrypoint", "state"],
        [
            ((r.entrypoint, state), float(getattr(r, state)))
            for r in rows
            for state in ("due", "delayed", "running")
        ],
    )
    yield _gauge("pgq_queue_stale_jobs", ["entrypoint"], [((r.entrypoint,), r.stale) for r in rows])
    yield _gauge(
        "pgq_queue_lag_seconds", ["entrypoint"], [((r.entrypoint,), r.lag_s) for r in rows]
    )
    yield _gauge(
        "pgq_queue_paused", ["entrypoint"], [((r.entrypoint,), float(r.paused)) for r in rows]
    )
    yield _gauge(
        "pgq_queue_served", ["entrypoint"], [((r.entrypoint,), float(r.served)) for r in rows]
    )
    yield _gauge(
        "pgq_queue_unserved_seconds",
        ["entrypoint"],
        [((r.entrypoint,), r.unserved_s) for r in rows if r.unserved_s is not None],
    )
    for name, column in FLOW:
        yield _gauge(
            name,
            ["entrypoint"],
            [
                ((r.entrypoint,), float(value))
                for r in rows
                if (value := getattr(r, column)) is not None
            ],
        )
    finished = CounterMetricFamily(
        "pgq_jobs_finished", HELP["pgq_jobs_finished"], labels=["entrypoint", "status"]
    )
    for r in rows:
        for status in ("successful", "failed", "canceled"):
            finished.add_metric([r.entrypoint, status], getattr(r, f"{status}_total"))
    yield finished
    for kind in ("wait", "run"):
        yield _gauge(
            f"pgq_job_{kind}_seconds",
            ["entrypoint", "quantile"],
            [
                ((r.entrypoint, q), value)
                for r in rows
                for q, column in QUANTILES
                if (value := getattr(r, f"{kind}_{column}_s")) is not None
            ],
        )


def worker_families(workers: list[WorkerStatus]) -> Iterator[Metric]:
    """The families of ``pgq.worker_status`` rows."""
    states = ("active", "gone", "unregistered")
    yield _gauge(
        "pgq_queue_workers",
        ["state"],
        [((s,), float(sum(w.state == s for w in workers))) for s in states],
    )
    yield _gauge(
        "pgq_queue_worker_jobs",
        ["worker_id", "host", "state"],
        [((str(w.worker_id), w.host or "", w.state), float(w.running)) for w in workers],
    )


class ExporterError(PgqThinError):
    """The exporter could not listen on the address asked for."""


def serve(admin: Admin, addr: str, port: int) -> tuple[WSGIServer, threading.Thread, int]:
    """Serve the queue's metrics on ``addr:port`` (0: any free port) in a daemon thread;
    returns the server, its thread and the port. ``server.shutdown()`` stops it."""
    registry = CollectorRegistry()
    registry.register(QueueCollector(admin))
    try:
        server, thread = start_http_server(port, addr, registry=registry)
    except OSError as err:
        raise ExporterError(
            f"cannot serve metrics on {addr}:{port}: {err.strerror or err}"
        ) from err
    return server, thread, int(server.server_address[1])
