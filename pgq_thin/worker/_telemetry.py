"""What a worker tells the outside about its jobs: log lines, Prometheus metrics, trace spans.

One :class:`Telemetry` per run, handed to the parts that see a job's life: the claimer (a job
claimed, a claim's round trip), the attempts (a handler started and ended, a lease lost), the
result buffer (results written, a complete's round trip). Each event is one method here, so
the wording of the log lines, the metrics and the spans stay in one place.

Log lines (logger ``pgq_thin.worker``; every record carries ``worker_id``, and a job's records
``job_id``, ``entrypoint``, ``attempt``, ``max_attempts``; see :mod:`pgq_thin.logs`)::

    pgq-thin job 42 (send_email) attempt 1 of 5: claimed                       DEBUG
    pgq-thin job 42 (send_email) attempt 1 of 5: successful in 0.012 s         DEBUG
    pgq-thin job 42 (send_email) attempt 1 of 5: failed in 0.012 s: KeyError: 'to'   WARNING,
                                                                           with the traceback
    pgq-thin job 42 (send_email) attempt 1 of 5: retry_after in 0.003 s: retry after 30 s
    pgq-thin job 42 (send_email) attempt 1 of 5: invalid_payload in 0.000 s: ...     INFO
    pgq-thin job 42 (send_email) attempt 1 of 5: canceled in 2.104 s: cancel requested  INFO
    pgq-thin job 42 (send_email) attempt 2 of 5: aborted in 30.002 s: ...          WARNING

The line that ends an attempt carries ``outcome`` (the ending's ``log_outcome``, see
:mod:`~pgq_thin.worker._outcomes`) and ``duration`` too, and is written when the handler ends.
What SQL decides next for a failed or interrupted attempt is known only once its result is
written: ``pgq.complete`` answers it, and :meth:`Telemetry.written` says it on a line of its
own (fields ``decided`` and, for a retry, ``retry_in``), word for word from that answer::

    pgq-thin job 42 (send_email): retry in 1.7 s, attempt 1 of 5                 INFO
    pgq-thin job 42 (send_email): dead, attempt 5 of 5                           WARNING

The per-job work costs nothing that is switched off: a DEBUG line is formatted only when DEBUG
is enabled, metrics only exist with ``metrics_port``, spans only with OpenTelemetry imported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pgq_thin.errors import one_line
from pgq_thin.job import Job, RetryAfter
from pgq_thin.logs import worker_log
from pgq_thin.worker._outcomes import DEAD, LEVELS, Ending

if TYPE_CHECKING:
    from pgq_thin.calls import Decision
    from pgq_thin.otel import JobTracer
    from pgq_thin.worker._settings import WorkerSettings, WorkerStats

T = TypeVar("T")

log = logging.getLogger("pgq_thin.worker")

#: How the decision line words SQL's answers.
DEAD_TEXT = "dead"
RETRY_TEXT = "retry in {:.3g} s"


class Meter(Protocol):
    """What telemetry measures with (``_metrics.WorkerMetrics``, made with ``metrics_port``)."""

    def job_written(self, entrypoint: str, outcome: str) -> None: ...
    def handler_ended(self, entrypoint: str, seconds: float) -> None: ...
    def claim_done(self, seconds: float) -> None: ...
    def complete_done(self, seconds: float) -> None: ...
    def complete_and_claim_done(self, seconds: float) -> None: ...


def job_fields(job: Job[Any]) -> dict[str, Any]:
    return {
        "job_id": job.id,
        "entrypoint": job.entrypoint,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
    }


def _detail(ending: Ending) -> str:
    err, details = ending.error, ending.details or {}
    if ending.log_outcome == "failed" and err is not None:
        text = one_line(err)
        name = type(err).__name__
        return name if text == name else f"{name}: {text}"
    if isinstance(err, RetryAfter):
        asked = f"retry after {err.seconds:g} s"
        return asked if str(err) == asked else f"{asked} ({err})"
    if ending.log_outcome == "canceled" and details.get("error") == "CancelledError":
        return "cancel requested"
    return str(details.get("message") or "")


class Telemetry:
    """The log lines, metrics and spans of one run (see the module docstring)."""

    def __init__(
        self,
        worker_id: object,
        metrics: Meter | None = None,
        tracer: JobTracer | None = None,
    ) -> None:
        self.log = worker_log(worker_id)
        self.metrics = metrics
        self.tracer = tracer

    @classmethod
    def for_run(cls, settings: WorkerSettings, metrics: Meter | None) -> Telemetry:
        """What a run logs, measures and traces with: spans when tracing is on and
        OpenTelemetry is in use."""
        from pgq_thin import otel

        tracer = None
        if settings.tracing and otel.in_use():
            tracer = otel.JobTracer(settings.worker_id)
        return cls(settings.worker_id, metrics, tracer)

    # --- jobs -------------------------------------------------------------------------------

    def claimed(self, jobs: Iterable[Job[Any]]) -> None:
        if log.isEnabledFor(logging.DEBUG):
            for job in jobs:
                self.log.debug(
                    "pgq-thin job %s (%s) attempt %d of %d: claimed",
                    job.id,
                    job.entrypoint,
                    job.attempt,
                    job.max_attempts,
                    extra=job_fields(job),
                )

    def undecodable(self, message: str, fields: Mapping[str, Any]) -> None:
        self.log.warning(
            "pgq-thin %s; failing it", message, extra={**fields, "outcome": "undecodable"}
        )

    def ended(self, job: Job[Any], span: Any, ending: Ending) -> None:
        """An attempt ended (its result is about to be buffered): its line, its handler's
        duration, the end of its ``span`` (the attempt's, handed over: None without one)."""
        metrics = self.metrics
        if metrics is not None:
            metrics.handler_ended(job.entrypoint, ending.duration)
        outcome = ending.log_outcome
        level = LEVELS[outcome]
        if log.isEnabledFor(level):  # the logger's own cached check (the adapter adds a call)
            detail = _detail(ending)
            error = ending.error if ending.log_outcome == "failed" else None
            self.log.log(
                level,
                "pgq-thin job %s (%s) attempt %d of %d: %s in %.3f s%s",
                job.id,
                job.entrypoint,
                job.attempt,
                job.max_attempts,
                outcome,
                ending.duration,
                f": {detail}" if detail else "",
                exc_info=error,
                extra={**job_fields(job), "outcome": outcome, "duration": ending.duration},
            )
        if span is not None and self.tracer is not None:
            self.tracer.end(span, outcome, ending.error)

    def unfinished(self, span: Any, log_outcome: str) -> None:
        """An attempt's task ended without an ending of its own (``lost``, ``released`` before
        it started, or ``interrupted``: the run is closing): its ``span`` (handed over by the
        attempt) ends with that outcome."""
        if span is not None and self.tracer is not None:
            self.tracer.end(span, log_outcome, None)

    def lost(self, job: Job[Any]) -> None:
        """The server says another attempt owns the job now (a running attempt: a finished
        one is counted by the write of its result)."""
        if self.metrics is not None:
            self.metrics.job_written(job.entrypoint, "lost")
        self.log.warning(
            "pgq-thin job %s (%s) attempt %d of %d: lost its lease; cancelling it",
            job.id,
            job.entrypoint,
            job.attempt,
            job.max_attempts,
            extra={**job_fields(job), "outcome": "lost"},
        )

    def written(
        self,
        results: list[Ending],
        accepted: Mapping[int, Decision],
    ) -> None:
        """Results were written with ``pgq.complete``: what SQL decided for a job that goes
        back to the queue or dies is logged from its answer; those accepted count under their
        log outcome, the others (their lease was lost) as ``lost``."""
        for r in results:
            decided = accepted.get(r.job_id)
            if decided is not None and decided.retry_in_s is not None:
                self._decided(r, decided, logging.INFO, RETRY_TEXT.format(decided.retry_in_s))
            elif decided is not None and decided.status == DEAD:
                self._decided(r, decided, logging.WARNING, DEAD_TEXT)
        metrics = self.metrics
        if metrics is None:
            return
        for r in results:
            metrics.job_written(r.entrypoint, r.log_outcome if r.job_id in accepted else "lost")

    def _decided(self, result: Ending, decided: Decision, level: int, what: str) -> None:
        if log.isEnabledFor(level):
            self.log.log(
                level,
                "pgq-thin job %s (%s): %s, attempt %d of %d",
                result.job_id,
                result.entrypoint,
                what,
                decided.attempt,
                decided.max_attempts,
                extra={
                    "job_id": result.job_id,
                    "entrypoint": result.entrypoint,
                    "attempt": decided.attempt,
                    "max_attempts": decided.max_attempts,
                    "decided": decided.status,
                    "retry_in": decided.retry_in_s,
                },
            )

    # --- round trips --------------------------------------------------------------------------

    def claim(self, call: Awaitable[T]) -> Awaitable[T]:
        """``call`` (a ``pgq.claim``), timed when there are metrics."""
        metrics = self.metrics
        return call if metrics is None else _timed(call, metrics.claim_done)

    def complete(self, call: Awaitable[T]) -> Awaitable[T]:
        """``call`` (a ``pgq.complete``), timed when there are metrics."""
        metrics = self.metrics
        return call if metrics is None else _timed(call, metrics.complete_done)

    def complete_and_claim(self, call: Awaitable[T]) -> Awaitable[T]:
        """``call`` (``pgq.complete`` and ``pgq.claim`` in one round trip), timed as both."""
        metrics = self.metrics
        return call if metrics is None else _timed(call, metrics.complete_and_claim_done)


async def _timed(call: Awaitable[T], done: Any) -> T:
    began = time.perf_counter()
    result = await call
    done(time.perf_counter() - began)
    return result


def log_summary(worker_id: object, s: WorkerStats, uptime: float) -> None:
    """The one INFO line that sums a run up."""
    from dataclasses import asdict

    rate = s.finished / uptime if uptime > 0 else 0.0
    worker_log(worker_id).info(
        "pgq-thin worker %s stopped after %.1f s: %d claimed, %d successful, %d failed, "
        "%d canceled, %d lost, %d released, %d aborted, %d reconnects, %d restarts; "
        "%.1f jobs/s",
        worker_id,
        uptime,
        s.claimed,
        s.successful,
        s.failed,
        s.canceled,
        s.lost,
        s.released,
        s.aborted,
        s.reconnects + s.listener_reconnects,
        s.restarts,
        rate,
        extra={"stats": asdict(s), "uptime": uptime, "jobs_per_second": rate},
    )
