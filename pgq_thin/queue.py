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
import dataclasses
import time
import warnings
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from pgq_thin import _api
from pgq_thin._statements import Call
from pgq_thin.admin_calls import arun, async_method, run, sync_method
from pgq_thin.handle import AsyncHandle, SyncHandle
from pgq_thin.otel import in_use as otel_in_use
from pgq_thin.otel import with_trace_context
from pgq_thin.payloads import encode_payload
from pgq_thin.records import JobResult

OnConflict = Literal["raise", "existing"]
When = datetime | timedelta | float | None


def _split(when: When) -> tuple[datetime | None, timedelta | None]:
    """``(run_at, delay)``: a datetime is a due time; a timedelta or a number of seconds is a
    delay, sent as an interval and added to the server's clock (never to this one's)."""
    if when is None or isinstance(when, datetime):
        return when, None
    return None, when if isinstance(when, timedelta) else timedelta(seconds=float(when))


def _one(
    entrypoint: str,
    payload: Any,
    priority: int,
    run_at: When,
    dedupe_key: str | None,
    headers: dict[str, Any] | None,
    on_conflict: OnConflict,
    group_key: str | None = None,
) -> Call[int]:
    due, delay = _split(run_at)
    return _api.enqueue(
        entrypoint=entrypoint,
        payload=encode_payload(payload),
        priority=priority,
        run_at=due,
        dedupe_key=dedupe_key,
        headers=with_trace_context(headers),
        on_conflict=on_conflict,
        delay=delay,
        group_key=group_key,
    )


def _many(
    entrypoints: str | Sequence[str],
    payloads: Sequence[Any],
    priorities: int | Sequence[int] | None,
    run_ats: When | Sequence[When],
    dedupe_keys: Sequence[str | None] | None,
    headers: dict[str, Any] | Sequence[dict[str, Any] | None] | None,
    on_conflict: OnConflict,
    group_keys: str | Sequence[str | None] | None = None,
) -> Call[list[int]]:
    """One entrypoint/priority/run_at/headers value applies to every payload."""
    n = len(payloads)
    eps = [entrypoints] * n if isinstance(entrypoints, str) else list(entrypoints)
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
        group_keys=[group_keys] * n if isinstance(group_keys, str) else group_keys,
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
        entrypoint: str,
        payload: Any = None,
        *,
        priority: int = 0,
        run_at: When = None,
        dedupe_key: str | None = None,
        headers: dict[str, Any] | None = None,
        on_conflict: OnConflict = "raise",
        group_key: str | None = None,
    ) -> int:
        """Add one job and return its id.

        ``payload`` is any JSON-able value (or a dataclass/pydantic model). ``run_at`` is a
        datetime, or a delay from now (timedelta or seconds); None means now. A ``dedupe_key``
        already held by a live job raises :class:`~pgq_thin.errors.DedupeConflict`, or with
        ``on_conflict="existing"`` returns that job's id. ``group_key`` is the job's key for its
        entrypoint's per-key limits and fair share (``key_concurrency_limit``).
        """
        call = _one(
            entrypoint, payload, priority, run_at, dedupe_key, headers, on_conflict, group_key
        )
        with self.using() as conn:
            return run(conn, call)

    def enqueue_many(
        self,
        entrypoints: str | Sequence[str],
        payloads: Sequence[Any],
        *,
        priorities: int | Sequence[int] | None = None,
        run_ats: When | Sequence[When] = None,
        dedupe_keys: Sequence[str | None] | None = None,
        headers: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None,
        on_conflict: OnConflict = "raise",
        group_keys: str | Sequence[str | None] | None = None,
    ) -> list[int]:
        """Add one job per payload in one statement; ids in input order.

        A single entrypoint, priority, run_at, headers or group_keys value applies to all;
        sequences must have one element per payload. Any error adds nothing.
        """
        if not payloads:
            return []
        call = _many(
            entrypoints,
            payloads,
            priorities,
            run_ats,
            dedupe_keys,
            headers,
            on_conflict,
            group_keys,
        )
        with self.using() as conn:
            return run(conn, call)

    cancel = sync_method(_api.cancel)

    configure = sync_method(configure_call)
    result = sync_method(result_call)
    results = sync_method(_api.job_results)

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
        entrypoint: str,
        payload: Any = None,
        *,
        priority: int = 0,
        run_at: When = None,
        dedupe_key: str | None = None,
        headers: dict[str, Any] | None = None,
        on_conflict: OnConflict = "raise",
        group_key: str | None = None,
    ) -> int:
        """As :meth:`Queue.enqueue`."""
        call = _one(
            entrypoint, payload, priority, run_at, dedupe_key, headers, on_conflict, group_key
        )
        async with self.using() as conn:
            return await arun(conn, call)

    async def enqueue_many(
        self,
        entrypoints: str | Sequence[str],
        payloads: Sequence[Any],
        *,
        priorities: int | Sequence[int] | None = None,
        run_ats: When | Sequence[When] = None,
        dedupe_keys: Sequence[str | None] | None = None,
        headers: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None,
        on_conflict: OnConflict = "raise",
        group_keys: str | Sequence[str | None] | None = None,
    ) -> list[int]:
        """As :meth:`Queue.enqueue_many`."""
        if not payloads:
            return []
        call = _many(
            entrypoints,
            payloads,
            priorities,
            run_ats,
            dedupe_keys,
            headers,
            on_conflict,
            group_keys,
        )
        async with self.using() as conn:
            return await arun(conn, call)

    cancel = async_method(_api.cancel)

    configure = async_method(configure_call)
    result = async_method(result_call)
    results = async_method(_api.job_results)

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
