"""``install``, ``upgrade``, ``uninstall``, ``sql``, ``version``: schema pgq itself."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import psycopg

from pgq_thin.cli._common import EXIT_ERROR, EXIT_OK, Command, UsageError, dsn, out
from pgq_thin.errors import one_line, setup_hint

if TYPE_CHECKING:
    from types import ModuleType


def _migrate() -> ModuleType:
    """:mod:`pgq_thin.migrate`, imported when a command needs it (it loads SQLAlchemy and
    Alembic, which ``version`` and the other commands do without)."""
    from pgq_thin import migrate

    return migrate


#: Who may install, upgrade or remove schema pgq (docs/operations.md, "Rights").
OWNER = (
    "a role that may create schema pgq in this database (its owner; CREATEROLE the first time "
    "pgq-thin is installed in the cluster)"
)


def _add_install(parser: argparse.ArgumentParser) -> None:
    pass


def _cmd_install(args: argparse.Namespace) -> int:
    return _upgrade_to(args, "head")


def _add_upgrade(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--revision", default="head", help="revision to upgrade to (default: %(default)s)"
    )


def _cmd_upgrade(args: argparse.Namespace) -> int:
    return _upgrade_to(args, args.revision)


def _upgrade_to(args: argparse.Namespace, revision: str) -> int:
    target = dsn(args)
    before = _migrate().current(target)
    after = _migrate().upgrade(target, revision)
    if before == after:
        out(f"pgq-thin schema already at revision {after}")
    elif before is None:
        out(f"installed pgq-thin schema at revision {after}")
    else:
        out(f"upgraded pgq-thin schema from revision {before} to {after}")
    return EXIT_OK


def _add_uninstall(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--yes",
        action="store_true",
        default=False,
        help="really drop schema pgq with every job in it (required; nothing is asked)",
    )


def _cmd_uninstall(args: argparse.Namespace) -> int:
    if not args.yes:
        raise UsageError("uninstall drops schema pgq and every job in it; add --yes to confirm")
    result = _migrate().uninstall(dsn(args))
    out("dropped schema pgq" if result.schema_dropped else "schema pgq was not installed")
    for role in result.roles_dropped:
        out(f"dropped role {role}")
    for role, reason in result.roles_kept.items():
        out(f"kept role {role}: {reason}")
    return EXIT_OK


def _add_sql(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from",
        dest="from_revision",
        metavar="REVISION",
        default=None,
        help="emit only the upgrade from this installed revision (default: a full install)",
    )


def _cmd_sql(args: argparse.Namespace) -> int:
    sys.stdout.write(_migrate().sql(args.from_revision))
    sys.stdout.flush()
    return EXIT_OK


def _add_version(parser: argparse.ArgumentParser) -> None:
    pass


def _cmd_version(args: argparse.Namespace) -> int:
    """A health check too: exits 1 when the database cannot be reached or read."""
    head = _migrate().head()
    from pgq_thin._version import __version__

    out(f"pgq-thin {__version__}")
    out(f"schema revision shipped: {head}")
    try:
        installed = _migrate().current(dsn(args))
    except psycopg.OperationalError as err:
        out(f"database: not reachable ({one_line(err)})")
        return EXIT_ERROR
    except psycopg.Error as err:
        hint = setup_hint(err.sqlstate, OWNER)
        out(f"database: cannot read the installed revision ({one_line(err)})")
        if hint:
            out(f"  {hint}")
        return EXIT_ERROR
    if installed is None:
        out("database: pgq-thin not installed")
    elif installed == head:
        out(f"database: revision {installed} (up to date)")
    else:
        out(f"database: revision {installed} (upgrade with `pgq-thin upgrade`)")
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "install": Command(
        "install schema pgq, or upgrade it to the newest revision",
        _add_install,
        _cmd_install,
        needs=OWNER,
    ),
    "upgrade": Command(
        "upgrade schema pgq (installs it when missing)", _add_upgrade, _cmd_upgrade, needs=OWNER
    ),
    "uninstall": Command(
        "drop schema pgq and the pgq roles (needs --yes)",
        _add_uninstall,
        _cmd_uninstall,
        needs=OWNER,
    ),
    "sql": Command("print the install SQL script for a DBA to apply", _add_sql, _cmd_sql),
    "version": Command(
        "print the package version and the installed schema revision (exit 1: database "
        "unreachable)",
        _add_version,
        _cmd_version,
        needs=OWNER,
    ),
}
