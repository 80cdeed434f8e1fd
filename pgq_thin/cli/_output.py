"""How commands print: a boxed table (padded text with ``--plain``), or JSON.

The table is drawn here, not by rich: importing rich costs a command ~0.1 s of its start, and
only ``top`` and ``demo`` need what it does beyond boxes. Durations have one format
everywhere (:func:`duration_text`): ``0.25s``, ``12.3s``, ``4m05s``, ``2h05m``, ``3d04h``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgq_thin.records import EntrypointMetrics


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
    from pgq_thin.records import to_json

    json.dump(to_json(records), sys.stdout, indent=2)
    sys.stdout.write("\n")
    sys.stdout.flush()


def table(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], args: argparse.Namespace
) -> None:
    """A table of ``rows``: boxed, or with ``--plain`` padded text with one line per row.
    Either way one line per row, never wrapped (a pipe or a narrow terminal gets long lines,
    not broken names)."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    if getattr(args, "plain", False):
        lines = [title, "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
        print("\n".join(line.rstrip() for line in lines), flush=True)
        return

    def rule(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def line(values: Sequence[str], bar: str) -> str:
        return bar + bar.join(f" {v.ljust(w)} " for v, w in zip(values, widths, strict=True)) + bar

    inner = sum(widths) + 3 * len(widths) + 1
    lines = [
        title.center(inner).rstrip(),
        rule("┏", "━", "┳", "┓"),
        line(columns, "┃"),
        rule("┡", "━", "╇", "┩"),
        *(line(r, "│") for r in cells),
        rule("└", "─", "┴", "┘"),
    ]
    print("\n".join(lines), flush=True)


def limits_text(m: EntrypointMetrics) -> str:
    """What an entrypoint's rate and key limits hold back (the flow-control columns of a
    ``pgq.metrics`` row), e.g. ``rate used up, next 1.20s; 2 keys at limit, 120 waiting``;
    empty when it has no such limit."""
    parts = []
    if m.rate_wait_s is not None:
        parts.append(f"rate used up, next {duration_text(m.rate_wait_s)}")
    elif m.rate_remaining is not None:
        parts.append(f"rate {m.rate_remaining:,} left")
    if m.rate_keys_used_up is not None:
        parts.append(f"{m.rate_keys_used_up:,} keys' rate used up")
    if m.keys_at_limit is not None:
        parts.append(f"{m.keys_at_limit:,} keys at limit, {m.key_limited or 0:,} waiting")
    return "; ".join(parts)


def duration_text(seconds: float) -> str:
    """A duration in the one format of every table: three significant digits in seconds
    below a minute (``0.25s``, ``12.3s``), then two units (``4m05s``, ``2h05m``, ``3d04h``)."""
    sign, s = ("-", -seconds) if seconds < 0 else ("", seconds)
    if s < 0.01:
        return f"{sign}{s:.3f}s"
    if s < 59.95:
        return f"{sign}{s:.3g}s"
    whole = round(s)
    if whole < 3600:
        return f"{sign}{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{sign}{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{sign}{whole // 86400}d{whole % 86400 // 3600:02d}h"


def fmt(value: Any) -> str:
    """A value for a table cell: durations (intervals) in :func:`duration_text`'s format,
    timestamps to the second."""
    if value is None:
        return ""
    if isinstance(value, timedelta):
        return duration_text(value.total_seconds())
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return str(value)


def _cell(value: Any) -> str:
    """One line per cell, so a multi-line message cannot break the row layout."""
    return " ".join(fmt(value).split()) if isinstance(value, str) else fmt(value)
