"""Where the server time of one claim/complete cycle goes: nested plans of pgq.claim and
pgq.complete with auto_explain (ANALYZE, BUFFERS, WAL), for several batch sizes.

Usage: python benchmarks/explain_claim.py [--dsn DSN] [--backlog 20000] [--batches 100,500]
                                          [--full]

Runs in a scratch database with a backlog of no-op jobs. auto_explain is loaded for this
session only (LOAD + SET, superuser; no server setting changes) with log_nested_statements,
so the plan of every statement inside the PL/pgSQL functions is returned as a NOTICE. Prints
the wall time of each call, then a summary of the nested statements (total time, rows,
buffers, WAL); --full prints every nested plan.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
import psycopg
import sql_ceiling

from pgq_thin import calls

SESSION = [
    "LOAD 'auto_explain'",
    "SET auto_explain.log_min_duration = 0",
    "SET auto_explain.log_analyze = on",
    "SET auto_explain.log_buffers = on",
    "SET auto_explain.log_wal = on",
    "SET auto_explain.log_timing = on",
    "SET auto_explain.log_nested_statements = on",
    "SET auto_explain.log_level = notice",
    "SET client_min_messages = notice",
]


def summarize(notice: str) -> str:
    text = notice.split("\n", 1)
    m = re.search(r"duration: ([0-9.]+) ms", notice)
    query = re.search(r"Query Text: (.*)", notice)
    top = re.search(r"\n(\S[^\n]*\(actual time=[^\n]*)", notice)
    bufs = re.search(r"Buffers: ([^\n]*)", notice)
    wal = re.search(r"WAL: ([^\n]*)", notice)
    q = (query[1].strip() if query else text[0])[:90]
    return (
        f"{float(m[1]) if m else 0:9.3f} ms  {q}\n"
        f"             top: {top[1].strip()[:110] if top else '-'}\n"
        f"             buffers: {bufs[1] if bufs else '-'}; WAL: {wal[1] if wal else '-'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--backlog", type=int, default=20_000)
    parser.add_argument("--batches", default="100,500")
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()
    common.check_local(args.dsn)
    with common.scratch_db(args.dsn, "explain") as db:
        common.install_pgq(db)
        sql_ceiling.fill_pgq(db, args.backlog)
        with psycopg.connect(db, autocommit=True) as conn:
            notices: list[str] = []
            conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
            wid = uuid.uuid4()
            # warm up (plans cached, catalog loaded) without explain
            for _ in range(3):
                rows = conn.execute(calls.CLAIM, (wid, ["noop"], 100, None)).fetchall()
                conn.execute(
                    calls.COMPLETE,
                    calls.complete_args(
                        wid,
                        [r[0] for r in rows],
                        [r[1] for r in rows],
                        ["successful"] * len(rows),
                    ),
                )
            for stmt in SESSION:
                conn.execute(stmt)
            for batch in [int(b) for b in args.batches.split(",")]:
                for name in ("claim", "complete"):
                    notices.clear()
                    t0 = time.perf_counter()
                    if name == "claim":
                        rows = conn.execute(calls.CLAIM, (wid, ["noop"], batch, None)).fetchall()
                    else:
                        conn.execute(
                            calls.COMPLETE,
                            calls.complete_args(
                                wid,
                                [r[0] for r in rows],
                                [r[1] for r in rows],
                                ["successful"] * len(rows),
                            ),
                        ).fetchall()
                    wall = (time.perf_counter() - t0) * 1000
                    print(
                        f"\n=== pgq.{name}, batch {batch}: {wall:.2f} ms wall "
                        f"(with explain overhead), {len(notices)} nested statements"
                    )
                    for n in notices:
                        print(n if args.full else summarize(n))


if __name__ == "__main__":
    main()
