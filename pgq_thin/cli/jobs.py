"""``enqueue``, ``status``, ``failed``: over :class:`~pgq_thin.queue.Queue` and
:class:`~pgq_thin.admin.Admin`."""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from typing import TYPE_CHECKING

from pgq_thin.cli._common import (
    EXIT_OK,
    Command,
    UsageError,
    json_arg,
    open_admin,
    open_queue,
    out,
)
from pgq_thin.cli._output import (
    add_format_options,
    duration_text,
    limits_text,
    print_json,
    table,
    wants_json,
)

if TYPE_CHECKING:
    from pgq_thin.records import EntrypointMetrics


def _add_enqueue(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--json", action="store_true", help='{"id": N} rather than N')


def _cmd_enqueue(args: argparse.Namespace) -> int:
    payload = None if args.payload is None else json_arg(args.payload, "the payload")
    headers = None if args.headers is None else json_arg(args.headers, "--headers")
    if headers is not None and not isinstance(headers, dict):
        raise UsageError("--headers must be a JSON object")
    if args.delay is not None and args.delay < 0:
        raise UsageError(f"--delay must not be negative, got {args.delay}")
    with open_queue(args) as queue:
        job_id = queue.enqueue(
            args.entrypoint,
            payload,
            priority=args.priority,
            run_at=None if args.delay is None else timedelta(seconds=args.delay),
            dedupe_key=args.dedupe_key,
            headers=headers,
        )
    if wants_json(args):
        print_json({"id": job_id})
    else:
        out(str(job_id))
    return EXIT_OK


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
    "paused",
)


def _add_status(parser: argparse.ArgumentParser) -> None:
    add_format_options(parser)


def _cmd_status(args: argparse.Namespace) -> int:
    """``pgq.queue_stats``, with ``served`` and ``unserved_s`` of ``pgq.metrics`` per
    entrypoint; a line on stderr for each entrypoint with due jobs that no live worker serves
    (a misspelt name, a worker that is down)."""
    with open_admin(args) as admin:
        rows = admin.stats()
        served = {m.entrypoint: m for m in admin.metrics()}
    if wants_json(args):
        from pgq_thin.records import to_json

        print_json(
            [
                {
                    **to_json(r),
                    "served": getattr(served.get(r.entrypoint), "served", None),
                    "unserved_s": getattr(served.get(r.entrypoint), "unserved_s", None),
                    "limits": _limits(served.get(r.entrypoint)),
                }
                for r in rows
            ]
        )
        return EXIT_OK
    table(
        "pgq queue status",
        (*STATUS_COLUMNS, "served", "unserved", "limits"),
        [
            [
                *(getattr(r, c) for c in STATUS_COLUMNS),
                getattr(served.get(r.entrypoint), "served", None),
                _unserved(served.get(r.entrypoint)),
                _limits(served.get(r.entrypoint)),
            ]
            for r in rows
        ],
        args,
    )
    for m in served.values():
        if m.unserved_s is not None:
            print(
                f"pgq-thin status: no live worker serves {m.entrypoint!r} ({m.due} due, for "
                f"{duration_text(m.unserved_s)}): check the name, or start a worker that runs it",
                file=sys.stderr,
            )
    return EXIT_OK


def _limits(m: EntrypointMetrics | None) -> str | None:
    """What its rate and key limits hold back (None: no such limit, or no metrics row)."""
    return (limits_text(m) or None) if m is not None else None


def _unserved(m: EntrypointMetrics | None) -> str | None:
    return None if m is None or m.unserved_s is None else duration_text(m.unserved_s)


MESSAGE_WIDTH = 80  # characters of the last error message shown in the table


def _add_failed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=50, help="most rows shown (default 50)")
    add_format_options(parser)


def _cmd_failed(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise UsageError(f"--limit must be at least 1, got {args.limit}")
    with open_admin(args) as admin:
        rows = admin.failed(args.limit)
    if wants_json(args):
        print_json(rows)
        return EXIT_OK
    table(
        "dead jobs (pgq-thin requeue ID... or --all-failed puts them back)",
        ("id", "entrypoint", "attempts", "finished_at", "error", "message"),
        [
            [r.id, r.entrypoint, r.attempt, r.finished_at, r.error, r.message[:MESSAGE_WIDTH]]
            for r in rows
        ],
        args,
    )
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "enqueue": Command(
        "add one job: pgq-thin enqueue ENTRYPOINT [JSON]", _add_enqueue, _cmd_enqueue
    ),
    "status": Command("per-entrypoint queue status (pgq.queue_stats)", _add_status, _cmd_status),
    "failed": Command("list dead jobs (pgq.failed_jobs)", _add_failed, _cmd_failed),
}
