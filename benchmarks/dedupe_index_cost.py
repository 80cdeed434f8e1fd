# ruff: noqa: E501  (SQL is kept on its natural lines)
"""What the search by dedupe key costs the archive path: pgq.complete of jobs that carry a
dedupe key, with the partial index job_history_dedupe_key_idx (as installed) and without it.

Usage: python benchmarks/dedupe_index_cost.py [--dsn DSN] [--batches 200] [--batch 500]

Two scratch databases (the index dropped in one), batch after batch alternating between them:
enqueue --batch jobs with unique dedupe keys, claim them, time the pgq.complete that archives
them. Min and median microseconds per job. Jobs without a dedupe key skip the index (its
predicate is dedupe_key IS NOT NULL).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import psycopg


def run(dsn: str, batches: int, batch: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {"with the index": [], "without": []}
    with common.scratch_db(dsn, "ddA") as a, common.scratch_db(dsn, "ddB") as b:
        for db in (a, b):
            common.install_pgq(db)
        with psycopg.connect(a, autocommit=True) as ca, psycopg.connect(b, autocommit=True) as cb:
            cb.execute("DROP INDEX pgq.job_history_dedupe_key_idx")
            me = uuid.uuid4()
            for i in range(batches):
                order = (("with the index", ca), ("without", cb))
                for name, conn in order if i % 2 == 0 else order[::-1]:
                    conn.execute(
                        "SELECT count(*) FROM pgq.enqueue_many(array_fill('dd'::text, ARRAY[%s]),"
                        " dedupe_keys => ARRAY(SELECT 'key-' || %s || '-' || g FROM generate_series(1, %s) g))",
                        (batch, i, batch),
                    )
                    rows = conn.execute(
                        "SELECT id, lease FROM pgq.claim(%s, '{dd}', %s)", (me, batch)
                    ).fetchall()
                    t = time.perf_counter()
                    conn.execute(
                        "SELECT count(*) FROM pgq.complete(%s, %s, %s, %s)",
                        (
                            me,
                            [r[0] for r in rows],
                            [r[1] for r in rows],
                            ["successful"] * len(rows),
                        ),
                    ).fetchall()
                    times[name].append((time.perf_counter() - t) * 1e6 / batch)
    return {
        k: {"min_us_per_job": round(min(v), 1), "median_us_per_job": round(statistics.median(v), 1)}
        for k, v in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    common.check_local(args.dsn)
    result = {
        "server": common.server_info(args.dsn),
        "archive": run(args.dsn, args.batches, args.batch),
    }
    print(result["archive"])
    print(f"results: {common.write_json('dedupe_index_cost', result)}")


if __name__ == "__main__":
    main()
