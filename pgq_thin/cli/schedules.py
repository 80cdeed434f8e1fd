"""``schedules [list|add|remove]``: over :class:`~pgq_thin.admin.Admin`."""

from __future__ import annotations

import argparse

from pgq_thin.cli._common import (
    EXIT_OK,
    Command,
    UsageError,
    json_arg,
    open_admin,
    out,
    own_usage,
)
from pgq_thin.cli._output import add_format_options, fmt, print_json, table, wants_json

COLUMNS = ("name", "entrypoint", "cron", "timezone", "next_run_at", "last_run_at", "state")


def _add_schedules(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="{list,add,remove,fire}")
    listing = sub.add_parser(
        "list", help="list schedules with their next and last run (default)", allow_abbrev=False
    )
    add_format_options(listing, nested=True)
    add = sub.add_parser(
        "add", help="add or update a schedule: NAME ENTRYPOINT CRON [JSON]", allow_abbrev=False
    )
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
    remove = sub.add_parser("remove", help="remove a schedule: NAME", allow_abbrev=False)
    remove.add_argument("name")
    fire = sub.add_parser(
        "fire",
        help="fire a schedule once now, as a tick would, without moving its next run: NAME",
        allow_abbrev=False,
    )
    fire.add_argument("name")
    add_format_options(fire, nested=True)
    add_format_options(parser)
    for nested in (listing, add, remove, fire):
        nested.add_argument("--dsn", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        own_usage(nested)


def _cmd_schedules(args: argparse.Namespace) -> int:
    action = getattr(args, "action", None) or "list"
    if action == "add":
        payload = None if args.payload is None else json_arg(args.payload, "the payload")
        with open_admin(args) as admin:
            schedule = admin.add_schedule(
                args.name,
                args.entrypoint,
                args.cron,
                payload=payload,
                timezone=args.timezone,
                priority=args.priority,
                catch_up=args.catch_up,
            )
        out(f"schedule {schedule.name!r}: next run {fmt(schedule.next_run_at)}")
        return EXIT_OK
    if action == "remove":
        with open_admin(args) as admin:
            removed = admin.remove_schedule(args.name)
        if not removed:
            raise UsageError(f"no schedule named {args.name!r}")
        out(f"removed schedule {args.name!r}")
        return EXIT_OK
    if action == "fire":
        with open_admin(args) as admin:
            job_id = admin.fire_schedule_now(args.name)  # an unknown name: PQ011, one line
        if wants_json(args):
            print_json({"schedule": args.name, "job_id": job_id})
        else:
            out(f"fired schedule {args.name!r}: job {job_id}")
        return EXIT_OK
    with open_admin(args) as admin:
        rows = admin.schedules()
    if wants_json(args):
        print_json(rows)
        return EXIT_OK
    table("pgq schedules", COLUMNS, [[getattr(r, c) for c in COLUMNS] for r in rows], args)
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "schedules": Command(
        "list, add, remove or fire cron schedules: pgq-thin schedules [list|add|remove|fire]",
        _add_schedules,
        _cmd_schedules,
    ),
}
