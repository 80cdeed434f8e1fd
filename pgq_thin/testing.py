"""Test helpers for applications that use pgq-thin: a pytest plugin.

Turn it on in the application's ``conftest.py`` (it is never loaded on its own)::

    pytest_plugins = ["pgq_thin.testing"]

and name a PostgreSQL server the tests may create databases on: ``PGQ_TEST_DSN`` (a role with
CREATEDB, e.g. ``postgresql://postgres@127.0.0.1/postgres``), or ``--pgq-server DSN``;
``embedded`` there means the embedded development server. Then::

    from myapp.jobs import worker                     # the application's ThinWorker

    def test_signup_sends_the_welcome_mail(pgq_database, pgq_jobs):
        signup(Queue(pgq_database), "a@b.c")          # the code under test enqueues
        pgq_jobs.assert_enqueued("send_email", {"to": "a@b.c"}, priority=5)
        ran = pgq_jobs.run(worker)                    # the real worker, until nothing is due
        assert ran.statuses == {"successful": 1}

Fixtures:

- ``pgq_database``: the DSN of a fresh database with pgq installed (a clone of a template
  installed once per session by :func:`pgq_thin.migrate.upgrade`), dropped after the test. An
  application whose tests already have a database (Django's test database, its own
  migrations) overrides this fixture to return that database's DSN.
- ``pgq_queue``: a :class:`~pgq_thin.Queue` on it.
- ``pgq_jobs``: a :class:`Jobs` on it: what is enqueued, assertions on it, and
  :meth:`Jobs.run`, which runs the queued jobs with the application's own worker (the real
  claim, heartbeat and complete SQL) until nothing is due.

Everything is read through the public SQL (``pgq.queue_stats``, ``pgq.list_jobs``,
``pgq.job``, ``pgq.job_results``): there is no in-memory imitation of the queue to drift from it.
"""

from __future__ import annotations

import os
import secrets
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo

from pgq_thin import migrate
from pgq_thin.admin import Admin
from pgq_thin.dsn import EMBEDDED, choose
from pgq_thin.payloads import encode_payload
from pgq_thin.queue import Queue
from pgq_thin.records import JobInfo, JobResult

if TYPE_CHECKING:
    from pgq_thin.worker import ThinWorker

__all__ = ["ANY", "Jobs", "Ran", "fresh_database"]

SERVER_ENV = "PGQ_TEST_DSN"
#: The live states :meth:`Jobs.enqueued` lists (``scheduled``: not due yet).
LIVE_STATES = ("queued", "scheduled", "running")

_CREATE = "CREATE DATABASE {} TEMPLATE {}"
_CREATE_EMPTY = "CREATE DATABASE {}"
_DROP = "DROP DATABASE IF EXISTS {} WITH (FORCE)"


class _Any:
    """Matches any payload (the default of :meth:`Jobs.assert_enqueued`)."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "ANY"


ANY: Any = _Any()


# --- databases -------------------------------------------------------------------------------


def _server(config: pytest.Config) -> str:
    given = config.getoption("pgq_server", None) or os.environ.get(SERVER_ENV)
    if not given:
        raise pytest.UsageError(
            "pgq_thin.testing: no PostgreSQL server for the test databases: set "
            f"{SERVER_ENV} (a role with CREATEDB) or pass --pgq-server DSN "
            f"('{EMBEDDED}' for the embedded development server)"
        )
    return choose(given).dsn


def _run(server: str, statement: str, *names: str) -> None:
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(pgsql.SQL(statement).format(*map(pgsql.Identifier, names)))


@dataclass
class _Template:
    server: str
    name: str

    def dsn(self, dbname: str) -> str:
        return make_conninfo(self.server, dbname=dbname)


@pytest.fixture(scope="session")
def _pgq_template(pytestconfig: pytest.Config) -> Iterator[_Template]:
    server = _server(pytestconfig)
    template = _Template(server, f"pgq_testing_{secrets.token_hex(4)}")
    _run(server, _CREATE_EMPTY, template.name)
    try:
        migrate.upgrade(template.dsn(template.name))
        yield template
    finally:
        _run(server, _DROP, template.name)


def fresh_database(server: str, template: str) -> Iterator[str]:
    """A new database cloned from ``template`` on ``server``, dropped afterwards: its DSN."""
    name = f"{template}_{secrets.token_hex(4)}"
    _run(server, _CREATE, name, template)
    try:
        yield make_conninfo(server, dbname=name)
    finally:
        _run(server, _DROP, name)


@pytest.fixture
def pgq_database(_pgq_template: _Template) -> Iterator[str]:
    """The DSN of a fresh database with pgq installed, dropped after the test."""
    yield from fresh_database(_pgq_template.server, _pgq_template.name)


@pytest.fixture
def pgq_queue(pgq_database: str) -> Iterator[Queue]:
    """A :class:`~pgq_thin.Queue` on ``pgq_database``."""
    with Queue(pgq_database) as queue:
        yield queue


@pytest.fixture
def pgq_jobs(pgq_database: str) -> Iterator[Jobs]:
    """A :class:`Jobs` on ``pgq_database``."""
    jobs = Jobs(pgq_database)
    try:
        yield jobs
    finally:
        jobs.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--pgq-server",
        dest="pgq_server",
        default=None,
        help=f"pgq_thin.testing: the PostgreSQL server for test databases (default ${SERVER_ENV})",
    )


# --- what is enqueued ------------------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    """What :meth:`Jobs.run` did: the result of every job that was live when it started (jobs
    its handlers enqueued ran too, and are found in the history or, still live, in ``left``),
    and the jobs still live afterwards (a retry waiting for its backoff, a job not due yet)."""

    results: list[JobResult]
    left: list[JobInfo] = field(default_factory=list)

    @property
    def statuses(self) -> dict[str, int]:
        """How many jobs ended (or stand) in each status, e.g. ``{"successful": 2}``."""
        return dict(Counter(r.status for r in self.results))


class Jobs:
    """The jobs of one database, for assertions in a test."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._admin = Admin(dsn, application_name="pgq-thin testing")

    def close(self) -> None:
        self._admin.close()

    def enqueued(self, entrypoint: str | None = None) -> list[JobInfo]:
        """The live jobs (queued, scheduled, running), of one entrypoint or all, by id."""
        names = (
            [entrypoint] if entrypoint is not None else [s.entrypoint for s in self._admin.stats()]
        )
        ids: list[int] = []
        for name in names:
            for state in LIVE_STATES:
                after: str | None = None
                while True:
                    page = self._admin.list_jobs(name, state, after=after, page_size=500)
                    ids += [j.id for j in page.jobs]
                    if page.next_cursor is None:
                        break
                    after = page.next_cursor
        found = [self._admin.job(i) for i in sorted(ids)]
        return [j for j in found if j is not None]

    def assert_enqueued(
        self,
        entrypoint: str | Any,
        payload: Any = ANY,
        *,
        priority: int | None = None,
        delay: timedelta | None = None,
        run_at: datetime | None = None,
        dedupe_key: str | None = None,
        count: int | None = None,
    ) -> JobInfo:
        """The live job of ``entrypoint`` (a name or a handle of ``@worker.entrypoint``) whose
        payload (compared as JSON: a dataclass or pydantic model as it is sent) and the given
        properties match; an AssertionError listing that entrypoint's live jobs otherwise.
        ``delay`` is ``run_at - enqueued_at`` as the server computed it; ``count`` asks for
        exactly that many matching jobs (the first is returned)."""
        name = _name(entrypoint)
        wanted = payload if payload is ANY else encode_payload(payload)
        live = self.enqueued(name)
        matching = [
            j
            for j in live
            if wanted == j.payload
            and (priority is None or j.priority == priority)
            and (run_at is None or j.run_at == run_at)
            and (delay is None or _delay(j) == delay)
            and (dedupe_key is None or j.dedupe_key == dedupe_key)
        ]
        if not matching or (count is not None and len(matching) != count):
            asked = _describe(name, wanted, priority, delay, run_at, dedupe_key)
            have = "\n".join(f"  {_show(j)}" for j in live) or "  (none)"
            many = "" if count is None else f" {count} time(s), found {len(matching)}"
            raise AssertionError(
                f"expected {asked} to be enqueued{many}; live jobs of {name!r}:\n{have}"
            )
        return matching[0]

    def assert_not_enqueued(self, entrypoint: str | Any) -> None:
        """No live job of ``entrypoint``."""
        name = _name(entrypoint)
        live = self.enqueued(name)
        if live:
            have = "\n".join(f"  {_show(j)}" for j in live)
            raise AssertionError(f"expected no job of {name!r} enqueued, found:\n{have}")

    def run(self, worker: ThinWorker) -> Ran:
        """Run the queued jobs with ``worker`` (its own handlers and settings, on this
        database) until a claim finds nothing due and nothing runs; jobs its handlers enqueue
        run too. Returns what happened."""
        before = [j.id for j in self.enqueued()]
        saved = worker.dsn
        worker.dsn = self.dsn
        try:
            worker.run(until_empty=True)
        finally:
            worker.dsn = saved
        return self._ran(before)

    async def arun(self, worker: ThinWorker) -> Ran:
        """The async form of :meth:`run`, for an async test."""
        before = [j.id for j in self.enqueued()]
        saved = worker.dsn
        worker.dsn = self.dsn
        try:
            await worker.arun(until_empty=True)
        finally:
            worker.dsn = saved
        return self._ran(before)

    def _ran(self, before: list[int]) -> Ran:
        results = self._admin.job_results(before) if before else []
        return Ran(results=results, left=self.enqueued())


def _name(entrypoint: str | Any) -> str:
    return entrypoint if isinstance(entrypoint, str) else str(entrypoint.name)


def _delay(job: JobInfo) -> timedelta | None:
    return None if job.run_at is None else job.run_at - job.enqueued_at


def _show(job: JobInfo) -> str:
    delay = _delay(job)
    return (
        f"job {job.id}: {job.status}, payload {job.payload!r}, priority {job.priority}"
        + (f", delay {delay}" if delay else "")
        + (f", dedupe_key {job.dedupe_key!r}" if job.dedupe_key else "")
    )


def _describe(
    name: str,
    payload: Any,
    priority: int | None,
    delay: timedelta | None,
    run_at: datetime | None,
    dedupe_key: str | None,
) -> str:
    parts = [f"a job of {name!r}"]
    if payload is not ANY:
        parts.append(f"payload {payload!r}")
    for label, value in (
        ("priority", priority),
        ("delay", delay),
        ("run_at", run_at),
        ("dedupe_key", dedupe_key),
    ):
        if value is not None:
            parts.append(f"{label} {value!r}")
    return ", ".join(parts)
