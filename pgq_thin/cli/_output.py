"""How commands print: a rich table (plain text without rich or with ``--plain``), or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from pgq_thin.records import to_json


def add_format_options(parser: argparse.ArgumentParser, *, nested: bool = False) -> None:
    """``--plain`` and ``--json``. ``nested`` (an action under a command that has them too):
    no default of its own, so an option given before the action is kept."""
    default: Any = argparse.SUPPRESS if nested else False
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--plain", action="store_true", default=default, help="plain text, not a rich table"
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=default,
        help="one JSON array of objects (timestamps ISO 8601, intervals in seconds)",
    )


def wants_json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def print_json(records: Any) -> None:
    """Records (see :func:`pgq_thin.records.to_json`) as JSON on stdout."""
    json.dump(to_json(records), sys.stdout, indent=2)
    sys.stdout.write("\n")
    sys.stdout.flush()


def table(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], args: argparse.Namespace
) -> None:
    """A table of ``rows``: rich when installed and not ``--plain``, else padded text with
    one line per row."""
    cells = [[_cell(v) for v in row] for row in rows]
    if not getattr(args, "plain", False):
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            pass
        else:
            rich_table = Table(title=title)
            for col in columns:
                rich_table.add_column(col, no_wrap=col in ("entrypoint", "id", "name"))
            for row in cells:
                rich_table.add_row(*row)
            # A pipe gets a wide table rather than wrapped names.
            Console(width=None if sys.stdout.isatty() else 200).print(rich_table)
            return
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print(title)
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    sys.stdout.flush()


def fmt(value: Any) -> str:
    """A value for a table cell: short intervals in seconds, timestamps to the second."""
    if value is None:
        return ""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
        return f"{seconds:.1f}s" if seconds < 120 else str(value).split(".")[0]
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return str(value)


def _cell(value: Any) -> str:
    """One line per cell, so a multi-line message cannot break the row layout."""
    return " ".join(fmt(value).split()) if isinstance(value, str) else fmt(value)
