"""Exceptions raised by pgq_thin.

Every exception of our own derives from :class:`PgqThinError`. Errors raised by the database
functions carry a SQLSTATE of class ``PQ`` (see ``docs/errors.md``); :func:`from_psycopg` maps
them to the :class:`PgqError` subclasses below by SQLSTATE, never by message text. A few
PostgreSQL codes met by a ``pgq`` call mean the database is not set up for it (schema missing or
older than the client, a role without a grant): :func:`setup_error` turns them into a
:class:`SetupError` whose message names the problem and the fix.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg


class PgqThinError(Exception):
    """Base class of every error raised by pgq_thin itself."""


class ExtraNotInstalled(PgqThinError, ImportError):
    """An option needs a package of an extra that is not installed; the message names the
    extra to install (``pip install 'pgq-thin[metrics]'``)."""


def require_extra(module: str, extra: str, what: str) -> None:
    """Raise :class:`ExtraNotInstalled` unless ``module`` can be imported (without importing
    it); ``what`` names the option that needs it."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ExtraNotInstalled(
            f"{what} needs {module}, which is not installed: pip install 'pgq-thin[{extra}]'",
            name=module,
        )


class SetupError(PgqThinError):
    """The database is not set up for this client, and no retry can fix that: schema ``pgq`` is
    missing (or older than the client), or the role lacks the grants it needs. The message names
    the problem and the fix; ``sqlstate`` is the server's code; the psycopg error is ``__cause__``.
    A worker's run ends at once on it (its supervisor does not restart)."""

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class SchemaNotInstalled(SetupError):
    """3F000, 42P01 or 42883 from a ``pgq`` call: schema ``pgq`` is missing, or older than this
    client (a function or view it calls does not exist there)."""


class PrivilegeMissing(SetupError):
    """42501 from a ``pgq`` call: the role lacks a grant; the message names the one it needs."""


#: SQLSTATEs that mean "schema pgq is missing or older than the client" from a ``pgq`` call:
#: 3F000 invalid_schema_name, 42P01 undefined_table, 42883 undefined_function.
SCHEMA_SQLSTATES = frozenset({"3F000", "42P01", "42883"})
#: 42501 insufficient_privilege.
PRIVILEGE_SQLSTATE = "42501"
SETUP_SQLSTATES = SCHEMA_SQLSTATES | {PRIVILEGE_SQLSTATE}
INSTALL_FIX = "run `pgq-thin install` (or `pgq-thin upgrade`)"


def setup_error(
    err: psycopg.Error, *, role: str, grant: str, needs: str = "pgq_worker"
) -> SetupError | None:
    """The :class:`SetupError` for a psycopg error of a ``pgq`` call that no retry can fix,
    else None. ``role`` is the connecting role, ``needs`` what the call needs (a pgq role, or
    the owner's rights), ``grant`` the statement (or the advice) that gives it that."""
    sqlstate = err.sqlstate
    if sqlstate not in SETUP_SQLSTATES:
        return None
    detail = (err.diag.message_primary or str(err)).strip()
    mapped: SetupError
    if sqlstate == PRIVILEGE_SQLSTATE:
        mapped = PrivilegeMissing(
            f"role {role} lacks {needs} ({detail}): {grant}", sqlstate=sqlstate
        )
    else:
        mapped = SchemaNotInstalled(
            f"schema pgq is not installed or is older than this client ({detail}): " + INSTALL_FIX,
            sqlstate=sqlstate,
        )
    mapped.__cause__ = err
    return mapped


def setup_hint(sqlstate: str | None, needs: str) -> str | None:
    """What to do about a PostgreSQL error of a command that is not one ``pgq`` call (the
    schema commands), by SQLSTATE; None: nothing to add. ``needs`` says who may run it."""
    if sqlstate in SCHEMA_SQLSTATES:
        return f"schema pgq is not installed or is older than this client: {INSTALL_FIX}"
    if sqlstate == PRIVILEGE_SQLSTATE:
        return f"this needs {needs}"
    return None


class MigrationError(PgqThinError):
    """Installing, upgrading or removing the ``pgq`` schema failed or was refused."""


class PgqError(PgqThinError):
    """An error raised by a ``pgq`` SQL function, identified by its SQLSTATE.

    ``sqlstate`` is the code (``PQ001``...), ``message`` the server's message (it names the bad
    value), ``hint`` the server's hint if any. The original psycopg error is ``__cause__``.
    """

    sqlstate: str = "PQ000"

    def __init__(self, message: str, *, sqlstate: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        if sqlstate is not None:
            self.sqlstate = sqlstate
        self.hint = hint


class InvalidEntrypoint(PgqError):
    """PQ001: an entrypoint name is NULL, empty, too long or holds control characters."""

    sqlstate = "PQ001"


class InvalidBatchSize(PgqError):
    """PQ002: a batch size outside 1..10000."""

    sqlstate = "PQ002"


class ArrayLengthMismatch(PgqError):
    """PQ003: the arrays of a batch call are not all the same length."""

    sqlstate = "PQ003"


class InvalidStatus(PgqError):
    """PQ004: a completion status other than successful, failed or canceled."""

    sqlstate = "PQ004"


class InvalidPriority(PgqError):
    """PQ005: a priority outside -32768..32767."""

    sqlstate = "PQ005"


class PayloadTooLarge(PgqError):
    """PQ006: a payload over the size limit (1 MiB)."""

    sqlstate = "PQ006"


class DedupeConflict(PgqError):
    """PQ007: a dedupe key is held by a live job, or kept by a finished one (dedupe_period)."""

    sqlstate = "PQ007"


class InvalidConfig(PgqError):
    """PQ008: a policy value out of range (pgq.configure, pgq.prune_history)."""

    sqlstate = "PQ008"


class InvalidArgument(PgqError):
    """PQ009: another bad argument (NULL worker id, NULL element, bad headers, ...)."""

    sqlstate = "PQ009"


class WrongIsolationLevel(PgqError):
    """PQ010: pgq.claim called outside READ COMMITTED."""

    sqlstate = "PQ010"


class InvalidSchedule(PgqError):
    """PQ011: a bad schedule name, cron expression, time zone or catch-up policy."""

    sqlstate = "PQ011"


class ForeignSchemaError(MigrationError, PgqError):
    """PQ900: schema ``pgq`` exists but was not created by pgq-thin (for example SkyTools PgQ).

    pgq-thin never writes into or drops a ``pgq`` schema it does not own.
    """

    sqlstate = "PQ900"


#: SQLSTATE -> exception class. The one place the codes of docs/errors.md meet Python.
BY_SQLSTATE: dict[str, type[PgqError]] = {
    cls.sqlstate: cls
    for cls in (
        InvalidEntrypoint,
        InvalidBatchSize,
        ArrayLengthMismatch,
        InvalidStatus,
        InvalidPriority,
        PayloadTooLarge,
        DedupeConflict,
        InvalidConfig,
        InvalidArgument,
        WrongIsolationLevel,
        InvalidSchedule,
        ForeignSchemaError,
    )
}


def from_psycopg(err: psycopg.Error) -> PgqError | None:
    """The :class:`PgqError` for a psycopg error raised by a ``pgq`` function, else None.

    Any SQLSTATE of class ``PQ`` maps to an exception; a code without a class of its own (a
    newer server) becomes a plain :class:`PgqError` carrying the code.
    """
    sqlstate = err.sqlstate
    if sqlstate is None or not sqlstate.startswith("PQ"):
        return None
    cls = BY_SQLSTATE.get(sqlstate, PgqError)
    message = err.diag.message_primary or str(err)
    mapped = cls(message, sqlstate=sqlstate, hint=err.diag.message_hint)
    mapped.__cause__ = err
    return mapped


@contextmanager
def translated() -> Iterator[None]:
    """Re-raise psycopg errors of class ``PQ`` as their :class:`PgqError`; others unchanged."""
    try:
        yield
    except psycopg.Error as err:
        mapped = from_psycopg(err)
        if mapped is None:
            raise
        raise mapped from err


def one_line(err: BaseException) -> str:
    """The first line of an error's text (its type name when it has none)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
