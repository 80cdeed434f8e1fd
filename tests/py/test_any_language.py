"""Workers in other languages: the examples in examples/node (pg) and examples/psql (bash +
psql) as separate processes against real PostgreSQL.

Python enqueues and Node and psql workers drain; Node enqueues and ThinWorker drains; a stale
Node worker is fenced out by its lease; SIGTERM gives back claimed jobs; a Node worker sleeps
until delayed and retried jobs are due, and until a rate limit allows the next start. Every
check reads the database: each job finished once (``pgq.job_history``) with the expected status
and attempts. The workers print one line per
event (``started job=ID ...``); the tests wait on those lines or on the database, with deadlines.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

import psycopg
import pytest
from helpers.server import REPO, PgServer
from helpers.wait import wait_for
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from pgq_thin.job import Job
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

NODE_DIR = REPO / "examples" / "node"
PSQL_WORKER = REPO / "examples" / "psql" / "worker.sh"
LIBPQ = {"host": "PGHOST", "port": "PGPORT", "user": "PGUSER", "dbname": "PGDATABASE",
         "password": "PGPASSWORD"}  # fmt: skip


def example_env(server: PgServer, dsn: str, **extra: str) -> dict[str, str]:
    """The environment of an example: libpq's PG* variables for ``dsn`` (understood by psql and
    node-postgres alike), the server's own psql first on PATH, nothing else of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    for key, value in conninfo_to_dict(dsn).items():
        if key in LIBPQ and value is not None:
            env[LIBPQ[key]] = str(value)
    env["PATH"] = f"{Path(server.tool('psql')).parent}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **extra}


class Example:
    """A running example process whose output lines are collected as they come."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.worker_id = env.get("PGQ_WORKER_ID", "")
        self.proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(stream, lines), daemon=True)
            for stream, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: Any, lines: list[str]) -> None:
        for line in stream:
            lines.append(line.rstrip("\n"))

    def line(self, prefix: str, timeout: float = 30) -> str:
        """The first output line starting with ``prefix`` (waits for it)."""

        def found() -> str | None:
            exited = self.proc.poll() is not None
            if exited:
                for reader in self._readers:
                    reader.join(10)
            line = next((line for line in list(self.out) if line.startswith(prefix)), None)
            assert line or not exited, f"exited without {prefix!r}: {self.output()}"
            return line

        return wait_for(found, timeout, f"{prefix!r} from {self.proc.args}: {self.output()}")

    def jobs(self, event: str) -> list[int]:
        """Ids of the jobs this process reported ``event`` for (``successful``, ``released``)."""
        words = [line.split() for line in list(self.out)]
        return [int(w[1].removeprefix("job=")) for w in words if len(w) > 1 and w[0] == event]

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, then the exit code (after the output is read to the end)."""
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
        return code

    def output(self) -> str:
        return "\n".join(["stdout:", *self.out, "stderr:", *self.err])


class Spawn(Protocol):
    def __call__(self, kind: str, *entrypoints: str, **env: str) -> Example: ...


@pytest.fixture(scope="session")
def node_example() -> Path:
    """examples/node, set up: Node.js present and its `npm ci` done (`make test` does both)."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed (make test installs it: scripts/provision.py)")
    if not (NODE_DIR / "node_modules" / "pg" / "package.json").exists():
        pytest.skip("examples/node has no node_modules: run `python3 scripts/provision.py`")
    return NODE_DIR


@pytest.fixture
def spawn(pg_server: PgServer, pgq_dsn: str, node_example: Path) -> Iterator[Spawn]:
    """Start example workers (``node`` or ``psql``) on the test's database; each gets a known
    worker id. All are ended afterwards."""
    started: list[Example] = []

    def start(kind: str, *entrypoints: str, **env: str) -> Example:
        env.setdefault("PGQ_WORKER_ID", str(uuid.uuid4()))
        if kind == "node":
            argv, cwd = ["node", "worker.js", *entrypoints], NODE_DIR
        else:
            argv, cwd = ["bash", str(PSQL_WORKER), *entrypoints], REPO
        example = Example(argv, example_env(pg_server, pgq_dsn, **env), cwd)
        started.append(example)
        example.line("ready ")
        return example

    yield start
    for example in started:
        if example.proc.poll() is None:
            example.proc.send_signal(signal.SIGCONT)
            example.proc.kill()
            example.proc.wait(30)


def node_producer(server: PgServer, dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", "producer.js", *args],
        cwd=NODE_DIR,
        env=example_env(server, dsn),
        capture_output=True,
        text=True,
        timeout=60,
    )


def sql(dsn: str, query: str, *params: Any) -> list[dict[str, Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn, conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params)
        return cur.fetchall() if cur.description else []


def history(dsn: str) -> dict[int, dict[str, Any]]:
    return {r["id"]: r for r in sql(dsn, "SELECT * FROM pgq.job_history")}


def finished(dsn: str, count: int) -> bool:
    return sql(dsn, "SELECT count(*) AS n FROM pgq.job_history")[0]["n"] == count


# --- Python enqueues, Node and psql drain ------------------------------------------------------

ECHO_PAYLOADS: list[Any] = [
    {"n": 1},
    "a string with 'quotes', {braces}, a\ttab and a\nnewline",
    [1, [2, 3]],
    None,
    17,
    {"nested": {"ü": ["x", None, True]}},
]


def test_python_enqueues_and_node_and_psql_workers_drain(pgq_dsn: str, spawn: Spawn) -> None:
    sql(pgq_dsn, "SELECT pgq.configure('fail', max_attempts => 2, backoff_base => '50 ms')")
    # Node workers poll every ten minutes: only their LISTEN can wake them in time.
    node_a = spawn("node", "echo", "sleep", PGQ_BATCH="2", PGQ_POLL_MS="600000")
    node_b = spawn("node", "echo", "sleep", PGQ_BATCH="2", PGQ_POLL_MS="600000")
    psql = spawn("psql", "echo", "sleep", "fail", PGQ_POLL_S="0.2")  # the only one for "fail"
    with Queue(pgq_dsn) as q:
        echo = q.enqueue_many("echo", ECHO_PAYLOADS * 5)
        sleep = q.enqueue_many("sleep", [{"ms": 100}] * 16)
        fail = q.enqueue_many("fail", [{"why": "demo"}] * 3)
    total = len(echo) + len(sleep) + len(fail)
    wait_for(lambda: finished(pgq_dsn, total), 90, f"{total} finished jobs")

    done = history(pgq_dsn)
    assert sorted(done) == sorted(echo + sleep + fail)  # each job once (id is the primary key)
    assert sql(pgq_dsn, "SELECT count(*) AS n FROM pgq.jobs") == [{"n": 0}]
    for job_id, payload in zip(echo, ECHO_PAYLOADS * 5, strict=True):
        row = done[job_id]
        assert (row["status"], row["attempt"], row["errors"]) == ("successful", 1, [])
        assert row["payload"] == payload and row["details"] == {"result": payload}
    assert {(done[i]["status"], done[i]["attempt"]) for i in sleep} == {("successful", 1)}
    for job_id in fail:  # both attempts failed in the psql worker, each failure recorded
        row = done[job_id]
        assert (row["status"], row["attempt"]) == ("failed", 2)
        assert str(row["worker_id"]) == psql.worker_id
        assert [e["attempt"] for e in row["errors"]] == [1, 2]
        assert all("demo failure" in e["details"]["message"] for e in row["errors"])
    assert sorted(psql.jobs("retry")) == sorted(fail)  # what SQL decided, as complete answered

    workers = {str(row["worker_id"]) for row in done.values()}
    assert workers == {node_a.worker_id, node_b.worker_id, psql.worker_id}  # all took part
    reported = {
        w.worker_id: set(w.jobs("successful") + w.jobs("failed")) for w in (node_a, node_b, psql)
    }
    for job_id, row in done.items():  # each worker reports what SQL recorded for it
        assert job_id in reported[str(row["worker_id"])]
    for example in (node_a, node_b, psql):
        assert example.stop() == 0, example.output()
        assert example.out[-1] == "stopped" and example.jobs("refused") == []


def test_example_workers_run_the_queue_upkeep(pgq_dsn: str, spawn: Spawn) -> None:
    """Each example calls pgq.maintain at start (and every 5 s): the ring turns without a
    Python worker. pgq.maintained_at is what a maintenance call sets."""
    for kind in ("node", "psql"):
        sql(pgq_dsn, "SELECT setval('pgq.maintained_at', 0)")
        worker = spawn(kind, "echo")
        wait_for(
            lambda: sql(pgq_dsn, "SELECT last_value AS v FROM pgq.maintained_at")[0]["v"] > 0,
            60,
            f"the {kind} worker's pgq.maintain",
        )
        assert worker.stop() == 0, worker.output()


# --- Node enqueues, ThinWorker drains ---------------------------------------------------------


def test_node_producer_enqueues_and_thin_worker_drains(
    pg_server: PgServer, pgq_dsn: str, node_example: Path
) -> None:
    texts = [json.dumps(p) for p in ECHO_PAYLOADS]
    result = node_producer(pg_server, pgq_dsn, "from.node", *texts)
    assert result.returncode == 0, result.stderr
    ids = json.loads(result.stdout)
    assert all(isinstance(i, str) for i in ids)  # bigint ids arrive as strings in node-postgres
    ids = [int(i) for i in ids]
    assert ids == sorted(ids) and len(ids) == len(ECHO_PAYLOADS)

    seen: dict[int, Any] = {}
    worker = ThinWorker(pgq_dsn, concurrency=2)

    @worker.entrypoint("from.node")
    def handle(job: Job[Any]) -> Any:
        seen[job.id] = job.payload
        return job.payload

    worker.run(until_empty=True)
    assert seen == dict(zip(ids, ECHO_PAYLOADS, strict=True))
    done = history(pgq_dsn)
    assert sorted(done) == ids
    assert {(r["status"], r["attempt"]) for r in done.values()} == {("successful", 1)}


def test_node_producer_sees_the_sqlstate_of_bad_input(
    pg_server: PgServer, pgq_dsn: str, node_example: Path
) -> None:
    result = node_producer(pg_server, pgq_dsn, "x" * 201, "{}")
    assert result.returncode == 1
    assert result.stderr.startswith("enqueue failed: PQ001 "), result.stderr  # err.code
    assert sql(pgq_dsn, "SELECT count(*) AS n FROM pgq.jobs") == [{"n": 0}]


def test_node_producer_delays_jobs_by_the_server_clock(
    pg_server: PgServer, pgq_dsn: str, node_example: Path
) -> None:
    result = node_producer(pg_server, pgq_dsn, "echo", "1", "2", "--delay", "3600")
    assert result.returncode == 0, result.stderr
    rows = sql(pgq_dsn, "SELECT run_at - enqueued_at AS d FROM pgq.jobs")
    assert [r["d"].total_seconds() for r in rows] == [3600, 3600]


# --- delayed and retried jobs: LISTEN wakes, pgq.next_run_at times the wait -------------------


def test_node_worker_sleeps_until_delayed_and_retried_jobs_are_due(
    pgq_dsn: str, spawn: Spawn
) -> None:
    """With a ten-minute poll, only the notification (new jobs) and pgq.next_run_at (a delayed
    job, a failure's retry: its notification comes before it is due) get these jobs done."""
    sql(pgq_dsn, "SELECT pgq.configure('fail', max_attempts => 3, backoff_base => '300 ms')")
    node = spawn("node", "echo", "fail", PGQ_POLL_MS="600000")
    delayed = "SELECT pgq.enqueue('echo', '\"late\"', run_at => now() + interval '1 s') AS id"
    late = sql(pgq_dsn, delayed)[0]
    failing = sql(pgq_dsn, "SELECT pgq.enqueue('fail', '{}') AS id")[0]
    wait_for(lambda: finished(pgq_dsn, 2), 30, "the delayed and the retried job")
    done = history(pgq_dsn)
    assert (done[late["id"]]["status"], done[late["id"]]["attempt"]) == ("successful", 1)
    row = done[failing["id"]]
    assert (row["status"], row["attempt"], len(row["errors"])) == ("failed", 3, 3)
    # complete answered SQL's decision each time: retry, retry, then dead
    assert node.jobs("retry") == [failing["id"]] * 2 and node.jobs("failed") == [failing["id"]]
    assert done[late["id"]]["started_at"] >= done[late["id"]]["enqueued_at"]
    assert node.stop() == 0, node.output()


# --- heartbeats at the cadence the claim answered ---------------------------------------------


@pytest.mark.parametrize("kind", ["node", "psql"])
def test_heartbeats_keep_a_long_job_from_going_stale(pgq_dsn: str, spawn: Spawn, kind: str) -> None:
    """A job twice as long as its heartbeat timeout stays with its worker, while another worker
    polls for stale jobs every 100 ms."""
    sql(pgq_dsn, "SELECT pgq.configure('sleep', heartbeat_timeout => '2 s')")
    worker = spawn(kind, "sleep", PGQ_BATCH="1")
    job_id = sql(pgq_dsn, "SELECT pgq.enqueue('sleep', '{\"ms\": 4000}') AS id")[0]["id"]
    worker.line(f"started job={job_id} ")
    rival = spawn("node", "sleep", PGQ_POLL_MS="100")
    beats = "SELECT heartbeat_at - started_at AS d FROM pgq.jobs WHERE id = %s"
    wait_for(
        lambda: [r for r in sql(pgq_dsn, beats, job_id) if r["d"].total_seconds() >= 2.5],
        30,
        "a heartbeat 2.5 s after the start",
    )
    worker.line(f"successful job={job_id} ")
    row = history(pgq_dsn)[job_id]
    assert (row["status"], row["attempt"], row["errors"]) == ("successful", 1, [])
    assert str(row["worker_id"]) == worker.worker_id
    assert rival.jobs("started") == []
    assert worker.stop() == 0 and rival.stop() == 0


# --- time limits: SQL fails the attempt, the example stops its handler -----------------------


@pytest.mark.parametrize("kind", ["node", "psql"])
def test_examples_honour_the_time_limit_of_the_claim(pgq_dsn: str, spawn: Spawn, kind: str) -> None:
    """A job whose 1 s limit (the claim's run_timeout_s) runs out long before its 60 s sleep
    and its 30 s heartbeat timeout: the worker beats just after the deadline, SQL answers
    timed_out (the attempt failed: retried, then dead on the last of 2), the worker stops the
    handler and writes nothing, each time."""
    sql(
        pgq_dsn,
        "SELECT pgq.configure('sleep', max_attempts => 2, backoff_base => '0', backoff_max => '0')",
    )
    worker = spawn(kind, "sleep", PGQ_BATCH="1")
    job_id = sql(
        pgq_dsn,
        "SELECT pgq.enqueue('sleep', '{\"ms\": 60000}', timeout => '1 s') AS id",
    )[0]["id"]
    for attempt in (1, 2):
        worker.line(f"started job={job_id} entrypoint=sleep attempt={attempt}", timeout=15)
        worker.line(f"timed_out job={job_id} entrypoint=sleep attempt={attempt}", timeout=15)
    row = history(pgq_dsn)[job_id]
    assert (row["status"], row["attempt"]) == ("failed", 2)
    assert [(e["attempt"], e["decision"], e["details"]["message"]) for e in row["errors"]] == [
        (1, "retry", "timed out after 1 s"),
        (2, "failed", "timed out after 1 s"),
    ]
    assert worker.stop() == 0, worker.output()


# --- fencing: a stale Node worker's late complete is refused ---------------------------------


def test_stale_node_worker_is_fenced_out_by_its_lease(pgq_dsn: str, spawn: Spawn) -> None:
    sql(pgq_dsn, "SELECT pgq.configure('sleep', heartbeat_timeout => '1 s')")
    stale = spawn("node", "sleep", PGQ_BATCH="1")
    job_id = sql(pgq_dsn, "SELECT pgq.enqueue('sleep', '{\"ms\": 4000}') AS id")[0]["id"]
    stale.line(f"started job={job_id} ")
    stale.proc.send_signal(signal.SIGSTOP)  # no heartbeat from here on
    wait_for(
        lambda: sql(
            pgq_dsn,
            "SELECT heartbeat_at < now() - interval '1 s' AS stale FROM pgq.jobs WHERE id = %s",
            job_id,
        )[0]["stale"],
        30,
        "a stale heartbeat",
    )
    taker = spawn("node", "sleep", PGQ_BATCH="1")
    taker.line(f"started job={job_id} entrypoint=sleep attempt=2")
    stale.proc.send_signal(signal.SIGCONT)
    stale.line(f"refused job={job_id} ")  # heartbeat answered "lost": aborted, complete refused
    taker.line(f"successful job={job_id} ")

    [row] = history(pgq_dsn).values()
    assert (row["id"], row["status"], row["attempt"]) == (job_id, "successful", 2)
    assert str(row["worker_id"]) == taker.worker_id
    [timeout] = row["errors"]  # the stale attempt, recorded by the claim that took it over
    assert timeout["details"]["error"] == "heartbeat timeout"
    assert timeout["details"]["worker_id"] == stale.worker_id
    assert stale.stop() == 0 and taker.stop() == 0


# --- SIGTERM: the job in hand finishes, the claimed jobs not started go back -------------------


@pytest.mark.parametrize("kind", ["node", "psql"])
def test_sigterm_releases_claimed_jobs(pgq_dsn: str, spawn: Spawn, kind: str) -> None:
    with Queue(pgq_dsn) as q:
        ids = q.enqueue_many("sleep", [{"ms": 1500}] * 3)
    worker = spawn(kind, "sleep", PGQ_BATCH="3")
    worker.line(f"started job={ids[0]} ")
    running = "SELECT count(*) AS n FROM pgq.jobs WHERE status = 'running' AND worker_id = %s"
    assert sql(pgq_dsn, running, worker.worker_id) == [{"n": 3}]  # one batch, claimed together
    assert worker.stop() == 0, worker.output()

    assert worker.jobs("successful") == [ids[0]]
    assert sorted(worker.jobs("released")) == ids[1:]
    done = history(pgq_dsn)
    assert sorted(done) == [ids[0]]
    assert (done[ids[0]]["status"], done[ids[0]]["attempt"]) == ("successful", 1)
    back = sql(pgq_dsn, "SELECT id, status, attempt, worker_id FROM pgq.jobs ORDER BY id")
    assert back == [
        {"id": i, "status": "queued", "attempt": 0, "worker_id": None} for i in ids[1:]
    ]  # a release is not an attempt


# --- cancellation reaches a running Node job ---------------------------------------------------


def test_cancel_stops_a_running_node_job(pgq_dsn: str, spawn: Spawn) -> None:
    node = spawn("node", "sleep")
    job_id = sql(pgq_dsn, "SELECT pgq.enqueue('sleep', '{\"ms\": 60000}') AS id")[0]["id"]
    node.line(f"started job={job_id} ")
    sql(pgq_dsn, "SELECT pgq.cancel(ARRAY[%s::bigint])", job_id)
    node.line(f"canceled job={job_id} ", timeout=20)  # notified, asked its heartbeat, aborted
    row = history(pgq_dsn)[job_id]
    assert (row["status"], row["attempt"], row["details"]) == ("canceled", 1, {"error": "canceled"})
    assert node.stop() == 0


# --- the page that documents them -------------------------------------------------------------


def test_any_language_page_states_the_examples_line_counts() -> None:
    """docs/any-language.md lists each example with its length: kept true."""
    page = (REPO / "docs" / "any-language.md").read_text()
    rows = re.findall(r"^\| \[`(examples/[^`]+)`\]\([^)]*\) \| .* \| (\d+) \|$", page, re.M)
    assert {path for path, _ in rows} == {
        "examples/node/worker.js",
        "examples/node/producer.js",
        "examples/node/sql.js",
        "examples/node/workflow.js",
        "examples/psql/worker.sh",
    }
    for path, lines in rows:
        assert len((REPO / path).read_text().splitlines()) == int(lines), path


# --- the registry: an idle example worker serves its entrypoints -------------------------------


@pytest.mark.parametrize("kind", ["node", "psql"])
def test_an_idle_example_worker_is_registered_and_serves_its_entrypoints(
    pgq_dsn: str, spawn: Spawn, kind: str
) -> None:
    """Registered (pgq.register_worker), an example's entrypoints count as served, so
    pgq.metrics does not call them unserved and a registered scheduler fires their schedules;
    idle, a heartbeat with no jobs keeps the row fresh; a clean stop unregisters."""
    sql(pgq_dsn, "SELECT pgq.pause('{echo}')")  # a due job that stays due
    sql(pgq_dsn, "SELECT pgq.enqueue('echo', '1')")
    worker = spawn(kind, "echo")
    worker.line("ready ")
    status = "SELECT state, entrypoints, last_seen_at FROM pgq.worker_status WHERE worker_id = %s"
    [row] = sql(pgq_dsn, status, worker.worker_id)
    assert (row["state"], row["entrypoints"]) == ("active", ["echo"])
    served = "SELECT served, unserved_s FROM pgq.metrics('{echo}')"
    assert sql(pgq_dsn, served) == [{"served": True, "unserved_s": None}]
    first_seen = row["last_seen_at"]
    wait_for(  # the idle heartbeat: every heartbeat_interval (10 s for the default timeout)
        lambda: sql(pgq_dsn, status, worker.worker_id)[0]["last_seen_at"] > first_seen,
        25,
        f"the idle {kind} worker never refreshed its registry row: {worker.output()}",
    )
    assert worker.stop() == 0, worker.output()
    assert sql(pgq_dsn, status, worker.worker_id) == []
    assert sql(pgq_dsn, "SELECT served FROM pgq.metrics('{echo}')") == [{"served": False}]


# --- a rate-limited entrypoint -----------------------------------------------------------------


def test_node_workers_keep_a_rate_limit(pgq_dsn: str, spawn: Spawn) -> None:
    """Two Node workers on an entrypoint limited to 4 starts per 400 ms, polling only every ten
    minutes: they drain 16 jobs at the limit's pace (pgq.next_run_at answers when the next start
    is allowed, so a short claim sleeps until then, not until the poll) and no window of 400 ms
    holds more than 4 starts."""
    sql(pgq_dsn, "SELECT pgq.configure('echo', rate_limit => 4, rate_period => '400 ms')")
    with Queue(pgq_dsn) as q:
        ids = q.enqueue_many("echo", [{"n": i} for i in range(16)])
    workers = [spawn("node", "echo", PGQ_BATCH="3", PGQ_POLL_MS="600000") for _ in range(2)]
    wait_for(lambda: finished(pgq_dsn, len(ids)), 60, f"{len(ids)} finished jobs")
    starts = sorted(r["started_at"] for r in history(pgq_dsn).values())
    period = timedelta(milliseconds=400)
    most = max(sum(1 for t in starts if s <= t < s + period) for s in starts)
    assert most == 4, starts
    assert (starts[-1] - starts[0]).total_seconds() >= 3 * 0.4  # 16 starts: at least 4 windows
    for worker in workers:
        assert worker.stop() == 0, worker.output()


# --- a workflow built from Node through plain SQL ------------------------------------------------


def test_node_builds_a_workflow_and_node_workers_run_it(
    pg_server: PgServer, pgq_dsn: str, spawn: Spawn
) -> None:
    """examples/node/workflow.js enqueues echo -> 5 squares -> sum in one statement; two Node
    workers run it: no square before the echo ended, the sum last, adding its parents' results
    (pgq.parent_results): 1 + 4 + 9 + 16 + 25."""
    result = subprocess.run(
        ["node", "workflow.js", "5"],
        cwd=NODE_DIR,
        env=example_env(pg_server, pgq_dsn),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    ids = [int(i) for i in json.loads(result.stdout)]
    assert len(ids) == 7
    waiting = sql(pgq_dsn, "SELECT count(*) AS n FROM pgq.jobs WHERE status = 'waiting'")
    assert waiting == [{"n": 6}]
    workers = [spawn("node", "echo", "square", "sum", PGQ_POLL_MS="600000") for _ in range(2)]
    wait_for(lambda: finished(pgq_dsn, 7), 60, "the workflow's 7 jobs")
    done = history(pgq_dsn)
    assert {done[i]["status"] for i in ids} == {"successful"}
    assert done[ids[6]]["details"] == {"result": 55}
    first, squares, last = done[ids[0]], [done[i] for i in ids[1:6]], done[ids[6]]
    assert min(s["started_at"] for s in squares) >= first["finished_at"]
    assert last["started_at"] >= max(s["finished_at"] for s in squares)
    for worker in workers:
        assert worker.stop() == 0, worker.output()
