"""What observing a worker costs: CPU seconds of the worker process per job, for a drain of
no-op jobs, with logging, metrics or tracing switched on or not.

Usage: python benchmarks/observe_cost.py [--dsn DSN] [--jobs 20000] [--batch 100]
           [--concurrency 200] [--log-level L] [--log-format text|json] [--metrics] [--otel]
           [--repo PATH]

One run: a scratch database, N jobs enqueued by one pgq.enqueue_many, then one ThinWorker
drains them in this process (``run(until_empty=True)``); prints one JSON line with the CPU
time of the process per job (``time.process_time``: every thread of the process, the driver
included) and the wall-clock rate. Logs go to /dev/null at the level given (none: logging is
not configured, as in an application that never set it up). --metrics serves the worker's
Prometheus metrics (any free port, not scraped); --otel sets up the OpenTelemetry SDK with a
synchronous in-memory exporter (the worst case: a span exported per job on the event loop).
--repo imports pgq_thin from another checkout (the same benchmark against an older commit).
CPU per job is steadier than the rate on a shared machine: repeat and compare medians.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dsn", default=None, help="a superuser DSN (default: the benchmarks')")
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--concurrency", type=int, default=200)
    p.add_argument("--log-level", default=None)
    p.add_argument("--log-format", default="text", choices=["text", "json"])
    p.add_argument("--metrics", action="store_true")
    p.add_argument("--otel", action="store_true")
    p.add_argument("--repo", default=str(HERE.parent), help="the checkout to import from")
    args = p.parse_args()
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, args.repo)

    import common
    import psycopg

    dsn = args.dsn or common.DEFAULT_DSN
    common.check_local(dsn)
    if args.otel:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
        trace.set_tracer_provider(provider)

    import pgq_thin
    from pgq_thin import migrate
    from pgq_thin.worker import ThinWorker

    if args.log_level:
        sink = open("/dev/null", "w")  # noqa: SIM115 - for the whole run
        if args.log_format == "json":
            from pgq_thin import logs

            logs.configure(args.log_level.upper(), "json", sink)
        else:
            fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
            logging.basicConfig(level=args.log_level.upper(), stream=sink, format=fmt)

    with common.scratch_db(dsn, "observe") as db:
        migrate.upgrade(db)
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(
                "SELECT count(*) FROM pgq.enqueue_many(array_fill('noop'::text, ARRAY[%s]))",
                (args.jobs,),
            )
            conn.execute("VACUUM (ANALYZE)")
        settings: dict[str, Any] = {"metrics_port": 0} if args.metrics else {}
        worker = ThinWorker(
            db,
            batch_size=args.batch,
            concurrency=args.concurrency,
            poll_interval=1.0,
            worker_id=uuid.uuid4(),
            **settings,
        )

        @worker.entrypoint("noop")
        async def noop(job: Any) -> None:
            pass

        wall, cpu = time.perf_counter(), time.process_time()
        worker.run(until_empty=True)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if worker.stats.successful != args.jobs:
            raise SystemExit(f"{worker.stats.successful} jobs ran, expected {args.jobs}")
    print(
        json.dumps(
            {
                "pgq_thin": str(Path(pgq_thin.__file__).parent),
                "cpu_us_per_job": cpu / args.jobs * 1e6,
                "jobs_per_s": args.jobs / wall,
            }
        )
    )


if __name__ == "__main__":
    main()
