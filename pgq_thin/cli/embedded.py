"""``embedded [status|stop]``: the embedded PostgreSQL used when no database is configured."""

from __future__ import annotations

import argparse

from pgq_thin import embedded
from pgq_thin.cli._common import EXIT_OK, Command, out, own_usage

EXIT_NOT_RUNNING = 3  # as LSB init scripts say "not running"


def _add_embedded(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="{status,stop}")
    status = sub.add_parser(
        "status",
        help="where its data lives and whether it runs (default; exit 3 when not running)",
        allow_abbrev=False,
    )
    stop = sub.add_parser(
        "stop", help="stop it (fast shutdown; the data is kept)", allow_abbrev=False
    )
    for nested in (status, stop):
        own_usage(nested)


def _cmd_embedded(args: argparse.Namespace) -> int:
    folder = embedded.data_dir()
    if getattr(args, "action", None) == "stop":
        if embedded.stop(folder):
            out(f"stopped the embedded PostgreSQL in {folder}")
        else:
            out(f"no embedded PostgreSQL runs in {folder}")
        return EXIT_OK
    state = embedded.status(folder)
    if state.running:
        out(f"embedded PostgreSQL in {folder}: running (pid {state.pid})")
        if state.dsn:
            out(f"dsn: {state.dsn}")
        return EXIT_OK
    if state.exists:
        out(f"embedded PostgreSQL in {folder}: not running (started again when next used)")
    else:
        out(
            f"embedded PostgreSQL in {folder}: none yet (created when a command runs with no "
            "--dsn, $PGQ_DSN or PG* variables)"
        )
    return EXIT_NOT_RUNNING


COMMANDS: dict[str, Command] = {
    "embedded": Command(
        "the embedded PostgreSQL used when no database is configured: status or stop it",
        _add_embedded,
        _cmd_embedded,
        database=False,
    ),
}
