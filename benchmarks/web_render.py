# ruff: noqa: E501  (SQL is kept on its natural lines)
"""How long the dashboard's pages take to render at a large backlog and history.

Usage: python benchmarks/web_render.py [--dsn DSN] [--backlog 1000000] [--history 10000000]
                                       [--repeat 5]

One scratch database (dropped at the end):
--history rows in pgq.job_history (as benchmarks/metrics_cost.py fills them: 10
entrypoints, finished over the last 2,000 s, 2 % failed, 1 % canceled), the metrics rollup
caught up on them, --backlog queued jobs (10 entrypoints, 90 % due), 20 registered workers
holding 1,000 running jobs. The dashboard (pgq_thin.web, uvicorn in this process, 127.0.0.1)
is then asked for each page over HTTP, --repeat times after one warm-up, before and after a
VACUUM of pgq.jobs:

  overview, cold     GET / right after the overview's figures were dropped: pgq.metrics(),
                     pgq.worker_status and the last dead jobs are read (what a first visitor,
                     or the first refresh after the refresh period, waits for)
  overview, warm     GET / while the figures are fresh (every other visitor and refresh within
                     the period: the page is rendered from the figures read last)
  overview, stale    GET / with figures one period old: served from them while one read
                     renews them in the background (what a page refreshing itself sees)
  live fragment      GET /live/overview, warm (what the page's auto-refresh fetches)
  entrypoint         GET /entrypoint?name=mc.ep3 (its metrics, policy, first page of queued jobs)
  entrypoint, deep   the page after 50,000 queued jobs of mc.ep3 (keyset cursor; backlog/20 if less)
  job                GET /jobs/ID of a finished job
  failed             GET /failed (first page of dead jobs of every entrypoint)
  failed, filtered   GET /failed?entrypoint=mc.ep3&error=after 20 s
  search             GET /search?q=KEY (a dedupe key of a finished job; redirect not followed)

Wall time per request as the client sees it (HTTP on loopback included); median and max.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
import httpx
import metrics_cost
import psycopg
import uvicorn

from pgq_thin.web import WebConfig, create_app


def prepare(db: str, backlog: int, history: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    common.install_pgq(db)
    with psycopg.connect(db, autocommit=True) as conn:
        t = time.perf_counter()
        metrics_cost.fill_history(conn, history)
        out["fill_history_s"] = round(time.perf_counter() - t, 1)
        print(f"  history filled: {out['fill_history_s']} s", file=sys.stderr, flush=True)
        conn.execute(
            "UPDATE pgq.job_history SET dedupe_key = 'order-' || -id WHERE id BETWEEN -4300 AND -4200"
        )
        conn.execute("VACUUM (ANALYZE) pgq.job_history")
        t = time.perf_counter()
        while not conn.execute("SELECT caught_up FROM pgq.rollup_metrics(100000)").fetchone()[0]:
            pass
        out["rollup_s"] = round(time.perf_counter() - t, 1)
        print(f"  rollup caught up: {out['rollup_s']} s", file=sys.stderr, flush=True)
        t = time.perf_counter()
        metrics_cost.fill_backlog(conn, backlog)
        out["fill_backlog_s"] = round(time.perf_counter() - t, 1)
        for w in range(20):
            conn.execute(
                "SELECT pgq.register_worker(%s, %s, 'host-' || %s, 1000 + %s)",
                (f"00000000-0000-0000-0000-{w + 1:012d}", metrics_cost.ENTRYPOINTS, w, w),
            )
            conn.execute(
                "SELECT count(*) FROM pgq.claim(%s, %s, 50)",
                (f"00000000-0000-0000-0000-{w + 1:012d}", metrics_cost.ENTRYPOINTS),
            )
        conn.execute("ANALYZE pgq.jobs")
    return out


class Server:
    def __init__(self, dsn: str) -> None:
        self.app = create_app(WebConfig(dsn=dsn, token=None, refresh=3600))
        # refresh 3600 s: the figures stay fresh between the requests that do not age them
        self.server = uvicorn.Server(
            uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.05)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)

    def drop_overview(self) -> None:
        self.app.state.web.overview.invalidate()

    def age_overview(self) -> None:
        """Let the last renewal finish, then make the figures one period and a second old:
        the next page is served from them while a renewal runs in the background."""
        cache = self.app.state.web.overview
        while cache._renewal is not None and not cache._renewal.done():
            time.sleep(0.01)
        if cache._last is not None:
            cache._last = dataclasses.replace(cache._last, read_at=time.monotonic() - 3601)


def timed(client: httpx.Client, path: str, repeat: int, before: Any = None) -> dict[str, float]:
    runs = []
    for i in range(repeat + 1):
        if before is not None:
            before()
        t = time.perf_counter()
        answer = client.get(path)
        ms = (time.perf_counter() - t) * 1000
        assert answer.status_code in (200, 303), (path, answer.status_code, answer.text[:300])
        if i:
            runs.append(ms)
    return {"median_ms": round(statistics.median(runs), 1), "max_ms": round(max(runs), 1)}


def measure(db: str, repeat: int, backlog: int) -> dict[str, Any]:
    with psycopg.connect(db, autocommit=True) as conn:
        job_id = conn.execute("SELECT -4242").fetchone()[0]
        deep = conn.execute(
            "SELECT 'q,' || priority || ',' || (to_json(run_at) #>> '{}') || ',' || id FROM pgq.jobs"
            " WHERE entrypoint = 'mc.ep3' AND status = 'queued' ORDER BY priority DESC, run_at, id OFFSET %s LIMIT 1",
            (min(50_000, backlog // 20),),
        ).fetchone()[0]
    server = Server(db)
    with server as url, httpx.Client(base_url=url, timeout=120) as client:
        pages = {
            "overview, cold": ("/", server.drop_overview),
            "overview, warm": ("/", None),
            "overview, stale (renewed behind)": ("/", server.age_overview),
            "live fragment, warm": ("/live/overview", None),
            "entrypoint": ("/entrypoint?name=mc.ep3", None),
            "entrypoint, deep page": (
                "/entrypoint?" + httpx.QueryParams({"name": "mc.ep3", "after": deep}).__str__(),
                None,
            ),
            "job": (f"/jobs/{job_id}", None),
            "failed": ("/failed", None),
            "failed, filtered": ("/failed?entrypoint=mc.ep3&error=after+20+s", None),
            "search (dedupe key)": ("/search?q=order-4242", None),
        }
        out = {}
        for name, (path, before) in pages.items():
            out[name] = timed(client, path, repeat, before)
            print(f"    {name}: {out[name]}", file=sys.stderr, flush=True)
        server.drop_overview()
        client.get("/")
        out["overview read_ms (server side)"] = round(
            server.app.state.web.overview._last.read_ms, 1
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--backlog", type=int, default=1_000_000)
    parser.add_argument("--history", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    common.check_local(args.dsn)
    result: dict[str, Any] = {
        "server": common.server_info(args.dsn),
        "backlog": args.backlog,
        "history": args.history,
    }
    with common.scratch_db(args.dsn, "web") as db:
        result["prepare"] = prepare(db, args.backlog, args.history)
        for stage in ("not vacuumed", "after VACUUM"):
            if stage == "after VACUUM":
                with psycopg.connect(db, autocommit=True) as conn:
                    conn.execute("VACUUM (ANALYZE) pgq.jobs")
            print(f"  {stage}:", file=sys.stderr, flush=True)
            result[stage] = measure(db, args.repeat, args.backlog)
        result["sizes"] = common.table_stats(db, ("pgq.jobs", "pgq.job_history"), rows=False)
    rows = [
        [name, result["not vacuumed"][name]["median_ms"], result["after VACUUM"][name]["median_ms"]]
        for name in result["after VACUUM"]
        if isinstance(result["after VACUUM"][name], dict)
    ]
    print(common.table(["page", "ms, not vacuumed", "ms, after VACUUM"], rows))
    print(f"results: {common.write_json('web_render', result)}")


if __name__ == "__main__":
    main()
