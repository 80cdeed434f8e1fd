"""The statements of the admin API, and how their rows become records.

An operation of :class:`~pgq_thin.admin.Admin` (and of the producer's result lookups) is built
once, here, as a :class:`Call`: one statement, its parameters, and a function turning the rows
into records. :func:`run` and :func:`arun` send a call on a sync or an async connection, so the
sync and async classes share every statement and every conversion (see ``admin.py``).

Optional arguments are passed **by name and only when given** (:class:`Fn`): what the caller
leaves out takes the SQL function's own default, never a copy of it kept in Python. Like
:mod:`pgq_thin.calls`, this module holds SQL text (``tests/py/test_layering.py`` allows both)
and every statement is prepared against the catalog in ``tests/py/test_calls.py``.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from pgq_thin import calls
from pgq_thin.errors import PgqThinError, from_psycopg, setup_error
from pgq_thin.handle import AsyncHandle, SyncHandle
from pgq_thin.records import (
    EntrypointConfig,
    EntrypointMetrics,
    JobInfo,
    JobListing,
    JobPage,
    JobResult,
    Rollup,
    WorkerRegistration,
    WorkerStatus,
    from_row,
)

R = TypeVar("R")
T = TypeVar("T")
P = ParamSpec("P")
Row = calls.Row


@dataclass(frozen=True)
class Fn:
    """A ``pgq`` function with typed named arguments: :meth:`sql` calls it with the ones given
    (``name => %s::type``); :attr:`full` with all of them (what the catalog test prepares)."""

    name: str
    args: tuple[tuple[str, str], ...]
    scalar: bool = False  # one value (SELECT f(...)) rather than rows (SELECT * FROM f(...))
    required: int = 0  # the leading arguments without a default

    @property
    def least(self) -> str:
        return self.sql([a for a, _ in self.args[: self.required]])

    def sql(self, given: Sequence[str], ago: Sequence[str] = ()) -> str:
        """``ago``: timestamptz arguments given as an interval before the server's ``now()``."""
        types = dict(self.args)
        unknown = [g for g in given if g not in types]
        if unknown:
            raise ValueError(f"{self.name} has no argument {', '.join(unknown)}")
        named = ", ".join(
            f"{g} => now() - %s::interval" if g in ago else f"{g} => %s::{types[g]}" for g in given
        )
        if self.scalar:
            return f"SELECT {self.name}({named})"
        return f"SELECT * FROM {self.name}({named})"

    @property
    def full(self) -> str:
        return self.sql([a for a, _ in self.args])

    def call(self, shape: Callable[[list[Row]], R], **values: Any) -> Call[R]:
        """A call passing the arguments that are not None (None: the SQL default); a
        timedelta for a timestamptz argument means that long before the server's clock."""
        given = {k: v for k, v in values.items() if v is not None}
        ago = [k for k, v in given.items() if isinstance(v, timedelta) and k in _TIMES]
        return Call(self.sql(list(given), ago), tuple(given.values()), shape)


_TIMES = ("since", "until")  # timestamptz arguments that may be given as an interval ago
_HISTORY = (
    ("entrypoint", "text"),
    ("statuses", "text[]"),
    ("since", "timestamptz"),
    ("until", "timestamptz"),
    ("error", "text"),
)
METRICS = Fn("pgq.metrics", (("entrypoints", "text[]"), ("percentile_window", "interval")))
LIST_JOBS = Fn(
    "pgq.list_jobs",
    (("entrypoint", "text"), ("state", "text"), ("after", "text"), ("page_size", "int")),
    required=2,
)
FIND_HISTORY = Fn("pgq.find_history", (*_HISTORY, ("after", "text"), ("page_size", "int")))
REQUEUE_HISTORY = Fn("pgq.requeue_history", (*_HISTORY, ("max_jobs", "int")))
DELETE_HISTORY = Fn("pgq.delete_history", (*_HISTORY, ("max_jobs", "int")), scalar=True)
PRUNE = Fn(
    "pgq.prune_history", (("older_than", "interval"), ("batch", "int")), scalar=True, required=1
)
REGISTER_WORKER = Fn(
    "pgq.register_worker",
    (
        ("worker_id", "uuid"),
        ("entrypoints", "text[]"),
        ("host", "text"),
        ("pid", "int"),
        ("application_name", "text"),
        ("version", "text"),
        ("metadata", "jsonb"),
        ("timeout", "interval"),
    ),
    required=1,
)
WORKERS = "SELECT * FROM pgq.worker_status ORDER BY started_at NULLS LAST, worker_id"
PAUSE = "SELECT * FROM pgq.pause(%s::text[])"
RESUME = "SELECT * FROM pgq.resume(%s::text[])"
JOB = "SELECT * FROM pgq.job(%s::bigint)"
JOB_RESULTS = "SELECT * FROM pgq.job_results(%s::bigint[])"
UNREGISTER_WORKER = "SELECT pgq.unregister_worker(%s::uuid)"
PRUNE_WORKERS = "SELECT pgq.prune_workers()"
ROLLUP_METRICS = "SELECT * FROM pgq.rollup_metrics()"

_READER = ("pgq_reader (or pgq_admin)", "GRANT pgq_reader TO {role}")
_ADMIN = ("pgq_admin", "GRANT pgq_admin TO {role}")
_ANY = ("a pgq role", calls.GRANT_PRODUCER)
_WORKER = ("pgq_worker", calls.GRANT_WORKER)
#: Who may run each statement (by the function it calls): named in a PrivilegeMissing message.
NEEDS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("pgq.metrics", "pgq.worker_status", "pgq.job_results"), _ANY),
    **dict.fromkeys(("pgq.job(", "pgq.list_jobs", "pgq.find_", "pgq.entrypoint_config"), _READER),
    **dict.fromkeys(
        ("pgq.pause", "pgq.resume", "pgq.requeue_history", "pgq.delete_", "pgq.fire_schedule_now"),
        _ADMIN,
    ),
    **dict.fromkeys(("pgq.register_worker", "pgq.unregister_worker"), _WORKER),
    **dict.fromkeys(
        ("pgq.prune_workers", "pgq.rollup_metrics"), ("pgq_worker", calls.GRANT_WORKER)
    ),
    "pgq.prune_history": ("pgq_worker (or the owner's rights)", calls.GRANT_WORKER),
}


@dataclass(frozen=True)
class Call(Generic[R]):
    """One statement, its parameters and the shape of its answer. With ``more``, the statement
    is sent again while ``more(last answer)`` holds, and the answers are added up (``+``)."""

    query: str
    args: tuple[Any, ...]
    shape: Callable[[list[Row]], R]
    more: Callable[[R], bool] | None = None

    def then(self, f: Callable[[R], T]) -> Call[T]:
        """The same statement, its answer passed through ``f``."""
        shape = self.shape
        return Call(self.query, self.args, lambda rows: f(shape(rows)))


def records(cls: type[T]) -> Callable[[list[Row]], list[T]]:
    return lambda rows: [from_row(cls, r) for r in rows]


def first(cls: type[T]) -> Callable[[list[Row]], T]:
    return lambda rows: from_row(cls, rows[0])


def optional(cls: type[T]) -> Callable[[list[Row]], T | None]:
    return lambda rows: from_row(cls, rows[0]) if rows else None


def value(rows: list[Row]) -> Any:
    return next(iter(rows[0].values()))


def ints(rows: list[Row]) -> list[int]:
    return [int(next(iter(r.values()))) for r in rows]


# --- running a call ---------------------------------------------------------------------------


def _needs(query: str) -> tuple[str, str]:
    for fn, needs in NEEDS.items():
        if fn in query:
            return needs
    return calls.NEEDS.get(query, ("a grant on schema pgq", "see docs/operations.md"))


@contextmanager
def _translated(conn: calls.Conn | calls.AConn, query: str) -> Iterator[None]:
    """Errors as in :mod:`pgq_thin.calls`: class ``PQ`` as our exceptions, a missing schema or
    grant as a SetupError naming the role the statement needs."""
    try:
        yield
    except psycopg.Error as err:
        mapped: PgqThinError | None = from_psycopg(err)
        if mapped is None:
            needs, fix = _needs(query)
            try:
                role = conn.info.user
            except psycopg.Error:
                role = "<login role>"
            mapped = setup_error(err, role=role, grant=fix.format(role=role), needs=needs)
        if mapped is None:
            raise
        raise mapped from err


def _fold(call: Call[Any], total: Any, answer: Any) -> tuple[Any, bool]:
    """The answer so far, and whether to send the call again."""
    if call.more is None:
        return answer, False
    return (answer if total is None else operator.add(total, answer)), call.more(answer)


def run(conn: calls.Conn, call: Call[R]) -> R:
    """Send ``call`` (again while its ``more`` holds) on a sync connection."""
    total, again = None, True
    while again:
        with _translated(conn, call.query), conn.cursor(row_factory=dict_row) as cur:
            cur.execute(call.query, call.args)
            total, again = _fold(call, total, call.shape(cur.fetchall()))
    return total  # type: ignore[return-value]


async def arun(conn: calls.AConn, call: Call[R]) -> R:
    """Send ``call`` (again while its ``more`` holds) on an async connection."""
    total, again = None, True
    while again:
        with _translated(conn, call.query):
            async with conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(call.query, call.args)
                total, again = _fold(call, total, call.shape(await cur.fetchall()))
    return total  # type: ignore[return-value]


def sync_method(build: Callable[P, Call[R]]) -> Callable[Concatenate[SyncHandle, P], R]:
    """A method of a sync handle that builds a call with ``build`` (same arguments and
    docstring) and runs it on the handle's connection."""

    @functools.wraps(build)
    def method(self: SyncHandle, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.using() as conn:
            return run(conn, build(*args, **kwargs))

    return method


def async_method(
    build: Callable[P, Call[R]],
) -> Callable[Concatenate[AsyncHandle, P], Coroutine[Any, Any, R]]:
    """The async twin of :func:`sync_method`."""

    @functools.wraps(build)
    async def method(self: AsyncHandle, /, *args: P.args, **kwargs: P.kwargs) -> R:
        async with self.using() as conn:
            return await arun(conn, build(*args, **kwargs))

    return method


# --- the calls --------------------------------------------------------------------------------


def _names(entrypoints: str | Sequence[str] | None) -> list[str] | None:
    if entrypoints is None:
        return None
    return [entrypoints] if isinstance(entrypoints, str) else list(entrypoints)


def metrics(
    entrypoints: str | Sequence[str] | None, percentile_window: timedelta | None
) -> Call[list[EntrypointMetrics]]:
    return METRICS.call(
        records(EntrypointMetrics),
        entrypoints=_names(entrypoints),
        percentile_window=percentile_window,
    )


def workers() -> Call[list[WorkerStatus]]:
    return Call(WORKERS, (), records(WorkerStatus))


def pause(entrypoints: str | Sequence[str]) -> Call[list[EntrypointConfig]]:
    return Call(PAUSE, (_names(entrypoints),), records(EntrypointConfig))


def resume(entrypoints: str | Sequence[str]) -> Call[list[EntrypointConfig]]:
    return Call(RESUME, (_names(entrypoints),), records(EntrypointConfig))


def job(job_id: int) -> Call[JobInfo | None]:
    return Call(JOB, (job_id,), optional(JobInfo))


def job_results(ids: Sequence[int]) -> Call[list[JobResult]]:
    return Call(JOB_RESULTS, (list(ids),), records(JobResult))


def _page(page_size: int | None) -> Callable[[list[Row]], JobPage]:
    def shape(rows: list[Row]) -> JobPage:
        jobs = [from_row(JobListing, r) for r in rows]
        short = not jobs or (page_size is not None and len(jobs) < page_size)
        return JobPage(jobs, None if short else jobs[-1].cursor)

    return shape


def list_jobs(
    entrypoint: str, state: str, after: str | None, page_size: int | None
) -> Call[JobPage]:
    return LIST_JOBS.call(
        _page(page_size), entrypoint=entrypoint, state=state, after=after, page_size=page_size
    )


@dataclass(frozen=True)
class HistoryFilter:
    """Which finished jobs: entrypoint (None: all), statuses (None: the SQL default, failed),
    finished in ``[since, until)`` (a timedelta: that long before the server's clock),
    ``error`` text found in the failure."""

    entrypoint: str | None = None
    statuses: Sequence[str] | None = None
    since: datetime | timedelta | None = None  # a timedelta: that long before now()
    until: datetime | timedelta | None = None
    error: str | None = None

    def values(self) -> dict[str, Any]:
        statuses = None if self.statuses is None else list(self.statuses)
        return {**vars(self), "statuses": statuses}


def find_history(where: HistoryFilter, after: str | None, page_size: int | None) -> Call[JobPage]:
    return FIND_HISTORY.call(_page(page_size), after=after, page_size=page_size, **where.values())


def requeue_history(where: HistoryFilter, max_jobs: int | None, every: bool) -> Call[list[int]]:
    """With ``every``: again until a call requeues nothing, or only jobs it requeued already
    (they failed again meanwhile): each job is requeued at most once."""
    call = REQUEUE_HISTORY.call(ints, max_jobs=max_jobs, **where.values())
    if not every:
        return call
    seen: set[int] = set()

    def more(ids: list[int]) -> bool:
        fresh = not seen.intersection(ids)
        seen.update(ids)
        return bool(ids) and fresh

    return Call(call.query, call.args, call.shape, more)


def delete_history(where: HistoryFilter, max_jobs: int | None, every: bool) -> Call[int]:
    """With ``every``: again until a call deletes nothing."""
    call = DELETE_HISTORY.call(lambda rows: int(value(rows)), max_jobs=max_jobs, **where.values())
    return Call(call.query, call.args, call.shape, bool) if every else call


def prune(older_than: timedelta) -> Call[int]:
    """``pgq.prune_history`` in batches of its default size until one deletes nothing."""
    call = PRUNE.call(lambda rows: int(value(rows)), older_than=older_than)
    return Call(call.query, call.args, call.shape, bool)


def register_worker(
    worker_id: UUID, entrypoints: Sequence[str], **announced: Any
) -> Call[WorkerRegistration]:
    """``announced``: any of host, pid, application_name, version, metadata (a dict) and
    timeout; those left out take the SQL defaults."""
    if "metadata" in announced:
        announced["metadata"] = calls.jsonb(announced["metadata"])
    return REGISTER_WORKER.call(
        first(WorkerRegistration), worker_id=worker_id, entrypoints=list(entrypoints), **announced
    )


def unregister_worker(worker_id: UUID) -> Call[bool]:
    return Call(UNREGISTER_WORKER, (worker_id,), lambda rows: bool(value(rows)))


def prune_workers() -> Call[int]:
    return Call(PRUNE_WORKERS, (), lambda rows: int(value(rows)))


def rollup_metrics() -> Call[Rollup]:
    return Call(ROLLUP_METRICS, (), first(Rollup))
