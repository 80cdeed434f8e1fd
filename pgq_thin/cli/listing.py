"""``jobs`` and ``history``: one page of a job listing (``pgq.list_jobs``, ``pgq.find_history``)
through :class:`~pgq_thin.admin.Admin`, with the cursor of the next page."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from pgq_thin.cli._common import EXIT_OK, Command, moment, open_admin
from pgq_thin.cli._output import add_format_options, print_json, table, wants_json

if TYPE_CHECKING:
    from pgq_thin.records import JobPage

STATES = ("queued", "running", "successful", "failed", "canceled")
MESSAGE_WIDTH = 80


def _paging(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--after", default=None, metavar="CURSOR", help="the next page's cursor")
    parser.add_argument(
        "--page-size", type=int, default=None, metavar="N", help="jobs per page (default 50)"
    )
    add_format_options(parser)


def _last_page(page: JobPage, peek: Callable[[str], JobPage]) -> JobPage:
    """``page`` without its ``next_cursor`` when nothing follows it: a full page's cursor is
    checked by asking for one job after it (one more statement, only for a full page)."""
    if page.next_cursor is None or peek(page.next_cursor).jobs:
        return page
    return dataclasses.replace(page, next_cursor=None)


def _print(args: argparse.Namespace, page: JobPage, title: str) -> int:
    if wants_json(args):
        print_json({"jobs": page.jobs, "next_cursor": page.next_cursor})
        return EXIT_OK
    table(
        title,
        (
            "id",
            "entrypoint",
            "status",
            "attempt",
            "priority",
            "run_at",
            "finished_at",
            "error",
            "message",
        ),
        [
            [
                j.id,
                j.entrypoint,
                j.status,
                j.attempt,
                j.priority,
                j.run_at,
                j.finished_at,
                j.error,
                (j.message or "")[:MESSAGE_WIDTH],
            ]
            for j in page
        ],
        args,
    )
    if page.next_cursor is not None:
        print(f"next page: --after '{page.next_cursor}'", file=sys.stderr)
    return EXIT_OK


def _add_jobs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("entrypoint", metavar="ENTRYPOINT")
    parser.add_argument("state", metavar="STATE", choices=STATES, help=", ".join(STATES))
    _paging(parser)


def _cmd_jobs(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        page = admin.list_jobs(
            args.entrypoint, args.state, after=args.after, page_size=args.page_size
        )
        ep, state = args.entrypoint, args.state
        page = _last_page(page, lambda after: admin.list_jobs(ep, state, after=after, page_size=1))
    return _print(args, page, f"{args.state} jobs of {args.entrypoint} (pgq.list_jobs)")


def _add_history(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--entrypoint", default=None)
    parser.add_argument(
        "--status",
        action="append",
        choices=STATES[2:],
        default=None,
        help="repeat for several (default: failed)",
    )
    parser.add_argument("--since", type=moment, default=None, metavar="TIME")
    parser.add_argument("--until", type=moment, default=None, metavar="TIME")
    parser.add_argument("--error", default=None, metavar="TEXT", help="text in the error")
    _paging(parser)


def _cmd_history(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:

        def find(after: str | None, page_size: int | None) -> JobPage:
            return admin.find_history(
                args.entrypoint,
                statuses=args.status,
                since=args.since,
                until=args.until,
                error=args.error,
                after=after,
                page_size=page_size,
            )

        page = _last_page(find(args.after, args.page_size), lambda after: find(after, 1))
    return _print(args, page, "finished jobs, newest first (pgq.find_history)")


COMMANDS: dict[str, Command] = {
    "jobs": Command(
        "one page of the jobs of an entrypoint in a state (pgq.list_jobs)", _add_jobs, _cmd_jobs
    ),
    "history": Command(
        "one page of finished jobs by filter, newest first (pgq.find_history)",
        _add_history,
        _cmd_history,
    ),
}
