"""The client subcommands of ``pgq-thin``: run, enqueue, status, failed, requeue, schedules, demo.

Registered in :data:`pgq_thin.cli.COMMANDS`. Each is an ``add_x`` (arguments) / ``cmd_x``
(action) pair. User mistakes raise ``pgq_thin.cli.UsageError`` (one line, exit 2).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pgq_thin import calls
from pgq_thin.connection import connect, resolve_dsn
from pgq_thin.cron import CronSchedule
from pgq_thin.errors import PgqThinError
from pgq_thin.queue import Queue
from pgq_thin.scheduler import Scheduler, ScheduleSpec
from pgq_thin.worker import ThinWorker


def _usage(message: str) -> PgqThinError:
    from pgq_thin.cli import UsageError  # cli imports this module: import at call time

    return UsageError(message)


def _dsn(args: argparse.Namespace) -> str:
    return resolve_dsn(getattr(args, "dsn", None))


def _json_arg(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as err:
        raise _usage(f"{what} is not valid JSON ({err}): {text!r}") from None


# --- run ----------------------------------------------------------------------------------------


def add_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="MODULE:ATTR",
        help="where the worker is: a ThinWorker object, a function returning one (sync or "
        "async), or an async context manager (factory) yielding one; e.g. myapp.jobs:worker",
    )
    parser.add_argument(
        "--concurrency", type=int, default=None, help="jobs run at once (default: the worker's)"
    )
    parser.add_argument(
        "--batch-size", type=int, default=None, help="jobs per claim (default: the worker's)"
    )
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=None,
        help="seconds between polls when idle (default: the worker's)",
    )
    parser.add_argument(
        "--grace-period",
        type=float,
        default=None,
        help="seconds running jobs get after SIGTERM/SIGINT (default: the worker's)",
    )
    parser.add_argument(
        "--entrypoint",
        action="append",
        default=[],
        metavar="NAME",
        help="claim only this entrypoint (repeatable; default: all the worker registers)",
    )
    parser.add_argument(
        "--drain",
        action="store_true",
        default=False,
        help="exit once a claim finds nothing and nothing runs (tests, scripts)",
    )
    parser.add_argument(
        "--listen-dsn",
        default=None,
        help="where the listener connects (default: the DSN); a direct connection when --dsn is a "
        "transaction-mode pooler",
    )
    parser.add_argument(
        "--no-listen",
        action="store_true",
        default=False,
        help="poll only, no listener for notifications (when no direct connection is available)",
    )
    parser.add_argument(
        "--no-restart",
        action="store_true",
        default=False,
        help="exit on an unrecoverable error instead of restarting the worker",
    )
    parser.add_argument(
        "--max-restarts",
        type=int,
        default=None,
        help="restarts in a row before giving up (default: the worker's, 5)",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default: %(default)s)")


def _load(target: str) -> Any:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise _usage(f"expected MODULE:ATTR (e.g. myapp.jobs:worker), got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name and (module_name == err.name or module_name.startswith(err.name + ".")):
            raise _usage(f"cannot import module {module_name!r}: {err}") from None
        raise
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise _usage(f"module {module_name!r} has no attribute {attr!r}") from None
    return obj


async def _run_target(obj: Any, args: argparse.Namespace) -> ThinWorker:
    if isinstance(obj, ThinWorker):
        await _arun(obj, args)
        return obj
    if hasattr(obj, "__aenter__"):
        async with obj as worker:
            return await _run_checked(worker, args)
    if callable(obj):
        made = obj()
        if inspect.isawaitable(made):
            made = await made
        if hasattr(made, "__aenter__") and not isinstance(made, ThinWorker):
            async with made as worker:
                return await _run_checked(worker, args)
        return await _run_checked(made, args)
    raise _usage(f"{args.target} is a {type(obj).__name__}, not a ThinWorker or a factory")


async def _run_checked(worker: Any, args: argparse.Namespace) -> ThinWorker:
    if not isinstance(worker, ThinWorker):
        raise _usage(f"{args.target} gave a {type(worker).__name__}, expected a ThinWorker")
    await _arun(worker, args)
    return worker


async def _arun(worker: ThinWorker, args: argparse.Namespace) -> None:
    if getattr(args, "dsn", None):
        worker.dsn = args.dsn
    for name in ("concurrency", "batch_size", "poll_interval", "grace_period"):
        value = getattr(args, name)
        if value is not None:
            if value <= 0 and name != "poll_interval":
                raise _usage(f"--{name.replace('_', '-')} must be positive, got {value}")
            setattr(worker, name, value)
    if args.entrypoint:
        worker.restrict(args.entrypoint)
    if args.listen_dsn:
        worker.listen_dsn = args.listen_dsn
    if args.no_listen:
        worker.listen = False
    if args.no_restart:
        worker.restart_on_failure = False
    if args.max_restarts is not None:
        if args.max_restarts < 0:
            raise _usage(f"--max-restarts must not be negative, got {args.max_restarts}")
        worker.max_restarts = args.max_restarts
    await worker.arun(until_empty=args.drain)


def cmd_run(args: argparse.Namespace) -> int:
    level = getattr(logging, str(args.log_level).upper(), None)
    if not isinstance(level, int):
        raise _usage(f"unknown --log-level {args.log_level!r}")
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    obj = _load(args.target)
    worker = asyncio.run(_run_target(obj, args))
    worker.abandon_stuck_threads()
    return 0


# --- enqueue ------------------------------------------------------------------------------------


def add_enqueue(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("entrypoint", metavar="ENTRYPOINT", help="the job's entrypoint")
    parser.add_argument(
        "payload", metavar="JSON", nargs="?", default=None, help="the payload, as JSON"
    )
    parser.add_argument("--priority", type=int, default=0, help="higher runs first (default 0)")
    parser.add_argument(
        "--delay", type=float, default=None, help="seconds from now before it may run"
    )
    parser.add_argument(
        "--dedupe-key", default=None, help="unique among live jobs; a clash is an error"
    )
    parser.add_argument("--headers", default=None, metavar="JSON", help="headers, a JSON object")


def cmd_enqueue(args: argparse.Namespace) -> int:
    payload = None if args.payload is None else _json_arg(args.payload, "the payload")
    headers = None if args.headers is None else _json_arg(args.headers, "--headers")
    if headers is not None and not isinstance(headers, dict):
        raise _usage("--headers must be a JSON object")
    if args.delay is not None and args.delay < 0:
        raise _usage(f"--delay must not be negative, got {args.delay}")
    with Queue(_dsn(args)) as queue:
        job_id = queue.enqueue(
            args.entrypoint,
            payload,
            priority=args.priority,
            run_at=None if args.delay is None else timedelta(seconds=args.delay),
            dedupe_key=args.dedupe_key,
            headers=headers,
        )
    print(job_id, flush=True)
    return 0


# --- status / failed / requeue ------------------------------------------------------------------


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], plain: bool) -> None:
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    if not plain:
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            plain = True
        else:
            table = Table(title=title)
            for col in columns:
                table.add_column(col, no_wrap=col in ("entrypoint", "id"))
            for row in cells:
                table.add_row(*row)
            # A pipe gets a wide table rather than wrapped names.
            Console(width=None if sys.stdout.isatty() else 200).print(table)
            return
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print(title)
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    sys.stdout.flush()


def _add_plain(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plain", action="store_true", default=False, help="plain text, not a rich table"
    )


def add_status(parser: argparse.ArgumentParser) -> None:
    _add_plain(parser)


STATUS_COLUMNS = (
    "entrypoint",
    "queued",
    "due",
    "running",
    "stale",
    "oldest_queued_age",
    "concurrency_limit",
    "max_attempts",
    "heartbeat_timeout",
)


def cmd_status(args: argparse.Namespace) -> int:
    with connect(_dsn(args)) as conn:
        rows = calls.queue_stats(conn)
    _table(
        "pgq queue status",
        STATUS_COLUMNS,
        [[_fmt(r[c]) for c in STATUS_COLUMNS] for r in rows],
        args.plain,
    )
    return 0


def add_failed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=50, help="most rows shown (default 50)")
    _add_plain(parser)


def cmd_failed(args: argparse.Namespace) -> int:
    with connect(_dsn(args)) as conn:
        rows = calls.failed_jobs(conn, args.limit)
    table = []
    for r in rows:
        details = r["details"] if isinstance(r["details"], dict) else {}
        error = details.get("error", "")
        message = str(details.get("message", ""))[:80]
        table.append(
            [r["id"], r["entrypoint"], r["attempt"], _fmt(r["finished_at"]), error, message]
        )
    _table(
        "dead jobs (pgq-thin requeue ID... puts them back)",
        ("id", "entrypoint", "attempts", "finished_at", "error", "message"),
        table,
        args.plain,
    )
    return 0


def add_requeue(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", metavar="ID", type=int, nargs="+", help="ids of dead/canceled jobs")


def cmd_requeue(args: argparse.Namespace) -> int:
    with connect(_dsn(args)) as conn:
        done = calls.requeue(conn, args.ids)
    print(f"requeued {len(done)} job(s){': ' + ' '.join(map(str, done)) if done else ''}")
    skipped = [i for i in args.ids if i not in set(done)]
    if skipped:
        print(f"not requeued (unknown, successful or still live): {' '.join(map(str, skipped))}")
    return 0


# --- schedules ----------------------------------------------------------------------------------


def add_schedules(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="{list,add,remove}")
    listing = sub.add_parser("list", help="list schedules with their next and last run (default)")
    _add_plain(listing)
    add = sub.add_parser("add", help="add or update a schedule: NAME ENTRYPOINT CRON [JSON]")
    add.add_argument("name", help="the schedule's name (its identity)")
    add.add_argument("entrypoint", help="entrypoint of the jobs it fires")
    add.add_argument("cron", help="cron expression: 5 fields, or 6 with seconds first")
    add.add_argument("payload", nargs="?", default=None, help="JSON payload of each job")
    add.add_argument("--timezone", default="UTC", help="IANA time zone (default: UTC)")
    add.add_argument("--priority", type=int, default=0, help="job priority (default 0)")
    add.add_argument(
        "--catch-up",
        choices=("once", "skip"),
        default="once",
        help="a tick missed during downtime: fire it once, or skip it (default: once)",
    )
    remove = sub.add_parser("remove", help="remove a schedule: NAME")
    remove.add_argument("name")
    _add_plain(parser)
    for nested in (listing, add, remove):  # --dsn may also follow the action
        nested.add_argument("--dsn", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


SCHEDULE_COLUMNS = ("name", "entrypoint", "cron", "timezone", "next_run_at", "last_run_at", "state")


def cmd_schedules(args: argparse.Namespace) -> int:
    action = args.action or "list"
    if action == "add":
        payload = None if args.payload is None else _json_arg(args.payload, "the payload")
        spec = ScheduleSpec(
            cron=CronSchedule(args.cron, args.timezone),
            entrypoint=args.entrypoint,
            name=args.name,
            payload=payload,
            priority=args.priority,
            catch_up=args.catch_up,
        )
        with connect(_dsn(args)) as conn:
            row = calls.schedule(conn, Scheduler.register_args(spec, datetime.now(UTC)))
        print(f"schedule {row['name']!r}: next run {_fmt(row['next_run_at'])}")
        return 0
    if action == "remove":
        with connect(_dsn(args)) as conn:
            removed = calls.unschedule(conn, args.name)
        if not removed:
            raise _usage(f"no schedule named {args.name!r}")
        print(f"removed schedule {args.name!r}")
        return 0
    with connect(_dsn(args)) as conn:
        rows = calls.schedules(conn)
    _table(
        "pgq schedules",
        SCHEDULE_COLUMNS,
        [[_fmt(r[c]) for c in SCHEDULE_COLUMNS] for r in rows],
        args.plain,
    )
    return 0


# --- demo ---------------------------------------------------------------------------------------


def add_demo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs", type=int, default=300, help="about how many jobs to enqueue (default 300)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=20, help="the demo worker's concurrency (default 20)"
    )


def cmd_demo(args: argparse.Namespace) -> int:
    from pgq_thin.demo import run_demo

    if args.jobs < 10 or args.concurrency < 1:
        raise _usage("--jobs must be at least 10 and --concurrency at least 1")
    return run_demo(_dsn(args), jobs=args.jobs, concurrency=args.concurrency)


def _fmt(value: Any) -> Any:
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
        return f"{seconds:.1f}s" if seconds < 120 else str(value).split(".")[0]
    if hasattr(value, "isoformat"):
        return value.isoformat(sep=" ", timespec="seconds")
    return value
