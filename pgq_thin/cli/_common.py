"""What every ``pgq-thin`` command shares: the command record, usage errors, the database.

Command modules import this module and the public API, never :mod:`pgq_thin.cli` itself.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pgq_thin.dsn import Database, choose
from pgq_thin.errors import PgqThinError

if TYPE_CHECKING:
    from pgq_thin.admin import Admin
    from pgq_thin.queue import Queue

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PIPE = 141  # stdout closed by its reader (128 + SIGPIPE)

#: The long-running services: with no database configured they refuse to start, rather than
#: serve the embedded development server (the one-shot commands and the demo fall back to it).
SERVICES = frozenset({"run", "metrics", "web"})
_DATABASE = "_pgq_database"  # where database() keeps its answer on the namespace
_PARSER = "_pgq_parser"  # the innermost parser of the command line (for its own usage)


class UsageError(PgqThinError):
    """The command line asked for something we refuse to do as asked (exit 2)."""


@dataclass(frozen=True)
class Command:
    """One subcommand: its help line, the function adding its arguments, the function running
    it (returns the exit code). ``needs`` says who may run it, for the hint printed with a
    privilege error that the API did not already explain (the schema commands).
    ``database`` False: the command never connects (no ``--dsn`` of its own)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    needs: str | None = None
    database: bool = True


def database(args: argparse.Namespace) -> Database:
    """The database of this command line: ``--dsn``, else the rule of :mod:`pgq_thin.dsn`.

    Chosen once per command line (remembered on ``args``, so an error message can say where
    the DSN came from). The embedded server stands in for a database nobody named only for
    the development commands, never for :data:`SERVICES`.
    """
    chosen = getattr(args, _DATABASE, None)
    if chosen is None:
        command = getattr(args, "command", None)
        chosen = choose(
            getattr(args, "dsn", None),
            embedded_fallback=command not in SERVICES,
            who=f"pgq-thin {command}",
        )
        setattr(args, _DATABASE, chosen)
    assert isinstance(chosen, Database)
    return chosen


def chosen_database(args: argparse.Namespace) -> Database | None:
    """The database :func:`database` chose for this command line, if it was asked."""
    chosen = getattr(args, _DATABASE, None)
    return chosen if isinstance(chosen, Database) else None


def dsn(args: argparse.Namespace) -> str:
    """The DSN of :func:`database`."""
    return database(args).dsn


def application_name(args: argparse.Namespace) -> str:
    """The ``application_name`` of the command's connections: ``pgq-thin COMMAND`` (a name in
    the DSN or ``PGAPPNAME`` wins)."""
    return f"pgq-thin {args.command}"


def open_admin(args: argparse.Namespace) -> Admin:
    """The admin API on this command line's database, named ``pgq-thin COMMAND``. Imported
    here, when a command connects: ``--help`` and ``--version`` do without it."""
    from pgq_thin.admin import Admin

    return Admin(dsn(args), application_name=application_name(args))


def open_queue(args: argparse.Namespace) -> Queue:
    """The producer on this command line's database (as :func:`admin`)."""
    from pgq_thin.queue import Queue

    return Queue(dsn(args), application_name=application_name(args))


def own_usage(parser: argparse.ArgumentParser) -> None:
    """Errors found after parsing (unknown options) print this parser's usage, not the top's."""
    parser.set_defaults(**{_PARSER: parser})


def innermost_parser(
    args: argparse.Namespace, default: argparse.ArgumentParser
) -> argparse.ArgumentParser:
    parser = getattr(args, _PARSER, None)
    return parser if isinstance(parser, argparse.ArgumentParser) else default


def json_arg(text: str, what: str) -> Any:
    """A JSON argument, or a :class:`UsageError` naming it."""
    try:
        return json.loads(text)
    except ValueError as err:
        raise UsageError(f"{what} is not valid JSON ({err}): {text!r}") from None


def out(line: str) -> None:
    print(line, flush=True)


UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration(text: str) -> timedelta:
    """``90``, ``90s``, ``15m``, ``2h``, ``7d``, ``1w`` (a number without a unit: seconds)."""
    number, unit = (text[:-1], text[-1]) if text and text[-1] in UNITS else (text, "s")
    try:
        seconds = float(number) * UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a duration: {text!r} (for example 90, 30s, 15m, 2h, 7d)"
        ) from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"a duration must not be negative, got {text!r}")
    return timedelta(seconds=seconds)


def moment(text: str) -> datetime | timedelta:
    """An ISO 8601 time, or a duration meaning that long before the database's clock."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    try:
        return duration(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (an ISO 8601 time such as 2026-11-30T08:00+00:00, or how "
            "long ago: 30m, 2h, 1d)"
        ) from None
