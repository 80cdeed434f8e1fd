"""Exceptions raised by pgq_thin.

Every exception of our own derives from :class:`PgqThinError`. Errors raised by the database
functions are mapped by SQLSTATE, never by message text.
"""


class PgqThinError(Exception):
    """Base class of every error raised by pgq_thin itself."""


class MigrationError(PgqThinError):
    """Installing, upgrading or removing the ``pgq`` schema failed or was refused."""


class ForeignSchemaError(MigrationError):
    """Schema ``pgq`` exists but was not created by pgq-thin (for example SkyTools PgQ).

    pgq-thin never writes into or drops a ``pgq`` schema it does not own.
    """
