"""The ``pgq-thin`` command line.

Each subcommand is a small function registered in ``COMMANDS`` with the function that adds its
arguments. A new subcommand is one ``_add_x``/``_cmd_x`` pair and one entry in ``COMMANDS``.
User errors (bad input, unreachable database, refused install) print one line on stderr and
exit non-zero; tracebacks are for bugs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psycopg

from pgq_thin import __version__, cli_client, migrate
from pgq_thin.dsn import ENV_VAR, resolve_dsn
from pgq_thin.errors import PgqThinError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


class UsageError(PgqThinError):
    """The command line asked for something we refuse to do as asked."""


@dataclass(frozen=True)
class Command:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _out(line: str) -> None:
    print(line, flush=True)


def _dsn(args: argparse.Namespace) -> str:
    return resolve_dsn(getattr(args, "dsn", None))


# --- install / upgrade ------------------------------------------------------------------------


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
    dsn = _dsn(args)
    before = migrate.current(dsn)
    after = migrate.upgrade(dsn, revision)
    if before == after:
        _out(f"pgq-thin schema already at revision {after}")
    elif before is None:
        _out(f"installed pgq-thin schema at revision {after}")
    else:
        _out(f"upgraded pgq-thin schema from revision {before} to {after}")
    return EXIT_OK


# --- uninstall --------------------------------------------------------------------------------


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
    result = migrate.uninstall(_dsn(args))
    _out("dropped schema pgq" if result.schema_dropped else "schema pgq was not installed")
    for role in result.roles_dropped:
        _out(f"dropped role {role}")
    for role, reason in result.roles_kept.items():
        _out(f"kept role {role}: {reason}")
    return EXIT_OK


# --- sql --------------------------------------------------------------------------------------


def _add_sql(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from",
        dest="from_revision",
        metavar="REVISION",
        default=None,
        help="emit only the upgrade from this installed revision (default: a full install)",
    )


def _cmd_sql(args: argparse.Namespace) -> int:
    sys.stdout.write(migrate.sql(args.from_revision))
    sys.stdout.flush()
    return EXIT_OK


# --- version ----------------------------------------------------------------------------------


def _add_version(parser: argparse.ArgumentParser) -> None:
    pass


def _cmd_version(args: argparse.Namespace) -> int:
    head = migrate.head()
    _out(f"pgq-thin {__version__}")
    _out(f"schema revision shipped: {head}")
    try:
        installed = migrate.current(_dsn(args))
    except psycopg.Error as err:
        _out(f"database: not reachable ({_one_line(err)})")
        return EXIT_OK
    if installed is None:
        _out("database: pgq-thin not installed")
    elif installed == head:
        _out(f"database: revision {installed} (up to date)")
    else:
        _out(f"database: revision {installed} (upgrade with `pgq-thin upgrade`)")
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "install": Command(
        "install schema pgq, or upgrade it to the newest revision", _add_install, _cmd_install
    ),
    "upgrade": Command("upgrade schema pgq (installs it when missing)", _add_upgrade, _cmd_upgrade),
    "uninstall": Command(
        "drop schema pgq and the pgq roles (needs --yes)", _add_uninstall, _cmd_uninstall
    ),
    "sql": Command("print the install SQL script for a DBA to apply", _add_sql, _cmd_sql),
    "version": Command(
        "print the package version and the installed schema revision", _add_version, _cmd_version
    ),
    # the thin client (pgq_thin/cli_client.py)
    "run": Command(
        "run a worker: pgq-thin run MODULE:ATTR", cli_client.add_run, cli_client.cmd_run
    ),
    "enqueue": Command(
        "add one job: pgq-thin enqueue ENTRYPOINT [JSON]",
        cli_client.add_enqueue,
        cli_client.cmd_enqueue,
    ),
    "status": Command(
        "per-entrypoint queue status (pgq.queue_stats)",
        cli_client.add_status,
        cli_client.cmd_status,
    ),
    "failed": Command(
        "list dead jobs (pgq.failed_jobs)", cli_client.add_failed, cli_client.cmd_failed
    ),
    "requeue": Command(
        "put dead or canceled jobs back in the queue",
        cli_client.add_requeue,
        cli_client.cmd_requeue,
    ),
    "schedules": Command(
        "list, add or remove cron schedules: pgq-thin schedules [list|add|remove]",
        cli_client.add_schedules,
        cli_client.cmd_schedules,
    ),
    "demo": Command(
        "enqueue a few hundred jobs and run a worker on them, with live progress",
        cli_client.add_demo,
        cli_client.cmd_demo,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--dsn",
        default=argparse.SUPPRESS,  # given before or after the subcommand, the other keeps it
        help=f"database to use (default: ${ENV_VAR}, then libpq's PG* environment variables)",
    )
    parser = argparse.ArgumentParser(
        prog="pgq-thin",
        description="pgq-thin: a PostgreSQL job queue whose logic lives in the database",
        parents=[common],
    )
    parser.add_argument("-V", "--version", action="version", version=f"pgq-thin {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, command in COMMANDS.items():
        # the subparser also takes --dsn, so it may come before or after the subcommand name;
        # SUPPRESS keeps a --dsn given before the subcommand from being reset by the subparser
        sub_parser = sub.add_parser(
            name,
            help=command.help,
            description=command.help,
            parents=[common],
            argument_default=argparse.SUPPRESS,
        )
        command.add_arguments(sub_parser)
        sub_parser.set_defaults(run=command.run)
    return parser


def _one_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except UsageError as err:
        print(f"pgq-thin {args.command}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except (PgqThinError, psycopg.Error) as err:
        print(f"pgq-thin {args.command}: {_one_line(err)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    raise SystemExit(main())
