"""``pgq-thin top``: a live terminal dashboard of the queue, refreshed every second.

Every figure is a column of ``pgq.metrics``, ``pgq.worker_status`` or ``pgq.find_history``, read
through :class:`~pgq_thin.admin.Admin` (nothing is counted here). ``q`` (or Ctrl-C) quits and
leaves the terminal as it was. ``--once`` prints one screen and exits (for scripts and docs).
Needs ``rich`` (the extra ``top``).
"""

from __future__ import annotations

import argparse
import os
import select
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pgq_thin.cli._common import EXIT_OK, Command, UsageError, open_admin
from pgq_thin.cli._output import duration_text, limits_text
from pgq_thin.errors import PrivilegeMissing, one_line, require_extra

if TYPE_CHECKING:
    from pgq_thin.admin import Admin
    from pgq_thin.records import EntrypointMetrics, JobListing, MetricsPoint, WorkerStatus

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.text import Text

FAILURES_SHOWN = 8
SPARK_MINUTES = 30  # minutes of the per-entrypoint sparkline (pgq.metrics_series keeps 60)
BLOCKS = "▁▂▃▄▅▆▇█"


@dataclass
class Snapshot:
    """One read of the queue: what a screen shows."""

    where: str
    metrics: list[EntrypointMetrics] = field(default_factory=list)
    workers: list[WorkerStatus] = field(default_factory=list)
    failures: list[JobListing] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: per entrypoint, its last minutes of ``pgq.metrics_series`` (oldest first)
    series: dict[str, list[MetricsPoint]] = field(default_factory=dict)


def read(admin: Admin) -> Snapshot:
    info = admin.connection.info
    snap = Snapshot(where=f"{info.dbname} on {info.host}:{info.port}")
    snap.metrics = admin.metrics()
    for point in admin.metrics_series():
        snap.series.setdefault(point.entrypoint or "", []).append(point)
    snap.workers = admin.workers()
    try:
        snap.failures = admin.find_history(page_size=FAILURES_SHOWN).jobs
    except PrivilegeMissing as err:  # a role that may see numbers, not jobs
        snap.notes.append(f"last failures: {one_line(err)}")
    return snap


def _num(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def sparkline(counts: list[int]) -> str:
    """Jobs finished per minute as blocks, scaled to the busiest minute shown: ``▁`` for a
    minute without any, ``▂`` to ``█`` for the others (so any activity shows)."""
    top = max(counts, default=0)
    if top <= 0:
        return BLOCKS[0] * len(counts)
    levels = len(BLOCKS) - 1  # the blocks above the empty one
    return "".join(
        BLOCKS[0] if n <= 0 else BLOCKS[1 + min(levels - 1, (n * levels - 1) // top)]
        for n in counts
    )


def _rate_line(points: list[MetricsPoint]) -> str:
    shown = points[-SPARK_MINUTES:]
    return sparkline([p.successful + p.failed + p.canceled for p in shown])


def _served(r: EntrypointMetrics) -> Text:
    from rich.text import Text

    if r.served:
        return Text("yes", style="green")
    if r.unserved_s is None:  # nothing due: nobody needs to serve it now
        return Text("no", style="dim")
    return Text(f"NO {duration_text(r.unserved_s)}", style="bold red")


def _secs(value: float | None) -> str:
    return "" if value is None else duration_text(value)


def render(snap: Snapshot, now: datetime) -> RenderableType:
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    def new(title: str) -> Table:
        return Table(
            title=title,
            box=box.SIMPLE_HEAD,
            title_justify="left",
            pad_edge=False,
            padding=(0, 1, 0, 0),
        )

    m = snap.metrics
    active = sum(w.state == "active" for w in snap.workers)
    head = Text.assemble(
        ("pgq-thin top", "bold"),
        f"  {snap.where}  {now:%H:%M:%S}  ",
        ("q quits", "dim"),
        f"\ndue {sum(r.due for r in m):,}  running {sum(r.running for r in m):,}  ",
        f"{_num(sum(r.throughput_1m for r in m))} jobs/s  ",
        f"failed 5m {sum(r.failed_5m for r in m):,}  ",
        f"workers active {active} of {len(snap.workers)}",
    )
    queues = new("entrypoints (pgq.metrics; rates over the last minute)")
    for col in ("entrypoint", "due", "delayed", "running", "stale", "lag", "jobs/s", "ok 1m"):
        right = col != "entrypoint"
        queues.add_column(
            col,
            no_wrap=True,
            min_width=6 if col == "lag" else len(col),
            justify="right" if right else "left",
        )
    for col in ("failed 1m", "failed 15m", "wait p95", "run p95"):
        queues.add_column(col, no_wrap=True, min_width=len(col), justify="right")
    queues.add_column("served", no_wrap=True, min_width=6)
    queues.add_column("limits", no_wrap=True)
    queues.add_column(f"jobs/min, {SPARK_MINUTES} min", no_wrap=True, min_width=SPARK_MINUTES)
    for r in m:
        queues.add_row(
            Text.assemble(r.entrypoint, (" paused", "yellow") if r.paused else ""),
            f"{r.due:,}",
            f"{r.delayed:,}",
            f"{r.running:,}",
            Text(f"{r.stale:,}", style="red" if r.stale else ""),
            _secs(r.lag_s),
            _num(r.throughput_1m),
            f"{r.successful_1m:,}",
            Text(f"{r.failed_1m:,}", style="red" if r.failed_1m else ""),
            f"{r.failed_15m:,}",
            _secs(r.wait_p95_s),
            _secs(r.run_p95_s),
            _served(r),
            Text(limits_text(r), style="yellow"),
            Text(_rate_line(snap.series.get(r.entrypoint, [])), style="cyan"),
        )
    workers = new("workers (pgq.worker_status)")
    for col in ("worker", "state", "host", "pid", "entrypoints", "running", "silent"):
        workers.add_column(col, no_wrap=col != "entrypoints", min_width=len(col))
    for w in snap.workers:
        style = {"active": "green", "gone": "red"}.get(w.state, "yellow")
        workers.add_row(
            str(w.worker_id)[:8],
            Text(w.state, style=style),
            w.host or "",
            "" if w.pid is None else str(w.pid),
            ",".join(w.entrypoints or []),
            str(w.running),
            _secs(w.silent_s),
        )
    failures = new("last failures (pgq.find_history)")
    for col in ("finished", "id", "entrypoint", "attempt", "error", "message"):
        failures.add_column(col, no_wrap=col != "message", min_width=len(col), overflow="ellipsis")
    for j in snap.failures:
        failures.add_row(
            "" if j.finished_at is None else f"{j.finished_at:%H:%M:%S}",
            str(j.id),
            j.entrypoint,
            str(j.attempt),
            j.error or "",
            " ".join((j.message or "").split()),
        )
    notes = [Text(n, style="yellow") for n in snap.notes]
    return Group(head, queues, workers, failures, *notes)


class Keys:
    """Single key presses from a terminal (cbreak mode, restored on exit); without a terminal,
    waiting only."""

    def __init__(self) -> None:
        self._fd = sys.stdin.fileno() if sys.stdin.isatty() else None
        self._saved: Any = None

    def __enter__(self) -> Keys:
        if self._fd is not None:
            import termios
            import tty

            self._saved = termios.tcgetattr(self._fd)
            tty.setcbreak(self._fd)  # keys one by one; Ctrl-C still interrupts
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fd is not None and self._saved is not None:
            import termios

            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)

    def wait(self, timeout: float) -> str:
        """The keys pressed within ``timeout`` seconds (empty when none)."""
        if self._fd is None:
            time.sleep(timeout)
            return ""
        ready, _, _ = select.select([self._fd], [], [], timeout)
        return os.read(self._fd, 64).decode(errors="replace") if ready else ""


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--interval", type=float, default=1.0, help="seconds between refreshes (default 1)"
    )
    parser.add_argument(
        "--once", action="store_true", default=False, help="print one screen and exit"
    )


def _cmd(args: argparse.Namespace) -> int:
    require_extra("rich", "top", "pgq-thin top")
    if args.interval < 0.1:
        raise UsageError(f"--interval must be at least 0.1, got {args.interval}")
    from rich.console import Console
    from rich.live import Live

    console = Console()
    with open_admin(args) as admin:
        if args.once:
            console.print(render(read(admin), datetime.now()))
            return EXIT_OK
        try:
            with (
                Keys() as keys,
                Live(console=console, screen=True, auto_refresh=False) as live,
            ):
                while True:
                    live.update(render(read(admin), datetime.now()), refresh=True)
                    if "q" in keys.wait(args.interval).lower():
                        break
        except KeyboardInterrupt:
            pass
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "top": Command(
        "live dashboard: per-entrypoint rates, lag, failures, workers, last failures (q quits)",
        _add,
        _cmd,
    ),
}
