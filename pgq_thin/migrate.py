"""Install, upgrade and remove the ``pgq`` schema.

Every public function takes either a DSN string or an open psycopg 3 ``Connection``. A DSN
is connected to and closed again; a connection is borrowed: it must not be inside a
transaction, it is used for one transaction of ours, and it is handed back open with its
``autocommit`` setting as found.

:func:`upgrade` runs, in one transaction under a transaction-level advisory lock (so any
number of processes may install at the same time): refuse a ``pgq`` schema that is not ours
(SkyTools PgQ uses that name too), create schema ``pgq`` with our marker comment if it is
missing, then Alembic ``upgrade`` on that same connection, which applies the packaged SQL
migration files verbatim and records the revision in ``pgq.alembic_version``. How a target
becomes a connection, and how Alembic runs on it, is :mod:`pgq_thin._migrate_runner`.

A schema is ours when its comment starts with ``pgq-thin``. An empty unmarked ``pgq`` schema
(for example one a DBA created ahead of the install) is adopted; a non-empty unmarked one is
refused with :class:`~pgq_thin.errors.ForeignSchemaError` and nothing is changed.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

import sqlalchemy
import sqlalchemy.exc
from alembic.util import CommandError

from pgq_thin import __version__, sqlfiles
from pgq_thin._migrate_runner import APPLICATION_NAME as APPLICATION_NAME  # its home before
from pgq_thin._migrate_runner import Target, alembic_upgrade
from pgq_thin._migrate_runner import connection as _connection
from pgq_thin.errors import ForeignSchemaError, MigrationError
from pgq_thin.migrations import SqlScriptDirectory

__all__ = [
    "LOCK_KEY",
    "ROLES",
    "SCHEMA",
    "Target",
    "UninstallResult",
    "current",
    "downgrade",
    "head",
    "sql",
    "uninstall",
    "uninstall_in_transaction",
    "upgrade",
    "upgrade_in_transaction",
]

log = logging.getLogger(__name__)

SCHEMA = "pgq"
ROLES = ("pgq_producer", "pgq_worker", "pgq_reader", "pgq_admin")
MARKER = "pgq-thin"
LOCK_KEY = 0x7067712D7468696E  # the bytes of "pgq-thin" as one bigint
#: Seconds :func:`upgrade` and :func:`uninstall` wait for the install lock by default. Any role
#: that can connect can take an advisory lock, so the wait is bounded and a timeout names the
#: sessions holding it.
LOCK_TIMEOUT = 120.0
# --- Every SQL statement this module runs itself. ---------------------------------------------
# The queue's own SQL lives in sql/; these few statements only guard and bootstrap the schema.

_SCHEMA_COMMENT = (
    "pgq-thin job queue: tables, types and functions managed by pgq_thin.migrate; "
    "do not edit by hand"
)
_LOCK = f"SELECT pg_advisory_xact_lock({LOCK_KEY})"
_TRY_LOCK = f"SELECT pg_try_advisory_xact_lock({LOCK_KEY})"
_LOCK_TIMEOUT_NOW = "SELECT current_setting('lock_timeout')"
_SET_LOCK_TIMEOUT = "SELECT set_config('lock_timeout', %s, true)"
# Sessions of this database holding the install lock: pid, role, application_name.
_LOCK_HOLDERS = f"""\
SELECT l.pid, a.usename, a.application_name
  FROM pg_locks l
  JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND l.classid::text::bigint = {LOCK_KEY >> 32}
   AND l.objid::text::bigint = {LOCK_KEY & 0xFFFFFFFF}
 ORDER BY l.pid"""
# (exists, comment, holds objects) of schema pgq; no row when it does not exist.
_SCHEMA_STATE = """\
SELECT obj_description(n.oid, 'pg_namespace'),
       EXISTS (SELECT 1 FROM pg_depend d
                WHERE d.refclassid = 'pg_namespace'::regclass AND d.refobjid = n.oid)
  FROM pg_namespace n
 WHERE n.nspname = 'pgq'"""
_CREATE_SCHEMA = "CREATE SCHEMA pgq"
_COMMENT_SCHEMA = f"COMMENT ON SCHEMA pgq IS '{_SCHEMA_COMMENT}'"
_VERSION_TABLE_EXISTS = "SELECT to_regclass('pgq.alembic_version') IS NOT NULL"
_CURRENT_VERSION = "SELECT version_num FROM pgq.alembic_version"
_DROP_SCHEMA = "DROP SCHEMA pgq CASCADE"
#: What an offline (``--sql``) :func:`pgq_thin.alembic.downgrade_pgq` writes.
SCRIPT_DROP_SCHEMA = "DROP SCHEMA IF EXISTS pgq CASCADE;"
_DROP_ROLE = "DROP ROLE IF EXISTS {role}"

# The DBA install script (sql()). The version table is the one Alembic itself creates, so an
# install applied with psql is recognised by a later upgrade().
_SCRIPT_GUARD = """\
DO $pgq_thin$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_namespace n
                WHERE n.nspname = 'pgq'
                  AND coalesce(obj_description(n.oid, 'pg_namespace'), '') NOT LIKE 'pgq-thin%'
                  AND EXISTS (SELECT 1 FROM pg_depend d
                               WHERE d.refclassid = 'pg_namespace'::regclass
                                 AND d.refobjid = n.oid)) THEN
        RAISE EXCEPTION 'schema pgq exists and was not created by pgq-thin (SkyTools PgQ?); '
                        'refusing to install into it'
            USING ERRCODE = 'PQ900';
    END IF;
END
$pgq_thin$;"""
_SCRIPT_CREATE_SCHEMA = "CREATE SCHEMA IF NOT EXISTS pgq;"
_SCRIPT_VERSION_TABLE = """\
CREATE TABLE IF NOT EXISTS pgq.alembic_version (
    version_num VARCHAR(32) NOT NULL,
    CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);"""
_SCRIPT_EXPECT_VERSION = """\
DO $pgq_thin$
DECLARE
    found text := (SELECT string_agg(version_num, ', ') FROM pgq.alembic_version);
BEGIN
    IF found IS DISTINCT FROM {expected} THEN
        RAISE EXCEPTION 'pgq-thin schema is at revision %, this script expects %',
            coalesce(found, 'none'), coalesce({expected}, 'none');
    END IF;
END
$pgq_thin$;"""
_SCRIPT_SET_VERSION = """\
DELETE FROM pgq.alembic_version;
INSERT INTO pgq.alembic_version (version_num) VALUES ('{revision}');"""
_SAVEPOINT = "SAVEPOINT pgq_thin_install_lock"
_ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO SAVEPOINT pgq_thin_install_lock"
_RELEASE_SAVEPOINT = "RELEASE SAVEPOINT pgq_thin_install_lock"
#: The LockNotAvailable SQLSTATE, for any driver (psycopg 3 ``sqlstate``, psycopg2 ``pgcode``).
_LOCK_NOT_AVAILABLE = "55P03"

# -----------------------------------------------------------------------------------------------


class _SchemaState(enum.Enum):
    MISSING = "missing"
    OURS = "ours"
    EMPTY_UNMARKED = "empty and unmarked"
    FOREIGN = "foreign"


@dataclass(frozen=True)
class UninstallResult:
    """What :func:`uninstall` removed."""

    schema_dropped: bool
    roles_dropped: list[str] = field(default_factory=list)
    roles_kept: dict[str, str] = field(default_factory=dict)  # role -> why it was kept


def upgrade(
    target: Target, revision: str = "head", *, lock_timeout: float = LOCK_TIMEOUT
) -> str | None:
    """Install schema ``pgq`` or upgrade it to ``revision``; returns the revision now installed.

    Safe to call from several processes at once and a no-op when already up to date.
    Raises :class:`ForeignSchemaError` when a ``pgq`` schema exists that is not ours, and
    :class:`MigrationError` when the install lock is not free within ``lock_timeout`` seconds.
    """
    with _connection(target) as conn, conn.begin():
        _take_lock(conn, lock_timeout)
        state = _schema_state(conn)
        if state is _SchemaState.FOREIGN:
            _refuse_foreign()
        if state is _SchemaState.MISSING:
            conn.exec_driver_sql(_CREATE_SCHEMA)
        if state is not _SchemaState.OURS:
            conn.exec_driver_sql(_COMMENT_SCHEMA)
        try:
            alembic_upgrade(conn, revision)
        except CommandError as err:  # e.g. an unknown revision
            raise MigrationError(f"cannot upgrade to {revision!r}: {err}") from err
        installed = _current_version(conn)
    log.info("pgq-thin schema at revision %s", installed)
    return installed


def uninstall(target: Target, *, lock_timeout: float = LOCK_TIMEOUT) -> UninstallResult:
    """Drop schema ``pgq`` with everything in it, then try to drop the roles ``pgq_producer``,
    ``pgq_worker``, ``pgq_reader`` and ``pgq_admin``.

    Roles are cluster-wide: a role still granted something in another database (another
    install of pgq-thin) cannot be dropped, and is kept. Dropping a role also removes its
    memberships, so applications granted a pgq role lose it and need the grant again after a
    reinstall. Raises :class:`ForeignSchemaError` rather than drop a ``pgq`` schema that is
    not ours.
    """
    with _connection(target) as conn, conn.begin():
        _take_lock(conn, lock_timeout)
        state = _schema_state(conn)
        if state is _SchemaState.FOREIGN:
            _refuse_foreign()
        dropped = state is not _SchemaState.MISSING
        if dropped:
            conn.exec_driver_sql(_DROP_SCHEMA)
        result = UninstallResult(schema_dropped=dropped)
        for role in ROLES:
            try:
                with conn.begin_nested():
                    conn.exec_driver_sql(_DROP_ROLE.format(role=role))
            except sqlalchemy.exc.DBAPIError as err:
                reason = str(err.orig).splitlines()[0] if err.orig is not None else str(err)
                log.info("kept role %s: %s", role, reason)
                result.roles_kept[role] = reason
            else:
                result.roles_dropped.append(role)
    return result


def downgrade(target: Target, revision: str = "base") -> UninstallResult:
    """Migrations are forward-only: the only downgrade is to ``base``, i.e. :func:`uninstall`."""
    if revision != "base":
        raise MigrationError(
            f"cannot downgrade to {revision!r}: pgq-thin migrations are forward-only; "
            "the only downgrade is to 'base', which uninstalls schema pgq"
        )
    return uninstall(target)


def current(target: Target) -> str | None:
    """The installed revision, or None when pgq-thin is not installed."""
    with _connection(target) as conn, conn.begin():
        state = _schema_state(conn)
        if state is _SchemaState.FOREIGN:
            _refuse_foreign()
        if state is _SchemaState.MISSING:
            return None
        return _current_version(conn)


def head() -> str:
    """The newest revision this package ships."""
    heads = SqlScriptDirectory.packaged().get_heads()
    if len(heads) != 1:
        raise MigrationError(f"pgq_thin ships {len(heads)} migration heads, expected one")
    return heads[0]


def sql(from_revision: str | None = None) -> str:
    """The install (or, from ``from_revision``, the upgrade) script for DBAs to apply by hand.

    One transaction: the advisory lock, the foreign-schema guard, schema ``pgq`` and Alembic's
    version table, every migration file verbatim, then the version row. It checks the revision
    it starts from, so it cannot be applied twice or to the wrong version. Apply it with
    ``psql -v ON_ERROR_STOP=1 -f FILE``; a later :func:`upgrade` takes over from it.
    """
    migrations = sqlfiles.migrations()
    target = migrations[-1].revision if migrations else None
    action = "install" if from_revision is None else f"upgrade from revision {from_revision}"
    parts = [
        f"-- pgq-thin {__version__}: {action} to revision {target} of schema pgq.",
        "-- Generated by `pgq-thin sql`. Apply with: psql -v ON_ERROR_STOP=1 -f THIS_FILE",
        "",
        "BEGIN;",
        f"SET LOCAL lock_timeout = '{int(LOCK_TIMEOUT)}s';",
        _LOCK + ";",
        "SET LOCAL lock_timeout TO DEFAULT;",
        script_body(from_revision),
        "COMMIT;",
        "",
    ]
    return "\n".join(parts)


def script_body(from_revision: str | None = None, to_revision: str = "head") -> str:
    """The statements of :func:`sql` without its transaction and lock: the guard, schema ``pgq``,
    the version table, the check of the revision it starts from, the migration files after
    ``from_revision`` up to ``to_revision`` verbatim, and the version row. What an offline
    (``alembic upgrade --sql``) run of :func:`pgq_thin.alembic.upgrade_pgq` writes into the
    application's script, inside the application's transaction."""
    migrations = sqlfiles.migrations()
    revisions = [m.revision for m in migrations]
    for name in (from_revision, None if to_revision == "head" else to_revision):
        if name is not None and name not in revisions:
            raise MigrationError(f"unknown revision {name!r}; known: {', '.join(revisions)}")
    start = 0 if from_revision is None else revisions.index(from_revision) + 1
    end = len(revisions) if to_revision == "head" else revisions.index(to_revision) + 1
    todo = migrations[start:end]
    target = revisions[end - 1] if end else None
    expected = "NULL" if from_revision is None else f"'{from_revision}'"
    parts = [
        _SCRIPT_GUARD,
        _SCRIPT_CREATE_SCHEMA,
        # An upgrade keeps the comment the installed migrations set (it marks the schema ours);
        # the check below refuses a schema that is missing or at another revision.
        *([_COMMENT_SCHEMA + ";"] if from_revision is None else []),
        _SCRIPT_VERSION_TABLE,
        _SCRIPT_EXPECT_VERSION.format(expected=expected),
    ]
    for migration in todo:
        parts += ["", f"-- ---- revision {migration.revision}: {migration.name} ----", ""]
        parts.append(migration.read().rstrip())
    if target is not None and todo:
        parts += ["", _SCRIPT_SET_VERSION.format(revision=target)]
    return "\n".join(parts)


#: Runs one statement in the caller's transaction: ``(statement, params)`` (params None: the
#: text goes to the driver untouched, several statements allowed); the rows, or [] for none.
Execute = Callable[[str, "tuple[Any, ...] | None"], "list[tuple[Any, ...]]"]


def sqlalchemy_execute(conn: sqlalchemy.Connection) -> Execute:
    """The :data:`Execute` of a SQLAlchemy connection (any PostgreSQL driver)."""

    def execute(statement: str, params: tuple[Any, ...] | None) -> list[tuple[Any, ...]]:
        if params is None:
            result = conn.exec_driver_sql(statement, execution_options={"no_parameters": True})
        else:
            result = conn.exec_driver_sql(statement, params)
        return [tuple(row) for row in result.all()] if result.returns_rows else []

    return execute


def upgrade_in_transaction(
    conn: sqlalchemy.Connection, revision: str = "head", *, lock_timeout: float = LOCK_TIMEOUT
) -> str | None:
    """Install schema ``pgq`` or upgrade it to ``revision`` inside the transaction ``conn`` is
    in (any PostgreSQL driver SQLAlchemy has: psycopg 3 or psycopg2); returns the revision now
    installed. Nothing is committed here: the caller's commit or rollback decides for pgq's
    changes and its own together. This is what :func:`pgq_thin.alembic.upgrade_pgq` runs in an
    application's Alembic revision.

    The same steps as :func:`upgrade` (the install lock, now held until the caller's
    transaction ends; the foreign-schema refusal; the schema and its marker), then the pending
    migration files are run verbatim and the revision is written to ``pgq.alembic_version``,
    the table :func:`upgrade` and ``pgq-thin install`` read, so either takes over later. A
    schema already at or past ``revision`` is left as it is (migrations are forward-only).
    """
    return upgrade_with(sqlalchemy_execute(conn), revision, lock_timeout=lock_timeout)


def upgrade_with(
    execute: Execute, revision: str = "head", *, lock_timeout: float = LOCK_TIMEOUT
) -> str | None:
    """:func:`upgrade_in_transaction` over any :data:`Execute` (Django's migrations use it)."""
    migrations = sqlfiles.migrations()
    revisions = [m.revision for m in migrations]
    wanted = revisions[-1] if revision == "head" else revision
    if wanted not in revisions:
        raise MigrationError(
            f"cannot upgrade to {revision!r}: unknown revision; known: {', '.join(revisions)}"
        )
    _lock_in_transaction(execute, lock_timeout)
    rows = execute(_SCHEMA_STATE, ())
    if rows and not str(rows[0][0] or "").startswith(MARKER) and rows[0][1]:
        _refuse_foreign()
    if not rows:
        execute(_CREATE_SCHEMA, None)
    if not rows or not str(rows[0][0] or "").startswith(MARKER):
        execute(_COMMENT_SCHEMA, None)
    execute(_SCRIPT_VERSION_TABLE, None)
    versions = [str(r[0]) for r in execute(_CURRENT_VERSION, ())]
    if len(versions) > 1:
        raise MigrationError(f"pgq.alembic_version holds several revisions: {versions}")
    installed = versions[0] if versions else None
    if installed is not None and installed not in revisions:
        raise MigrationError(
            f"schema pgq is at revision {installed}, which this package (pgq-thin "
            f"{__version__}) does not ship; upgrade the package"
        )
    start = 0 if installed is None else revisions.index(installed) + 1
    end = revisions.index(wanted) + 1
    if start >= end:
        return installed
    for migration in migrations[start:end]:
        log.info("pgq-thin: applying migration %s (%s)", migration.revision, migration.name)
        execute(migration.read(), None)
    execute(_SCRIPT_SET_VERSION.format(revision=wanted), None)
    return wanted


def uninstall_in_transaction(
    conn: sqlalchemy.Connection, *, lock_timeout: float = LOCK_TIMEOUT
) -> bool:
    """Drop schema ``pgq`` with everything in it inside the transaction ``conn`` is in; returns
    whether there was one. The roles are kept (they are cluster-wide and may serve another
    database; :func:`uninstall` drops them when it can). Refuses a ``pgq`` schema that is not
    ours. What :func:`pgq_thin.alembic.downgrade_pgq` runs."""
    return uninstall_with(sqlalchemy_execute(conn), lock_timeout=lock_timeout)


def uninstall_with(execute: Execute, *, lock_timeout: float = LOCK_TIMEOUT) -> bool:
    """:func:`uninstall_in_transaction` over any :data:`Execute`."""
    _lock_in_transaction(execute, lock_timeout)
    rows = execute(_SCHEMA_STATE, ())
    if not rows:
        return False
    if not str(rows[0][0] or "").startswith(MARKER) and rows[0][1]:
        _refuse_foreign()
    execute(_DROP_SCHEMA, None)
    return True


def _sqlstate(err: BaseException) -> str | None:
    """The SQLSTATE of a driver error, under SQLAlchemy's (``orig``) or Django's (cause) wrap."""
    for candidate in (err, getattr(err, "orig", None), err.__cause__):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if code:
            return str(code)
    return None


def _lock_in_transaction(execute: Execute, timeout: float) -> None:
    """The install lock in the caller's transaction (held until it ends), waited for at most
    ``timeout`` seconds behind a savepoint, so a timeout names the holders and leaves the
    caller's transaction usable."""
    if execute(_TRY_LOCK, ())[0][0]:
        return
    previous = execute(_LOCK_TIMEOUT_NOW, ())[0][0]
    execute(_SET_LOCK_TIMEOUT, (f"{max(1, round(timeout * 1000))}ms",))
    execute(_SAVEPOINT, None)
    try:
        execute(_LOCK, ())
    except Exception as err:
        if _sqlstate(err) != _LOCK_NOT_AVAILABLE:
            raise
        execute(_ROLLBACK_TO_SAVEPOINT, None)
        holders = ", ".join(
            f"pid {pid} (role {user}, application {app!r})"
            for pid, user, app in execute(_LOCK_HOLDERS, ())
        )
        raise MigrationError(
            f"the pgq-thin install lock (advisory lock {LOCK_KEY}) was not free within "
            f"{timeout:g} s; held by {holders or 'a session that has ended since'}. Another "
            "install may be running; else end that session (pg_terminate_backend) and retry"
        ) from None
    execute(_RELEASE_SAVEPOINT, None)
    execute(_SET_LOCK_TIMEOUT, (previous,))


# --- helpers --------------------------------------------------------------------------------


def _refuse_foreign() -> NoReturn:
    raise ForeignSchemaError(
        "schema pgq exists and was not created by pgq-thin (SkyTools PgQ uses the same name); "
        "refusing to touch it. Use another database, or rename or drop that schema first."
    )


def _take_lock(conn: sqlalchemy.Connection, timeout: float) -> None:
    """The install lock, waited for at most ``timeout`` seconds: any role that can connect
    could hold it, so a timeout raises MigrationError naming the holders instead of hanging."""
    if conn.exec_driver_sql(_TRY_LOCK).scalar_one():
        return
    previous = conn.exec_driver_sql(_LOCK_TIMEOUT_NOW).scalar_one()
    conn.exec_driver_sql(_SET_LOCK_TIMEOUT, (f"{max(1, round(timeout * 1000))}ms",))
    try:
        with conn.begin_nested():
            conn.exec_driver_sql(_LOCK)
    except sqlalchemy.exc.OperationalError as err:
        orig = err.orig
        code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
        if code != _LOCK_NOT_AVAILABLE:
            raise
        holders = ", ".join(
            f"pid {pid} (role {user}, application {app!r})"
            for pid, user, app in conn.exec_driver_sql(_LOCK_HOLDERS).all()
        )
        raise MigrationError(
            f"the pgq-thin install lock (advisory lock {LOCK_KEY}) was not free within "
            f"{timeout:g} s; held by {holders or 'a session that has ended since'}. Another "
            "install may be running; else end that session (pg_terminate_backend) and retry"
        ) from None
    conn.exec_driver_sql(_SET_LOCK_TIMEOUT, (previous,))


def _schema_state(conn: sqlalchemy.Connection) -> _SchemaState:
    row = conn.exec_driver_sql(_SCHEMA_STATE).one_or_none()
    if row is None:
        return _SchemaState.MISSING
    comment, has_objects = row
    if comment is not None and str(comment).startswith(MARKER):
        return _SchemaState.OURS
    return _SchemaState.FOREIGN if has_objects else _SchemaState.EMPTY_UNMARKED


def _current_version(conn: sqlalchemy.Connection) -> str | None:
    if not conn.exec_driver_sql(_VERSION_TABLE_EXISTS).scalar_one():
        return None
    versions = conn.exec_driver_sql(_CURRENT_VERSION).scalars().all()
    if len(versions) > 1:
        raise MigrationError(f"pgq.alembic_version holds several revisions: {versions}")
    return str(versions[0]) if versions else None
