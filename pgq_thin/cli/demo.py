"""``pgq-thin demo``: a few hundred jobs through a real worker, with live progress.

The demo itself is :mod:`pgq_thin.cli._demo_app`, imported when the command runs: it needs the
worker and the migrations (SQLAlchemy and Alembic), which no other light command loads.
"""

from __future__ import annotations

import argparse

from pgq_thin.cli._common import Command, UsageError
from pgq_thin.cli._common import dsn as chosen_dsn


def _add_demo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs", type=int, default=300, help="about how many jobs to enqueue (default 300)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=20, help="the demo worker's concurrency (default 20)"
    )


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.jobs < 10 or args.concurrency < 1:
        raise UsageError("--jobs must be at least 10 and --concurrency at least 1")
    from pgq_thin.cli._demo_app import run_demo

    return run_demo(chosen_dsn(args), jobs=args.jobs, concurrency=args.concurrency)


COMMANDS: dict[str, Command] = {
    "demo": Command(
        "enqueue a few hundred jobs and run a worker on them, with live progress",
        _add_demo,
        _cmd_demo,
    ),
}
