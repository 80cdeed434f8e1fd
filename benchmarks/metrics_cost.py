# ruff: noqa: E501  (SQL is kept on its natural lines)
"""What seeing the queue costs: the metrics, workers and job-lookup functions at a large backlog
and history, the rollup at a high job rate, the hot path with and without the rollup's column,
and a drain with and without a scraper.

Usage: python benchmarks/metrics_cost.py [--dsn DSN] [--parts read,rollup,hotpath,archive,heartbeat,scrape]
                                         [--backlog 1000000] [--history 10000000] [--repeat 5]

Parts (each on fresh scratch databases, dropped at the end):
  read       --history rows in pgq.job_history (finished over the last 2,000 s, 10 entrypoints,
             2 % failed, 1 % canceled, in transactions of 250,000 rows), --backlog queued jobs
             (10 entrypoints, 90 % due, 10 % delayed), 20 registered workers holding 1,000
             running jobs. Times the rollup catching up on the whole history (calls of 100,000
             rows), then pgq.metrics(), pgq.queue_stats, pgq.worker_status, pgq.job, pgq.list_jobs
             (first and a deep page), pgq.find_history (median of --repeat calls each), before and
             after VACUUM of pgq.jobs (index-only scans need the visibility map).
  rollup     the steady state at 5,000 jobs/s scraped every 15 s: 75,000 finished jobs in 150
             transactions of 500, then one pgq.rollup_metrics() and one pgq.metrics(); --repeat times.
  hotpath    the SQL ceiling (pgbench, pgq.claim + pgq.complete in one statement, batch 100, one
             client, 100,000 jobs) with job_history.finished_xid (default and index) and the
             index of unsuccessful jobs, as installed, and without them (dropped after install:
             the archive path as before this release);
             interleaved, --repeat runs each.
  archive    pgq.complete of 500 jobs (the statement that writes history), timed per batch, with
             and without the history additions, alternating batch by batch between two
             databases, 200 batches each: min and median microseconds per job.
  heartbeat  pgq.heartbeat of 100 running jobs by a worker that is registered (one more UPDATE
             per call, of pgq.workers) and by one that is not, 3,000 calls each, alternating:
             min and median microseconds per call.
  trace      completions per half second of a ThinWorker drain of 200,000 jobs with three single
             pgq.metrics() calls in it (not in the default parts).
  scrape     ThinWorker drain (batch 500, concurrency 1000) of 200,000 no-op jobs with no scraper,
             with pgq.metrics() every 15 s and every 1 s from another connection; interleaved,
             --repeat runs each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import psycopg
import sql_ceiling

ENTRYPOINTS = [f"mc.ep{i}" for i in range(10)]


def timed(
    conn: psycopg.Connection[Any], sql: str, params: Any = None, repeat: int = 5
) -> dict[str, float]:
    """Min, median and max wall time of a statement (ms), fetched completely, after one warm-up
    (the minimum is what the statement costs on a quiet moment of a shared machine)."""
    conn.execute(sql, params).fetchall()
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        conn.execute(sql, params).fetchall()
        runs.append((time.perf_counter() - t) * 1000)
    return {"min_ms": min(runs), "median_ms": statistics.median(runs), "max_ms": max(runs)}


def fill_history(conn: psycopg.Connection[Any], rows: int, chunk: int = 250_000) -> None:
    for start in range(1, rows + 1, chunk):
        end = min(rows, start + chunk - 1)
        conn.execute(
            """
            INSERT INTO pgq.job_history (id, entrypoint, status, priority, attempt, payload, enqueued_at,
                                         started_at, finished_at, worker_id, lease, details, errors)
            SELECT -g, 'mc.ep' || (g %% 10),
                   CASE WHEN g %% 50 = 0 THEN 'failed' WHEN g %% 97 = 0 THEN 'canceled' ELSE 'successful' END,
                   0, 1, jsonb_build_object('n', g), f - interval '1.2 seconds', f - interval '0.2 seconds', f,
                   '00000000-0000-0000-0000-000000000001', g,
                   CASE WHEN g %% 50 = 0
                        THEN jsonb_build_object('error', 'TimeoutError', 'message', 'timed out after ' || g %% 30 || ' s',
                                                'traceback', 'Traceback (most recent call last): ...')
                        ELSE jsonb_build_object('result', g) END,
                   '[]'
              FROM generate_series(%s::bigint, %s::bigint) AS g,
                   LATERAL (SELECT now() - (g %% 2000) * interval '1 second' - (g %% 1000) * interval '1 millisecond' AS f) AS t
            """,
            (start, end),
        )


def fill_backlog(conn: psycopg.Connection[Any], jobs: int, chunk: int = 50_000) -> None:
    left = jobs
    while left > 0:
        n = min(chunk, left)
        conn.execute(
            """SELECT count(*) FROM pgq.enqueue_many(
                   ARRAY(SELECT 'mc.ep' || (g %% 10) FROM generate_series(1, %s) g),
                   priorities => ARRAY(SELECT g %% 4 FROM generate_series(1, %s) g),
                   run_ats => ARRAY(SELECT CASE WHEN (g / 10) %% 10 = 0 THEN now() + interval '1 hour' ELSE now() END
                                      FROM generate_series(1, %s) g))""",
            (n, n, n),
        )
        left -= n


def part_read(dsn: str, backlog: int, history: int, repeat: int) -> dict[str, Any]:
    out: dict[str, Any] = {"backlog": backlog, "history": history}
    with common.scratch_db(dsn, "mcread") as db:
        common.install_pgq(db)
        with psycopg.connect(db, autocommit=True) as conn:
            t = time.perf_counter()
            fill_history(conn, history)
            out["fill_history_s"] = time.perf_counter() - t
            conn.execute("VACUUM (ANALYZE) pgq.job_history")
            # The rollup catching up on the whole history, 100,000 rows per call.
            calls, t = [], time.perf_counter()
            while True:
                c = time.perf_counter()
                rolled, caught_up, _ = conn.execute(
                    "SELECT * FROM pgq.rollup_metrics(100000)"
                ).fetchone()
                calls.append(((time.perf_counter() - c) * 1000, rolled))
                if caught_up:
                    break
            total = time.perf_counter() - t
            out["catch_up"] = {
                "rows": sum(r for _, r in calls),
                "calls": len(calls),
                "seconds": total,
                "median_ms_per_call": statistics.median(ms for ms, r in calls if r >= 100000)
                if len(calls) > 1
                else calls[0][0],
                "rows_per_s": sum(r for _, r in calls) / total,
            }
            print(f"  rollup catch-up: {out['catch_up']}", file=sys.stderr, flush=True)
            t = time.perf_counter()
            fill_backlog(conn, backlog)
            out["fill_backlog_s"] = time.perf_counter() - t
            for w in range(20):
                conn.execute(
                    "SELECT pgq.register_worker(%s, %s, 'host-' || %s, 1000 + %s)",
                    (uuid.UUID(int=w + 1), ENTRYPOINTS, w, w),
                )
                conn.execute(
                    "SELECT count(*) FROM pgq.claim(%s, %s, 50)",
                    (uuid.UUID(int=w + 1), ENTRYPOINTS),
                )
            conn.execute("ANALYZE pgq.jobs")
            live_id = conn.execute(
                "SELECT max(id) FROM pgq.jobs WHERE status = 'queued'"
            ).fetchone()[0]
            deep = conn.execute(
                "SELECT priority, run_at, id FROM pgq.jobs WHERE entrypoint = 'mc.ep3' AND status = 'queued'"
                " ORDER BY priority DESC, run_at, id OFFSET %s LIMIT 1",
                (min(50000, backlog // 20),),
            ).fetchone()
            deep_cursor = conn.execute(
                "SELECT 'q,' || %s || ',' || (to_json(%s::timestamptz) #>> '{}') || ',' || %s", deep
            ).fetchone()[0]
            queries = {
                "pgq.metrics()": ("SELECT * FROM pgq.metrics()", None),
                "pgq.metrics('{mc.ep3}')": ("SELECT * FROM pgq.metrics('{mc.ep3}')", None),
                "pgq.queue_stats": ("SELECT * FROM pgq.queue_stats", None),
                "pgq.worker_status": ("SELECT * FROM pgq.worker_status", None),
                "pgq.job(live id)": ("SELECT * FROM pgq.job(%s)", (live_id,)),
                "pgq.job(history id)": ("SELECT * FROM pgq.job(-4242)", None),
                "pgq.list_jobs(queued, first page)": (
                    "SELECT * FROM pgq.list_jobs('mc.ep3', 'queued')",
                    None,
                ),
                "pgq.list_jobs(queued, page after 50,000)": (
                    "SELECT * FROM pgq.list_jobs('mc.ep3', 'queued', %s)",
                    (deep_cursor,),
                ),
                "pgq.list_jobs(successful, first page)": (
                    "SELECT * FROM pgq.list_jobs('mc.ep3', 'successful')",
                    None,
                ),
                "pgq.find_history('mc.ep3') (failed)": (
                    "SELECT * FROM pgq.find_history('mc.ep3')",
                    None,
                ),
                "pgq.find_history(error => 'after 20 s')": (
                    "SELECT * FROM pgq.find_history(error => 'after 20 s')",
                    None,
                ),
                "pgq.find_history(error => 'nothing like this')": (
                    "SELECT * FROM pgq.find_history(error => 'nothing like this')",
                    None,
                ),
                "pgq.list_jobs(canceled, first page)": (
                    "SELECT * FROM pgq.list_jobs('mc.ep3', 'canceled')",
                    None,
                ),
                "pgq.find_history('mc.ep3', error => 'nothing like this')": (
                    "SELECT * FROM pgq.find_history('mc.ep3', error => 'nothing like this')",
                    None,
                ),
            }
            for stage in ("not vacuumed", "after VACUUM"):
                if stage == "after VACUUM":
                    conn.execute("VACUUM (ANALYZE) pgq.jobs")
                res = {
                    name: timed(conn, sql, params, repeat)
                    for name, (sql, params) in queries.items()
                }
                out[stage] = res
                for name, r in res.items():
                    print(
                        f"  {stage}: {name}: {r['median_ms']:.1f} ms (min {r['min_ms']:.1f})",
                        file=sys.stderr,
                        flush=True,
                    )
            out["sizes"] = common.table_stats(
                db, ("pgq.jobs", "pgq.job_history", "pgq.metrics_buckets"), rows=False
            )
            out["buckets"] = conn.execute("SELECT count(*) FROM pgq.metrics_buckets").fetchone()[0]
    return out


def part_rollup(dsn: str, repeat: int) -> dict[str, Any]:
    """75,000 jobs (15 s at 5,000 jobs/s) in 150 transactions, then one rollup; and the same
    followed by a whole pgq.metrics() (which rolls up first)."""
    runs: dict[str, list[float]] = {"rollup_metrics": [], "metrics": []}
    with common.scratch_db(dsn, "mcroll") as db:
        common.install_pgq(db)
        with psycopg.connect(db, autocommit=True) as conn:
            fill_history(conn, 1_000_000)
            conn.execute("SELECT * FROM pgq.rollup_metrics(1000000)")
            conn.execute("VACUUM (ANALYZE) pgq.job_history")
            base = 10_000_000
            for r in range(repeat * 2):
                for k in range(150):
                    lo = base + (r * 150 + k) * 500
                    conn.execute(
                        """INSERT INTO pgq.job_history (id, entrypoint, status, priority, attempt, enqueued_at,
                                                        started_at, finished_at, details)
                           SELECT g, 'mc.ep' || (g %% 10), CASE WHEN g %% 50 = 0 THEN 'failed' ELSE 'successful' END,
                                  0, 1, now() - interval '0.3 seconds', now() - interval '0.05 seconds', now(), '{"result": 1}'
                             FROM generate_series(%s::bigint, %s::bigint) g""",
                        (lo, lo + 499),
                    )
                which = "rollup_metrics" if r % 2 == 0 else "metrics"
                t = time.perf_counter()
                if which == "rollup_metrics":
                    rolled = conn.execute("SELECT rolled FROM pgq.rollup_metrics()").fetchone()[0]
                    assert rolled == 75_000, rolled
                else:
                    conn.execute("SELECT * FROM pgq.metrics()").fetchall()
                runs[which].append((time.perf_counter() - t) * 1000)
                print(
                    f"  {which} after 75,000 new jobs: {runs[which][-1]:.0f} ms",
                    file=sys.stderr,
                    flush=True,
                )
            total = conn.execute("SELECT sum(jobs) FROM pgq.metrics_totals").fetchone()[0]
            assert total == 1_000_000 + repeat * 2 * 75_000, total
    return {k: {"median_ms": statistics.median(v), "runs_ms": v} for k, v in runs.items()}


def ceiling_run(dsn: str, variant: str, jobs: int, batch: int = 100) -> float:
    with common.scratch_db(dsn, "mchot") as db:
        common.install_pgq(db)
        if variant == "without":
            with psycopg.connect(db, autocommit=True) as conn:
                conn.execute("ALTER TABLE pgq.job_history ALTER COLUMN finished_xid DROP DEFAULT")
                conn.execute("DROP INDEX pgq.job_history_finished_xid_idx")
                conn.execute("DROP INDEX pgq.job_history_unsuccessful_idx")
        sql_ceiling.fill_pgq(db, jobs)
        res = sql_ceiling.run_pgbench(db, "pgq-1tx", 1, jobs // batch, batch)
        count = sql_ceiling.finished(db, "pgq-1tx")
    assert count == jobs, count
    return count / (res["transactions"] / res["tps"])


def part_hotpath(dsn: str, repeat: int, jobs: int = 100_000) -> dict[str, Any]:
    runs: dict[str, list[float]] = {"with": [], "without": []}
    for r in range(repeat):
        for variant in ("with", "without") if r % 2 == 0 else ("without", "with"):
            v = ceiling_run(dsn, variant, jobs)
            runs[variant].append(v)
            print(
                f"  [{r + 1}/{repeat}] ceiling {variant} finished_xid: {v:,.0f} jobs/s",
                file=sys.stderr,
                flush=True,
            )
    med = {k: statistics.median(v) for k, v in runs.items()}
    return {"runs": runs, "median": med, "ratio_with_over_without": med["with"] / med["without"]}


def part_archive(dsn: str, batches: int = 200, batch: int = 500) -> dict[str, Any]:
    """Server time of pgq.complete (the statement that writes history) per job, with and without
    the history additions of this release, alternating batch by batch between two databases:
    min and median over the batches (the minimum is what the code costs on a quiet moment)."""
    times: dict[str, list[float]] = {"with": [], "without": []}
    with common.scratch_db(dsn, "mcarcA") as a, common.scratch_db(dsn, "mcarcB") as b:
        for db in (a, b):
            common.install_pgq(db)
        with psycopg.connect(a, autocommit=True) as ca, psycopg.connect(b, autocommit=True) as cb:
            cb.execute("ALTER TABLE pgq.job_history ALTER COLUMN finished_xid DROP DEFAULT")
            cb.execute("DROP INDEX pgq.job_history_finished_xid_idx")
            cb.execute("DROP INDEX pgq.job_history_unsuccessful_idx")
            me = uuid.uuid4()
            for i in range(batches):
                for name, conn in (
                    (("with", ca), ("without", cb))
                    if i % 2 == 0
                    else (("without", cb), ("with", ca))
                ):
                    conn.execute(
                        "SELECT count(*) FROM pgq.enqueue_many(array_fill('mc.arc'::text, ARRAY[%s]))",
                        (batch,),
                    )
                    rows = conn.execute(
                        "SELECT id, lease FROM pgq.claim(%s, '{mc.arc}', %s)", (me, batch)
                    ).fetchall()
                    ids = [r[0] for r in rows]
                    leases = [r[1] for r in rows]
                    statuses = ["successful"] * len(ids)
                    t = time.perf_counter()
                    conn.execute(
                        "SELECT count(*) FROM pgq.complete(%s, %s, %s, %s)",
                        (me, ids, leases, statuses),
                    ).fetchall()
                    times[name].append((time.perf_counter() - t) * 1e6 / batch)
    out = {
        k: {"min_us_per_job": min(v), "median_us_per_job": statistics.median(v)}
        for k, v in times.items()
    }
    print(f"  archive: {out}", file=sys.stderr, flush=True)
    return out


def part_heartbeat(dsn: str, calls: int = 3000) -> dict[str, Any]:
    """pgq.heartbeat of 100 running jobs by a registered worker (one more UPDATE per call, of
    its pgq.workers row) and by one that never registered (the update finds no row), calls
    alternating between the two; min and median microseconds per call, client-side (the
    round trip is the same for both)."""
    times: dict[str, list[float]] = {"registered": [], "not registered": []}
    with common.scratch_db(dsn, "mchb") as db:
        common.install_pgq(db)
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(
                "SELECT pgq.enqueue_many(array_fill('mc.hb'::text, ARRAY[200]))"
            ).fetchall()
            args = {}
            for name in times:
                w = uuid.uuid4()
                if name == "registered":
                    conn.execute("SELECT pgq.register_worker(%s, '{mc.hb}')", (w,))
                rows = conn.execute(
                    "SELECT id, lease FROM pgq.claim(%s, '{mc.hb}', 100)", (w,)
                ).fetchall()
                args[name] = (w, [r[0] for r in rows], [r[1] for r in rows])
            for i in range(calls):
                for name in list(times) if i % 2 == 0 else list(reversed(times)):
                    t = time.perf_counter()
                    conn.execute(
                        "SELECT count(*) FROM pgq.heartbeat(%s, %s, %s)", args[name]
                    ).fetchall()
                    times[name].append((time.perf_counter() - t) * 1e6)
                if i % 500 == 499:
                    conn.execute("VACUUM pgq.jobs, pgq.workers")
    out = {k: {"min_us": min(v), "median_us": statistics.median(v)} for k, v in times.items()}
    print(f"  heartbeat: {out}", file=sys.stderr, flush=True)
    return out


def drain_run(dsn: str, interval: float | None, jobs: int) -> dict[str, Any]:
    with common.scratch_db(dsn, "mcscrape") as db:
        common.install_pgq(db)
        sql_ceiling.fill_pgq(db, jobs)
        stop = threading.Event()
        scrapes: list[float] = []

        def scraper() -> None:
            with psycopg.connect(db, autocommit=True) as conn:
                while not stop.is_set():
                    t = time.perf_counter()
                    conn.execute("SELECT * FROM pgq.metrics()").fetchall()
                    scrapes.append((time.perf_counter() - t) * 1000)
                    stop.wait(interval)

        thread = threading.Thread(target=scraper) if interval else None
        cmd = common.agent(
            "thin",
            "drain-worker",
            "--batch",
            "500",
            "--concurrency",
            "1000",
            "--dsn",
            db,
            "--timeout",
            "300",
        )
        if thread:
            thread.start()
        try:
            results = common.run_agents([cmd], 330)
        finally:
            stop.set()
            if thread:
                thread.join(timeout=60)
        with psycopg.connect(db) as conn:
            count, last = conn.execute(
                "SELECT count(*), extract(epoch FROM max(finished_at))::float8 FROM pgq.job_history"
            ).fetchone()
    assert count == jobs, count
    first = results[0]["first_start_ns"] / 1e9
    return {
        "jobs_per_s": jobs / (last - first),
        "scrapes": len(scrapes),
        "scrape_ms_median": statistics.median(scrapes) if scrapes else None,
    }


def part_scrape(dsn: str, repeat: int, jobs: int = 200_000) -> dict[str, Any]:
    variants: dict[str, float | None] = {
        "no scraper": None,
        "metrics() every 15 s": 15.0,
        "metrics() every 1 s": 1.0,
    }
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in variants}
    for r in range(repeat):
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for name in order:
            res = drain_run(dsn, variants[name], jobs)
            runs[name].append(res)
            print(
                f"  [{r + 1}/{repeat}] drain, {name}: {res['jobs_per_s']:,.0f} jobs/s ({res['scrapes']} scrapes, "
                f"median {res['scrape_ms_median']} ms)",
                file=sys.stderr,
                flush=True,
            )
    med = {k: statistics.median(x["jobs_per_s"] for x in v) for k, v in runs.items()}
    return {"runs": runs, "median_jobs_per_s": med}


def part_trace(dsn: str, jobs: int = 200_000) -> dict[str, Any]:
    """Completions per half second of a ThinWorker drain (batch 500, concurrency 1000) with
    three single pgq.metrics() calls 4 s apart, starting 6 s in: does a scrape stall workers?
    Each half second is printed with a * when a scrape ran in it."""
    import datetime as dt

    marks: list[tuple[Any, Any, float]] = []
    with common.scratch_db(dsn, "mctrace") as db:
        common.install_pgq(db)
        sql_ceiling.fill_pgq(db, jobs)

        def scraper() -> None:
            time.sleep(6)  # a fixed offset into the drain, not a synchronisation
            with psycopg.connect(db, autocommit=True) as conn:
                for _ in range(3):
                    t0 = conn.execute("SELECT clock_timestamp()").fetchone()[0]
                    t = time.perf_counter()
                    conn.execute("SELECT * FROM pgq.metrics()").fetchall()
                    t1 = conn.execute("SELECT clock_timestamp()").fetchone()[0]
                    marks.append((t0, t1, (time.perf_counter() - t) * 1000))
                    time.sleep(4)

        thread = threading.Thread(target=scraper)
        thread.start()
        cmd = common.agent(
            "thin",
            "drain-worker",
            "--batch",
            "500",
            "--concurrency",
            "1000",
            "--dsn",
            db,
            "--timeout",
            "300",
        )
        common.run_agents([cmd], 330)
        thread.join(timeout=60)
        with psycopg.connect(db) as conn:
            rows = conn.execute(
                "SELECT date_bin('500 ms', finished_at, timestamptz '2000-01-01'), count(*)"
                " FROM pgq.job_history GROUP BY 1 ORDER BY 1"
            ).fetchall()
    half = dt.timedelta(milliseconds=500)
    series = []
    for b, n in rows:
        scraped = any(t0 <= b + half and t1 >= b for t0, t1, _ in marks)
        series.append({"at": b.isoformat(), "jobs": n, "scrape": scraped})
        print(
            f"  {b.strftime('%H:%M:%S.%f')[:-3]} {n:6d} {'*' if scraped else ''}", file=sys.stderr
        )
    return {"series": series, "scrape_ms": [m[2] for m in marks]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--parts", default="read,rollup,hotpath,archive,heartbeat,scrape")
    parser.add_argument("--backlog", type=int, default=1_000_000)
    parser.add_argument("--history", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    common.check_local(args.dsn)
    result: dict[str, Any] = {"server": common.server_info(args.dsn)}
    parts = args.parts.split(",")
    if "read" in parts:
        result["read"] = part_read(args.dsn, args.backlog, args.history, args.repeat)
    if "rollup" in parts:
        result["rollup"] = part_rollup(args.dsn, args.repeat)
        print(f"rollup: {result['rollup']}", file=sys.stderr)
    if "hotpath" in parts:
        result["hotpath"] = part_hotpath(args.dsn, args.repeat)
        print(f"hotpath: {result['hotpath']['median']}", file=sys.stderr)
    if "archive" in parts:
        result["archive"] = part_archive(args.dsn)
    if "heartbeat" in parts:
        result["heartbeat"] = part_heartbeat(args.dsn)
    if "trace" in parts:
        result["trace"] = part_trace(args.dsn)
    if "scrape" in parts:
        result["scrape"] = part_scrape(args.dsn, args.repeat)
        print(f"scrape: {result['scrape']['median_jobs_per_s']}", file=sys.stderr)
    path = common.write_json("metrics_cost", result)
    print(f"results: {path}")


if __name__ == "__main__":
    main()
