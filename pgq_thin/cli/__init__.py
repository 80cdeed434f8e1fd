"""The ``pgq-thin`` command line: a thin layer over the public API.

Each command module of this package (one per group of commands, listed in ``COMMANDS``)
parses its arguments, calls :mod:`pgq_thin.migrate`, :class:`~pgq_thin.queue.Queue`,
:class:`~pgq_thin.admin.Admin` or the worker (or serves the dashboard), and prints; it holds
no query of its own. This module only assembles the parser and maps errors to exit codes: a
user mistake or an error from the database prints one line on stderr (``pgq-thin COMMAND:
message``, with what to do when the database is not set up) and exits non-zero; tracebacks are
for bugs. A reader that closes the pipe early (``pgq-thin history --json | head``) ends the
command quietly with exit code 141 (128 + SIGPIPE, what a shell reports for a killed writer).

The light commands (``--help``, ``status``, ``show``, the listings) import neither the worker
nor SQLAlchemy/Alembic: the command modules that need them import them when they run
(``tests/py/test_cli_startup.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import psycopg

from pgq_thin.cli import (
    demo,
    embedded,
    jobs,
    listing,
    metrics,
    run,
    schedules,
    schema,
    steer,
    top,
    web,
)
from pgq_thin.cli._common import (
    EXIT_ERROR,
    EXIT_PIPE,
    EXIT_USAGE,
    Command,
    UsageError,
    chosen_database,
    innermost_parser,
    own_usage,
)
from pgq_thin.dsn import ENV_VAR
from pgq_thin.errors import PgqThinError, one_line, setup_hint

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: dict[str, Command] = {
    **schema.COMMANDS,
    **run.COMMANDS,
    **jobs.COMMANDS,
    **steer.COMMANDS,
    **listing.COMMANDS,
    **top.COMMANDS,
    **metrics.COMMANDS,
    **schedules.COMMANDS,
    **demo.COMMANDS,
    **embedded.COMMANDS,
    **web.COMMANDS,
}

DSN_HELP = (
    f"database to use (default: ${ENV_VAR}, then libpq's PG* variables, then the embedded "
    "PostgreSQL; see 'Which database' in docs/python-client.md)"
)


class _Version(argparse.Action):
    """``--version``: the installed version, read only when asked (the metadata costs ~30 ms
    of every other command's start)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        from pgq_thin._version import __version__

        print(f"pgq-thin {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument(
        "--dsn",
        default=argparse.SUPPRESS,  # given before or after the subcommand, the other keeps it
        help=DSN_HELP,
    )
    parser = argparse.ArgumentParser(
        prog="pgq-thin",
        description="pgq-thin: a PostgreSQL job queue whose logic lives in the database",
        parents=[common],
        allow_abbrev=False,
    )
    parser.add_argument("-V", "--version", action=_Version, nargs=0, help="print the version")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, command in COMMANDS.items():
        # the subparser also takes --dsn, so it may come before or after the subcommand name;
        # SUPPRESS keeps a --dsn given before the subcommand from being reset by the subparser
        sub_parser = sub.add_parser(
            name,
            help=command.help,
            description=command.help,
            parents=[common] if command.database else [],
            argument_default=argparse.SUPPRESS,
            allow_abbrev=False,
        )
        command.add_arguments(sub_parser)
        sub_parser.set_defaults(run=command.run)
        own_usage(sub_parser)
    return parser


def _error_line(command: Command | None, args: argparse.Namespace, err: BaseException) -> str:
    """One line for an error: the message, what to do when the database is not set up, and
    for a failed connection where its DSN came from."""
    line = one_line(err)
    if isinstance(err, psycopg.Error):
        needs = command.needs if command and command.needs else "a grant on schema pgq"
        hint = setup_hint(err.sqlstate, needs)
        if hint:
            line = f"{line}; {hint}"
        chosen = chosen_database(args)
        if isinstance(err, psycopg.OperationalError) and chosen is not None:
            line = f"{line} (database from {chosen.describe()})"
    return line


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        innermost_parser(args, parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    command = COMMANDS.get(args.command)
    try:
        code: int = args.run(args)
    except UsageError as err:
        print(f"pgq-thin {args.command}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except (PgqThinError, psycopg.Error) as err:
        print(f"pgq-thin {args.command}: {_error_line(command, args, err)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _closed_pipe()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return _closed_pipe()
    return code


def _closed_pipe() -> int:
    """The reader of stdout went away: stop quietly (no traceback, and none from the flush at
    exit either: stdout now points at /dev/null)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_PIPE


if __name__ == "__main__":
    raise SystemExit(main())
