"""How :mod:`pgq_thin.migrate` reaches the database: a DSN or a borrowed psycopg connection
wrapped for SQLAlchemy (never closed or reset, its ``autocommit`` handed back as found), and
Alembic's ``upgrade`` run on that connection with the revisions made from the SQL files
(:class:`~pgq_thin.migrations.SqlScriptDirectory`). No SQL text of its own: what to run, and
under which lock, is decided in :mod:`pgq_thin.migrate`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeAlias, cast

import psycopg
import sqlalchemy
import sqlalchemy.exc
from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.runtime.migration import MigrationContext, RevisionStep
from psycopg.pq import TransactionStatus
from sqlalchemy.pool import StaticPool

from pgq_thin.errors import MigrationError
from pgq_thin.migrations import SqlScriptDirectory

Target: TypeAlias = "str | psycopg.Connection[Any]"

#: The ``application_name`` of the connections migrate opens from a DSN.
APPLICATION_NAME = "pgq-thin migrate"

_MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def alembic_upgrade(conn: sqlalchemy.Connection, revision: str) -> None:
    """``alembic upgrade <revision>`` on ``conn``, with revisions made from the SQL files."""
    config = alembic_config()
    config.attributes["connection"] = conn
    script = SqlScriptDirectory.packaged()

    def steps(current: Any, context: MigrationContext) -> list[RevisionStep]:
        return script._upgrade_revs(revision, current)

    with (
        _outer_alembic_kept(),
        EnvironmentContext(config, script, fn=steps, destination_rev=revision),
    ):
        script.run_env()


@contextmanager
def _outer_alembic_kept() -> Iterator[None]:
    """Alembic's ``context`` and ``op`` are module-level proxies: entering an
    ``EnvironmentContext`` installs ours, leaving it deletes them. Called from inside an
    application's own Alembic run (its ``env.py``, one of its revisions), that deletion took
    the application's proxies too, and its run then failed with ``KeyError: 'config'``. The
    proxies found on entry are put back on exit."""
    import alembic.context
    import alembic.op

    outer = [vars(module).get("_proxy") for module in (alembic.context, alembic.op)]
    try:
        yield
    finally:
        for proxy in outer:
            if proxy is not None:
                proxy._install_proxy()


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    config.set_main_option("path_separator", "os")
    return config


@contextmanager
def connection(target: Target) -> Iterator[sqlalchemy.Connection]:
    """A SQLAlchemy connection over ``target``; database errors surface as psycopg errors."""
    if isinstance(target, str):
        # named like every connection of the client; a name in the DSN or PGAPPNAME wins
        owned = psycopg.connect(target, autocommit=True, fallback_application_name=APPLICATION_NAME)
        try:
            with borrowed(owned) as conn:
                yield conn
        finally:
            owned.close()
    elif isinstance(target, psycopg.Connection):
        with borrowed(target) as conn:
            yield conn
    else:
        raise TypeError(
            f"expected a DSN string or a psycopg Connection, got {type(target).__name__}"
        )


@contextmanager
def borrowed(raw: psycopg.Connection[Any]) -> Iterator[sqlalchemy.Connection]:
    """Wrap an open psycopg connection for SQLAlchemy without ever closing or resetting it."""
    if raw.closed:
        raise MigrationError("the connection given to pgq_thin.migrate is closed")
    if raw.info.transaction_status != TransactionStatus.IDLE:
        raise MigrationError(
            "the connection given to pgq_thin.migrate is inside a transaction; "
            "commit or roll back first (migrations run in a transaction of their own), or, "
            "inside an Alembic migration, call pgq_thin.alembic.upgrade_pgq() to install pgq "
            "in that migration's transaction"
        )
    autocommit = raw.autocommit
    raw.autocommit = False  # SQLAlchemy's transaction must be a real one
    engine = sqlalchemy.create_engine(
        "postgresql+psycopg://",
        creator=lambda: cast(Any, raw),
        poolclass=StaticPool,
        pool_reset_on_return=None,
    )
    try:
        with engine.connect() as conn:
            yield conn
    except sqlalchemy.exc.DBAPIError as err:
        if isinstance(err.orig, psycopg.Error):
            raise err.orig from None
        raise
    finally:
        _forget_notice_logger(raw)
        if not raw.closed and raw.info.transaction_status == TransactionStatus.IDLE:
            raw.autocommit = autocommit


def _forget_notice_logger(raw: psycopg.Connection[Any]) -> None:
    """Remove the notice handler SQLAlchemy's psycopg dialect adds to every new connection,
    so a borrowed connection does not collect one more with every call."""
    from sqlalchemy.dialects.postgresql import psycopg as dialect_module

    handler = getattr(dialect_module, "_log_notices", None)
    if handler is not None:
        with suppress(ValueError):
            raw.remove_notice_handler(handler)
