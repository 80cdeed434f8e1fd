"""What a handler receives (:class:`Job`) and the signals it may raise.

A handler ends its attempt by returning (``successful``), by raising any exception (``failed``:
the database applies the entrypoint's retry policy), by raising :class:`RetryAfter` (``failed``,
retried after the given delay if attempts remain), :class:`Snooze` (``snoozed``: run again later
without using an attempt), :class:`FatalError` (``fatal``: the job can never succeed, dead at
once) or :class:`CancelJob` (``canceled``).
"""

from __future__ import annotations

import json
import threading
import traceback
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from operator import itemgetter
from typing import Any, Generic, TypeVar

# Typed payloads live in pgq_thin.payloads; re-exported here for the worker and older imports.
from pgq_thin.calls import CLAIM_COLUMNS
from pgq_thin.payloads import PayloadValidationError as PayloadValidationError
from pgq_thin.payloads import encode_payload as encode_payload
from pgq_thin.payloads import is_model as is_model
from pgq_thin.payloads import validate_payload as validate_payload

P = TypeVar("P")

TRACEBACK_LIMIT = 4000  # characters of traceback kept in a failure's details


class RetryAfter(Exception):  # noqa: N818 - a signal, not an error
    """Fail this attempt and ask for the next one after ``seconds`` (not before).

    The job still counts an attempt; when attempts are used up it is dead as usual.
    """

    def __init__(self, seconds: float | timedelta, message: str = "") -> None:
        if isinstance(seconds, timedelta):
            seconds = seconds.total_seconds()
        if seconds < 0:
            raise ValueError(f"RetryAfter needs a non-negative delay, got {seconds}")
        super().__init__(message or f"retry after {seconds:g} s")
        self.seconds = float(seconds)


class Snooze(Exception):  # noqa: N818 - a signal, not an error
    """Run this job again after ``seconds`` without using an attempt (``pgq.complete``'s
    ``snoozed``): SQL computes the time on its own clock. Bounded by the entrypoint's
    ``max_snoozes`` (default 100): past it a snooze counts as a failed attempt."""

    def __init__(self, seconds: float | timedelta, message: str = "") -> None:
        if isinstance(seconds, timedelta):
            seconds = seconds.total_seconds()
        if not 0 <= seconds <= 31536000:
            raise ValueError(f"Snooze needs 0 to 31536000 seconds, got {seconds}")
        super().__init__(message or f"snooze {seconds:g} s")
        self.seconds = float(seconds)


class FatalError(Exception):
    """This job can never succeed (``pgq.complete``'s ``fatal``): it is dead at once, whatever
    attempts are left. A payload that does not fit the handler's payload type ends this way."""


class CancelJob(Exception):  # noqa: N818 - a signal, not an error
    """End this job as ``canceled``: no retry, it goes to history as canceled."""


class UndecodableJob(Exception):  # noqa: N818 - names the job, like the signals above
    """A claimed row that cannot be turned into Python values (a timestamp outside Python's
    range, JSON nested too deep or with a number too long for Python). The worker fails that
    job alone, with this message in its details; ``job_id``, ``lease`` and ``entrypoint`` are
    what it needs to complete it."""

    def __init__(self, job_id: int, lease: int, entrypoint: str, reason: str) -> None:
        super().__init__(f"job {job_id} ({entrypoint}) cannot be decoded: {reason}")
        self.job_id = job_id
        self.lease = lease
        self.entrypoint = entrypoint


@dataclass
class Job(Generic[P]):
    """One claimed job, as handed to a handler.

    ``payload`` is the decoded JSON, or an instance of the handler's payload type when it has
    one. ``cancelled`` is set when the job should stop (cancel requested, ownership lost, or
    shutdown past the grace period): a sync handler should check it in long loops (or call
    :meth:`raise_if_cancelled`); an async handler is cancelled (``CancelledError``) instead.
    """

    id: int
    entrypoint: str
    payload: P
    headers: dict[str, Any] | None
    attempt: int
    max_attempts: int
    priority: int
    enqueued_at: datetime
    #: the entrypoint's heartbeat timeout, as the claim returned it
    heartbeat_timeout: timedelta
    run_at: datetime | None = None
    dedupe_key: str | None = None
    lease: int = 0
    #: whether a failure of this attempt makes the job dead, as the claim returned it
    last_attempt: bool = False
    #: the attempt's time limit, as the claim returned it (None: no limit)
    run_timeout: timedelta | None = None
    #: for a job taken over from a silent worker, the claim's note of it (worker_id,
    #: heartbeat_at, attempt, swept_at, error); None otherwise
    taken_over: dict[str, Any] | None = None
    raw_payload: Any = None
    #: the jobs this one depends on (workflows), each ``{"parent_id", "status", "result"}`` in
    #: id order, as ``pgq.parent_results`` answers; read before the handler starts for an
    #: entrypoint registered with ``parent_results=True``, None otherwise
    parent_results: list[dict[str, Any]] | None = None
    _cancelled: threading.Event | None = field(default=None, repr=False, compare=False)

    @property
    def cancelled(self) -> threading.Event:
        """Set when the job should stop. Made on first use: on the event loop for async
        handlers, and by the worker before a sync handler starts (so never by two threads)."""
        if self._cancelled is None:
            self._cancelled = threading.Event()
        return self._cancelled

    @property
    def is_last_attempt(self) -> bool:
        """Whether a failure of this attempt makes the job dead (SQL's answer at the claim)."""
        return self.last_attempt

    def raise_if_cancelled(self) -> None:
        """Raise :class:`CancelJob` when the job was asked to stop."""
        if self.cancelled.is_set():
            raise CancelJob(f"job {self.id} was cancelled")

    @classmethod
    def from_claimed(cls, row: Sequence[Any]) -> Job[Any]:
        """A job from one claimed row of ``pgq_thin.calls.CLAIM``, its values taken by the
        column names it declares (``CLAIM_COLUMNS``): JSON columns as text, the heartbeat
        timeout in seconds, whether it is the last attempt, and a last column naming the
        timestamps Python cannot hold (NULL in their place). Decoded here, one job at a time,
        so that a value Python cannot hold fails this job alone: :class:`UndecodableJob`."""
        (
            id_,
            lease,
            entrypoint,
            payload,
            headers,
            priority,
            attempt,
            enqueued_at,
            run_at,
            dedupe_key,
            max_attempts,
            heartbeat_seconds,
            last_attempt,
            run_timeout_seconds,
            taken_over,
            unholdable,
        ) = _claimed(row)
        if unholdable is not None:
            reason = f"{unholdable}: outside the range of Python's datetime"
            raise UndecodableJob(id_, lease, entrypoint, reason)
        try:  # the common case inline (this runs for every job); the checks below only fail
            decoded_payload: Any = None if payload is None else json.loads(payload)
            decoded_headers = None if headers is None else json.loads(headers)
            timeout = timedelta(seconds=heartbeat_seconds)
            run_timeout = None
            if run_timeout_seconds is not None:
                run_timeout = timedelta(seconds=run_timeout_seconds)
            decoded_taken_over = None if taken_over is None else json.loads(taken_over)
        except (ValueError, RecursionError, OverflowError) as err:
            raise UndecodableJob(id_, lease, entrypoint, _what_failed(row)) from err
        return cls(
            id=id_,
            entrypoint=entrypoint,
            payload=decoded_payload,
            headers=decoded_headers,
            attempt=attempt,
            max_attempts=max_attempts,
            priority=priority,
            enqueued_at=enqueued_at,
            heartbeat_timeout=timeout,
            run_at=run_at,
            dedupe_key=dedupe_key,
            lease=lease,
            raw_payload=decoded_payload,
            last_attempt=last_attempt,
            run_timeout=run_timeout,
            taken_over=decoded_taken_over,
        )


# The claimed row's values in the order from_claimed unpacks them, found by column name.
_FIELDS = (
    "id", "lease", "entrypoint", "payload", "headers", "priority", "attempt", "enqueued_at",
    "run_at", "dedupe_key", "max_attempts", "heartbeat_timeout_s", "last_attempt", "run_timeout_s",
    "taken_over", "unholdable",
)  # fmt: skip
_claimed = itemgetter(*(CLAIM_COLUMNS.index(name) for name in _FIELDS))
_AT = {name: CLAIM_COLUMNS.index(name) for name in _FIELDS}


def _what_failed(row: Sequence[Any]) -> str:
    """Which value of a claimed row Python cannot decode, and why (the slow path)."""
    for column in ("payload", "headers"):
        value = row[_AT[column]]
        try:
            if value is not None:
                json.loads(value)
        except (ValueError, RecursionError) as err:  # too deep, a number too long
            return f"{column} is JSON that Python cannot decode ({type(err).__name__}: {err})"
    seconds = row[_AT["heartbeat_timeout_s"]]
    return f"heartbeat_timeout of {seconds} s is outside the range of timedelta"


def failure_details(err: BaseException) -> dict[str, Any]:
    """The ``details`` recorded for a failed attempt: error type, message, short traceback."""
    tb = "".join(traceback.format_exception(type(err), err, err.__traceback__, limit=-8))
    if len(tb) > TRACEBACK_LIMIT:
        tb = "..." + tb[-TRACEBACK_LIMIT:]
    return {"error": type(err).__name__, "message": str(err), "traceback": tb}


# --- typed payloads -----------------------------------------------------------------------------


def payload_type_of(handler: Callable[..., Any]) -> type | None:
    """The payload type a handler declares as ``job: Job[T]``, if T is a dataclass or model."""
    try:
        hints = typing.get_type_hints(handler)
    except Exception:  # unresolvable forward references: no typed payload
        return None
    hints.pop("return", None)
    for hint in hints.values():
        if typing.get_origin(hint) is Job:
            args = typing.get_args(hint)
            if args and isinstance(args[0], type) and is_model(args[0]):
                return args[0]
    return None
