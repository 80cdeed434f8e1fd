"""Templates and the filters they use to show SQL's values (no figure is computed here).

Every template is autoescaped: a payload, an error text or an entrypoint name holding HTML
renders as text. JSON is pretty-printed by :func:`pretty` and then escaped like any text.
Times are shown as stored (UTC); ages and durations are the ``_s`` columns SQL returns.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import jinja2

from pgq_thin.records import to_json

__all__ = ["environment"]


def duration(seconds: float | timedelta | None) -> str:
    """``0.8 ms``, ``1.20 s``, ``3 m 04 s``, ``2 h 03 m``, ``4 d 2 h``; an em dash for None."""
    if seconds is None:
        return "\u2014"
    if isinstance(seconds, timedelta):
        seconds = seconds.total_seconds()
    s = float(seconds)
    sign = "-" if s < 0 else ""
    s = abs(s)
    if s == 0:
        return "0 s"
    if s < 0.001:
        text = f"{s * 1e6:.0f} \u00b5s"
    elif s < 1:
        text = f"{s * 1000:.1f} ms"
    elif s < 60:
        text = f"{s:.2f} s"
    elif s < 3600:
        text = f"{int(s // 60)} m {int(s % 60):02d} s"
    elif s < 86400:
        text = f"{int(s // 3600)} h {int(s % 3600 // 60):02d} m"
    else:
        text = f"{int(s // 86400)} d {int(s % 86400 // 3600)} h"
    return sign + text


def timestamp(value: datetime | None) -> str:
    """A time in UTC to the second: ``2026-11-30 15:43:48Z``."""
    if value is None:
        return "\u2014"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def timestamp_input(value: datetime | None) -> str:
    """A time in the form a ``datetime-local`` field shows (UTC, to the second)."""
    return "" if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def number(value: int | float | None) -> str:
    """Counts with thousands separators; rates to one decimal (or two below 10)."""
    if value is None:
        return "\u2014"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.2f}" if abs(value) < 10 else f"{value:,.1f}"


def pretty(value: Any) -> str:
    """JSON data pretty-printed (escaped later like any text)."""
    return json.dumps(to_json(value), indent=2, ensure_ascii=False, sort_keys=True)


def short_id(value: uuid.UUID | str | None) -> str:
    return "\u2014" if value is None else str(value)[:8]


def query(base: str, **params: Any) -> str:
    """``base?k=v`` with the parameters that are set (None and empty ones left out)."""
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return f"{base}?{urlencode(kept)}" if kept else base


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pgq_thin.web", "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        enable_async=False,
    )
    env.filters.update(
        duration=duration,
        ts=timestamp,
        ts_input=timestamp_input,
        num=number,
        pretty=pretty,
        short=short_id,
    )
    env.globals.update(query=query)
    return env
