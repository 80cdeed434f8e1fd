"""A fan-out/fan-in with pgq-thin: count a file's words in N chunks at once, then merge.

    python examples/python/workflow.py FILE [--chunks N] [--dsn DSN]

One ``enqueue_many`` call builds the whole graph: N ``wordcount.chunk`` jobs (each reads its
own range of lines) and one ``wordcount.merge`` job that depends on all of them, so nothing
runs before the whole graph is there, and the merge starts in the transaction that ends the
last chunk. The merge is registered with ``parent_results=True``: the worker hands it what
each chunk returned (``job.parent_results``), no query of its own. A worker in this process
runs the graph and stops when the merge has run; then the workflow is printed as
``pgq.workflow`` sees it. The DSN is ``--dsn``, else ``PGQ_DSN``.

A chunk that fails for good cancels the merge (the default policy); requeuing the dead chunk
(``pgq-thin requeue --workflow ID``) brings the merge back, waiting for it again.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from typing import Any

from pgq_thin import Admin, Job, Queue, ThinWorker


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--dsn", default=os.environ.get("PGQ_DSN"))
    args = parser.parse_args()
    if not args.dsn:
        parser.error("give --dsn or set PGQ_DSN")
    with open(args.file, encoding="utf-8") as f:
        lines = sum(1 for _ in f)
    step = -(-lines // args.chunks) or 1  # ceiling: every line in one chunk
    ranges = [(start, min(start + step, lines)) for start in range(0, lines, step)]

    # The graph: chunk jobs at positions 1..N, the merge at N+1 waiting for all of them.
    entrypoints = ["wordcount.chunk"] * len(ranges) + ["wordcount.merge"]
    payloads: list[Any] = [{"file": args.file, "lines": r} for r in ranges] + [None]
    depends_on: list[list[int] | None] = [None] * len(ranges) + [list(range(1, len(ranges) + 1))]
    with Queue(args.dsn) as queue:
        ids = queue.enqueue_many(entrypoints, payloads, depends_on=depends_on)

    worker = ThinWorker(args.dsn, concurrency=args.chunks, run_schedules=False)
    merged: dict[str, Any] = {}

    @worker.entrypoint("wordcount.chunk")
    def chunk(job: Job[Any]) -> dict[str, int]:
        first, last = job.payload["lines"]
        counts: Counter[str] = Counter()
        with open(job.payload["file"], encoding="utf-8") as f:
            for n, line in enumerate(f):
                if first <= n < last:
                    counts.update(line.split())
        return dict(counts)

    @worker.entrypoint("wordcount.merge", parent_results=True)
    def merge(job: Job[Any]) -> dict[str, Any]:
        total: Counter[str] = Counter()
        for parent in job.parent_results or []:
            total.update(parent["result"] or {})
        merged["words"] = sum(total.values())
        merged["top"] = total.most_common(3)
        worker.stop()
        return {"words": merged["words"], "distinct": len(total)}

    worker.run()
    if "words" not in merged:
        print("the merge did not run (a chunk failed?)", file=sys.stderr)
        return 1
    print(f"words: {merged['words']}")
    print("top: " + ", ".join(f"{w} {n}" for w, n in merged["top"]))
    with Admin(args.dsn) as admin:
        for w in admin.workflow(ids[-1]):
            waits = ",".join(str(p["id"]) for p in w["parents"]) or "-"
            print(f"  job {w['id']} {w['entrypoint']} {w['state']} after {waits}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
