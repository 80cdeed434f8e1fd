"""What flow control costs a claim, in server instructions: deterministic where time is not.

Usage: python benchmarks/claim_instructions.py [--cycles 100] [--batches 1,10]
                                               [--backlog 20000] [--keys 10000]
                                               [--stats analyzed|none] [--running 0]
                                               [--bindir DIR]

benchmarks/rate_claims.py times the same claims, but its ratios move by a third between runs on
a shared machine. This counts instructions instead, as benchmarks/instructions.py does (its
server, its single-user backend under callgrind, the warm-up subtracted). Per scenario, one
database of the same server: --backlog queued jobs of one entrypoint (with group keys over
--keys keys where the scenario has keys), then cycles of pgq.claim of `batch` jobs (with a
request id, as ThinWorker sends it), each in its own transaction, rolled back: so every claim
finds the same backlog and no running jobs, and the figure is the claim's alone (instructions
per claimed job; its rolled-back writes still count). A second figure, each claim followed by
pgq.complete of its jobs (committed), is a worker's cycle: the completion is the same in every
scenario. Every limit is set so high that it never binds: every claim is full, and the figure
is the limit's bookkeeping. --running N first claims N jobs for another worker and leaves
them running, as a worker's own running jobs are while it claims more (a key limit counts them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from instructions import as_server_user, default_bindir, free_port, install, measure

SCENARIOS: list[tuple[str, str, str | None]] = [
    ("none", "no limits", None),
    ("rate", "rate limit", "rate_limit => 1000000, rate_period => '10 minutes'"),
    ("keyrate", "rate limit per key",
     "rate_limit => 1000000, rate_period => '10 minutes', rate_per_key => true"),
    ("keylimit", "key limit", "key_concurrency_limit => 1000000"),
]  # fmt: skip
KEYED = {"keyrate", "keylimit"}

CLAIMS = "public.bench_claims"
CLAIM_PROC = """
CREATE PROCEDURE public.bench_claims(n int, b int, complete boolean) LANGUAGE plpgsql AS $$
DECLARE
    w uuid := '00000000-0000-0000-0000-00000000b002';
    -- One claim clock for every claim: the sweep of stale jobs (at most once a second of it)
    -- runs at the first claim of a call, not at most claims as callgrind's pace made it.
    t constant timestamptz := '2100-01-01 00:00:00+00';
    r record;
BEGIN
    FOR i IN 1..n LOOP
        SELECT array_agg(c.id) AS ids, array_agg(c.lease) AS leases INTO r
          FROM pgq.claim(w, '{bench.flow}', b, t, gen_random_uuid()) AS c;
        IF cardinality(r.ids) IS DISTINCT FROM b THEN
            RAISE EXCEPTION 'a claim of % took %', b, cardinality(r.ids);
        END IF;
        IF complete THEN
            COMMIT;
            PERFORM pgq.complete(w, r.ids, r.leases, array_fill('successful'::text, ARRAY[b]));
            COMMIT;
        ELSE
            ROLLBACK;
        END IF;
    END LOOP;
END
$$;
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--batches", default="1,10")
    parser.add_argument("--backlog", type=int, default=20_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument(
        "--stats",
        choices=["analyzed", "none"],
        default="analyzed",
        help="VACUUM ANALYZE after the backlog is enqueued, or no statistics at all",
    )
    parser.add_argument(
        "--running",
        type=int,
        default=0,
        help="jobs claimed by another worker first and left running during the measurement",
    )
    parser.add_argument("--bindir", type=Path, help="PostgreSQL binaries (default: see --help)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed (Debian: apt-get install valgrind)")
    bindir = args.bindir or default_bindir()
    batches = [int(b) for b in args.batches.split(",")]
    # The completed cycles take (10 + 10 + cycles) claims per batch from the backlog.
    needed = sum((20 + args.cycles) * b for b in batches)
    if args.backlog < 2 * needed:
        raise SystemExit(f"--backlog {args.backlog} is too small: at least {2 * needed}")

    work = Path(tempfile.mkdtemp(prefix="pgq-claim-instr-"))
    os.chmod(work, 0o777)
    data = work / "data"
    port = free_port()
    rows: list[dict[str, Any]] = []
    try:
        subprocess.run(
            as_server_user(
                [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]
            ),
            check=True,
            capture_output=True,
        )
        pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-w"]
        opts = (
            f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={work}"
            " -c autovacuum=off"
        )
        subprocess.run(
            as_server_user([*pg_ctl, "-o", opts, "-l", str(work / "log"), "start"]),
            check=True,
            capture_output=True,
        )
        try:
            server = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            import psycopg

            for key, _label, policy in SCENARIOS:
                db = f"pgq_flow_{key}"
                with psycopg.connect(server, autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {db}")
                dsn = common.with_db(server, db)
                install(common.ROOT, dsn)
                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute(CLAIM_PROC)
                    if policy is not None:
                        conn.execute(f"SELECT pgq.configure('bench.flow', {policy})")
                    keys = args.keys if key in KEYED else None
                    conn.execute(
                        "SELECT count(*) FROM pgq.enqueue_many("
                        " array_fill('bench.flow'::text, ARRAY[%s]), group_keys =>"
                        " CASE WHEN %s::int IS NULL THEN NULL ELSE"
                        " ARRAY(SELECT 'key-' || (g %% %s::int)"
                        "        FROM generate_series(1, %s) g) END)",
                        (args.backlog, keys, keys or 1, args.backlog),
                    )
                    if args.running:
                        # (not swept while callgrind runs slowly)
                        conn.execute(
                            "SELECT pgq.configure('bench.flow', heartbeat_timeout => '1 day')"
                        )
                        conn.execute(
                            "SELECT count(*) FROM pgq.claim("
                            " '00000000-0000-0000-0000-00000000b001', '{bench.flow}', %s)",
                            (args.running,),
                        )
                    if args.stats == "analyzed":
                        conn.execute("VACUUM ANALYZE")
        finally:
            subprocess.run(as_server_user([*pg_ctl, "-m", "fast", "stop"]), capture_output=True)

        for batch in batches:
            for key, label, _policy in SCENARIOS:
                db = f"pgq_flow_{key}"
                claim = measure(bindir, data, work, db, batch, args.cycles, CLAIMS, ", false")
                cycle = measure(bindir, data, work, db, batch, args.cycles, CLAIMS, ", true")
                rows.append(
                    {
                        "batch": batch,
                        "scenario": key,
                        "label": label,
                        "claim": claim,
                        "cycle": cycle,
                    }
                )
                print(
                    f"  batch {batch}, {label}: {claim:,.0f} / {cycle:,.0f} instructions per job",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    version = subprocess.run(
        [str(bindir / "postgres"), "--version"], capture_output=True, text=True
    ).stdout.strip()
    base = {r["batch"]: r for r in rows if r["scenario"] == "none"}
    print()
    print(
        f"Server instructions per claimed job: the claim alone (rolled back), and the claim with "
        f"its completion ({version}, {args.backlog} jobs queued, {args.keys} keys where keyed, "
        f"{args.running} running, {args.cycles} cycles after 10 warm-up cycles)"
    )
    print()
    print(
        common.table(
            ["entrypoint", "batch", "claim", "vs no limits", "claim and complete", "vs no limits"],
            [
                [
                    r["label"] + (f", {args.keys:,} keys" if r["scenario"] in KEYED else ""),
                    r["batch"],
                    f"{r['claim']:,.0f}",
                    f"{r['claim'] / base[r['batch']]['claim']:.2f}x",
                    f"{r['cycle']:,.0f}",
                    f"{r['cycle'] / base[r['batch']]['cycle']:.2f}x",
                ]
                for r in rows
            ],
        )
    )
    path = common.write_json(
        "claim-instructions",
        {"args": vars(args) | {"bindir": str(bindir)}, "postgres": version, "rows": rows},
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
