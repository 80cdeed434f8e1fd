#!/usr/bin/env python3
"""pgq-thin as an adapter of the public job-queue benchmark harness
(hardbyte/postgresql-job-queue-benchmarking): one long-running process that produces and
consumes jobs through pgq-thin's public API and reports on stdout in the harness's JSONL.

The contract (the harness's CONTRIBUTING_ADAPTERS.md), as this adapter reads it:

- Environment in: DATABASE_URL (the database, already created), SCENARIO, PRODUCER_MODE
  (``fixed`` or ``depth-target``), PRODUCER_RATE, PRODUCER_BATCH_MAX (128), PRODUCER_BATCH_MS
  (10), PRODUCER_PACING (``harness``: ``ENQUEUE <n>`` lines on stdin; ``adapter``: paced
  here, crediting the rate on wall-clock time), PRODUCER_RATE_CONTROL_FILE, TARGET_DEPTH,
  WORKER_COUNT, JOB_PAYLOAD_BYTES (256), JOB_WORK_MS (1), SAMPLE_EVERY_S (5),
  BENCH_INSTANCE_ID (0).
- stdout: one ``descriptor`` record at start, then every SAMPLE_EVERY_S seconds (aligned to
  the wall clock) one record per metric: claim_p50/p95/p99_ms (pickup latency, enqueue to
  handler start, over the last 30 s, from a bounded log histogram), enqueue_rate,
  completion_rate (results the server accepted), queue_depth (due jobs from pgq.metrics, polled
  every 0.2 s in depth-target mode and every second otherwise; replica 0 only),
  producer_target_rate. stderr: logs.
- SIGTERM or SIGINT: the worker stops claiming, finishes what it runs (grace 3 s) and exits.

pgq-thin's own knobs (not part of the contract): PGQ_THIN_BATCH (the worker's batch_size;
default: ThinWorker's), PGQ_THIN_PREFETCH (claimed jobs held beyond the WORKER_COUNT running
ones, ThinWorker's ``prefetch``; default 0), PGQ_THIN_RESULTS_CONNECTION (1: results written on
a connection of their own, ThinWorker's ``results_connection``), PGQ_THIN_MAINTAIN_S
(pgq.maintain interval; default ThinWorker's). At most WORKER_COUNT handlers run at once
whatever the knobs. The worker is a plain ``ThinWorker(concurrency=WORKER_COUNT)``; jobs are
added with ``AsyncQueue.enqueue_many`` (one statement per batch). Installs the schema with
``pgq_thin.migrate.upgrade`` (safe from several replicas at once).

Needs only pgq-thin (and its psycopg). ``benchmarks/harness_cells.py`` runs it the way the
harness's capacity and held-xid cells do, against a local server, without Docker.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Awaitable
from typing import Any, TypeVar

import psycopg

from pgq_thin import migrate
from pgq_thin.admin import AsyncAdmin
from pgq_thin.queue import AsyncQueue
from pgq_thin.worker import ThinWorker

SYSTEM = "pgq-thin"
ENTRYPOINT = "bench"
WINDOW_S = 30.0
OBSERVER_METRICS = {"queue_depth", "producer_target_rate"}
T = TypeVar("T")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


def env_str(name: str, default: str) -> str:
    return os.environ.get(name) or default


INSTANCE = env_int("BENCH_INSTANCE_ID", 0)


def emit(record: dict[str, Any]) -> None:
    record.setdefault("instance_id", INSTANCE)
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class RollingHistogram:
    """Latencies of the last ``window`` seconds in log-spaced buckets (1 % apart), one sparse
    bucket map per second: memory bounded by the window and the buckets, not the rate."""

    BASE = math.log1p(0.01)

    def __init__(self, window: float = WINDOW_S) -> None:
        self.window = int(window)
        self.seconds: deque[tuple[int, dict[int, int]]] = deque()

    def record(self, ms: float, now: float) -> None:
        sec = int(now)
        if not self.seconds or self.seconds[-1][0] != sec:
            self.seconds.append((sec, {}))
            while self.seconds[0][0] <= sec - self.window:
                self.seconds.popleft()
        bucket = int(math.log(max(ms, 0.001) / 0.001) / self.BASE)
        counts = self.seconds[-1][1]
        counts[bucket] = counts.get(bucket, 0) + 1

    def quantiles(self, now: float, qs: tuple[float, ...]) -> list[float]:
        merged: dict[int, int] = {}
        for sec, counts in self.seconds:
            if sec > now - self.window:
                for b, c in counts.items():
                    merged[b] = merged.get(b, 0) + c
        total = sum(merged.values())
        if not total:
            return [0.0 for _ in qs]
        out, order = [], sorted(merged)
        for q in qs:
            rank, seen = q * total, 0
            for b in order:
                seen += merged[b]
                if seen >= rank:
                    out.append(0.001 * math.exp(self.BASE * (b + 0.5)))
                    break
        return out


class Adapter:
    def __init__(self) -> None:
        self.dsn = os.environ["DATABASE_URL"]
        self.mode = env_str("PRODUCER_MODE", "fixed")
        self.rate = env_int("PRODUCER_RATE", 800)
        self.batch_max = max(1, env_int("PRODUCER_BATCH_MAX", 128))
        self.batch_ms = max(1, env_int("PRODUCER_BATCH_MS", 10))
        self.pacing = env_str("PRODUCER_PACING", "adapter")
        self.target_depth = env_int("TARGET_DEPTH", 1000)
        self.workers = env_int("WORKER_COUNT", 32)
        self.work_s = env_int("JOB_WORK_MS", 1) / 1000
        self.sample_every = max(1, env_int("SAMPLE_EVERY_S", 5))
        self.padding = "x" * max(0, env_int("JOB_PAYLOAD_BYTES", 256) - 32)
        self.enqueued = 0
        self.depth = 0
        self.target_rate = 0.0
        self.latency = RollingHistogram()
        self.stopping = asyncio.Event()
        settings: dict[str, Any] = {"concurrency": self.workers, "grace_period": 3.0}
        if os.environ.get("PGQ_THIN_BATCH"):
            settings["batch_size"] = env_int("PGQ_THIN_BATCH", 0)
        if os.environ.get("PGQ_THIN_PREFETCH"):
            settings["prefetch"] = env_int("PGQ_THIN_PREFETCH", 0)
        if os.environ.get("PGQ_THIN_RESULTS_CONNECTION"):
            settings["results_connection"] = os.environ["PGQ_THIN_RESULTS_CONNECTION"] == "1"
        if os.environ.get("PGQ_THIN_MAINTAIN_S"):
            settings["maintain_interval"] = float(os.environ["PGQ_THIN_MAINTAIN_S"])
        self.worker = ThinWorker(self.dsn, **settings)
        self.worker.entrypoint(ENTRYPOINT)(self.handle)

    async def handle(self, job: Any) -> None:
        now = time.time()
        self.latency.record((now - job.enqueued_at.timestamp()) * 1000, time.monotonic())
        if self.work_s:
            await asyncio.sleep(self.work_s)

    def current_rate(self) -> int:
        path = os.environ.get("PRODUCER_RATE_CONTROL_FILE")
        if path:
            try:
                with open(path) as fh:
                    return int(float(fh.read().strip()))
            except (OSError, ValueError):
                pass
        return self.rate

    async def tokens(self) -> asyncio.Queue[int]:
        """ENQUEUE <n> lines on stdin (PRODUCER_PACING=harness), as a queue of counts."""
        out: asyncio.Queue[int] = asyncio.Queue(maxsize=1024)
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

        async def read() -> None:
            while line := await reader.readline():
                word, _, count = line.decode(errors="replace").strip().partition(" ")
                if word == "ENQUEUE" and count.isdigit() and int(count) > 0:
                    await out.put(int(count))

        self.reader_task = asyncio.create_task(read())
        return out

    async def produce(self) -> None:
        loop = asyncio.get_running_loop()
        # The handle's own connection: one found lost is replaced on the next call.
        async with AsyncQueue(self.dsn) as queue:
            paced = self.mode == "fixed" and self.pacing == "harness"
            tokens = await self.tokens() if paced else None
            credit, last = 0.0, loop.time()
            while not self.stopping.is_set():
                if self.mode == "depth-target":
                    self.target_rate = 0.0
                    count = min(self.batch_max, self.target_depth - self.depth)
                    if count <= 0:
                        await asyncio.sleep(0.05)
                        continue
                elif tokens is not None:
                    self.target_rate = float(self.current_rate())
                    try:
                        count = min(self.batch_max, await asyncio.wait_for(tokens.get(), 0.5))
                    except TimeoutError:
                        continue
                else:
                    rate = self.current_rate()
                    self.target_rate = float(rate)
                    await asyncio.sleep(max(0.0, self.batch_ms / 1000 - (loop.time() - last)))
                    now = loop.time()
                    credit, last = credit + rate * (now - last), now
                    if credit < 1:
                        continue
                    count = min(self.batch_max, int(credit))
                    credit -= count
                payload = {"pad": self.padding}
                if await self.attempt("enqueue", queue.enqueue_many(ENTRYPOINT, [payload] * count)):
                    self.enqueued += count
                    if self.mode == "depth-target":
                        self.depth += count  # until the next poll says otherwise

    async def poll_depth(self) -> None:
        """Due jobs, from pgq.metrics (exact up to 10,000): every 0.2 s when the producer
        steers by it (depth-target), else every second (the samples report it every
        SAMPLE_EVERY_S)."""
        every = 0.2 if self.mode == "depth-target" else 1.0
        async with AsyncAdmin(self.dsn) as admin:
            while not self.stopping.is_set():
                rows = await self.attempt("depth poll", admin.metrics(ENTRYPOINT))
                if rows is not None:
                    self.depth = sum(r.due for r in rows)
                await asyncio.sleep(every)

    async def attempt(self, what: str, call: Awaitable[T]) -> T | None:
        """The call's result; None after an error, logged, with a short pause (the server
        restarting, a connection killed: the harness's chaos cells)."""
        try:
            return await call
        except psycopg.Error as err:
            print(f"[pgq-thin] {what} failed: {err}".splitlines()[0], file=sys.stderr)
            await asyncio.sleep(0.2)
            return None

    async def sample(self) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(self.sample_every - time.time() % self.sample_every)
        last_t, last_enq, last_done = loop.time(), self.enqueued, self.worker.stats.successful
        while not self.stopping.is_set():
            await asyncio.sleep(self.sample_every - time.time() % self.sample_every)
            now = loop.time()
            span = max(now - last_t, 1e-3)
            done = self.worker.stats.successful
            p50, p95, p99 = self.latency.quantiles(time.monotonic(), (0.5, 0.95, 0.99))
            stamp = now_iso()
            for metric, value, window in (
                ("claim_p50_ms", p50, WINDOW_S),
                ("claim_p95_ms", p95, WINDOW_S),
                ("claim_p99_ms", p99, WINDOW_S),
                ("enqueue_rate", (self.enqueued - last_enq) / span, self.sample_every),
                ("completion_rate", (done - last_done) / span, self.sample_every),
                ("queue_depth", float(self.depth), 0.0),
                ("producer_target_rate", self.target_rate, 0.0),
            ):
                if metric in OBSERVER_METRICS and INSTANCE != 0:
                    continue
                emit(
                    {
                        "t": stamp,
                        "system": SYSTEM,
                        "kind": "adapter",
                        "subject_kind": "adapter",
                        "subject": "",
                        "metric": metric,
                        "value": value,
                        "window_s": float(window),
                    }
                )
            last_t, last_enq, last_done = now, self.enqueued, done

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop)
        if os.environ.get("SCENARIO", "long_horizon") != "long_horizon":
            print(f"[pgq-thin] SCENARIO {os.environ['SCENARIO']!r}: runs as long_horizon",
                  file=sys.stderr)  # fmt: skip
        emit(
            {
                "kind": "descriptor",
                "system": SYSTEM,
                "event_tables": event_tables(self.dsn),
                "extensions": [],
                "version": migrate.head(),
                "schema_version": migrate.current(self.dsn),
                "db_name": psycopg.conninfo.conninfo_to_dict(self.dsn).get("dbname"),
                "started_at": now_iso(),
            }
        )
        tasks = [
            asyncio.create_task(self.produce()),
            asyncio.create_task(self.sample()),
            asyncio.create_task(self.poll_depth()),
        ]
        await self.worker.arun(install_signal_handlers=False)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def stop(self) -> None:
        self.stopping.set()
        self.worker.stop()


def event_tables(dsn: str) -> list[str]:
    """The tables a job passes through: the partitions of pgq.jobs (the ring's and
    jobs_scheduled) and the history."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT 'pgq.' || c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = 'pgq.jobs'::regclass ORDER BY 1"
        ).fetchall()
    return sorted({r[0] for r in rows} | {"pgq.job_history"})


def main() -> None:
    migrate.upgrade(os.environ["DATABASE_URL"])
    asyncio.run(Adapter().run())


if __name__ == "__main__":
    main()
