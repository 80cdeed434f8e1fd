"""The hot calls on 500 jobs in each statistics state, for the candidate fixes of ADR 0007.

Usage: python benchmarks/plan_states.py [--dsn DSN] [--jobs 20000] [--batch 500] [--rounds 3]
                                        [--variants before,unique,custom,hash]
                                        [--states fresh,analyzed,idle,dead]

For every variant and state: a scratch database, the schema of this checkout, the variant's
changes on top of it, a backlog of --jobs no-op jobs in the state, then in one new session
(its generic plans made in that state, as a worker's are) --rounds rounds of: claim --batch,
heartbeat them, complete them as successful, claim, complete a quarter as failed with
retry_after 0, a quarter with retry_after 60, the rest successful, claim and release. Prints
the fastest round's milliseconds per call (the least disturbed on a shared machine; the
medians are in the JSON) and how many statements ran a nested loop over pgq.jobs
(auto_explain of the nested statements: a jobs partition scanned on the inner side, or the
input arrays read once per job).

States: fresh (backlog, never analyzed), analyzed (VACUUM ANALYZE after the backlog), idle
(the session made its plans on a near-empty queue, then the backlog arrived), dead (every slot
analyzed while it held only finished jobs, plans made near-empty, then the backlog).

Variants (prototypes on top of this checkout's schema):
  before  nested loops and merge joins allowed again in the functions that pair input arrays
          with pgq.jobs (the code before ADR 0007)
  unique  before, with jobs_id_idx replaced by a unique index on id in each partition (the
          planner then knows ids are unique without statistics)
  custom  before, with plan_cache_mode = force_custom_plan in those functions (every call plans
          with the arrays' actual values)
  hash    as built: those functions join by hash only
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import psycopg

PAIRING = ("heartbeat", "release", "complete", "_archive", "_sweep")
PARTS = ("jobs_0", "jobs_1", "jobs_2", "jobs_3", "jobs_scheduled")
VARIANTS = {
    "before": [
        f"ALTER FUNCTION pgq.{f} RESET {s}"
        for f in PAIRING
        for s in ("enable_nestloop", "enable_mergejoin")
    ],
    "custom": [f"ALTER FUNCTION pgq.{f} SET plan_cache_mode = force_custom_plan" for f in PAIRING],
    "unique": ["DROP INDEX pgq.jobs_id_idx"]
    + [f"CREATE UNIQUE INDEX {p}_id_key ON pgq.{p} (id)" for p in PARTS],
    "hash": [],
}
VARIANTS["custom"] = VARIANTS["before"] + VARIANTS["custom"]
VARIANTS["unique"] = VARIANTS["before"] + VARIANTS["unique"]
CALLS = ("claim", "heartbeat", "complete", "complete_failures", "release")


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def jobs_scanned(plan: dict[str, Any]) -> bool:
    return any(n.get("Relation Name", "").startswith("jobs_") for n in nodes(plan))


def loops(doc: dict[str, Any]) -> bool:
    """Whether a statement ran a nested loop over pgq.jobs: a partition on the inner side
    (probed once per outer row), or the input (a Function Scan) inside it with jobs outside."""
    text = " ".join(doc["Query Text"].split())
    if "CROSS JOIN LATERAL" in text or "JOIN pgq.jobs j ON j.entrypoint" in text:
        return False  # per lane or per entrypoint, on purpose
    for node in nodes(doc["Plan"]):
        if node["Node Type"] != "Nested Loop":
            continue
        sides = {c.get("Parent Relationship"): c for c in node.get("Plans", [])}
        inner, outer = sides["Inner"], sides["Outer"]
        if jobs_scanned(inner):
            return True
        if jobs_scanned(outer) and any(n["Node Type"] == "Function Scan" for n in nodes(inner)):
            return True
    return False


def session(db: str) -> tuple[psycopg.Connection[Any], list[dict[str, Any]]]:
    conn = psycopg.connect(db, autocommit=True)
    plans: list[dict[str, Any]] = []

    def on_notice(diag: psycopg.errors.Diagnostic) -> None:
        msg = diag.message_primary or ""
        start = msg.find("{")
        if msg.startswith("duration:") and start >= 0:
            plans.append(json.loads(msg[start:]))

    conn.add_notice_handler(on_notice)
    for setting in (
        "LOAD 'auto_explain'",
        "SET auto_explain.log_min_duration = 0",
        "SET auto_explain.log_nested_statements = on",
        "SET auto_explain.log_format = json",
        "SET auto_explain.log_level = notice",
    ):
        conn.execute(setting)
    return conn, plans


def paths(conn: psycopg.Connection[Any], n: int) -> dict[str, float]:
    """One round of the calls, milliseconds each."""
    w = uuid.uuid4()
    ms: dict[str, float] = {}

    def call(name: str, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        t0 = time.perf_counter()
        rows = conn.execute(query, params).fetchall()
        ms[name] = ms.get(name, 0.0) + (time.perf_counter() - t0) * 1000
        return rows

    def claim() -> tuple[list[int], list[int]]:
        rows = call("claim", "SELECT id, lease FROM pgq.claim(%s, ARRAY['noop'], %s)", (w, n))
        return [r[0] for r in rows], [r[1] for r in rows]

    ids, leases = claim()
    call("heartbeat", "SELECT * FROM pgq.heartbeat(%s, %s, %s)", (w, ids, leases))
    call(
        "complete",
        "SELECT * FROM pgq.complete(%s, %s, %s, array_fill('successful'::text, ARRAY[%s]))",
        (w, ids, leases, len(ids)),
    )
    ids, leases = claim()
    q = len(ids) // 4
    outcomes = ["failed"] * (2 * q) + ["successful"] * (len(ids) - 2 * q)
    details = [{"retry_after": 0}] * q + [{"retry_after": 60}] * q + [None] * (len(ids) - 2 * q)
    call(
        "complete_failures",
        "SELECT * FROM pgq.complete(%s, %s, %s, %s, %s)",
        (w, ids, leases, outcomes, json.dumps(details)),
    )
    ids, leases = claim()
    call("release", "SELECT * FROM pgq.release(%s, %s, %s)", (w, ids, leases))
    ms["claim"] /= 3
    return ms


def enqueue(db: str, jobs: int) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill('noop'::text, ARRAY[%s]))", (jobs,)
        )


def measure(dsn: str, variant: str, state: str, jobs: int, batch: int, rounds: int) -> dict:
    with common.scratch_db(dsn, "plans") as db:
        common.install_pgq(db)
        with psycopg.connect(db, autocommit=True) as conn:
            for statement in VARIANTS[variant]:
                conn.execute(statement)
            conn.execute("SELECT pgq.configure('noop', max_attempts => 100)")
        if state == "dead":
            enqueue(db, 3000)
            with psycopg.connect(db, autocommit=True) as conn:
                w = uuid.uuid4()
                rows = conn.execute(
                    "SELECT id, lease FROM pgq.claim(%s, ARRAY['noop'], 3000)", (w,)
                ).fetchall()
                conn.execute(
                    "SELECT * FROM pgq.complete(%s, %s, %s,"
                    " array_fill('successful'::text, ARRAY[%s]))",
                    (w, [r[0] for r in rows], [r[1] for r in rows], len(rows)),
                ).fetchall()
                conn.execute("ANALYZE pgq.jobs_0, pgq.jobs_1, pgq.jobs_2, pgq.jobs_3")
        if state in ("fresh", "analyzed"):
            enqueue(db, jobs)
            if state == "analyzed":
                with psycopg.connect(db, autocommit=True) as conn:
                    conn.execute("VACUUM (ANALYZE) pgq.jobs")
            conn, plans = session(db)
        else:  # idle, dead: the plans are made on a near-empty queue
            conn, plans = session(db)
            enqueue(db, 40)
            paths(conn, 10)
            plans.clear()  # the loops counted are those of the calls on the backlog
            enqueue(db, jobs)
        try:
            each = [paths(conn, batch) for _ in range(rounds)]
        finally:
            conn.close()
    looped = sorted({" ".join(d["Query Text"].split())[:60] for d in plans if loops(d)})
    return {
        # the fastest round: on a shared machine the least disturbed one
        "ms": {c: min(r[c] for r in each) for c in CALLS},
        "median_ms": {c: statistics.median(r[c] for r in each) for c in CALLS},
        "rounds": each,
        "loops": looped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default="before,unique,custom,hash")
    parser.add_argument("--states", default="fresh,analyzed,idle,dead")
    args = parser.parse_args()
    common.check_local(args.dsn)
    results = []
    for variant in args.variants.split(","):
        for state in args.states.split(","):
            r = measure(args.dsn, variant, state, args.jobs, args.batch, args.rounds)
            results.append({"variant": variant, "state": state, **r})
            cells = ", ".join(f"{c} {r['ms'][c]:.1f}" for c in CALLS)
            print(f"  {variant} {state}: {cells}; {len(r['loops'])} loops", file=sys.stderr)
    rows = [
        [r["variant"], r["state"], *[r["ms"][c] for c in CALLS], len(r["loops"])] for r in results
    ]
    print(
        f"\nms per call of {args.batch} jobs (fastest of {args.rounds} rounds), backlog "
        f"{args.jobs:,}; loops: statements with a nested loop over pgq.jobs\n"
    )
    print(common.table(["variant", "state", *CALLS, "loops"], rows))
    path = common.write_json("plan-states", {"args": vars(args), "results": results})
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
