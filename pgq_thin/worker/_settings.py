"""The worker's settings (one validated, frozen value) and its counters."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from typing import Any, Generic, Protocol, TypeVar, overload

from pgq_thin.errors import require_extra


@dataclass(frozen=True)
class WorkerSettings:
    """Everything a :class:`~pgq_thin.worker.ThinWorker` is configured with (its keyword
    arguments). Validated when made: a bad value raises ``ValueError`` naming it. A run reads
    the settings once, when it opens; change them with ``dataclasses.replace`` (or by assigning
    the attribute of the same name on the worker) between runs.

    The defaults are chosen for a worker nobody tuned (measured in ``docs/performance.md``,
    "Defaults"): ``batch_size`` 50 with ``concurrency`` 100 leaves room for two batches, so
    the claim of the next batch goes out while the last one runs (claim ahead), which drains
    no-op jobs several times faster than 10/10 and PgQueuer's defaults; 100 async jobs at once
    stays modest in memory and in what the handlers hold (connections, sockets). Sync handlers
    get their own, smaller limit, ``threads`` (10): each holds an OS thread and usually a
    database or HTTP connection, and the GIL gains nothing from more. Whatever the settings,
    a claim asks only for jobs that can start at once, so a worker never holds jobs that
    another worker could be running, unless ``prefetch`` says how many it may hold.

    :param dsn: the database (default: see :mod:`pgq_thin.connection`).
    :param concurrency: jobs run at once, async and sync handlers together.
    :param threads: sync handlers run at once (the size of their thread pool; at most
        ``concurrency`` count). A worker claiming any sync entrypoint claims no more jobs at a
        time than it has free threads (any might be sync); its async jobs still run up to
        ``concurrency`` at once, in smaller claims (give them a worker of their own, with
        ``restrict`` or ``pgq-thin run --entrypoint``, for full batches).
    :param batch_size: most jobs claimed by one ``pgq.claim`` call (a claim asks for
        ``min(batch_size, jobs that could start now)``).
    :param prefetch: claimed jobs the worker may hold besides those running, each waiting in
        the worker for a slot (0: none; a claim asks only for jobs that can start at once).
        Held jobs are the worker's (heartbeats cover them; a stop releases them), and a claim
        may then ask for up to ``concurrency + prefetch`` jobs: bigger claims, fewer round
        trips per job when handlers are short. The price: a held job waits for a slot here
        while another worker might have run it, and its time limit (``run_timeout``) counts
        from its claim. Async entrypoints only: a worker with sync entrypoints claims no more
        jobs than it has free threads while one is free, as without prefetch.
    :param results_connection: write results (``pgq.complete``) on a connection of their own,
        beside the claims: the server writes one batch of results while it claims the next,
        in two of its processes, where one connection carries both in turn (a worker that is
        busy all the time drains faster). The price: one more connection per worker (three
        with the listener), and a commit and a round trip per batch of results more. Off:
        results ride with the next claim, in its round trip and transaction.
    :param poll_interval: seconds between polls when idle (jittered by +-20 %); the worker
        also wakes on notifications and when the next delayed job is due.
    :param worker_id: this worker's UUID in the database (default: a new random one).
    :param grace_period: seconds running jobs get to finish after a stop request.
    :param flush_interval: longest time a finished result waits before it is written.
    :param flush_size: results that trigger a write at once (default: ``batch_size``).
    :param listen: LISTEN for notifications (off: polling only, e.g. behind a
        transaction-mode pooler when no direct connection is allowed).
    :param listen_dsn: where to LISTEN (default: ``dsn``); a direct connection to PostgreSQL
        when ``dsn`` points at a transaction-mode pooler.
    :param ping_interval: the listener pings its connection after this many quiet seconds.
    :param ping_timeout: a ping not answered within this many seconds counts as a lost
        listener connection (it is replaced at once).
    :param reconnect_timeout: seconds without a working connection after which the run fails
        (and the supervisor restarts it); None: keep reconnecting forever.
    :param restart_on_failure: ``run``/``arun`` restart the worker after an unrecoverable error.
    :param max_restarts: consecutive restarts before giving up (the count resets after a run
        that lasted ``restart_reset_after`` seconds).
    :param restart_delay: base of the restart backoff (doubling, capped at 30 s, jittered).
    :param history_retention: finished jobs older than this are pruned from
        ``pgq.job_history`` (``pgq.prune_history``, a few batches every
        ``maintenance_interval`` seconds; workers never wait for each other). None: keep all.
    :param maintenance_interval: seconds between pruning passes (jittered by +-20 %).
    :param maintain_interval: seconds between calls of ``pgq.maintain`` (jittered by +-20 %):
        stale jobs queued again, due jobs promoted, and the ring of ``pgq.jobs`` turned and
        emptied by truncation, so that its size stays bounded even while a long transaction
        holds the vacuum horizon (one worker at a time, the others skip; a call less than half
        the interval after any worker's pass answers ``recent``, so a fleet makes about two
        passes per interval between them). None: never (claims
        still sweep stale jobs and promote due ones; something else must call it for the ring
        to turn).
    :param rollup_interval: seconds between two steps of ``pgq.rollup_metrics`` (jittered by
        +-20 %), which folds the jobs finished since the last step into the queue's metrics
        (``pgq.metrics``; one worker at a time, the others skip), together with
        ``pgq.prune_workers``, on a connection opened for the step (never holding up claims).
        None: leave both to readers of the metrics and to operators.
    :param run_schedules: fire every due schedule in the database (``pgq.schedules``: those
        added with ``pgq-thin schedules add`` or ``pgq.schedule(...)`` too), sleeping until the
        next one is due; False: fire none (the worker still registers its own
        ``@worker.schedule`` entries, for other workers to fire).
    :param metrics_port: serve this worker's Prometheus metrics over HTTP on this port while
        ``run``/``arun`` runs (0: any free port, see ``metrics_address``); needs the extra
        ``metrics`` (``prometheus_client``). None: no metrics.
    :param metrics_addr: the address the metrics endpoint listens on.
    :param tracing: run each job in an OpenTelemetry span, and continue the trace its
        producer started, when the application uses OpenTelemetry (has imported it); False:
        never.
    :param progress_interval: seconds between two INFO progress lines (jobs done, failed
        attempts, dead jobs, the rate) on a worker that finished something meanwhile; an idle
        worker writes none. None: never.
    """

    dsn: str | None = None
    concurrency: int = 100
    threads: int = 10
    batch_size: int = 50
    prefetch: int = 0
    results_connection: bool = False
    poll_interval: float = 5.0
    worker_id: uuid.UUID = field(default_factory=uuid.uuid4)
    grace_period: float = 30.0
    flush_interval: float = 0.05
    flush_size: int | None = None
    listen: bool = True
    listen_dsn: str | None = None
    ping_interval: float = 5.0
    ping_timeout: float = 5.0
    reconnect_timeout: float | None = 300.0
    restart_on_failure: bool = True
    max_restarts: int = 5
    restart_delay: float = 1.0
    restart_reset_after: float = 60.0
    history_retention: timedelta | None = timedelta(days=7)
    maintenance_interval: float = 300.0
    maintain_interval: float | None = 1.0
    rollup_interval: float | None = 30.0
    run_schedules: bool = True
    metrics_port: int | None = None
    metrics_addr: str = "127.0.0.1"
    tracing: bool = True
    progress_interval: float | None = 60.0

    def __post_init__(self) -> None:
        if not isinstance(self.worker_id, uuid.UUID):  # a string, or None (a new one)
            wid = self.worker_id
            object.__setattr__(self, "worker_id", uuid.UUID(str(wid)) if wid else uuid.uuid4())
        _check(self.concurrency >= 1, "concurrency", self.concurrency, "at least 1")
        _check(self.threads >= 1, "threads", self.threads, "at least 1")
        _check(self.batch_size >= 1, "batch_size", self.batch_size, "at least 1")
        _check(
            type(self.prefetch) is int and 0 <= self.prefetch <= 100_000,
            "prefetch",
            self.prefetch,
            "an integer from 0 to 100000",
        )
        _check(
            type(self.results_connection) is bool,
            "results_connection",
            self.results_connection,
            "True or False",
        )
        for name in ("poll_interval", "grace_period", "flush_interval", "restart_delay"):
            _check(getattr(self, name) >= 0, name, getattr(self, name), "0 or more")
        _check(self.max_restarts >= 0, "max_restarts", self.max_restarts, "0 or more")
        _check(
            self.restart_reset_after >= 0,
            "restart_reset_after",
            self.restart_reset_after,
            "0 or more",
        )
        for name in ("ping_interval", "ping_timeout", "maintenance_interval"):
            _check(getattr(self, name) > 0, name, getattr(self, name), "positive")
        for name in (
            "flush_size",
            "reconnect_timeout",
            "maintain_interval",
            "rollup_interval",
            "progress_interval",
        ):
            value = getattr(self, name)
            _check(value is None or value > 0, name, value, "positive or None")
        retention = self.history_retention
        _check(
            retention is None or retention > timedelta(0),
            "history_retention",
            retention,
            "a positive timedelta or None",
        )
        port = self.metrics_port
        _check(
            port is None or (isinstance(port, int) and 0 <= port <= 65535),
            "metrics_port",
            port,
            "a port number (0-65535) or None",
        )
        _check(bool(self.metrics_addr), "metrics_addr", self.metrics_addr, "an address")
        if port is not None:
            require_extra("prometheus_client", "metrics", "metrics_port")

    @property
    def flush_at(self) -> int:
        """Buffered results that trigger a write at once (``flush_size``, else ``batch_size``)."""
        return self.flush_size or self.batch_size

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


def _check(ok: bool, name: str, value: Any, expected: str) -> None:
    if not ok:
        raise ValueError(f"{name} must be {expected}, got {value!r}")


@dataclass
class WorkerStats:
    """Counts of what this worker did since it started (results as accepted by the server)."""

    claimed: int = 0
    successful: int = 0
    failed: int = 0
    canceled: int = 0
    lost: int = 0
    released: int = 0
    aborted: int = 0
    #: claimed jobs whose row could not be turned into Python values (completed as failed)
    undecodable: int = 0
    #: jobs SQL declared dead (attempts used up, or fatal), snoozes granted, attempts SQL ended
    #: past their time limit, and jobs taken over from a silent worker
    dead: int = 0
    snoozed: int = 0
    timed_out: int = 0
    taken_over: int = 0
    #: results the server did not accept at flush: the lease was lost (also counted in lost)
    rejected: int = 0
    #: new connections of the session (and of the results connection) after a loss, and
    #: re-LISTENs of the listener
    reconnects: int = 0
    listener_reconnects: int = 0
    #: times the supervisor restarted the worker after an unrecoverable error
    restarts: int = 0
    #: pgq.maintain calls that did the work (not 'busy'), and those that truncated a slot
    maintained: int = 0
    truncated: int = 0

    @property
    def finished(self) -> int:
        return self.successful + self.failed + self.canceled


V = TypeVar("V")


class HasSettings(Protocol):
    settings: WorkerSettings


class Setting(Generic[V]):
    """A worker attribute that reads and replaces one field of its frozen settings (the
    replacement is validated; a run in progress keeps the settings it opened with)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, worker: None, owner: type | None = None) -> Setting[V]: ...
    @overload
    def __get__(self, worker: HasSettings, owner: type | None = None) -> V: ...
    def __get__(self, worker: HasSettings | None, owner: type | None = None) -> V | Setting[V]:
        if worker is None:
            return self
        value: V = getattr(worker.settings, self._name)
        return value

    def __set__(self, worker: HasSettings, value: V) -> None:
        changes: dict[str, Any] = {self._name: value}
        worker.settings = replace(worker.settings, **changes)
