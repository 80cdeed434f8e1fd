"""How long ``pgq-thin`` commands take from exec to exit, and what they import.

Usage: python -m benchmarks.cli_startup [--dsn DSN] [--repeat 15] [--compare DIR]

One scratch database (dropped at the end) with the schema installed and one job. Each command
is run ``--repeat`` times as a new process of the installed console script (``pgq-thin`` next
to this Python), stdout to a pipe, after one warm-up run; the figure is the wall time from
``exec`` to exit (Python's start, the imports, connecting, the query and printing). Then each
command is run once more with ``-X importtime`` to list the heavy packages it imported
(SQLAlchemy, Alembic, the worker, rich) and the total import time.

  --help            the parser and every command's help line
  --version         the version
  status            pgq.queue_stats as a rich table (piped: rich still renders it)
  status --plain    the same as padded text
  status --json     the same as JSON
  show ID           pgq.job of one job
  install           schema at head already: the migrations (SQLAlchemy, Alembic) load

Prints one row per command: median, min and max in seconds, and the heavy imports. With
``--compare DIR`` (another checkout's root, e.g. ``git archive REV | tar -x -C DIR``), each run
of this checkout is followed by one of DIR's package (``PYTHONPATH=DIR``, the same interpreter
and console script), so both see the same load, and both medians are printed.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import DEFAULT_DSN, check_local, scratch_db

SCRIPT = Path(sys.executable).with_name("pgq-thin")
HEAVY = ("sqlalchemy", "alembic", "pgq_thin.worker", "pgq_thin.migrate", "rich")
COMMANDS = (
    ["--help"],
    ["--version"],
    ["status"],
    ["status", "--plain"],
    ["status", "--json"],
    ["show", "1"],
    ["install"],
)


def run_once(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [str(SCRIPT), *args], env=env, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def imports(args: list[str], env: dict[str, str]) -> tuple[float, list[str]]:
    """Total import time (s) and the heavy top-level packages a command imported."""
    code = "import sys; from pgq_thin.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *args],
        env=env,
        cwd="/",  # not this checkout first on sys.path (``--compare`` names another)
        check=True,
        capture_output=True,
        text=True,
    )
    total = 0
    seen = set()
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line)
        if not m:
            continue
        if not m[3]:
            total += int(m[2])
        name = m[4]
        for heavy in HEAVY:
            if name == heavy or name.startswith(heavy + "."):
                seen.add(heavy)
    return total / 1e6, sorted(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=DEFAULT_DSN)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--compare", type=Path, default=None, help="another checkout's root")
    opts = parser.parse_args()
    check_local(opts.dsn)
    load, cores, python = os.getloadavg()[0], os.cpu_count(), sys.version.split()[0]
    print(f"load average {load:.2f}, {cores} cores, Python {python}")
    with scratch_db(opts.dsn, "cli") as dsn:
        env = {**os.environ, "PGQ_DSN": dsn}
        subprocess.run([str(SCRIPT), "install"], env=env, check=True, stdout=subprocess.PIPE)
        subprocess.run(
            [str(SCRIPT), "enqueue", "bench.cli", "{}"],
            env=env,
            check=True,
            stdout=subprocess.PIPE,
        )
        other = None
        if opts.compare is not None:
            other = {**env, "PYTHONPATH": str(opts.compare.resolve())}
        print(
            f"{'command':<16} {'median s':>9} {'min s':>7} {'max s':>7} {'imports s':>10}  "
            + ("compared: median s, heavy imports  " if other else "")
            + "heavy imports"
        )
        for args in COMMANDS:
            run_once(args, env)
            times, before = [], []
            for _ in range(opts.repeat):
                times.append(run_once(args, env))
                if other is not None:
                    before.append(run_once(args, other))
            total, heavy = imports(args, env)
            compared = ""
            if other is not None:
                _, heavy_before = imports(args, other)
                compared = f"{statistics.median(before):>9.3f}  {', '.join(heavy_before) or '-'}  "
            print(
                f"{' '.join(args):<16} {statistics.median(times):>9.3f} {min(times):>7.3f} "
                f"{max(times):>7.3f} {total:>10.3f}  {compared}{', '.join(heavy) or '-'}"
            )


if __name__ == "__main__":
    main()
