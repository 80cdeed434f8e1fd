"""``cancel``, ``pause``, ``resume``, ``show``, ``configure``, ``prune``, ``requeue`` (by id or
by filter) and ``workers``: each parses, makes one :class:`~pgq_thin.admin.Admin` call, prints
(``--json``: the records as JSON)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pgq_thin.cli._common import (
    EXIT_ERROR,
    EXIT_OK,
    Command,
    UsageError,
    duration,
    moment,
    open_admin,
    out,
)
from pgq_thin.cli._output import (
    add_format_options,
    duration_text,
    fmt,
    print_json,
    table,
    wants_json,
)


def _ids(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("ids", metavar="ID", type=int, nargs="+", help=what)


#: Why an id given to ``cancel`` or ``requeue`` was left alone (the SQL ignores those ids).
NOT_DONE = {
    "canceled": "unknown, or already finished",
    "requeued": "unknown, still live, or successful",
}


def _done(args: argparse.Namespace, verb: str, asked: list[int], done: list[int]) -> int:
    """What was done on stdout; the ids left alone named in one line on stderr, exit 1 (a
    script learns that ``cancel 999`` did nothing)."""
    skipped = [i for i in asked if i not in set(done)]
    if wants_json(args):
        print_json({verb: done, "not_" + verb: skipped})
    else:
        out(f"{verb} {len(done)} job(s){': ' + ' '.join(map(str, done)) if done else ''}")
    if not skipped:
        return EXIT_OK
    print(
        f"pgq-thin {args.command}: not {verb}: {' '.join(map(str, skipped))} ({NOT_DONE[verb]})",
        file=sys.stderr,
    )
    return EXIT_ERROR


# --- cancel -----------------------------------------------------------------------------------


def _add_cancel(parser: argparse.ArgumentParser) -> None:
    _ids(parser, "ids of queued or running jobs")
    add_format_options(parser)


def _cmd_cancel(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        done = admin.cancel(args.ids)
    return _done(args, "canceled", args.ids, done)


# --- pause / resume ---------------------------------------------------------------------------


def _add_pause(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("entrypoints", metavar="ENTRYPOINT", nargs="+")
    add_format_options(parser)


def _policies(args: argparse.Namespace, rows: list[Any], title: str) -> int:
    if wants_json(args):
        print_json(rows)
        return EXIT_OK
    table(
        title,
        ("entrypoint", "paused_at", "paused_by", "concurrency_limit", "max_attempts"),
        [
            [r.entrypoint, r.paused_at, r.paused_by, r.concurrency_limit, r.max_attempts]
            for r in rows
        ],
        args,
    )
    return EXIT_OK


def _cmd_pause(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        rows = admin.pause(args.entrypoints)
    return _policies(args, rows, "paused (no job of these starts; enqueueing goes on)")


def _cmd_resume(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        rows = admin.resume(args.entrypoints)
    unknown = sorted(set(args.entrypoints) - {r.entrypoint for r in rows})
    code = _policies(args, rows, "resumed")
    if unknown and not wants_json(args):
        out(f"not paused (or unknown): {' '.join(unknown)}")
    return code


# --- show -------------------------------------------------------------------------------------


def _add_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID", type=int, help="a job id, live or finished")
    parser.add_argument("--json", action="store_true", help="the job as one JSON object")


def _cmd_show(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        job = admin.job(args.id)
        graph = admin.workflow(args.id) if job is not None else []
    if job is None:
        print(
            f"pgq-thin show: no job {args.id} (never enqueued, or pruned from history)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    if wants_json(args):
        print_json(job)
        return EXIT_OK
    from pgq_thin.records import to_json

    data = to_json(job)
    for name in ("id", "entrypoint", "status", "priority", "dedupe_key", "schedule"):
        if data[name] is not None:
            out(f"{name + ':':<16}{data[name]}")
    out(f"{'attempt:':<16}{job.attempt} of {job.max_attempts}")
    for name in ("enqueued_at", "run_at", "started_at", "heartbeat_at", "finished_at"):
        if getattr(job, name) is not None:
            out(f"{name + ':':<16}{fmt(getattr(job, name))}")
    for name in ("wait_s", "run_s"):
        value = getattr(job, name)
        if value is not None:
            out(f"{name.removesuffix('_s') + ':':<16}{duration_text(value)}")
    if job.worker_id is not None:
        out(
            f"{'worker_id:':<16}{job.worker_id}{' (cancel requested)' * bool(job.cancel_requested)}"
        )
    for name in ("payload", "headers", "result"):
        if data[name] is not None:
            out(f"{name + ':':<16}{_compact(data[name])}")
    if job.status != "successful" and data["details"] is not None:
        out(f"{'details:':<16}{_compact(data['details'])}")
    for err in job.errors or []:
        details = err.get("details") if isinstance(err, dict) else err
        what = details if not isinstance(details, dict) else _error_text(details)
        out(f"error #{err.get('attempt', '?')} at {err.get('at', '?')}: {what}")
    _show_workflow(graph, job.id)
    return EXIT_OK


def _show_workflow(graph: list[Any], job_id: int) -> None:
    """The workflow the job belongs to (``pgq.workflow``), one line per job: its state, what it
    waits or waited for (each edge's state) and what waits for it; ``*`` marks this job."""
    if not graph:
        return
    out(f"workflow:       {graph[0]['workflow_id']}, {len(graph)} jobs (pgq.workflow)")
    width = max(len(str(g["id"])) for g in graph)
    for g in graph:
        after = " ".join(
            f"{p['id']}{'' if p['state'] == 'pending' else ':' + p['state']}"
            + ("~" if p["run_anyway"] else "")
            for p in g["parents"]
        )
        mark = "*" if g["id"] == job_id else " "
        line = f"{mark} {g['id']:>{width}} {g['entrypoint']:<20} {g['state']:<10}"
        if after:
            line += f" after {after}"
        if g["children"]:
            line += f" -> {' '.join(str(c) for c in g['children'])}"
        out(line.rstrip())


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))


def _error_text(details: dict[str, Any]) -> str:
    text = ": ".join(str(details[k]) for k in ("error", "message") if details.get(k))
    return text or _compact(details)


# --- configure --------------------------------------------------------------------------------


def _add_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("entrypoint", metavar="ENTRYPOINT")
    parser.add_argument("--concurrency-limit", type=int, default=None, help="jobs at once")
    parser.add_argument("--max-attempts", type=int, default=None)
    for name in ("backoff-base", "backoff-max", "heartbeat-timeout"):
        parser.add_argument(f"--{name}", type=duration, default=None, metavar="DURATION")
    parser.add_argument(
        "--run-timeout",
        type=duration,
        default=None,
        metavar="DURATION",
        help="how long one attempt may run (0: no limit)",
    )
    parser.add_argument("--max-interruptions", type=int, default=None, help="not counted, in a row")
    parser.add_argument("--max-snoozes", type=int, default=None, help="not counted, per job")
    parser.add_argument(
        "--key-concurrency-limit", type=int, default=None, help="running jobs per group key"
    )
    parser.add_argument(
        "--rate-limit", type=int, default=None, help="jobs started per --rate-period (0: no limit)"
    )
    parser.add_argument(
        "--rate-period",
        type=duration,
        default=None,
        metavar="DURATION",
        help="the window of --rate-limit (0.001 to 86400 seconds, or 30s, 1m, 1h, 1d)",
    )
    parser.add_argument(
        "--rate-per-key",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the rate limit applies to each group key",
    )
    parser.add_argument(
        "--dedupe-period",
        type=duration,
        default=None,
        metavar="DURATION",
        help="a finished job keeps its dedupe key this long",
    )
    parser.add_argument(
        "--dedupe-states",
        default=None,
        metavar="STATES",
        help="end states that keep the key, comma-separated (successful,failed,canceled)",
    )
    parser.add_argument(
        "--reset", action="store_true", default=False, help="every setting to its default first"
    )
    add_format_options(parser)


def _cmd_configure(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        row = admin.configure(
            args.entrypoint,
            concurrency_limit=args.concurrency_limit,
            max_attempts=args.max_attempts,
            backoff_base=args.backoff_base,
            backoff_max=args.backoff_max,
            heartbeat_timeout=args.heartbeat_timeout,
            reset=args.reset,
            run_timeout=args.run_timeout,
            max_interruptions=args.max_interruptions,
            max_snoozes=args.max_snoozes,
            key_concurrency_limit=args.key_concurrency_limit,
            dedupe_period=args.dedupe_period,
            dedupe_states=None if args.dedupe_states is None else args.dedupe_states.split(","),
            rate_limit=args.rate_limit,
            rate_period=args.rate_period,
            rate_per_key=args.rate_per_key,
        )
    if wants_json(args):
        print_json(row)
        return EXIT_OK
    columns = ("entrypoint", "concurrency_limit", "max_attempts", "backoff_base", "backoff_max")
    limits = ("run_timeout", "max_interruptions", "max_snoozes", "key_concurrency_limit",
              "rate_limit", "rate_period", "rate_per_key",
              "dedupe_period", "dedupe_states")  # fmt: skip
    table(
        "policy",
        (*columns, "heartbeat_timeout", *limits, "paused"),
        [
            [
                *(getattr(row, c) for c in columns),
                row.heartbeat_timeout,
                *(getattr(row, c) for c in limits),
                row.paused,
            ]
        ],
        args,
    )
    return EXIT_OK


# --- prune ------------------------------------------------------------------------------------


def _add_prune(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--older-than",
        type=duration,
        required=True,
        metavar="DURATION",
        help="delete the history of jobs finished longer ago than this (e.g. 7d)",
    )
    parser.add_argument("--json", action="store_true", help='{"deleted": N}')


def _cmd_prune(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        deleted = admin.prune(args.older_than)
    if wants_json(args):
        print_json({"deleted": deleted})
    else:
        out(f"deleted {deleted} finished job(s) older than {fmt(args.older_than)}")
    return EXIT_OK


# --- requeue ----------------------------------------------------------------------------------


def _add_requeue(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "ids", metavar="ID", type=int, nargs="*", default=[], help="ids of dead or canceled jobs"
    )
    by = parser.add_argument_group("or by filter (every matching job, newest first)")
    by.add_argument("--entrypoint", default=None)
    by.add_argument("--since", type=moment, default=None, metavar="TIME", help="finished since")
    by.add_argument("--until", type=moment, default=None, metavar="TIME", help="finished before")
    by.add_argument("--error", default=None, metavar="TEXT", help="text in the error")
    by.add_argument("--canceled", action="store_true", default=False, help="canceled jobs too")
    by.add_argument(
        "--all-failed", action="store_true", default=False, help="every dead job (no filter)"
    )
    by.add_argument(
        "--workflow",
        type=int,
        default=None,
        metavar="ID",
        help="the failed part of the workflow of job ID: its dead and canceled jobs, each "
        "waiting again for a parent that comes back with it",
    )
    parser.add_argument("--json", action="store_true", help='{"requeued": [...], ...}')


def _cmd_requeue(args: argparse.Namespace) -> int:
    filtered = any(v is not None for v in (args.entrypoint, args.since, args.until, args.error))
    workflow = args.workflow is not None
    if sum((bool(args.ids), filtered or args.all_failed or args.canceled, workflow)) > 1:
        raise UsageError("give job ids, a filter or --workflow, not more than one")
    if not args.ids and not (filtered or args.all_failed or workflow):
        raise UsageError(
            "give job ids, a filter (--entrypoint, --since, --until, --error), --all-failed"
            " or --workflow ID"
        )
    with open_admin(args) as admin:
        if args.ids:
            return _done(args, "requeued", args.ids, admin.requeue(args.ids))
        if workflow:
            done = admin.requeue_workflow(args.workflow)
        else:
            done = admin.requeue_history(
                args.entrypoint,
                statuses=["failed", "canceled"] if args.canceled else None,
                since=args.since,
                until=args.until,
                error=args.error,
                every=True,
            )
    if wants_json(args):
        print_json({"requeued": done})
    else:
        out(f"requeued {len(done)} job(s){': ' + ' '.join(map(str, done)) if done else ''}")
    return EXIT_OK


# --- workers ----------------------------------------------------------------------------------

WORKER_COLUMNS = ("worker_id", "state", "host", "pid", "entrypoints", "silent", "running")


def _add_workers(parser: argparse.ArgumentParser) -> None:
    add_format_options(parser)


def _cmd_workers(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        rows = admin.workers()
    if wants_json(args):
        print_json(rows)
        return EXIT_OK
    table(
        "workers (pgq.worker_status)",
        (*WORKER_COLUMNS, "stale", "version"),
        [
            [
                str(w.worker_id),
                w.state,
                w.host,
                w.pid,
                ",".join(w.entrypoints or []),
                None if w.silent_s is None else duration_text(w.silent_s),
                w.running,
                w.stale,
                w.version,
            ]
            for w in rows
        ],
        args,
    )
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "cancel": Command(
        "cancel jobs: queued at once, running asked to stop", _add_cancel, _cmd_cancel
    ),
    "pause": Command("pause entrypoints: no job of theirs starts", _add_pause, _cmd_pause),
    "resume": Command("resume paused entrypoints", _add_pause, _cmd_resume),
    "show": Command("everything about one job, live or finished (pgq.job)", _add_show, _cmd_show),
    "configure": Command(
        "set an entrypoint's policy (pgq.configure)", _add_configure, _cmd_configure
    ),
    "prune": Command("delete old history (pgq.prune_history)", _add_prune, _cmd_prune),
    "requeue": Command(
        "put dead or canceled jobs back in the queue, by id or by filter",
        _add_requeue,
        _cmd_requeue,
    ),
    "workers": Command("the workers registry (pgq.worker_status)", _add_workers, _cmd_workers),
}
