"""How a job's attempt ends, in one vocabulary and one value: :class:`Ending`.

Three words, three meanings, each with one name:

* ``outcome``: what the worker *observed* and reports to ``pgq.complete`` (its ``outcomes``
  argument): one of :data:`SUCCESSFUL`, :data:`FAILED`, :data:`INTERRUPTED`,
  :data:`CANCELED`, :data:`SNOOZED`, :data:`FATAL`, never a decision;
* ``status``: what SQL *decided* (``pgq.complete``'s answer, ``Decision.status``): the job is
  done, goes back to the queue (``retry``, or :data:`SNOOZED_STATUS`), or is dead
  (:data:`DEAD`);
* ``log_outcome``: the label the worker tells the outside (the ``outcome`` field of its log
  records, the ``outcome`` label of its metrics, the span's outcome): one of
  :data:`LOG_OUTCOMES`, finer than the reported outcome (a ``retry_after`` is reported
  ``failed``, an ``invalid_payload`` ``fatal``; an ``aborted`` attempt ``interrupted``; a
  ``timed_out`` one reports nothing: SQL ended it).

An ending goes from the handler's end to the write of its result, unchanged in shape: the
attempt makes it, telemetry tells it, the result buffer writes it under its lease.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

Details = dict[str, Any] | None

log = logging.getLogger("pgq_thin.worker")

# What a worker reports to pgq.complete: what it observed, never a decision.
SUCCESSFUL = "successful"  # the handler returned
FAILED = "failed"  # the handler raised
INTERRUPTED = "interrupted"  # the worker cut the attempt off (shutdown)
CANCELED = "canceled"  # the handler gave up because the job was canceled
SNOOZED = "snoozed"  # the handler asked to run again later (Snooze), without using an attempt
FATAL = "fatal"  # the job can never succeed (FatalError, a payload that does not fit its type)

#: SQL's answer (``pgq.complete``'s status) for a job that failed for good.
DEAD = "failed"
#: SQL's answer for a snooze that was granted (the job runs again later, no attempt used).
SNOOZED_STATUS = "snoozed"

#: How an attempt ended, as the worker tells it (the ``log_outcome`` of logs, metrics, spans).
LOG_OUTCOMES = (
    "successful",  # the handler returned
    "failed",  # it raised an exception
    "retry_after",  # it raised RetryAfter
    "snoozed",  # it raised Snooze
    "fatal",  # it raised FatalError
    "invalid_payload",  # the payload did not fit the handler's payload type (reported fatal)
    "canceled",  # a cancel request stopped it, or it raised CancelJob
    "aborted",  # still running at the end of the shutdown's grace period
    "undecodable",  # the claimed row could not be turned into Python values
    "lost",  # the lease was lost (the job went stale and was claimed again): nothing written
    "timed_out",  # past its time limit: SQL ended the attempt (pgq.heartbeat said so)
)
#: The level of the line that ends an attempt, by log outcome. A failure is told once its
#: result is written, with what SQL decided (``Telemetry.written``: WARNING for a retry, ERROR
#: with the traceback for a dead job); the line written when the handler ends is DEBUG then.
LEVELS = {
    "successful": logging.DEBUG,
    "failed": logging.DEBUG,
    "retry_after": logging.DEBUG,
    "snoozed": logging.DEBUG,
    "fatal": logging.DEBUG,
    "invalid_payload": logging.DEBUG,
    "canceled": logging.INFO,
    "aborted": logging.WARNING,
    "undecodable": logging.WARNING,
    "lost": logging.WARNING,
    "timed_out": logging.WARNING,
}
#: Log outcomes whose decision line carries the error (type and message).
FAILURES = frozenset({"failed", "retry_after", "fatal", "invalid_payload", "undecodable"})
#: ... and those whose lines carry the traceback too (an exception the handler raised).
TRACEBACKS = frozenset({"failed", "fatal"})


@dataclass(slots=True)
class Ending:
    """How one attempt ended, as the worker observed it.

    ``outcome`` and ``details`` are what ``pgq.complete`` is told for the claim
    (``job_id``, ``lease``); ``log_outcome``, ``error`` and ``duration`` (of the handler, in
    seconds) are what the worker tells the outside, with ``entrypoint``. The attempt makes it
    when its handler ends, then stamps it with its claim and the handler's duration
    (:meth:`for_claim`); the exception is dropped once told (its traceback holds the
    handler's frames)."""

    outcome: str
    details: Details
    log_outcome: str
    error: BaseException | None = None  # kept until told with what SQL decided (failures)
    job_id: int = 0
    lease: int = 0
    entrypoint: str = ""
    duration: float = 0.0

    def for_claim(self, job_id: int, lease: int, entrypoint: str, duration: float) -> Ending:
        """This ending, for the claim ``(job_id, lease)`` of ``entrypoint``."""
        self.job_id, self.lease, self.entrypoint, self.duration = (
            job_id,
            lease,
            entrypoint,
            duration,
        )
        return self


def aborted_details(grace_period: float) -> dict[str, Any]:
    return {
        "error": "WorkerShutdown",
        "message": f"the worker shut down and the job ran past its {grace_period:g} s grace period",
    }


def aborted(grace_period: float) -> Ending:
    """The ending of an attempt still running past the shutdown's grace period."""
    return Ending(INTERRUPTED, aborted_details(grace_period), "aborted")


def result_details(result: Any) -> Details:
    """A handler's return value is stored as ``{"result": ...}`` when it is plain JSON."""
    if result is None:
        return None
    try:
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        log.debug("pgq-thin: handler result %r is not JSON; not stored", result)
        return None
    return {"result": result}
