"""What a worker tells the outside about its jobs: log lines, Prometheus metrics, trace spans.

One :class:`Telemetry` per run, handed to the parts that see a job's life: the claimer (a job
claimed, a claim's round trip), the attempts (a handler started and ended, a lease lost), the
result buffer (results written, a complete's round trip). Each event is one method here, so
the wording of the log lines, the metrics and the spans stay in one place.

Log lines (logger ``pgq_thin.worker``; every record carries ``worker_id``, and a job's records
``job_id``, ``entrypoint``, ``attempt``, ``max_attempts``; see :mod:`pgq_thin.logs`)::

    pgq-thin job 42 (send_email) attempt 1 of 5: claimed                       DEBUG
    pgq-thin job 42 (send_email) attempt 1 of 5: successful in 0.012 s         DEBUG
    pgq-thin job 42 (send_email) attempt 1 of 5: failed in 0.012 s: KeyError: 'to'   DEBUG,
                                                                           with the traceback
    pgq-thin job 42 (send_email) attempt 1 of 5: canceled in 2.104 s: cancel requested  INFO
    pgq-thin job 42 (send_email) attempt 2 of 5: aborted in 30.002 s: ...          WARNING
    pgq-thin job 42 (send_email) attempt 1 of 5: timed out after 30 s ...          WARNING
    pgq-thin job 42 (send_email) attempt 2 of 5: taken over from worker ...        WARNING

The line that ends an attempt carries ``outcome`` (the ending's ``log_outcome``, see
:mod:`~pgq_thin.worker._outcomes`) and ``duration`` too, and is written when the handler ends.
What SQL decides next for a failed attempt is known only once its result is written:
``pgq.complete`` answers it, and :meth:`Telemetry.written` says it on one line with the error
(fields ``decided`` and, for a retry, ``retry_in``), word for word from that answer: a retry
is one WARNING line without the traceback (it is on the DEBUG line above), a dead job one
ERROR line with it::

    pgq-thin job 42 (send_email) attempt 1 of 5 failed: KeyError: 'to'; retry in 1.7 s   WARNING
    pgq-thin job 42 (send_email) attempt 5 of 5 failed: KeyError: 'to'; dead            ERROR
    pgq-thin job 42 (send_email) attempt 1 of 5 fatal: PayloadValidationError: ...; dead ERROR
    pgq-thin job 42 (send_email) attempt 1 of 5: snoozed, runs again in 30 s            DEBUG
    pgq-thin job 42 (send_email) attempt 1 of 5: interrupted; retry in 0 s              INFO

Every minute with something finished, :func:`log_progress` writes one INFO line of counts.

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
from pgq_thin.worker._outcomes import (
    DEAD,
    FAILED,
    FAILURES,
    LEVELS,
    SNOOZED_STATUS,
    TRACEBACKS,
    Ending,
)

if TYPE_CHECKING:
    from pgq_thin.calls import Decision
    from pgq_thin.otel import JobTracer
    from pgq_thin.worker._settings import WorkerSettings, WorkerStats

T = TypeVar("T")

log = logging.getLogger("pgq_thin.worker")

#: How the decision line words SQL's answers.
DEAD_TEXT = "dead"
RETRY_TEXT = "retry in {:.3g} s"
SNOOZE_TEXT = "runs again in {:.3g} s"


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


def _decided_detail(ending: Ending) -> str:
    """The error of the decision line: type and message, in one line."""
    err, details = ending.error, ending.details or {}
    if err is not None and not isinstance(err, RetryAfter):
        text = one_line(err)
        name = type(err).__name__
        return name if text in ("", name) else f"{name}: {text}"
    error, message = details.get("error"), details.get("message")
    if error and message:
        lines = str(message).strip().splitlines()
        return f"{error}: {lines[0]}" if lines else str(error)
    return str(error or message or "")


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

    def claimed(self, jobs: Iterable[Job[Any]]) -> int:
        """Jobs were claimed: a DEBUG line each, and a WARNING line for each taken over from a
        worker that fell silent (SQL's note in the claim answer). Returns how many were."""
        taken = 0
        for job in jobs:
            note = job.taken_over
            if note is not None and note.get("error") == "heartbeat timeout":
                taken += 1
                self._taken_over(job, note)
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

        return taken

    def _taken_over(self, job: Job[Any], note: Mapping[str, Any]) -> None:
        self.log.warning(
            "pgq-thin job %s (%s) attempt %d of %d: taken over from worker %s, silent since %s "
            "(attempt %s swept at %s: %s)",
            job.id,
            job.entrypoint,
            job.attempt,
            job.max_attempts,
            note.get("worker_id"),
            note.get("heartbeat_at"),
            note.get("attempt"),
            note.get("swept_at"),
            note.get("error"),
            extra={**job_fields(job), "taken_over": dict(note)},
        )

    def timed_out(self, job: Job[Any], ran: float, *, sync: bool) -> None:
        """SQL ended the attempt past its time limit (``pgq.heartbeat`` answered
        ``timed_out``): the handler is stopped; a sync one's thread cannot be."""
        if self.metrics is not None:
            self.metrics.job_written(job.entrypoint, "timed_out")
        limit = job.run_timeout.total_seconds() if job.run_timeout is not None else ran
        what = (
            "its thread cannot be stopped: job.cancelled is set, and its slot stays taken "
            "until the handler returns (its result is dropped)"
            if sync
            else "its task is cancelled"
        )
        self.log.warning(
            "pgq-thin job %s (%s) attempt %d of %d: timed out after %g s (SQL failed the "
            "attempt; the retry policy decides); %s",
            job.id,
            job.entrypoint,
            job.attempt,
            job.max_attempts,
            limit,
            what,
            extra={**job_fields(job), "outcome": "timed_out", "duration": ran},
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
            error = ending.error if ending.log_outcome in TRACEBACKS else None
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
        back to the queue or dies is logged from its answer, with the error of a failure (a
        retry: WARNING, one line; dead: ERROR with the traceback); those accepted count under
        their log outcome, the others (their lease was lost) as ``lost``."""
        for r in results:
            decided = accepted.get(r.job_id)
            if decided is None:
                pass
            elif decided.status == SNOOZED_STATUS:
                again = SNOOZE_TEXT.format(decided.retry_in_s or 0)
                self._decided(r, decided, logging.DEBUG, again)
            elif decided.retry_in_s is not None:
                level = logging.WARNING if r.log_outcome in FAILURES else logging.INFO
                self._decided(r, decided, level, RETRY_TEXT.format(decided.retry_in_s))
            elif decided.status == DEAD:
                error = r.error if r.log_outcome in TRACEBACKS else None
                self._decided(r, decided, logging.ERROR, DEAD_TEXT, exc_info=error)
            r.error = None  # told
        metrics = self.metrics
        if metrics is None:
            return
        for r in results:
            metrics.job_written(r.entrypoint, r.log_outcome if r.job_id in accepted else "lost")

    def _decided(
        self,
        result: Ending,
        decided: Decision,
        level: int,
        what: str,
        exc_info: BaseException | None = None,
    ) -> None:
        if log.isEnabledFor(level):
            outcome = FAILED if result.log_outcome == "retry_after" else result.outcome
            detail = _decided_detail(result)
            self.log.log(
                level,
                "pgq-thin job %s (%s) attempt %d of %d %s%s; %s",
                result.job_id,
                result.entrypoint,
                decided.attempt,
                decided.max_attempts,
                outcome,
                f": {detail}" if detail else "",
                what,
                exc_info=exc_info,
                extra={
                    "outcome": result.log_outcome,
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


class Progress:
    """The progress line of a busy worker: what finished since the last line, and the rate."""

    def __init__(self, stats: WorkerStats) -> None:
        self._stats = stats
        self._last = self._counts()
        self._at = time.monotonic()

    def _counts(self) -> tuple[int, int, int, int, int]:
        s = self._stats
        return (s.successful, s.failed, s.dead, s.canceled, s.timed_out)

    def log(self, logger: logging.Logger | logging.LoggerAdapter[Any]) -> bool:
        """One INFO line if anything finished since the last call (True if written)."""
        now, counts = time.monotonic(), self._counts()
        delta = (a - b for a, b in zip(counts, self._last, strict=True))
        done, failed, dead, canceled, timed_out = delta
        span, self._last, self._at = now - self._at, counts, now
        if not (done or failed or dead or canceled or timed_out):
            return False
        rate = (done + dead + canceled) / span if span > 0 else 0.0
        logger.info(
            "pgq-thin worker progress, last %.0f s: %d done, %d failed attempts (%d timed out), "
            "%d dead, %d canceled; %.1f jobs/s",
            span,
            done,
            failed,
            timed_out,
            dead,
            canceled,
            rate,
            extra={
                "progress": {
                    "seconds": span,
                    "done": done,
                    "failed_attempts": failed,
                    "timed_out_attempts": timed_out,
                    "dead_jobs": dead,
                    "canceled_jobs": canceled,
                    "jobs_per_second": rate,
                }
            },
        )
        return True


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
