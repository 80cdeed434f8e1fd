"""The dashboard's charts of the last hour, drawn here as SVG (no script, no CDN, no build
step): jobs finished per minute by status, the due backlog, and the wait and run p95.

Every figure is a column of ``pgq.metrics_series`` (:meth:`pgq_thin.admin.AsyncAdmin.
metrics_series`), one point per minute; this module only places them on a grid. The scale of
each chart runs from 0 to a round number at or above its largest value, written on the axis.
A minute without a figure (no backlog sample, no finished job to take a percentile of) is a
gap, not a zero. The markup is built from numbers and escaped text only, so it is safe to put
in a page as is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from markupsafe import Markup

if TYPE_CHECKING:
    from pgq_thin.records import MetricsPoint

__all__ = ["Charts", "charts", "nice_max"]

WIDTH, HEIGHT = 420, 150
LEFT, RIGHT, TOP, BOTTOM = 44, 6, 8, 20  # room for the axis labels
STATUS_COLORS = (("successful", "#2f9e44"), ("failed", "#e03131"), ("canceled", "#868e96"))
WAIT_COLOR, RUN_COLOR, DUE_COLOR = "#1c7ed6", "#f08c00", "#7048e8"


@dataclass(frozen=True)
class Charts:
    """The three charts of one series, as SVG markup."""

    finished: Markup
    backlog: Markup
    latency: Markup


def nice_max(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten at or above ``value`` (1 for 0)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0):
        if value <= step * power * (1 + 1e-9):
            return step * power
    return 10.0 * power


def _seconds(value: float) -> str:
    """An axis label for a duration, short: ``250ms``, ``12s``, ``2.5m``, ``17m``, ``1.5h``."""
    if value == 0:
        return "0"
    if value < 1:
        return f"{value * 1000:.0f}ms"
    if value < 120:
        return f"{value:g}s"
    if value < 7200:
        return f"{value / 60:.3g}m"
    return f"{value / 3600:.3g}h"


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:g}"


class _Plot:
    """One chart's canvas: ``n`` minutes across, 0 .. ``top`` up."""

    def __init__(self, kind: str, title: str, n: int, top: float) -> None:
        self.kind, self.title, self.n, self.top = kind, title, max(n, 1), top
        self.parts: list[str] = []
        self.inner_w = WIDTH - LEFT - RIGHT
        self.inner_h = HEIGHT - TOP - BOTTOM

    def x(self, i: float) -> float:
        return LEFT + self.inner_w * i / self.n

    def y(self, value: float) -> float:
        return TOP + self.inner_h * (1 - min(value, self.top) / self.top)

    def grid(self, label: Callable[[float], str]) -> None:
        for frac in (0.0, 0.5, 1.0):
            y = self.y(self.top * frac)
            self.parts.append(
                f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
                f'stroke="#dee2e6" stroke-width="1"/>'
                f'<text x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="11" '
                f'fill="#495057">{escape(label(self.top * frac))}</text>'
            )
        bottom = HEIGHT - 5
        for i, text in ((0, f"-{self.n} min"), (self.n / 2, f"-{self.n // 2} min")):
            self.parts.append(
                f'<text x="{self.x(i):.1f}" y="{bottom}" font-size="11" fill="#495057">'
                f"{text}</text>"
            )
        self.parts.append(
            f'<text x="{WIDTH - RIGHT}" y="{bottom}" text-anchor="end" font-size="11" '
            f'fill="#495057">now</text>'
        )

    def legend(self, items: Sequence[tuple[str, str]]) -> None:
        x = LEFT + 4
        for name, color in items:
            self.parts.append(
                f'<rect x="{x}" y="{TOP + 2}" width="9" height="9" fill="{color}"/>'
                f'<text x="{x + 12}" y="{TOP + 10}" font-size="11" fill="#212529">'
                f"{escape(name)}</text>"
            )
            x += 16 + 7 * len(name)

    def svg(self) -> Markup:
        return Markup(
            f'<svg class="chart" data-chart="{self.kind}" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(self.title)}" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{escape(self.title)}</title>'
            + "".join(self.parts)
            + "</svg>"
        )


def _finished(points: Sequence[MetricsPoint]) -> Markup:
    totals = [p.successful + p.failed + p.canceled for p in points]
    plot = _Plot("finished", "jobs finished per minute, by status", len(points), 0)
    plot.top = nice_max(max(totals, default=0))
    plot.grid(_count)
    width = max(1.0, plot.inner_w / plot.n - 1)
    for i, p in enumerate(points):
        base = 0
        for status, color in STATUS_COLORS:
            n = getattr(p, status)
            if n <= 0:
                continue
            y_top, y_base = plot.y(base + n), plot.y(base)
            plot.parts.append(
                f'<rect class="bar-{status}" x="{plot.x(i):.1f}" y="{y_top:.1f}" '
                f'width="{width:.1f}" height="{max(0.5, y_base - y_top):.1f}" fill="{color}">'
                f"<title>{escape(f'{p.minute:%H:%M}')}: {n} {status}</title></rect>"
            )
            base += n
    plot.legend(STATUS_COLORS)
    return plot.svg()


def _lines(
    plot: _Plot, points: Sequence[MetricsPoint], column: str, color: str, label: str
) -> None:
    """One line per run of minutes that have the figure (a gap where they do not), a dot for
    a minute standing alone."""
    run: list[tuple[float, float]] = []

    def flush() -> None:
        if len(run) == 1:
            (x, y) = run[0]
            plot.parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="{color}"/>')
        elif run:
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            plot.parts.append(
                f'<polyline class="line-{label}" points="{coords}" fill="none" '
                f'stroke="{color}" stroke-width="2"/>'
            )
        run.clear()

    for i, p in enumerate(points):
        value = getattr(p, column)
        if value is None:
            flush()
        else:
            run.append((plot.x(i + 0.5), plot.y(float(value))))
    flush()


def _backlog(points: Sequence[MetricsPoint]) -> Markup:
    plot = _Plot("backlog", "due jobs, sampled each minute", len(points), 0)
    plot.top = nice_max(max((p.due for p in points if p.due is not None), default=0))
    plot.grid(_count)
    _lines(plot, points, "due", DUE_COLOR, "due")
    plot.legend([("due", DUE_COLOR)])
    return plot.svg()


def _latency(points: Sequence[MetricsPoint]) -> Markup:
    plot = _Plot("latency", "wait and run p95 per minute", len(points), 0)
    values = [v for p in points for v in (p.wait_p95_s, p.run_p95_s) if v is not None]
    plot.top = nice_max(max(values, default=0))
    plot.grid(_seconds)
    _lines(plot, points, "wait_p95_s", WAIT_COLOR, "wait")
    _lines(plot, points, "run_p95_s", RUN_COLOR, "run")
    plot.legend([("wait p95", WAIT_COLOR), ("run p95", RUN_COLOR)])
    return plot.svg()


def charts(points: Sequence[MetricsPoint]) -> Charts:
    """The charts of one series of ``pgq.metrics_series`` (oldest minute first)."""
    return Charts(_finished(points), _backlog(points), _latency(points))
