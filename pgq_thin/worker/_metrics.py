"""A worker's own Prometheus metrics (the extra ``metrics``: ``prometheus_client``).

Process-local figures only (what one worker ran, how long its handlers and round trips took):
the numbers of the whole queue come from SQL, through the admin API, and are exported once per
database, not by each worker. Every worker has a registry of its own (no global state: two
workers in one process never share a series), served over HTTP by ``ThinWorker.arun`` when
``metrics_port`` is set (``pgq-thin run --metrics-port N``).

Counters that the worker keeps anyway (:class:`~pgq_thin.worker.WorkerStats`) and the jobs in
flight are read when scraped, so they cost nothing per job; the per-job series (jobs by
outcome, handler durations) and the round-trip histograms are observed as they happen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)

from pgq_thin._version import __version__
from pgq_thin.errors import PgqThinError
from pgq_thin.logs import worker_log
from pgq_thin.worker._settings import WorkerSettings, WorkerStats

#: Seconds; handlers run from microseconds to hours.
HANDLER_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
    900.0,
    3600.0,
)
#: Seconds; one statement's round trip on a local network is about a millisecond.
ROUND_TRIP_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)

#: Every metric a worker exports, with its help text (docs/operations.md lists them).
HELP = {
    "pgq_worker_jobs": "Job attempts this worker ended, by entrypoint and outcome (counted when "
    "the result is written; lost: the lease was lost, nothing was written)",
    "pgq_worker_handler_duration_seconds": "Time from a handler's start to its end, by entrypoint",
    "pgq_worker_claim_duration_seconds": "Round trip of a pgq.claim (also when it carried "
    "results: then it is observed under complete too)",
    "pgq_worker_complete_duration_seconds": "Round trip of a pgq.complete that wrote results "
    "(alone, or in one round trip with the next claim)",
    "pgq_worker_jobs_in_flight": "Handlers running now",
    "pgq_worker_jobs_held": "Claimed jobs waiting in the worker for a slot (prefetch)",
    "pgq_worker_claimed_jobs": "Jobs this worker claimed",
    "pgq_worker_released_jobs": "Claimed jobs given back unstarted (pgq.release, at shutdown)",
    "pgq_worker_undecodable_jobs": "Claimed rows that could not be turned into Python values "
    "(completed as failed)",
    "pgq_worker_reconnects": "New connections after a loss, by connection (session, listener)",
    "pgq_worker_restarts": "Times the supervisor restarted the worker after an error",
    "pgq_worker": "This worker: its id and the pgq-thin version",
    "pgq_worker_start_time_seconds": "When this worker started (Unix time)",
}


class MetricsServerError(PgqThinError):
    """The metrics endpoint could not listen on the address asked for."""


class _StatsCollector:
    """The counters of :class:`WorkerStats`, read at scrape time."""

    def __init__(
        self, stats: WorkerStats, worker_id: Callable[[], str], started: Callable[[], float]
    ) -> None:
        self._stats = stats
        self._worker_id = worker_id
        self._started = started

    def collect(self) -> Iterator[Metric]:
        stats = self._stats
        for name, value in (
            ("pgq_worker_claimed_jobs", stats.claimed),
            ("pgq_worker_released_jobs", stats.released),
            ("pgq_worker_undecodable_jobs", stats.undecodable),
            ("pgq_worker_restarts", stats.restarts),
        ):
            yield CounterMetricFamily(name, HELP[name], value=value)
        reconnects = CounterMetricFamily(
            "pgq_worker_reconnects", HELP["pgq_worker_reconnects"], labels=["connection"]
        )
        reconnects.add_metric(["session"], stats.reconnects)
        reconnects.add_metric(["listener"], stats.listener_reconnects)
        yield reconnects
        yield InfoMetricFamily(
            "pgq_worker",
            HELP["pgq_worker"],
            value={"worker_id": self._worker_id(), "version": __version__},
        )
        started = self._started()
        if started:
            yield GaugeMetricFamily(
                "pgq_worker_start_time_seconds",
                HELP["pgq_worker_start_time_seconds"],
                value=started,
            )


class WorkerMetrics:
    """The registry of one worker and its instruments; :meth:`serve` exposes it over HTTP."""

    def __init__(
        self,
        stats: WorkerStats,
        running: Callable[[], int],
        held: Callable[[], int],
        worker_id: Callable[[], str],
        started: Callable[[], float],
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self._jobs = Counter(
            "pgq_worker_jobs", HELP["pgq_worker_jobs"], ["entrypoint", "outcome"], registry=reg
        )
        self._handler = Histogram(
            "pgq_worker_handler_duration_seconds",
            HELP["pgq_worker_handler_duration_seconds"],
            ["entrypoint"],
            buckets=HANDLER_BUCKETS,
            registry=reg,
        )
        self._claim = Histogram(
            "pgq_worker_claim_duration_seconds",
            HELP["pgq_worker_claim_duration_seconds"],
            buckets=ROUND_TRIP_BUCKETS,
            registry=reg,
        )
        self._complete = Histogram(
            "pgq_worker_complete_duration_seconds",
            HELP["pgq_worker_complete_duration_seconds"],
            buckets=ROUND_TRIP_BUCKETS,
            registry=reg,
        )
        in_flight = Gauge(
            "pgq_worker_jobs_in_flight", HELP["pgq_worker_jobs_in_flight"], registry=reg
        )
        in_flight.set_function(running)
        Gauge("pgq_worker_jobs_held", HELP["pgq_worker_jobs_held"], registry=reg).set_function(held)
        reg.register(_StatsCollector(stats, worker_id, started))
        # label lookups cost a lock and a tuple each: the children are kept per label value
        self._jobs_by: dict[tuple[str, str], Counter] = {}
        self._handler_by: dict[str, Histogram] = {}
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    # --- observations (on the event loop) -----------------------------------------------------

    def job_written(self, entrypoint: str, outcome: str) -> None:
        child = self._jobs_by.get((entrypoint, outcome))
        if child is None:
            child = self._jobs_by[(entrypoint, outcome)] = self._jobs.labels(entrypoint, outcome)
        child.inc()

    def handler_ended(self, entrypoint: str, seconds: float) -> None:
        child = self._handler_by.get(entrypoint)
        if child is None:
            child = self._handler_by[entrypoint] = self._handler.labels(entrypoint)
        child.observe(seconds)

    def claim_done(self, seconds: float) -> None:
        self._claim.observe(seconds)

    def complete_done(self, seconds: float) -> None:
        self._complete.observe(seconds)

    def complete_and_claim_done(self, seconds: float) -> None:
        self._claim.observe(seconds)
        self._complete.observe(seconds)

    # --- the endpoint -------------------------------------------------------------------------

    @property
    def address(self) -> tuple[str, int] | None:
        """Where the endpoint listens (the port chosen when 0 was asked), or None."""
        if self._server is None:
            return None
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def serve_for(self, settings: WorkerSettings) -> None:
        """Serve on the settings' address and port, and say where in one line."""
        host, port = self.serve(settings.metrics_addr, settings.metrics_port or 0)
        worker_log(settings.worker_id).info(
            "pgq-thin worker %s serves metrics on http://%s:%d/metrics",
            settings.worker_id,
            host,
            port,
        )

    def serve(self, addr: str, port: int) -> tuple[str, int]:
        """Serve ``/metrics`` (any path) on ``addr:port`` in a daemon thread until :meth:`close`."""
        if self._server is None:
            try:
                self._server, self._thread = start_http_server(port, addr, registry=self.registry)
            except OSError as err:
                raise MetricsServerError(
                    f"cannot serve metrics on {addr}:{port}: {err.strerror or err}"
                ) from err
        address = self.address
        assert address is not None
        return address

    def close(self) -> None:
        server, thread, self._server, self._thread = self._server, self._thread, None, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)
