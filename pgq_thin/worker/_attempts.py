"""Running claimed jobs: one :class:`Attempt` per claimed job, with an explicit state.

An attempt moves through one :class:`Phase` at a time::

    CLAIMED --begin()--> RUNNING --finish()--> FINISHED (its result is buffered)
    CLAIMED --release()--> RELEASED (given back with pgq.release, never started)

and may carry one :class:`Stop` reason, the strongest one asked for winning (``LOST`` >
``TIMED_OUT`` > ``ABORT`` > ``CANCEL``): the server said another attempt owns the job now; the
server ended the attempt past its time limit (``pgq.heartbeat`` answered ``timed_out``); the
shutdown's grace period ran out; a cancel was requested. The transitions hold a thread lock,
because a sync handler's thread calls :meth:`Attempt.begin` while the event loop may be
releasing or stopping the same attempt: whichever comes first wins, the other sees it.

The worker reports what happened and SQL decides the rest: a handler that returned is
``successful`` (also after a cancel request), one that gave up because of the cancel (its
task cancelled, or :class:`~pgq_thin.job.CancelJob`) is ``canceled``, a
:class:`~pgq_thin.job.Snooze` is ``snoozed``, a :class:`~pgq_thin.job.FatalError` or a payload
that does not fit the handler's type is ``fatal``, any other exception is ``failed``, and one
cut off by the shutdown is ``interrupted`` (``pgq.complete`` turns a
failure of a job whose cancel was requested into ``canceled``, applies the retry policy, and
puts an interrupted job back in the queue). An attempt that lost its lease, or that SQL timed
out, reports nothing.

A timed-out async handler's task is cancelled at once. A sync handler's thread cannot be
killed: ``job.cancelled`` is set, and its slot and its thread stay taken until the handler
returns (its result is then dropped), so the worker never claims a job it has no thread for;
the time-out line says so.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pgq_thin.job import (
    CancelJob,
    FatalError,
    Job,
    PayloadValidationError,
    RetryAfter,
    Snooze,
    failure_details,
    validate_payload,
)
from pgq_thin.worker._outcomes import (
    CANCELED,
    FAILED,
    FAILURES,
    FATAL,
    SNOOZED,
    SUCCESSFUL,
    Ending,
    aborted,
    result_details,
)
from pgq_thin.worker._registry import Handler
from pgq_thin.worker._results import ResultBuffer
from pgq_thin.worker._settings import WorkerSettings, WorkerStats
from pgq_thin.worker._telemetry import Telemetry, job_fields

log = logging.getLogger("pgq_thin.worker")


class Phase(Enum):
    CLAIMED = "claimed"
    RUNNING = "running"
    FINISHED = "finished"
    RELEASED = "released"


class Stop(Enum):
    CANCEL = 1
    ABORT = 2
    TIMED_OUT = 3
    LOST = 4


_NOT_STARTED = object()
#: The error SQL writes for an attempt past its time limit (``pgq._time_out``), as the claim's
#: ``taken_over`` names it.
TIMED_OUT_ERROR = "timed out"
# Guards every attempt's transitions (held for a few instructions; one lock, not one each).
_TRANSITION = threading.Lock()


@dataclass(eq=False, slots=True)
class Attempt:
    """A claimed job this worker owns (until its result is written, or it is released/lost)."""

    job: Job[Any]
    handler: Handler
    phase: Phase = Phase.CLAIMED
    stop: Stop | None = None
    began: float = 0.0  # time.monotonic() when its task started
    claimed: float = 0.0  # time.monotonic() when its claim came back
    span: Any = None  # its trace span while it runs (with OpenTelemetry): the attempt's alone

    def begin(self) -> bool:
        """CLAIMED -> RUNNING, unless released or stopped first."""
        with _TRANSITION:
            if self.phase is Phase.CLAIMED and self.stop is None:
                self.phase = Phase.RUNNING
                return True
            return False

    def release(self) -> bool:
        """CLAIMED -> RELEASED, unless started or lost first."""
        with _TRANSITION:
            if self.phase is Phase.CLAIMED and self.stop is not Stop.LOST:
                self.phase = Phase.RELEASED
                return True
            return False

    def finish(self) -> bool:
        """-> FINISHED, once: False if it was finished (reported) or released already."""
        with _TRANSITION:
            if self.phase in (Phase.CLAIMED, Phase.RUNNING):
                self.phase = Phase.FINISHED
                return True
            return False

    def request_stop(self, reason: Stop) -> bool:
        """Ask it to stop for ``reason``; False if an equal or stronger reason was given."""
        with _TRANSITION:
            if self.stop is not None and self.stop.value >= reason.value:
                return False
            self.stop = reason
            return True


class Attempts:
    """The attempts one run owns, the tasks running their handlers, and what ends them."""

    def __init__(
        self,
        settings: WorkerSettings,
        stats: WorkerStats,
        handlers: dict[str, Handler],
        results: ResultBuffer,
        executor: ThreadPoolExecutor,
        on_slot_free: Callable[[], None],
        telemetry: Telemetry,
    ) -> None:
        self._settings = settings
        self._stats = stats
        self._tel = telemetry
        self._handlers = handlers
        self._results = results
        self._executor = executor
        self._on_slot_free = on_slot_free
        self.owned: dict[int, Attempt] = {}  # job id -> attempt: heartbeats cover these
        self._tasks: dict[Attempt, asyncio.Task[None]] = {}  # handlers running (slots taken)
        # Claimed beyond the free slots (prefetch), in claim order: each starts when a slot frees.
        self._waiting: deque[Attempt] = deque()
        self.changed = asyncio.Event()  # attempts were added (the heartbeat loop wakes)
        #: Called when a job with a time limit is taken in (the heartbeat plans a beat at its
        #: deadline: SQL ends the attempt, and the answer stops the handler).
        self.on_deadline: Callable[[], None] = lambda: None

    @property
    def running(self) -> int:
        return len(self._tasks)

    @property
    def waiting(self) -> int:
        """Claimed jobs waiting for a slot (``prefetch``)."""
        return len(self._waiting)

    @property
    def running_sync(self) -> int:
        """Those of sync handlers (each holds a thread of the pool, or waits for one)."""
        return sum(1 for a in self._tasks if not a.handler.is_async)

    def tasks(self) -> list[asyncio.Task[None]]:
        return list(self._tasks.values())

    def take_in(self, jobs: list[Job[Any]]) -> list[Attempt]:
        """Own newly claimed jobs (an own older attempt of the same job was lost meanwhile)."""
        new: list[Attempt] = []
        now = time.monotonic()
        limited = False
        for job in jobs:
            previous = self.owned.get(job.id)
            if previous is not None:  # our own old attempt was ended by SQL and re-claimed:
                timed_out = (job.taken_over or {}).get("error") == TIMED_OUT_ERROR
                (self.time_out if timed_out else self.lose)(previous)  # as the claim says
            attempt = Attempt(job=job, handler=self._handlers[job.entrypoint], claimed=now)
            self.owned[job.id] = attempt
            new.append(attempt)
            limited = limited or job.run_timeout is not None
        if new:
            self.changed.set()
        if limited:
            self.on_deadline()
        return new

    def start(self, attempt: Attempt) -> None:
        """Run it now if a slot is free, else when one frees (a job claimed with ``prefetch``),
        after the jobs held before it."""
        self._waiting.append(attempt)
        self._start_waiting()

    def _start_waiting(self) -> None:
        """Fill free slots with the waiting attempts, in claim order (one released meanwhile
        is dropped; one stopped meanwhile got its task at the stop: :meth:`_interrupt`)."""
        while self._waiting and len(self._tasks) < self._settings.concurrency:
            attempt = self._waiting.popleft()
            if attempt.phase is Phase.CLAIMED:
                self._tasks[attempt] = asyncio.create_task(self._execute(attempt))

    def take_unstarted(self) -> list[Attempt]:
        """Mark every attempt not started yet as released, and return them (for pgq.release);
        a task already made for one ends at its first step without running the handler, and
        those waiting for a slot never start."""
        self._waiting.clear()
        return [a for a in self.owned.values() if a.release()]

    def forget(self, ended: Iterable[tuple[int, int]]) -> None:
        """These ``(job id, lease)`` attempts are over for this worker (written, released):
        heartbeats stop."""
        owned = self.owned
        for job_id, lease in ended:
            attempt = owned.get(job_id)
            if attempt is not None and attempt.job.lease == lease:
                del owned[job_id]

    def heartbeat_interval(self) -> float:
        """A third of the smallest heartbeat timeout among the owned jobs (infinite with none:
        the owned jobs can end while the heartbeat loop waits)."""
        timeouts = (a.job.heartbeat_timeout.total_seconds() for a in self.owned.values())
        return min(timeouts, default=math.inf) / 3

    def until_deadline(self) -> float | None:
        """Seconds until the earliest time limit of an owned, unfinished attempt runs out
        (measured from when its claim came back, so never before SQL's deadline); None
        without one."""
        deadlines = [
            a.claimed + a.job.run_timeout.total_seconds()
            for a in self.owned.values()
            if a.job.run_timeout is not None and a.phase is not Phase.FINISHED
        ]
        return min(deadlines) - time.monotonic() if deadlines else None

    def apply_heartbeat(
        self, sent: list[Attempt], answers: list[tuple[int, str]]
    ) -> dict[int, str]:
        by_id = {a.job.id: a for a in sent}
        for job_id, state in answers:
            attempt = by_id.get(job_id)
            if attempt is None or self.owned.get(job_id) is not attempt:
                continue  # written meanwhile
            if state == "lost":
                self.lose(attempt)
            elif state == "timed_out":
                self.time_out(attempt)
            elif state == "cancel_requested":
                self.cancel(attempt)
        return dict(answers)

    def lose(self, attempt: Attempt) -> None:
        """The server says another attempt owns this job now: stop it (it reports nothing).

        A finished attempt is left alone: its result is buffered, or in a write whose answer
        was lost (``pgq.complete`` committed, then the connection dropped, and the heartbeat
        after the reconnect finds the job no longer running under this lease). The write
        decides, once: accepted again under the same lease, the result counts as written;
        refused, it counts as lost (:meth:`ResultBuffer._settle`). So each job's ending is
        counted once."""
        if attempt.phase is Phase.FINISHED or not attempt.request_stop(Stop.LOST):
            return
        self._stats.lost += 1
        job = attempt.job
        if self.owned.get(job.id) is attempt:
            del self.owned[job.id]
        self._tel.lost(job)
        self._interrupt(attempt)

    def time_out(self, attempt: Attempt) -> None:
        """SQL ended this attempt past its time limit (a failed attempt: the retry policy
        applies): stop the handler, write nothing. A finished attempt is left to the write of
        its result, which ``pgq.complete`` answers with the decision made at the time-out."""
        if attempt.phase is Phase.FINISHED or not attempt.request_stop(Stop.TIMED_OUT):
            return
        self._stats.timed_out += 1
        job = attempt.job
        if self.owned.get(job.id) is attempt:
            del self.owned[job.id]
        sync = not attempt.handler.is_async
        self._tel.timed_out(job, time.monotonic() - attempt.began, sync=sync)
        self._interrupt(attempt)

    def cancel(self, attempt: Attempt) -> None:
        if attempt.phase is Phase.FINISHED or not attempt.request_stop(Stop.CANCEL):
            return
        job = attempt.job
        self._tel.log.info(
            "pgq-thin job %s (%s) attempt %d of %d: cancel requested",
            job.id,
            job.entrypoint,
            job.attempt,
            job.max_attempts,
            extra=job_fields(job),
        )
        self._interrupt(attempt)

    def abort_running(self) -> None:
        """Past the shutdown's grace period: stop every running handler. A sync handler's
        thread cannot be killed: its attempt is reported now and its slot freed."""
        grace = self._settings.grace_period
        for attempt in list(self._tasks):
            job = attempt.job
            self._tel.log.warning(
                "pgq-thin job %s (%s) attempt %d of %d: still running after the %g s grace "
                "period; cancelling it",
                job.id,
                job.entrypoint,
                job.attempt,
                job.max_attempts,
                grace,
                extra=job_fields(job),
            )
            attempt.request_stop(Stop.ABORT)
            self._stats.aborted += 1
            self._interrupt(attempt)
            if not attempt.handler.is_async:
                if attempt.stop is Stop.ABORT and attempt.finish():
                    self._end(attempt, aborted(grace))
                self._tasks.pop(attempt, None)

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no handler runs; True if that happened within ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._tasks:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            await asyncio.wait(self.tasks(), timeout=remaining)
        return True

    # --- one attempt ------------------------------------------------------------------------

    def _interrupt(self, attempt: Attempt) -> None:
        """Stop a handler: ``job.cancelled`` is set; an async one that started is cancelled. A
        task that has not started yet is not cancelled: its first step sees the stop. A job
        held for a slot (``prefetch``) gets its task now, which ends it at that first step
        (reported canceled after a cancel request, nothing after a loss or a time-out) without
        running its handler, rather than when a slot frees."""
        attempt.job.cancelled.set()
        if attempt.phase is Phase.CLAIMED and attempt in self._waiting:
            self._waiting.remove(attempt)
            self._tasks[attempt] = asyncio.create_task(self._execute(attempt))
        elif attempt.handler.is_async and attempt.phase is Phase.RUNNING:
            task = self._tasks.get(attempt)
            if task is not None:
                task.cancel()

    async def _execute(self, attempt: Attempt) -> None:
        """One job's task: runs the handler, reports the outcome, frees the slot. Never
        cancelled before its first step (see :meth:`_interrupt`), so ``finally`` always runs.
        With OpenTelemetry, the job's span is the current one while its handler runs; it is
        started here and handed over to telemetry once, to end it (:meth:`_end`, or here)."""
        attempt.began = time.monotonic()
        tracer = self._tel.tracer
        try:
            if tracer is None or attempt.phase is not Phase.CLAIMED:  # no span: released
                ending = await self._ending(attempt)
            else:
                attempt.span = tracer.start(attempt.job)
                with tracer.current(attempt.span):
                    ending = await self._ending(attempt)
            if ending is not None:
                self._end(attempt, ending)
        finally:
            if attempt.span is not None:  # lost, released, or the run is closing
                span, attempt.span = attempt.span, None
                self._tel.unfinished(span, unfinished_as(attempt))
            self._tasks.pop(attempt, None)  # its slot is free from here
            self._start_waiting()
            self._on_slot_free()

    async def _ending(self, attempt: Attempt) -> Ending | None:
        job, handler = attempt.job, attempt.handler
        try:
            if handler.is_async:
                if not attempt.begin():
                    return self._stopped_before_start(attempt)
                if handler.payload_type is not None:
                    job.payload = validate_payload(handler.payload_type, job.raw_payload)
                result = await handler.fn(job)
            else:
                _ = job.cancelled  # made here, before the handler's thread can look at it
                loop = asyncio.get_running_loop()
                if attempt.span is None:
                    result = await loop.run_in_executor(self._executor, self._call_sync, attempt)
                else:  # the handler's thread sees the job's span as the current one
                    context = contextvars.copy_context()
                    result = await loop.run_in_executor(
                        self._executor, context.run, self._call_sync, attempt
                    )
                if result is _NOT_STARTED:
                    return self._stopped_before_start(attempt)
            ending = Ending(SUCCESSFUL, result_details(result), "successful")
            if attempt.stop is None:  # the common case, without a detour
                return ending if attempt.finish() else None
        except asyncio.CancelledError:
            if attempt.stop is None:
                raise  # the run is closing
            details: dict[str, Any] = {"error": "CancelledError", "message": "cancelled"}
            ending = Ending(CANCELED, details, "canceled")
        except CancelJob as err:
            details = {"error": "CancelJob", "message": str(err)}
            ending = Ending(CANCELED, details, "canceled", err)
        except RetryAfter as err:
            details = {"error": "RetryAfter", "message": str(err), "retry_after": err.seconds}
            ending = Ending(FAILED, details, "retry_after", err)
        except Snooze as err:
            details = {"error": "Snooze", "message": str(err), "snooze": err.seconds}
            ending = Ending(SNOOZED, details, "snoozed", err)
        except PayloadValidationError as err:  # no retry can fix it: dead at once
            details = {"error": "PayloadValidationError", "message": str(err)}
            ending = Ending(FATAL, details, "invalid_payload", err)
        except FatalError as err:
            ending = Ending(FATAL, failure_details(err), "fatal", err)
        except Exception as err:
            ending = Ending(FAILED, failure_details(err), "failed", err)
        return self._finished(attempt, ending)

    def _call_sync(self, attempt: Attempt) -> Any:
        """In the handler's thread."""
        if not attempt.begin():
            return _NOT_STARTED
        handler, job = attempt.handler, attempt.job
        if handler.payload_type is not None:
            job.payload = validate_payload(handler.payload_type, job.raw_payload)
        return handler.fn(job)

    def _stopped_before_start(self, attempt: Attempt) -> Ending | None:
        if attempt.phase is Phase.RELEASED:
            return None
        details = {"error": "CancelledError", "message": "cancelled before it started"}
        return self._finished(attempt, Ending(CANCELED, details, "canceled"))

    def _finished(self, attempt: Attempt, ending: Ending) -> Ending | None:
        """What to report: the handler's outcome, plus what stopped it."""
        if attempt.stop in (Stop.LOST, Stop.TIMED_OUT) or not attempt.finish():
            return None  # lost or timed out: never written; finished already: reported at the abort
        if attempt.stop is Stop.ABORT and ending.outcome != SUCCESSFUL:
            return aborted(self._settings.grace_period)
        if attempt.stop is Stop.CANCEL:
            ending.details = {**(ending.details or {}), "cancel_requested": True}
        return ending

    def _end(self, attempt: Attempt, ending: Ending) -> None:
        """Tell the outside how the attempt ended (its span with it), and buffer its result."""
        job = attempt.job
        ending.for_claim(job.id, job.lease, job.entrypoint, time.monotonic() - attempt.began)
        span, attempt.span = attempt.span, None
        self._tel.ended(job, span, ending)
        if ending.log_outcome not in FAILURES:
            ending.error = None  # told; its traceback (the handler's frames) need not wait
        # (a failure's is told again with what SQL decided, then dropped: Telemetry.written)
        # nothing else runs or waits: write now, not after flush_interval
        alone = len(self._tasks) <= 1 and not self._waiting
        self._results.report(ending, alone=alone)


#: The span outcome of an attempt still running when the run closes.
CLOSING = "interrupted"


def unfinished_as(attempt: Attempt) -> str:
    """The log outcome of an attempt whose task ended without an ending of its own."""
    if attempt.stop is Stop.LOST:
        return "lost"
    if attempt.stop is Stop.TIMED_OUT:
        return "timed_out"
    return "released" if attempt.phase is Phase.RELEASED else CLOSING
