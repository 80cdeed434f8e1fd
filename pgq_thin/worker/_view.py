"""What can be seen of a worker from outside: its connections, jobs, listener, scheduler and
metrics while it runs (read-only properties of :class:`~pgq_thin.worker.ThinWorker`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pgq_thin.worker._run import SCHEDULER_TASK, Run
from pgq_thin.worker._settings import WorkerSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from pgq_thin.worker._metrics import WorkerMetrics


class WorkerView:
    """Read-only views of a worker's current run (None, 0 or empty when it is not open)."""

    settings: WorkerSettings
    _run: Run | None
    _metrics: WorkerMetrics | None

    def _metrics_made(self) -> WorkerMetrics | None:
        raise NotImplementedError

    @property
    def stopping(self) -> bool:
        return self._run is not None and self._run.stopping.is_set()

    @property
    def backend_pids(self) -> dict[str, int | None]:
        """Server process ids of the ``session`` and ``listener`` connections (or None), and
        of the ``results`` connection with ``results_connection``."""
        run = self._run
        if run is None:
            return {"session": None, "listener": None}
        pids = {"session": run.session.backend_pid, "listener": run.listener.backend_pid}
        if run.results_session is not None:
            pids["results"] = run.results_session.backend_pid
        return pids

    @property
    def owned_job_ids(self) -> frozenset[int]:
        """Jobs claimed, running, or finished but not written: what the heartbeats cover."""
        return frozenset(self._run.attempts.owned) if self._run is not None else frozenset()

    @property
    def running_jobs(self) -> int:
        """Handlers running now (the slots taken)."""
        return self._run.attempts.running if self._run is not None else 0

    @property
    def held_jobs(self) -> int:
        """Claimed jobs waiting in the worker for a slot (``prefetch``)."""
        return self._run.attempts.waiting if self._run is not None else 0

    @property
    def buffered_results(self) -> int:
        """Finished attempts whose result is not written yet."""
        return len(self._run.results) if self._run is not None else 0

    @property
    def listening(self) -> bool:
        """The listener has LISTEN in place on a live connection."""
        return self._run is not None and self._run.listener.listening

    @property
    def scheduling(self) -> bool:
        """The scheduler loop runs (it fires every due schedule; see ``run_schedules``)."""
        run = self._run
        if run is None or not self.settings.run_schedules:
            return False
        task = run.loops.named(SCHEDULER_TASK)
        return task is not None and not task.done()

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """``(host, port)`` of the metrics endpoint while it serves (the port chosen when
        ``metrics_port`` is 0), else None."""
        return None if self._metrics is None else self._metrics.address

    @property
    def metrics_registry(self) -> CollectorRegistry | None:
        """This worker's Prometheus registry (with ``metrics_port`` set), e.g. to serve it from
        an application's own endpoint; None without metrics."""
        metrics = self._metrics_made()
        return None if metrics is None else metrics.registry

    @property
    def listener_pings(self) -> int:
        """Health-check pings the listener got answered (in this run)."""
        return self._run.listener.pings if self._run is not None else 0
