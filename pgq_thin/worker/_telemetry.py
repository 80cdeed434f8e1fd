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

The line that ends an attempt carries ``outcome`` and ``duration`` too, and is written when
the handler ends. What SQL decides next for a failed or interrupted attempt is known only once
its result is written: ``pgq.complete`` answers it, and :meth:`Telemetry.written` says it on a
line of its own (fields ``decided`` and, for a retry, ``retry_in``), word for word from that
answer::

    pgq-thin job 42 (send_email): retry in 1.7 s, attempt 1 of 5                 INFO
    pgq-thin job 42 (send_email): dead, attempt 5 of 5                           WARNING

The per-job work costs nothing that is switched off: a DEBUG line is formatted only when DEBUG
is enabled, metrics only exist with ``metrics_port``, spans only with OpenTelemetry imported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pgq_thin.errors import one_line
from pgq_thin.job import Job, RetryAfter

if TYPE_CHECKING:
    from pgq_thin.calls import Decision
    from pgq_thin.otel import JobTracer
    from pgq_thin.worker._attempts import Attempt
    from pgq_thin.worker._metrics import WorkerMetrics
    from pgq_thin.worker._results import Result
    from pgq_thin.worker._settings import WorkerSettings, WorkerStats

T = TypeVar("T")

log = logging.getLogger("pgq_thin.worker")

#: How an attempt ended, as the worker saw it (the ``outcome`` of logs, metrics and spans).
OUTCOMES = (
    "successful",  # the handler returned
    "failed",  # it raised an exception
    "retry_after",  # it raised RetryAfter
    "invalid_payload",  # the payload did not fit the handler's payload type
    "canceled",  # a cancel request stopped it, or it raised CancelJob
    "aborted",  # still running at the end of the shutdown's grace period
    "undecodable",  # the claimed row could not be turned into Python values
    "lost",  # the lease was lost (the job went stale and was claimed again): nothing written
)
#: SQL's answer for a job that failed for good (``pgq.complete``'s status), and how the
#: decision line words SQL's answers.
DEAD = "failed"
DEAD_TEXT = "dead"
RETRY_TEXT = "retry in {:.3g} s"
#: The level of the line that ends an attempt, by outcome.
LEVELS = {
    "successful": logging.DEBUG,
    "failed": logging.WARNING,
    "retry_after": logging.INFO,
    "invalid_payload": logging.INFO,
    "canceled": logging.INFO,
    "aborted": logging.WARNING,
    "undecodable": logging.WARNING,
    "lost": logging.WARNING,
}


class WorkerLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """The worker's logger: every record gets the worker's fields, merged with its own."""

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        own = kwargs.get("extra")
        kwargs["extra"] = self.extra if own is None else {**(self.extra or {}), **own}
        return msg, kwargs


def worker_log(worker_id: object) -> WorkerLog:
    return WorkerLog(log, {"worker_id": str(worker_id)})


@dataclass(slots=True)
class Ending:
    """How one attempt ended: what ``pgq.complete`` is told (``status``, ``details``) and what
    the worker tells the outside (``outcome``, the exception, the handler's duration)."""

    status: str
    details: dict[str, Any] | None
    outcome: str
    error: BaseException | None = None
    duration: float = 0.0


def job_fields(job: Job[Any]) -> dict[str, Any]:
    return {
        "job_id": job.id,
        "entrypoint": job.entrypoint,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
    }


def _detail(ending: Ending) -> str:
    err, details = ending.error, ending.details or {}
    if ending.outcome == "failed" and err is not None:
        text = one_line(err)
        name = type(err).__name__
        return name if text == name else f"{name}: {text}"
    if isinstance(err, RetryAfter):
        asked = f"retry after {err.seconds:g} s"
        return asked if str(err) == asked else f"{asked} ({err})"
    if ending.outcome == "canceled" and details.get("error") == "CancelledError":
        return "cancel requested"
    return str(details.get("message") or "")


class Telemetry:
    """The log lines, metrics and spans of one run (see the module docstring)."""

    def __init__(
        self,
        worker_id: object,
        metrics: WorkerMetrics | None = None,
        tracer: JobTracer | None = None,
    ) -> None:
        self.log = worker_log(worker_id)
        self.metrics = metrics
        self.tracer = tracer

    @classmethod
    def for_run(cls, settings: WorkerSettings, metrics: WorkerMetrics | None) -> Telemetry:
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

    def ended(self, attempt: Attempt, ending: Ending) -> None:
        """An attempt ended (its result is about to be buffered): its line, its handler's
        duration, the end of its span."""
        job = attempt.job
        metrics = self.metrics
        if metrics is not None:
            metrics.handler_ended(job.entrypoint, ending.duration)
        level = LEVELS[ending.outcome]
        if log.isEnabledFor(level):  # the logger's own cached check (the adapter adds a call)
            detail = _detail(ending)
            error = ending.error if ending.outcome == "failed" else None
            self.log.log(
                level,
                "pgq-thin job %s (%s) attempt %d of %d: %s in %.3f s%s",
                job.id,
                job.entrypoint,
                job.attempt,
                job.max_attempts,
                ending.outcome,
                ending.duration,
                f": {detail}" if detail else "",
                exc_info=error,
                extra={**job_fields(job), "outcome": ending.outcome, "duration": ending.duration},
            )
        if attempt.span is not None and self.tracer is not None:
            span, attempt.span = attempt.span, None
            self.tracer.end(span, ending.outcome, ending.error)

    def left(self, attempt: Attempt, outcome: str) -> None:
        """An attempt's task ended without an ending of its own (``lost``, ``released`` before
        it started, or ``interrupted``: the run is closing): its span ends with that outcome."""
        if attempt.span is not None and self.tracer is not None:
            span, attempt.span = attempt.span, None
            self.tracer.end(span, outcome, None)

    def lost(self, attempt: Attempt) -> None:
        """The server says another attempt owns the job now (a running attempt: a finished
        one is counted by the write of its result)."""
        job = attempt.job
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
        results: list[Result],
        accepted: Mapping[int, Decision],
    ) -> None:
        """Results were written with ``pgq.complete``: what SQL decided for a job that goes
        back to the queue or dies is logged from its answer; those accepted count under their
        outcome, the others (their lease was lost) as ``lost``."""
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
            metrics.job_written(r.entrypoint, r.outcome if r.job_id in accepted else "lost")

    def _decided(self, result: Result, decided: Decision, level: int, what: str) -> None:
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
