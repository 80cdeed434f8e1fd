"""The demo that ``pgq-thin demo`` runs (imported only by that command, so the other commands
need neither the worker nor Alembic): a few hundred jobs through a real worker, with live
progress.

It installs (or upgrades) the schema, sets a policy for a handful of ``demo.*`` entrypoints,
enqueues jobs of every kind (quick async, sync on threads, flaky ones that retry with a short
backoff and a few that die, delayed ones, a concurrency-limited one, one that asks to be
retried later), runs one :class:`~pgq_thin.worker.ThinWorker` until every demo job is
finished, and prints a summary from the database. Progress is read from ``pgq.queue_stats``
through the admin API, so what you see is the database's view, not the worker's.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from datetime import timedelta
from typing import Any

from pgq_thin import migrate
from pgq_thin.admin import AsyncAdmin
from pgq_thin.job import Job, RetryAfter
from pgq_thin.queue import AsyncQueue
from pgq_thin.records import EntrypointStats
from pgq_thin.worker import ThinWorker

TIMEOUT = 55.0  # seconds; the demo promises to finish in under a minute

EMAIL = "demo.send_email"
THUMB = "demo.thumbnail"
FLAKY = "demo.flaky_api"
REPORT = "demo.report"
REMIND = "demo.reminder"
LIMITED = "demo.rate_limited"
ENTRYPOINTS = (EMAIL, THUMB, FLAKY, REPORT, REMIND, LIMITED)


class FlakyError(Exception):
    """The demo's pretend upstream failure."""


def build_worker(dsn: str, concurrency: int) -> ThinWorker:
    worker = ThinWorker(
        dsn, concurrency=concurrency, batch_size=concurrency, poll_interval=0.5, grace_period=5
    )

    @worker.entrypoint(EMAIL)
    async def send_email(job: Job[Any]) -> None:
        await asyncio.sleep(random.uniform(0.005, 0.03))

    @worker.entrypoint(THUMB)
    def thumbnail(job: Job[Any]) -> dict[str, int]:
        time.sleep(random.uniform(0.01, 0.04))  # a sync handler: runs on the thread pool
        return {"width": 128}

    @worker.entrypoint(FLAKY)
    async def flaky_api(job: Job[Any]) -> None:
        await asyncio.sleep(0.01)
        if job.attempt <= int(job.payload["fail_times"]):
            raise FlakyError(f"upstream said 503 (attempt {job.attempt})")

    @worker.entrypoint(REPORT)
    async def report(job: Job[Any]) -> None:
        await asyncio.sleep(0.15)  # at most 2 at once, across all workers

    @worker.entrypoint(REMIND)
    async def reminder(job: Job[Any]) -> None:
        await asyncio.sleep(0.005)

    @worker.entrypoint(LIMITED)
    async def rate_limited(job: Job[Any]) -> None:
        if job.attempt == 1:
            raise RetryAfter(1.0, "429 Too Many Requests: come back in 1 s")

    return worker


async def _setup(dsn: str, jobs: int) -> tuple[int, int]:
    """Configure the demo entrypoints and enqueue; returns (first job id, jobs enqueued)."""
    async with AsyncAdmin(dsn) as admin:
        for name in ENTRYPOINTS:
            await admin.configure(name, reset=True)
        await admin.configure(
            FLAKY,
            max_attempts=4,
            backoff_base=timedelta(seconds=0.2),
            backoff_max=timedelta(seconds=1),
        )
        await admin.configure(REPORT, concurrency_limit=2)
    async with AsyncQueue(dsn) as queue:
        n = {
            EMAIL: jobs * 45 // 100,
            THUMB: jobs * 20 // 100,
            FLAKY: jobs * 15 // 100,
            REPORT: max(4, jobs * 5 // 100),
            REMIND: jobs * 10 // 100,
            LIMITED: max(2, jobs * 5 // 100),
        }
        ids: list[int] = []
        ids += await queue.enqueue_many(
            EMAIL, [{"to": f"user{i}@example.com"} for i in range(n[EMAIL])]
        )
        ids += await queue.enqueue_many(
            THUMB, [{"image": f"img{i}.png"} for i in range(n[THUMB])], priorities=1
        )
        # Most flaky jobs succeed after 0-2 failures; one in ten fails 9 times and dies.
        fails = [9 if i % 10 == 0 else i % 3 for i in range(n[FLAKY])]
        ids += await queue.enqueue_many(FLAKY, [{"fail_times": f} for f in fails])
        ids += await queue.enqueue_many(REPORT, [{"month": i} for i in range(n[REPORT])])
        ids += await queue.enqueue_many(
            REMIND,
            [{"note": i} for i in range(n[REMIND])],
            run_ats=[timedelta(seconds=random.uniform(2, 5)) for _ in range(n[REMIND])],
        )
        ids += await queue.enqueue_many(LIMITED, [{"call": i} for i in range(n[LIMITED])])
    return min(ids), len(ids)


def _live_counts(stats: list[EntrypointStats]) -> dict[str, tuple[int, int, int]]:
    """(queued, due, running) per demo entrypoint."""
    out = {name: (0, 0, 0) for name in ENTRYPOINTS}
    for row in stats:
        if row.entrypoint in out:
            out[row.entrypoint] = (row.queued, row.due, row.running)
    return out


async def _demo(dsn: str, jobs: int, concurrency: int) -> int:
    from rich.console import Console
    from rich.live import Live
    from rich.table import Table

    console = Console()
    console.print(f"[bold]pgq-thin demo[/bold] on {_safe_dsn(dsn)}")
    revision = await asyncio.to_thread(migrate.upgrade, dsn)
    console.print(f"schema pgq at revision {revision}")
    first_id, total = await _setup(dsn, jobs)
    console.print(
        f"enqueued {total} jobs on {len(ENTRYPOINTS)} entrypoints "
        f"(retries with 0.2-1 s backoff, delays of 2-5 s, a concurrency limit of 2)"
    )

    worker = build_worker(dsn, concurrency)
    started = time.monotonic()
    run = asyncio.create_task(worker.arun(install_signal_handlers=True))
    monitor = AsyncAdmin(dsn)

    def render(counts: dict[str, tuple[int, int, int]], elapsed: float) -> Table:
        live = sum(q + r for q, _d, r in counts.values())
        table = Table(
            title=f"{total - live}/{total} jobs finished, {elapsed:.1f} s "
            f"(worker: {worker.stats.successful} ok, {worker.stats.failed} failed attempts)"
        )
        for col in ("entrypoint", "waiting", "due", "running"):
            table.add_column(col, justify="left" if col == "entrypoint" else "right")
        for name, (queued, due, running) in counts.items():
            table.add_row(name, str(queued), str(due), str(running))
        return table

    finished = False
    try:
        view = Live(console=console, refresh_per_second=8) if console.is_terminal else None
        with view or contextlib.nullcontext():
            last_plain = 0.0
            while time.monotonic() - started < TIMEOUT:
                counts = _live_counts(await monitor.stats())
                elapsed = time.monotonic() - started
                if view is not None:
                    view.update(render(counts, elapsed))
                elif elapsed - last_plain >= 1.0:
                    last_plain = elapsed
                    live = sum(q + r for q, _d, r in counts.values())
                    console.print(f"  {elapsed:4.1f} s: {total - live}/{total} finished")
                if all(q + r == 0 for q, _d, r in counts.values()):
                    finished = True
                    if view is not None:
                        view.update(render(counts, elapsed))
                    break
                if run.done():
                    break
                await asyncio.sleep(0.125)
        worker.stop()
        await run
        elapsed = time.monotonic() - started
        summary = await monitor.history_summary(ENTRYPOINTS, since_id=first_id)
    finally:
        await monitor.close()
        if not run.done():
            run.cancel()

    table = Table(title=f"pgq-thin demo: {total} jobs in {elapsed:.1f} s (from pgq.job_history)")
    for col in ("entrypoint", "final status", "jobs", "most attempts", "avg enqueue->finish"):
        table.add_column(col, justify="left" if col in ("entrypoint", "final status") else "right")
    for row in summary:
        table.add_row(
            row.entrypoint,
            row.status,
            str(row.jobs),
            str(row.max_attempt),
            f"{row.avg_latency_s:.2f} s",
        )
    console.print(table)
    s = worker.stats
    console.print(
        f"worker: {s.claimed} claims, {s.successful} successful, {s.failed} failed attempts "
        f"(retried by the database or dead), {s.canceled} canceled, {s.lost} lost"
    )
    if not finished:
        console.print(f"[red]the demo did not finish within {TIMEOUT:.0f} s[/red]")
        return 1
    console.print(
        "dead jobs are kept: see them with `pgq-thin failed`, retry with `pgq-thin requeue`"
    )
    return 0


def _safe_dsn(dsn: str) -> str:
    """The DSN without a password, for display."""
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = conninfo_to_dict(dsn)
    except Exception:
        return "the configured database"
    params.pop("password", None)
    return make_conninfo(**{k: str(v) for k, v in params.items()}) or "libpq defaults"


def run_demo(dsn: str, *, jobs: int = 300, concurrency: int = 20) -> int:
    """Run the demo against ``dsn``; returns the process exit code."""
    return asyncio.run(_demo(dsn, jobs, concurrency))
