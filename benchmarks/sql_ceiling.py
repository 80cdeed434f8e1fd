# ruff: noqa: E501  (pgbench scripts and DDL are kept on their natural lines)
"""The SQL ceiling: the same claim/complete statements driven by pgbench, with no Python.

Usage: python benchmarks/sql_ceiling.py [--dsn DSN] [--jobs 100000] [--clients 1,2,4] [--batch 100]

For each client count and each script, a fresh scratch database gets a backlog of --jobs no-op
jobs (``pgq.enqueue_many``), then pgbench runs ``jobs / (clients * batch)`` transactions per
client (-M prepared). Jobs/s = finished jobs counted in the database / pgbench's elapsed time
(transactions / tps); the count is checked against transactions x batch.

Scripts:
  pgq-1tx   one statement, one transaction: claim a batch with ``pgq.claim`` and hand the
            result straight to ``pgq.complete`` (the best a client could ever do).
  pgq-2tx   what a worker really does: ``pgq.claim`` commits, then ``pgq.complete`` commits
            (two round trips, two commits per batch; ids and leases carried by \\gset).
  plain     context, like the issue's reference: a bare table, claim a batch with
            FOR UPDATE SKIP LOCKED, delete it and insert it into a log table, one statement.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import psycopg
from psycopg.conninfo import conninfo_to_dict

WORKER = "('00000000-0000-0000-0000-' || lpad(:client_id::text, 12, '0'))::uuid"

SCRIPTS = {
    "pgq-1tx": f"""\
SELECT count(*) FROM (
    SELECT coalesce(array_agg(c.id), '{{}}') AS ids, coalesce(array_agg(c.lease), '{{}}') AS leases,
           array_fill('successful'::text, ARRAY[count(*)::int]) AS statuses
      FROM pgq.claim({WORKER}, ARRAY['noop'], :batch) AS c
) AS a, LATERAL pgq.complete({WORKER}, a.ids, a.leases, a.statuses) AS done;
""",
    "pgq-2tx": f"""\
SELECT coalesce(array_agg(c.id), '{{}}') AS ids, coalesce(array_agg(c.lease), '{{}}') AS leases, count(*) AS n FROM pgq.claim({WORKER}, ARRAY['noop'], :batch) AS c
\\gset
SELECT count(*) FROM pgq.complete({WORKER}, :ids::bigint[], :leases::bigint[], array_fill('successful'::text, ARRAY[:n::int]));
""",
    "plain": """\
WITH picked AS (
    SELECT id FROM plain_jobs
     WHERE entrypoint = 'noop' AND status = 'queued'
     ORDER BY priority DESC, id
     LIMIT :batch
       FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM plain_jobs j USING picked p WHERE j.id = p.id
    RETURNING j.id, j.entrypoint, j.priority, j.payload, j.created
)
INSERT INTO plain_log (id, entrypoint, priority, payload, created)
SELECT id, entrypoint, priority, payload, created FROM gone;
""",
}

PLAIN_SCHEMA = """
CREATE TABLE plain_jobs (
    id bigserial PRIMARY KEY,
    entrypoint text NOT NULL,
    priority int NOT NULL DEFAULT 0,
    status text NOT NULL DEFAULT 'queued',
    payload jsonb,
    created timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX plain_jobs_queued_idx ON plain_jobs (entrypoint, priority DESC, id) WHERE status = 'queued';
CREATE TABLE plain_log (
    id bigint NOT NULL,
    entrypoint text NOT NULL,
    priority int NOT NULL,
    payload jsonb,
    created timestamptz NOT NULL,
    finished timestamptz NOT NULL DEFAULT now()
);
"""


def pgbench_path() -> str:
    found = shutil.which("pgbench")
    if found:
        return found
    for guess in sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"), reverse=True):
        return str(guess)
    raise SystemExit("pgbench not found (install postgresql-client or put it on PATH)")


def fill_pgq(dsn: str, jobs: int, chunk: int = 50_000) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        left = jobs
        while left > 0:
            n = min(chunk, left)
            conn.execute(
                "SELECT count(*) FROM pgq.enqueue_many(array_fill('noop'::text, ARRAY[%s]))", (n,)
            )
            left -= n
        conn.execute("VACUUM (ANALYZE) pgq.jobs")


def fill_plain(dsn: str, jobs: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(PLAIN_SCHEMA)
        conn.execute(
            "INSERT INTO plain_jobs (entrypoint) SELECT 'noop' FROM generate_series(1, %s)", (jobs,)
        )
        conn.execute("VACUUM (ANALYZE) plain_jobs")


def finished(dsn: str, script: str) -> int:
    table = "plain_log" if script == "plain" else "pgq.job_history"
    with psycopg.connect(dsn) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(row[0]) if row else 0


def run_pgbench(dsn: str, script: str, clients: int, txns: int, batch: int) -> dict[str, Any]:
    params = conninfo_to_dict(dsn)
    env = {
        **os.environ,
        "PGHOST": str(params.get("host", "127.0.0.1")),
        "PGPORT": str(params.get("port", "5432")),
        "PGUSER": str(params.get("user", "postgres")),
        "PGDATABASE": str(params["dbname"]),
    }
    if params.get("password"):
        env["PGPASSWORD"] = str(params["password"])
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(SCRIPTS[script])
        path = f.name
    try:
        cmd = [
            pgbench_path(),
            "-n",
            "-M",
            "prepared",
            "-c",
            str(clients),
            "-j",
            str(clients),
            "-t",
            str(txns),
            "-D",
            f"batch={batch}",
            "-f",
            path,
        ]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise RuntimeError(f"pgbench failed:\n{proc.stdout}\n{proc.stderr}")
    tps = float(re.search(r"tps = ([0-9.]+) \(without initial connection time\)", proc.stdout)[1])  # type: ignore[index]
    done = int(re.search(r"number of transactions actually processed: (\d+)", proc.stdout)[1])  # type: ignore[index]
    lat = re.search(r"latency average = ([0-9.]+) ms", proc.stdout)
    return {"tps": tps, "transactions": done, "latency_ms": float(lat[1]) if lat else None}


def measure(dsn: str, script: str, clients: int, jobs: int, batch: int = 100) -> dict[str, Any]:
    """One pgbench run on a fresh scratch database; returns the row for the table."""
    txns = max(1, jobs // (clients * batch))
    total = txns * clients * batch
    with common.scratch_db(dsn, "ceiling") as db:
        if script == "plain":
            fill_plain(db, total)
        else:
            common.install_pgq(db)
            fill_pgq(db, total)
        res = run_pgbench(db, script, clients, txns, batch)
        count = finished(db, script)
    seconds = res["transactions"] / res["tps"]
    return {
        "script": script,
        "clients": clients,
        "batch": batch,
        "backlog": total,
        "transactions": res["transactions"],
        "tps": res["tps"],
        "latency_ms": res["latency_ms"],
        "jobs_finished": count,
        "jobs_expected": res["transactions"] * batch,
        "seconds": seconds,
        "jobs_per_s": count / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--jobs", type=int, default=100_000, help="backlog and jobs per run")
    parser.add_argument("--clients", default="1,2,4")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--scripts", default="pgq-1tx,pgq-2tx,plain")
    args = parser.parse_args()
    common.check_local(args.dsn)
    rows = []
    for script in args.scripts.split(","):
        for clients in [int(c) for c in args.clients.split(",")]:
            r = measure(args.dsn, script, clients, args.jobs, args.batch)
            rows.append(r)
            print(
                f"  {script} clients={clients}: {r['jobs_per_s']:,.0f} jobs/s "
                f"({r['jobs_finished']:,}/{r['jobs_expected']:,} jobs)",
                file=sys.stderr,
            )
    print(
        common.table(
            ["script", "clients", "batch", "tx/s", "jobs/s", "jobs finished / expected"],
            [
                [
                    r["script"],
                    r["clients"],
                    r["batch"],
                    r["tps"],
                    r["jobs_per_s"],
                    f"{r['jobs_finished']:,} / {r['jobs_expected']:,}",
                ]
                for r in rows
            ],
        )
    )
    path = common.write_json(
        "sql_ceiling", {"args": vars(args), "machine": common.server_info(args.dsn), "rows": rows}
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
