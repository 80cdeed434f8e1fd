"""Exceptions raised by pgq_thin.

Every exception of our own derives from :class:`PgqThinError`. Errors raised by the database
functions carry a SQLSTATE of class ``PQ`` (see ``docs/errors.md``); :func:`from_psycopg` maps
them to the :class:`PgqError` subclasses below by SQLSTATE, never by message text. A few
PostgreSQL codes met by a ``pgq`` call mean the database is not set up for it (schema missing or
older than the client, a role without the privilege): each becomes a :class:`SetupError`, whose
message says what to do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg


class PgqThinError(Exception):
    """Base class of every error raised by pgq_thin itself."""


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
    """PQ007: a dedupe key is already held by a live job."""

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


class SetupError(PgqThinError):
    """The database is not set up for this call; retrying cannot help, an operator can.

    ``sqlstate`` is PostgreSQL's code, ``message`` the server's message, ``hint`` what to do.
    ``str()`` gives both on one line. The psycopg error is ``__cause__``.
    """

    def __init__(self, message: str, *, sqlstate: str, hint: str):
        super().__init__(f"{message}; {hint}")
        self.message = message
        self.sqlstate = sqlstate
        self.hint = hint


class SchemaNotInstalled(SetupError):
    """3F000, 42P01 or 42883 from a ``pgq`` call: schema ``pgq`` is missing, or older than this
    client (a function or view it calls does not exist there)."""


class PrivilegeMissing(SetupError):
    """42501 from a ``pgq`` call: the role lacks the privilege; the hint names the pgq role."""


#: PostgreSQL codes that mean "schema pgq is missing or too old" when a pgq call meets them.
SCHEMA_MISSING_CODES = frozenset({"3F000", "42P01", "42883"})
PRIVILEGE_MISSING_CODE = "42501"
INSTALL_HINT = (
    "schema pgq is not installed here, or is older than this client: run `pgq-thin install`"
)


def setup_hint(
    sqlstate: str | None, needs: str | None = None, user: str | None = None
) -> str | None:
    """What to do about a PostgreSQL error from a pgq call, by SQLSTATE (None: nothing to add).

    ``needs`` says who may make the call (a pgq role, or the schema owner), ``user`` is the
    login role, named in the suggested grant.
    """
    if sqlstate in SCHEMA_MISSING_CODES:
        return INSTALL_HINT
    if sqlstate == PRIVILEGE_MISSING_CODE:
        who = f"role {user}" if user else "this role"
        if needs is None:
            return f"{who} lacks a privilege on schema pgq (see the roles in docs/operations.md)"
        if needs.startswith("pgq_"):
            role = needs.split()[0]
            return f"{who} needs {needs}: grant {role} to {user or '<login role>'}"
        return f"{who} cannot do this: it needs {needs}"
    return None


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


def from_psycopg(
    err: psycopg.Error, *, needs: str | None = None, user: str | None = None
) -> PgqThinError | None:
    """Our exception for a psycopg error raised by a ``pgq`` call, else None.

    Any SQLSTATE of class ``PQ`` maps to a :class:`PgqError`; a code without a class of its own
    (a newer server) becomes a plain :class:`PgqError` carrying the code. The codes of a
    missing schema or privilege map to :class:`SetupError` (see :func:`setup_hint`).
    """
    sqlstate = err.sqlstate
    if sqlstate is None:
        return None
    message = err.diag.message_primary or str(err)
    mapped: PgqThinError
    if sqlstate.startswith("PQ"):
        cls = BY_SQLSTATE.get(sqlstate, PgqError)
        mapped = cls(message, sqlstate=sqlstate, hint=err.diag.message_hint)
    elif sqlstate in SCHEMA_MISSING_CODES:
        mapped = SchemaNotInstalled(message, sqlstate=sqlstate, hint=INSTALL_HINT)
    elif sqlstate == PRIVILEGE_MISSING_CODE:
        hint = setup_hint(sqlstate, needs, user) or ""
        mapped = PrivilegeMissing(message, sqlstate=sqlstate, hint=hint)
    else:
        return None
    mapped.__cause__ = err
    return mapped


@contextmanager
def translated(*, needs: str | None = None, user: str | None = None) -> Iterator[None]:
    """Re-raise psycopg errors of a ``pgq`` call as our exceptions (see :func:`from_psycopg`);
    others unchanged."""
    try:
        yield
    except psycopg.Error as err:
        mapped = from_psycopg(err, needs=needs, user=user)
        if mapped is None:
            raise
        raise mapped from err


def one_line(err: BaseException) -> str:
    """The first line of an error's text (its type name when it has none)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
