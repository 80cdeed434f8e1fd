"""The producer: add jobs, cancel them. Sync :class:`Queue` and async :class:`AsyncQueue`.

Give it a DSN (or nothing: see :mod:`pgq_thin.dsn`) and it keeps one autocommit
connection of its own, so every call commits at once. Give it a connection you hold and every
call runs on it, inside whatever transaction you have open: the job then commits, or rolls
back, with your own writes (transactional enqueue)::

    with psycopg.connect(dsn) as conn:              # one transaction
        save_order(conn, order)                     # your own writes
        Queue(conn).enqueue("send_receipt", {"order": 42})
    # both committed together, or neither

When the application uses OpenTelemetry and a span is active, each job's headers carry the
trace context (``traceparent``), so the worker's span for the job continues the trace
(:mod:`pgq_thin.otel`); headers given by the caller are never overwritten.

A producer reads what its jobs returned with :meth:`Queue.result` (``pgq.job_results``) and
waits for one with :meth:`Queue.wait`: polling that function, 10 ms doubling to 1 s between
calls (no notification is sent when a job finishes, see docs/sql-api.md)::

    job_id = queue.enqueue("resize", {"image": 7})
    done = queue.wait(job_id, timeout=60)
    if done.status == "successful":
        print(done.result)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import warnings
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import psycopg

from pgq_thin import _api
from pgq_thin._statements import Call
from pgq_thin.admin_calls import async_method, sync_method
from pgq_thin.entrypoints import Entrypoint, entrypoint_name, entrypoint_payload
from pgq_thin.handle import AsyncHandle, SyncHandle
from pgq_thin.otel import in_use as otel_in_use
from pgq_thin.otel import with_trace_context
from pgq_thin.payloads import encode_payload, non_json_payload_error
from pgq_thin.records import JobResult

OnConflict = Literal["raise", "existing"]
When = datetime | timedelta | float | None
#: An entrypoint: its name, or the handle ``@worker.entrypoint`` returned (pgq_thin.entrypoints).
Target = str | Entrypoint[Any, Any]
#: A run time limit: a timedelta or seconds (None: the entrypoint's ``run_timeout``).
Timeout = timedelta | float | None


def _limit(timeout: Timeout) -> timedelta | None:
    if timeout is None or isinstance(timeout, timedelta):
        return timeout
    return timedelta(seconds=float(timeout))


def _split(when: When) -> tuple[datetime | None, timedelta | None]:
    """``(run_at, delay)``: a datetime is a due time; a timedelta or a number of seconds is a
    delay, sent as an interval and added to the server's clock (never to this one's)."""
    if when is None or isinstance(when, datetime):
        return when, None
    return None, when if isinstance(when, timedelta) else timedelta(seconds=float(when))


@contextlib.contextmanager
def _json_checked(payloads: Sequence[Any]) -> Iterator[None]:
    """A payload holding NaN or Infinity reaches the server as text JSON refuses (22P02):
    raised as one :class:`~pgq_thin.payloads.PayloadValidationError` naming the value."""
    try:
        yield
    except psycopg.errors.InvalidTextRepresentation as err:
        better = non_json_payload_error(payloads)
        if better is None:
            raise
        raise better from err


def _one(
    entrypoint: Target,
    payload: Any,
    priority: int,
    run_at: When,
    dedupe_key: str | None,
    headers: dict[str, Any] | None,
    on_conflict: OnConflict,
    timeout: Timeout = None,
    group_key: str | None = None,
) -> Call[int]:
    due, delay = _split(run_at)
    return _api.enqueue(
        entrypoint=entrypoint_name(entrypoint),
        payload=encode_payload(entrypoint_payload(entrypoint, payload)),
        priority=priority,
        run_at=due,
        dedupe_key=dedupe_key,
        headers=with_trace_context(headers),
        on_conflict=on_conflict,
        delay=delay,
        timeout=_limit(timeout),
        group_key=group_key,
    )


def _many(
    entrypoints: Target | Sequence[Target],
    payloads: Sequence[Any],
    priorities: int | Sequence[int] | None,
    run_ats: When | Sequence[When],
    dedupe_keys: Sequence[str | None] | None,
    headers: dict[str, Any] | Sequence[dict[str, Any] | None] | None,
    on_conflict: OnConflict,
    timeouts: Timeout | Sequence[Timeout] = None,
    group_keys: str | Sequence[str | None] | None = None,
    depends_on: Sequence[Sequence[Any] | None] | None = None,
) -> Call[list[int]]:
    """One entrypoint/priority/run_at/headers value applies to every payload."""
    n = len(payloads)
    if isinstance(entrypoints, str | Entrypoint):
        payloads = [entrypoint_payload(entrypoints, p) for p in payloads]
        eps = [entrypoint_name(entrypoints)] * n
    else:
        eps = [entrypoint_name(e) for e in entrypoints]
        if len(eps) == n:  # else pgq.enqueue_many refuses the lengths (PQ003)
            both = zip(entrypoints, payloads, strict=True)
            payloads = [entrypoint_payload(e, p) for e, p in both]
    if priorities is None or isinstance(priorities, int):
        prios = None if priorities is None else [priorities] * n
    else:
        prios = list(priorities)
    if run_ats is None or isinstance(run_ats, datetime | timedelta | float | int):
        pairs = [_split(run_ats)] * n
    else:
        pairs = [_split(w) for w in run_ats]
    whens = None if all(p[0] is None for p in pairs) else [p[0] for p in pairs]
    delays = None if all(p[1] is None for p in pairs) else [p[1] for p in pairs]
    limits: list[timedelta | None] | None
    if timeouts is None or isinstance(timeouts, timedelta | float | int):
        limits = None if timeouts is None else [_limit(timeouts)] * n
    else:
        limits = [_limit(t) for t in timeouts]
    hdrs: list[dict[str, Any] | None] | None
    if headers is None or isinstance(headers, dict):
        shared = with_trace_context(headers)
        hdrs = None if shared is None else [shared] * n
    else:
        hdrs = [with_trace_context(h) for h in headers] if otel_in_use() else list(headers)
    return _api.enqueue_many(
        entrypoints=eps,
        payloads=[encode_payload(p) for p in payloads],
        priorities=prios,
        run_ats=whens,
        dedupe_keys=dedupe_keys,
        headers=hdrs,
        on_conflict=on_conflict,
        delays=delays,
        timeouts=limits,
        group_keys=[group_keys] * n if isinstance(group_keys, str) else group_keys,
        depends_on=None
        if depends_on is None
        else [None if d is None else list(d) for d in depends_on],
    )


def configure_call(entrypoint: str, **policy: Any) -> Call[dict[str, Any]]:
    """Deprecated (:meth:`Queue.configure`): :meth:`pgq_thin.admin.Admin.configure` (an
    operator action that needs the owner's or pgq_admin's rights), which returns the row typed."""
    warnings.warn(
        "Queue.configure is deprecated and goes in the next release: use"
        " pgq_thin.Admin.configure, which returns the stored policy as a record",
        DeprecationWarning,
        stacklevel=3,
    )
    return _api.configure(entrypoint, **policy).then(dataclasses.asdict)


#: Pauses between two looks at an unfinished job in :meth:`Queue.wait`: 10 ms doubling to 1 s.
FIRST_POLL, LAST_POLL = 0.01, 1.0


def result_call(job_id: int) -> Call[JobResult]:
    """Where a job is and what it returned (``pgq.job_results``): status ``scheduled`` (not
    due yet), ``queued``, ``running``, ``successful`` (``result`` is the handler's return
    value), ``failed`` or ``canceled`` (``error`` holds the final details), or ``unknown``
    (never there, or pruned)."""
    return _api.job_results([job_id]).then(lambda rows: rows[0])


def _waited(job_id: int, last: JobResult, timeout: float | None) -> TimeoutError:
    return TimeoutError(f"job {job_id} did not finish within {timeout} s (it is {last.status})")


def _over(job: JobResult) -> bool:
    return job.finished or job.status == "unknown"


class Queue(SyncHandle):
    """Sync producer over a DSN or a ``psycopg.Connection`` you hold (see the module
    docstring); anything else is a :class:`TypeError`."""

    APPLICATION_NAME = "pgq-thin producer"

    def enqueue(
        self,
        entrypoint: Target,
        payload: Any = None,
        *,
        priority: int = 0,
        run_at: When = None,
        dedupe_key: str | None = None,
        headers: dict[str, Any] | None = None,
        on_conflict: OnConflict = "raise",
        timeout: Timeout = None,
        group_key: str | None = None,
    ) -> int:
        """Add one job and return its id. ``entrypoint`` is a name, or the handle
        ``@worker.entrypoint`` returned (the payload is then checked against its type).

        ``payload`` is any JSON-able value (or a dataclass/pydantic model). ``run_at`` is a
        datetime, or a delay from now (timedelta or seconds); None means now. A ``dedupe_key``
        already held by a live job raises :class:`~pgq_thin.errors.DedupeConflict`, or with
        ``on_conflict="existing"`` returns that job's id. ``timeout`` (a timedelta or
        seconds) limits how long one attempt may run, over its entrypoint's ``run_timeout``
        (None: that one); past it SQL fails the attempt ("timed out after N s"). ``group_key``
        is the job's key for its entrypoint's per-key limits and fair share
        (``key_concurrency_limit``).
        """
        call = _one(
            entrypoint, payload, priority, run_at, dedupe_key, headers, on_conflict, timeout,
            group_key,
        )  # fmt: skip
        with _json_checked([payload]):
            return self.run_call(call)

    def enqueue_many(
        self,
        entrypoints: Target | Sequence[Target],
        payloads: Sequence[Any],
        *,
        priorities: int | Sequence[int] | None = None,
        run_ats: When | Sequence[When] = None,
        dedupe_keys: Sequence[str | None] | None = None,
        headers: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None,
        on_conflict: OnConflict = "raise",
        timeouts: Timeout | Sequence[Timeout] = None,
        group_keys: str | Sequence[str | None] | None = None,
        depends_on: Sequence[Sequence[Any] | None] | None = None,
    ) -> list[int]:
        """Add one job per payload in one statement; ids in input order.

        A single entrypoint, priority, run_at, headers, timeouts or group_keys value applies to
        all; sequences must have one element per payload. ``depends_on`` (workflows): element i
        lists the jobs job i waits for, each a 1-based position of an earlier job of this call,
        ``{"job": id}`` for a job enqueued before, or either as ``{"position": n}`` /
        ``{"job": id}`` with ``"run_anyway": True`` (docs/sql-api.md, "Workflows"). Any error
        adds nothing.
        """
        if not payloads:
            return []
        call = _many(
            entrypoints, payloads, priorities, run_ats, dedupe_keys, headers, on_conflict, timeouts,
            group_keys, depends_on,
        )  # fmt: skip
        with _json_checked(payloads):
            return self.run_call(call)

    cancel = sync_method(_api.cancel)

    configure = sync_method(configure_call)
    result = sync_method(result_call)
    results = sync_method(_api.job_results)
    take_tokens = sync_method(_api.take_tokens)
    parent_results = sync_method(_api.parent_results)
    workflow = sync_method(_api.workflow)

    def wait(self, job_id: int, timeout: float | None = None) -> JobResult:
        """Poll :meth:`result` until the job finished (or is ``unknown``), pausing 10 ms
        doubling to 1 s; :class:`TimeoutError` after ``timeout`` seconds (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = FIRST_POLL
        while not _over(job := self.result(job_id)):
            if deadline is not None and time.monotonic() + pause > deadline:
                raise _waited(job_id, job, timeout)
            time.sleep(pause)
            pause = min(pause * 2, LAST_POLL)
        return job


class AsyncQueue(AsyncHandle):
    """Async producer over a DSN or a ``psycopg.AsyncConnection`` you hold; anything else is
    a :class:`TypeError`."""

    APPLICATION_NAME = "pgq-thin producer"

    async def enqueue(
        self,
        entrypoint: Target,
        payload: Any = None,
        *,
        priority: int = 0,
        run_at: When = None,
        dedupe_key: str | None = None,
        headers: dict[str, Any] | None = None,
        on_conflict: OnConflict = "raise",
        timeout: Timeout = None,
        group_key: str | None = None,
    ) -> int:
        """As :meth:`Queue.enqueue`."""
        call = _one(
            entrypoint, payload, priority, run_at, dedupe_key, headers, on_conflict, timeout,
            group_key,
        )  # fmt: skip
        with _json_checked([payload]):
            return await self.arun_call(call)

    async def enqueue_many(
        self,
        entrypoints: Target | Sequence[Target],
        payloads: Sequence[Any],
        *,
        priorities: int | Sequence[int] | None = None,
        run_ats: When | Sequence[When] = None,
        dedupe_keys: Sequence[str | None] | None = None,
        headers: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None,
        on_conflict: OnConflict = "raise",
        timeouts: Timeout | Sequence[Timeout] = None,
        group_keys: str | Sequence[str | None] | None = None,
        depends_on: Sequence[Sequence[Any] | None] | None = None,
    ) -> list[int]:
        """As :meth:`Queue.enqueue_many`."""
        if not payloads:
            return []
        call = _many(
            entrypoints, payloads, priorities, run_ats, dedupe_keys, headers, on_conflict, timeouts,
            group_keys, depends_on,
        )  # fmt: skip
        with _json_checked(payloads):
            return await self.arun_call(call)

    cancel = async_method(_api.cancel)

    configure = async_method(configure_call)
    result = async_method(result_call)
    results = async_method(_api.job_results)
    take_tokens = async_method(_api.take_tokens)
    parent_results = async_method(_api.parent_results)
    workflow = async_method(_api.workflow)

    async def wait(self, job_id: int, timeout: float | None = None) -> JobResult:
        """As :meth:`Queue.wait`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = FIRST_POLL
        while not _over(job := await self.result(job_id)):
            if deadline is not None and time.monotonic() + pause > deadline:
                raise _waited(job_id, job, timeout)
            await asyncio.sleep(pause)
            pause = min(pause * 2, LAST_POLL)
        return job
