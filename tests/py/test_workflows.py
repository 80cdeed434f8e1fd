"""Workflows against a real server: a fan-out/fan-in run by real workers, the releases and
cancellations that race a parent's end (deterministic: one session holds its transaction open
while the other is seen waiting on its lock), and graphs at their documented sizes.

Nothing sleeps as synchronisation: sessions are lined up by a held transaction and by polling
pg_stat_activity for the waiting one.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import psycopg
from helpers.plans import explained, plan_nodes
from helpers.wait import wait_for

from pgq_thin import Queue
from pgq_thin.job import Job
from pgq_thin.worker import ThinWorker

WORKER = uuid.UUID("00000000-0000-0000-0000-0000000000f7")


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True)


def claim_all(
    conn: psycopg.Connection[Any], entrypoint: str, n: int = 100
) -> list[tuple[int, int]]:
    rows = conn.execute(
        "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], %s) ORDER BY id", (WORKER, entrypoint, n)
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def complete(
    conn: psycopg.Connection[Any], jobs: list[tuple[int, int]], outcome: str = "successful"
) -> None:
    conn.execute(
        "SELECT pgq.complete(%s, %s, %s, array_fill(%s::text, ARRAY[%s]))",
        (WORKER, [j[0] for j in jobs], [j[1] for j in jobs], outcome, len(jobs)),
    )


def status(conn: psycopg.Connection[Any], job_id: int) -> str:
    row = conn.execute(
        "SELECT coalesce((SELECT status FROM pgq.jobs WHERE id = %s),"
        " (SELECT status FROM pgq.job_history WHERE id = %s))",
        (job_id, job_id),
    ).fetchone()
    assert row is not None
    return str(row[0])


def waiting_on_lock(dsn: str, pid: int) -> bool:
    with connect(dsn) as conn:
        row = conn.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
    return row is not None and row[0] == "Lock"


def test_fan_out_fan_in_with_real_workers(pgq_dsn: str) -> None:
    """Split a text into 8 chunks, count each chunk's words, merge: one enqueue_many for the
    whole graph; the merge, registered with parent_results=True, gets its parents' results
    with the job (job.parent_results, read by the worker before it starts) and starts after
    every chunk ended."""
    text = " ".join(f"word{i}" for i in range(1000))
    chunks = [text.split()[i::8] for i in range(8)]
    entrypoints = ["wf.count"] * 8 + ["wf.merge"]
    payloads: list[Any] = [{"words": c} for c in chunks] + [None]
    depends_on: list[list[int] | None] = [None] * 8 + [list(range(1, 9))]
    with Queue(pgq_dsn) as queue:
        ids = queue.enqueue_many(entrypoints, payloads, depends_on=depends_on)
    merged: dict[str, Any] = {}
    done = threading.Event()
    worker = ThinWorker(pgq_dsn, concurrency=8, batch_size=4, run_schedules=False)

    @worker.entrypoint("wf.count")
    async def count(job: Job[Any]) -> int:
        assert job.parent_results is None  # not asked for
        return len(job.payload["words"])

    @worker.entrypoint("wf.merge", parent_results=True)
    async def merge(job: Job[Any]) -> int:
        parents = job.parent_results
        assert parents is not None
        merged["parents"] = [(p["status"], p["result"]) for p in parents]
        merged["total"] = sum(p["result"] for p in parents)
        done.set()
        return int(merged["total"])

    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert done.wait(60), "the merge did not run"
    finally:
        worker.stop()
        thread.join(30)
    assert merged["total"] == 1000
    assert [s for s, _ in merged["parents"]] == ["successful"] * 8
    with connect(pgq_dsn) as conn:
        rows = conn.execute(
            "SELECT id, started_at, finished_at FROM pgq.job_history WHERE id = ANY (%s)", (ids,)
        ).fetchall()
        graph = conn.execute(
            "SELECT id, state, children FROM pgq.workflow(%s)", (ids[0],)
        ).fetchall()
    by_id = {r[0]: r for r in rows}
    assert len(by_id) == 9
    assert by_id[ids[8]][1] >= max(by_id[i][2] for i in ids[:8]), (
        "the merge started after every chunk"
    )
    assert [g[1] for g in graph] == ["successful"] * 9
    assert graph[0][2] == [ids[8]] and graph[8][2] == []


def test_two_parents_ending_at_once_release_the_child_exactly_once(pgq_dsn: str) -> None:
    """Session A completes parent 1 and holds its transaction; session B completes parent 2 and
    waits on the child's row lock; A commits, B counts the child down to 0 and releases it:
    queued once, with one ready number, no count left."""
    with connect(pgq_dsn) as conn:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM pgq.enqueue_many('{wf.p,wf.p,wf.c}', depends_on => '[null,null,[1,2]]')"
        ).fetchall()]  # fmt: skip
        jobs = claim_all(conn, "wf.p")
    a = psycopg.connect(pgq_dsn)
    try:
        complete(a, [jobs[0]])  # open transaction: its settlement holds the child's row
        b_pid: list[int] = []

        def second() -> None:
            with connect(pgq_dsn) as b:
                row = b.execute("SELECT pg_backend_pid()").fetchone()
                assert row is not None
                b_pid.append(row[0])
                complete(b, [jobs[1]])

        thread = threading.Thread(target=second)
        thread.start()
        wait_for(lambda: b_pid and waiting_on_lock(pgq_dsn, b_pid[0]), 20, "B waiting on A's lock")
        a.commit()
        thread.join(30)
        assert not thread.is_alive()
    finally:
        a.close()
    with connect(pgq_dsn) as conn:
        assert status(conn, ids[2]) == "queued"
        assert conn.execute(
            "SELECT count(*) FROM pgq.jobs WHERE id = %s", (ids[2],)
        ).fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM pgq.job_waits").fetchone() == (0,)
        states = conn.execute(
            "SELECT state FROM pgq.job_deps WHERE child_id = %s", (ids[2],)
        ).fetchall()
        assert sorted(s[0] for s in states) == ["satisfied", "satisfied"]


def test_a_cancel_of_the_child_racing_its_parents_end(pgq_dsn: str) -> None:
    """The child is canceled in a transaction held open; the parent's completion waits on the
    child's row, then finds it gone: the child ends canceled, never queued, the parent
    successful."""
    with connect(pgq_dsn) as conn:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM pgq.enqueue_many('{wf.p2,wf.c2}', depends_on => '[null,[1]]')"
        ).fetchall()]  # fmt: skip
        jobs = claim_all(conn, "wf.p2")
    a = psycopg.connect(pgq_dsn)
    try:
        a.execute("SELECT pgq.cancel(%s)", ([ids[1]],))
        pid: list[int] = []

        def finish_parent() -> None:
            with connect(pgq_dsn) as b:
                row = b.execute("SELECT pg_backend_pid()").fetchone()
                assert row is not None
                pid.append(row[0])
                complete(b, jobs)

        thread = threading.Thread(target=finish_parent)
        thread.start()
        wait_for(lambda: pid and waiting_on_lock(pgq_dsn, pid[0]), 20, "the completion waiting")
        a.commit()
        thread.join(30)
    finally:
        a.close()
    with connect(pgq_dsn) as conn:
        assert status(conn, ids[0]) == "successful"
        assert status(conn, ids[1]) == "canceled"
        assert conn.execute("SELECT count(*) FROM pgq.jobs").fetchone() == (0,)


def test_an_enqueue_naming_a_live_parent_that_ends_meanwhile(pgq_dsn: str) -> None:
    """The enqueue of a child of a running parent holds its transaction: the parent's completion
    waits for it (the parent row is key-share locked), then settles the new edge: the child is
    released, not left waiting forever."""
    with connect(pgq_dsn) as conn:
        [(parent,)] = conn.execute("SELECT id FROM pgq.enqueue_many('{wf.p3}')").fetchall()
        jobs = claim_all(conn, "wf.p3")
    a = psycopg.connect(pgq_dsn)
    try:
        row = a.execute(
            "SELECT id FROM pgq.enqueue_many('{wf.c3}', depends_on => %s::jsonb)",
            (json.dumps([[{"job": parent}]]),),
        ).fetchone()
        assert row is not None
        child = row[0]
        pid: list[int] = []

        def finish_parent() -> None:
            with connect(pgq_dsn) as b:
                r = b.execute("SELECT pg_backend_pid()").fetchone()
                assert r is not None
                pid.append(r[0])
                complete(b, jobs)

        thread = threading.Thread(target=finish_parent)
        thread.start()
        wait_for(lambda: pid and waiting_on_lock(pgq_dsn, pid[0]), 20, "the completion waiting")
        a.commit()
        thread.join(30)
    finally:
        a.close()
    with connect(pgq_dsn) as conn:
        assert status(conn, parent) == "successful"
        assert status(conn, child) == "queued"


def test_ten_thousand_children_of_one_parent_and_a_chain_of_a_thousand(pgq_dsn: str) -> None:
    """The documented sizes: one call enqueues a parent and 10,000 children; its completion
    releases all of them in its own transaction. A chain of 1,000 is one call too; its head
    failing cancels the 999 others in one settlement."""
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.configure('wf.head', max_attempts => 1)")
        deps = [None] + [[1]] * 10_000
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(%s, depends_on => %s::jsonb)",
            (["wf.fan"] + ["wf.leaf"] * 10_000, json.dumps(deps)),
        )
        began = time.monotonic()
        complete(conn, claim_all(conn, "wf.fan"))
        fan_s = time.monotonic() - began
        assert conn.execute(
            "SELECT count(*) FROM pgq.jobs WHERE entrypoint = 'wf.leaf' AND status = 'queued'"
        ).fetchone() == (10_000,)
        chain = [None] + [[i] for i in range(1, 1000)]
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(%s, depends_on => %s::jsonb)",
            (["wf.head"] + ["wf.link"] * 999, json.dumps(chain)),
        )
        began = time.monotonic()
        complete(conn, claim_all(conn, "wf.head"), "failed")
        chain_s = time.monotonic() - began
        assert conn.execute(
            "SELECT count(*) FROM pgq.job_history"
            " WHERE entrypoint = 'wf.link' AND status = 'canceled'"
        ).fetchone() == (999,)
        assert conn.execute(
            "SELECT count(*) FROM pgq.jobs WHERE status = 'waiting'"
        ).fetchone() == (0,)
    # Bounds stated in docs/sql-api.md ("Workflows"): generous for a shared machine.
    print(
        f"10,000 children released in {fan_s:.2f} s, a chain of 1,000 canceled in {chain_s:.2f} s"
    )
    assert fan_s < 30 and chain_s < 60, (fan_s, chain_s)


def test_show_draws_the_workflow_and_cancel_workflow_ends_it(pgq_dsn: str) -> None:
    """``pgq-thin show`` lists the job's workflow, one line per job with what it waits for and
    what waits for it; Admin.cancel_workflow cancels every job of it that has not ended."""
    import os
    import subprocess
    import sys

    from pgq_thin import Admin

    with Queue(pgq_dsn) as queue:
        deps: list[Any] = [None, [1], [{"position": 1, "run_anyway": True}], [2, 3]]
        ids = queue.enqueue_many(["wf.s1", "wf.s2", "wf.s2", "wf.s3"], [None] * 4, depends_on=deps)
    result = subprocess.run(
        [sys.executable, "-m", "pgq_thin", "show", str(ids[1]), "--dsn", pgq_dsn],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "160"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"workflow:       {ids[0]}, 4 jobs (pgq.workflow)" in lines
    graph = [x for x in lines if x[:1] in ("*", " ") and x.lstrip("* ")[:1].isdigit()]
    assert graph[0].split()[:3] == [str(ids[0]), "wf.s1", "queued"]
    assert graph[0].endswith(f"-> {ids[1]} {ids[2]}")
    assert graph[1].startswith("*") and f"after {ids[0]} -> {ids[3]}" in graph[1]
    assert f"after {ids[0]}~" in graph[2]  # run_anyway
    assert graph[3].split()[2] == "waiting" and f"after {ids[1]} {ids[2]}" in graph[3]
    with Admin(pgq_dsn) as admin:
        canceled = admin.cancel_workflow(ids[3])
        assert sorted(canceled) == sorted(ids)
        assert {g["state"] for g in admin.workflow(ids[0])} == {"canceled"}


def test_a_parents_end_takes_the_childs_row_before_its_count(pgq_dsn: str) -> None:
    """The lock order of a cancel (the child's job row, then its count in pgq.job_waits) is the
    settlement's too: session A holds the child's row as a cancel's first read does; the parent's
    completion (B) waits for it before touching the count, so A can remove the count (a cancel's
    next step) and commit; no deadlock, and B then finds nothing left to release."""
    with connect(pgq_dsn) as conn:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM pgq.enqueue_many('{wf.p4,wf.c4}', depends_on => '[null,[1]]')"
        ).fetchall()]  # fmt: skip
        jobs = claim_all(conn, "wf.p4")
    a = psycopg.connect(pgq_dsn)
    errors: list[BaseException] = []
    try:
        a.execute("SELECT 1 FROM pgq.jobs WHERE id = %s FOR UPDATE", (ids[1],))
        pid: list[int] = []

        def finish_parent() -> None:
            try:
                with connect(pgq_dsn) as b:
                    r = b.execute("SELECT pg_backend_pid()").fetchone()
                    assert r is not None
                    pid.append(r[0])
                    complete(b, jobs)
            except BaseException as err:
                errors.append(err)

        thread = threading.Thread(target=finish_parent)
        thread.start()
        wait_for(lambda: pid and waiting_on_lock(pgq_dsn, pid[0]), 20, "the completion waiting")
        a.execute("DELETE FROM pgq.job_waits WHERE child_id = %s", (ids[1],))
        a.execute("DELETE FROM pgq.jobs WHERE id = %s", (ids[1],))  # as the cancel archives it
        a.commit()
        thread.join(30)
    finally:
        a.close()
    assert not errors, errors  # a deadlock would abort one of the two
    with connect(pgq_dsn) as conn:
        assert status(conn, ids[0]) == "successful"
        assert conn.execute("SELECT count(*) FROM pgq.jobs").fetchone() == (0,)


def workflow_rows(conn: psycopg.Connection[Any], job_id: int) -> dict[int, tuple[str, int]]:
    """pgq.workflow(job_id) as {id: (state, workflow_id)}."""
    rows = conn.execute("SELECT id, state, workflow_id FROM pgq.workflow(%s)", (job_id,)).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def enqueue_graph(
    conn: psycopg.Connection[Any], entrypoints: list[str], deps: list[Any]
) -> list[int]:
    rows = conn.execute(
        "SELECT id FROM pgq.enqueue_many(%s, depends_on => %s::jsonb)",
        (entrypoints, json.dumps(deps)),
    ).fetchall()
    return [r[0] for r in rows]


def test_a_workflow_id_names_the_graph_a_call_started_and_the_calls_that_joined_it(
    pgq_dsn: str,
) -> None:
    """One enqueue_many call, one workflow: its id is the call's first job with an edge (a job of
    the call without any edge is in none). A later call naming its jobs joins it; a call naming
    jobs of two workflows joins the older; a plain job named by a call starts a workflow under its
    own id. pgq.workflow takes the workflow id or any of its jobs."""
    with connect(pgq_dsn) as conn:
        a = enqueue_graph(conn, ["wf.i1", "wf.i1", "wf.i1", "wf.i1"], [None, None, [2], [2, 3]])
        assert workflow_rows(conn, a[0]) == {}  # no edge: no workflow
        assert {w for _, w in workflow_rows(conn, a[3]).values()} == {a[1]}
        assert set(workflow_rows(conn, a[1])) == {a[1], a[2], a[3]}
        joined = enqueue_graph(conn, ["wf.i1"], [[{"job": a[3]}]])
        rows = workflow_rows(conn, a[1])
        assert set(rows) == {a[1], a[2], a[3], joined[0]}
        assert rows[joined[0]] == ("waiting", a[1])
        b = enqueue_graph(conn, ["wf.i1", "wf.i1"], [None, [1]])
        assert {w for _, w in workflow_rows(conn, b[1]).values()} == {b[0]}
        both = enqueue_graph(conn, ["wf.i1"], [[{"job": b[1]}, {"job": a[2]}]])
        assert workflow_rows(conn, both[0])[both[0]] == ("waiting", a[1])
        # b keeps its id and its jobs; the edge from b's job into the joining call is a[1]'s.
        assert set(workflow_rows(conn, b[0])) == {b[0], b[1]}
        assert b[1] in workflow_rows(conn, a[1])
        (plain,) = enqueue_graph(conn, ["wf.i1"], [None])
        (child,) = enqueue_graph(conn, ["wf.i1"], [[{"job": plain}]])
        assert workflow_rows(conn, child) == {plain: ("queued", plain), child: ("waiting", plain)}


def test_requeue_workflow_brings_back_the_failed_part_waiting_for_its_parents(
    pgq_dsn: str,
) -> None:
    """A dead parent cancels its chain; pgq.requeue_workflow requeues every job of the workflow
    that ended failed or canceled in one call: the parent is queued, the jobs after it wait for
    it again and run in order. After pgq.cancel_workflow, the same call brings back every
    canceled job, each waiting for what it waited for before."""
    with connect(pgq_dsn) as conn:
        ids = enqueue_graph(conn, ["wf.r1", "wf.r2", "wf.r3", "wf.r2"], [None, [1], [2], None])
        complete(conn, claim_all(conn, "wf.r1"), "fatal")
        assert [status(conn, i) for i in ids[:3]] == ["failed", "canceled", "canceled"]
        back = [r[0] for r in conn.execute("SELECT id FROM pgq.requeue_workflow(%s)", (ids[2],))]
        assert sorted(back) == ids[:3]
        assert [status(conn, i) for i in ids] == ["queued", "waiting", "waiting", "queued"]
        got = claim_all(conn, "wf.r2")  # the waiting one is not claimable
        assert [g[0] for g in got] == [ids[3]]
        complete(conn, claim_all(conn, "wf.r1"))
        assert status(conn, ids[1]) == "queued"
        complete(conn, claim_all(conn, "wf.r2"))
        complete(conn, claim_all(conn, "wf.r3"))
        assert [status(conn, i) for i in ids] == ["successful"] * 3 + ["running"]
        assert conn.execute(
            "SELECT count(*) FROM pgq.job_waits WHERE child_id = ANY (%s)", (ids,)
        ).fetchone() == (0,)

        # Canceled as a whole, requeued as a whole.
        g = enqueue_graph(conn, ["wf.r4", "wf.r5", "wf.r5", "wf.r6"], [None, [1], [1], [2, 3]])
        conn.execute("SELECT pgq.cancel_workflow(%s)", (g[0],))
        back = [r[0] for r in conn.execute("SELECT id FROM pgq.requeue_workflow(%s)", (g[0],))]
        assert sorted(back) == g
        assert [status(conn, i) for i in g] == ["queued", "waiting", "waiting", "waiting"]
        assert dict(conn.execute(
            "SELECT child_id, pending FROM pgq.job_waits WHERE child_id = ANY (%s)", (g,)
        ).fetchall()) == {g[1]: 1, g[2]: 1, g[3]: 2}  # fmt: skip
        # Nothing failed: nothing to requeue.
        assert conn.execute(
            "SELECT count(*) FROM pgq.requeue_workflow(%s)", (ids[0],)
        ).fetchone() == (0,)


def test_a_job_requeued_without_its_failed_parent_runs(pgq_dsn: str) -> None:
    """pgq.requeue of a job canceled for a dead parent, without that parent, is an operator's
    override: it is queued at once; with the parent in the same call, it waits for it."""
    with connect(pgq_dsn) as conn:
        ids = enqueue_graph(conn, ["wf.o1", "wf.o2"], [None, [1]])
        complete(conn, claim_all(conn, "wf.o1"), "fatal")
        conn.execute("SELECT pgq.requeue(%s)", ([ids[1]],))
        assert status(conn, ids[1]) == "queued"
        complete(conn, claim_all(conn, "wf.o2"), "fatal")
        conn.execute("SELECT pgq.requeue(%s)", ([ids[1], ids[0]],))
        assert [status(conn, i) for i in ids] == ["queued", "waiting"]


def test_a_workflows_edges_go_with_its_last_job(pgq_dsn: str) -> None:
    """pgq.prune_history keeps a workflow's edges while any of its jobs is live or in history
    (pgq.workflow shows the others as pruned) and deletes them with the last one."""
    with connect(pgq_dsn) as conn:
        ids = enqueue_graph(conn, ["wf.p1", "wf.p2", "wf.p3"], [None, [1], [2]])
        other = enqueue_graph(conn, ["wf.p9", "wf.p9"], [None, [1]])
        for ep in ("wf.p1", "wf.p2"):
            complete(conn, claim_all(conn, ep))
        conn.execute("SELECT pgq.prune_history(interval '0')")
        rows = workflow_rows(conn, ids[2])
        assert [rows[i][0] for i in ids] == ["pruned", "pruned", "queued"]
        complete(conn, claim_all(conn, "wf.p3"))
        assert conn.execute("SELECT pgq.prune_history(interval '0')").fetchone() == (1,)
        assert conn.execute(
            "SELECT count(*) FROM pgq.job_deps WHERE workflow_id = %s", (ids[0],)
        ).fetchone() == (0,)
        assert workflow_rows(conn, ids[2]) == {}
        assert set(workflow_rows(conn, other[0])) == set(other)  # another workflow untouched


def test_a_requeue_racing_the_end_of_another_parent_counts_it_once(pgq_dsn: str) -> None:
    """C waits for P1 and P2. P1 dies and cancels C. While P2's completion is uncommitted
    (session A), a requeue of P1 brings C back (session B): B waits for the edge P2 -> C that A
    settled, then counts it as settled, so C waits for P1 alone and runs once P1 succeeds.
    Without the lock B counted the edge as pending (A had found no waiting C to count down)
    and C waited for P2 forever."""
    with connect(pgq_dsn) as conn:
        ids = enqueue_graph(conn, ["wf.q1", "wf.q2", "wf.q3"], [None, None, [1, 2]])
        p2 = claim_all(conn, "wf.q2")
        complete(conn, claim_all(conn, "wf.q1"), "fatal")
        assert status(conn, ids[2]) == "canceled"
    a = psycopg.connect(pgq_dsn)
    errors: list[BaseException] = []
    try:
        complete(a, p2)  # in A's open transaction
        pid: list[int] = []

        def requeue_p1() -> None:
            try:
                with connect(pgq_dsn) as b:
                    r = b.execute("SELECT pg_backend_pid()").fetchone()
                    assert r is not None
                    pid.append(r[0])
                    b.execute("SELECT pgq.requeue(%s)", ([ids[0]],))
            except BaseException as err:
                errors.append(err)

        thread = threading.Thread(target=requeue_p1)
        thread.start()
        wait_for(
            lambda: not thread.is_alive() or (pid and waiting_on_lock(pgq_dsn, pid[0])),
            20,
            "the requeue waiting (or done: then the count below is wrong)",
        )
        a.commit()
        thread.join(30)
    finally:
        a.close()
    assert not errors, errors
    with connect(pgq_dsn) as conn:
        assert [status(conn, i) for i in ids] == ["queued", "successful", "waiting"]
        assert conn.execute(
            "SELECT pending FROM pgq.job_waits WHERE child_id = %s", (ids[2],)
        ).fetchone() == (1,)
        complete(conn, claim_all(conn, "wf.q1"))
        assert status(conn, ids[2]) == "queued"


def test_a_job_canceled_while_waiting_and_requeued_waits_for_its_live_parent(
    pgq_dsn: str,
) -> None:
    """A waiting job canceled by hand and requeued while its parent still runs waits for it
    again (it is not queued ahead of it)."""
    with connect(pgq_dsn) as conn:
        ids = enqueue_graph(conn, ["wf.v1", "wf.v2"], [None, [1]])
        parent = claim_all(conn, "wf.v1")
        conn.execute("SELECT pgq.cancel(%s)", ([ids[1]],))
        conn.execute("SELECT pgq.requeue(%s)", ([ids[1]],))
        assert status(conn, ids[1]) == "waiting"
        complete(conn, parent)
        assert status(conn, ids[1]) == "queued"


def test_two_failures_canceling_overlapping_descendants_do_not_deadlock(pgq_dsn: str) -> None:
    """P1 -> A -> D -> X, P2 -> D, P1 -> X. P2 dies (session S2): it cancels D, then stops at D's
    edge to X, held by a third session. P1 dies (S1): it cancels A and X, and D below A. Locking
    level by level, S1 held X and waited for D while S2 held D and would wait for X; S1 locks
    every waiting job below the ones it cancels in one ordered pass (A, D, X) instead, so it
    waits for D holding only A, and both end."""
    with connect(pgq_dsn) as conn:
        ids = enqueue_graph(
            conn,
            ["wf.dl1", "wf.dl2", "wf.dl3", "wf.dl3", "wf.dl3"],
            [None, None, [1], [3, 2], [1, 4]],
        )
        p1, p2 = claim_all(conn, "wf.dl1"), claim_all(conn, "wf.dl2")
    a_, d_, x_ = ids[2], ids[3], ids[4]
    t = psycopg.connect(pgq_dsn)
    errors: list[BaseException] = []
    pids: dict[str, int] = {}

    def fail(name: str, jobs: list[tuple[int, int]]) -> None:
        try:
            with connect(pgq_dsn) as s:
                r = s.execute("SELECT pg_backend_pid()").fetchone()
                assert r is not None
                pids[name] = r[0]
                complete(s, jobs, "fatal")
        except BaseException as err:
            errors.append(err)

    try:
        t.execute(
            "SELECT 1 FROM pgq.job_deps WHERE parent_id = %s AND child_id = %s FOR UPDATE",
            (d_, x_),
        )
        s2 = threading.Thread(target=fail, args=("s2", p2))
        s2.start()
        wait_for(lambda: "s2" in pids and waiting_on_lock(pgq_dsn, pids["s2"]), 20, "S2 at D->X")
        s1 = threading.Thread(target=fail, args=("s1", p1))
        s1.start()
        wait_for(lambda: "s1" in pids and waiting_on_lock(pgq_dsn, pids["s1"]), 20, "S1 waiting")
        t.commit()
        s1.join(30)
        s2.join(30)
    finally:
        t.close()
    assert not errors, errors  # a deadlock aborts one of them
    with connect(pgq_dsn) as conn:
        assert [status(conn, i) for i in ids] == ["failed", "failed"] + ["canceled"] * 3
        assert status(conn, a_) == "canceled"


def test_a_requeued_parents_edges_follow_its_new_end(pgq_dsn: str) -> None:
    """C waits for P and Q; both die, C is canceled. Requeuing P alone does not bring C back (Q
    still failed), but P's edge to C is pending again and settles at P's new end (satisfied).
    requeue_workflow later brings back Q and C, C waiting for Q alone; without that, C's edge
    from P stayed failed and C was left canceled for good."""
    with connect(pgq_dsn) as conn:
        ids = enqueue_graph(conn, ["wf.s1", "wf.s2", "wf.s3"], [None, None, [1, 2]])
        complete(conn, claim_all(conn, "wf.s1"), "fatal")
        complete(conn, claim_all(conn, "wf.s2"), "fatal")
        conn.execute("SELECT pgq.requeue(%s)", ([ids[0]],))
        assert [status(conn, i) for i in ids] == ["queued", "failed", "canceled"]
        complete(conn, claim_all(conn, "wf.s1"))
        edge = conn.execute(
            "SELECT state FROM pgq.job_deps WHERE parent_id = %s AND child_id = %s",
            (ids[0], ids[2]),
        ).fetchone()
        assert edge == ("satisfied",)
        back = [r[0] for r in conn.execute("SELECT id FROM pgq.requeue_workflow(%s)", (ids[0],))]
        assert back == ids[1:]
        assert [status(conn, i) for i in ids] == ["successful", "queued", "waiting"]
        complete(conn, claim_all(conn, "wf.s2"))
        assert status(conn, ids[2]) == "queued"


def test_the_python_example_counts_a_file_in_chunks(pgq_dsn: str, tmp_path: Any) -> None:
    """examples/python/workflow.py: a file's words counted in 4 chunks, merged by a job that
    gets its parents' results with the claim; the workflow printed after."""
    import subprocess
    import sys
    from pathlib import Path

    text = tmp_path / "words.txt"
    lines = [" ".join(["alpha"] * (i % 5) + ["beta", f"w{i}"]) for i in range(101)]
    text.write_text("\n".join(lines) + "\n")
    words = sum(len(x.split()) for x in lines)
    example = Path(__file__).resolve().parents[2] / "examples" / "python" / "workflow.py"
    done = subprocess.run(
        [sys.executable, str(example), str(text), "--chunks", "4", "--dsn", pgq_dsn],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == f"words: {words}"
    assert out[1].startswith("top: alpha 200, beta 101")
    jobs = [x.split() for x in out[2:]]
    assert [j[2] for j in jobs] == ["wordcount.chunk"] * 4 + ["wordcount.merge"]
    assert {j[3] for j in jobs} == {"successful"}
    assert jobs[-1][5] == ",".join(j[1] for j in jobs[:4])


def test_an_enqueue_with_dependencies_writes_no_catalog_row(pgq_dsn: str) -> None:
    """Each call used to create a temporary table: catalog rows that a held horizon keeps dead
    slowed every later call (4 ms, then 8 ms, per call of 20 jobs; now 1.6 ms against 1.1 ms
    without dependencies). Counted in one transaction of its own, after the lane exists."""
    with psycopg.connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.enqueue('wf.cat')")
        conn.commit()
        count = (
            "SELECT coalesce(sum(n_tup_ins), 0) FROM pg_stat_xact_sys_tables"
            " WHERE relname IN ('pg_class', 'pg_attribute', 'pg_type')"
        )
        before = conn.execute(count).fetchone()
        enqueue_graph(conn, ["wf.cat"] * 3, [None, [1], [1, 2]])
        assert conn.execute(count).fetchone() == before
        conn.rollback()


# Tables a workflow reads by key; a scan of them without a key walks every entry, the dead ones
# included while a vacuum horizon is held (each was a collapse of the held-horizon benchmark).
KEYED_TABLES = ("job_deps", "job_waits", "job_history")


def test_workflow_statements_find_their_rows_by_key(pgq_dsn: str) -> None:
    """auto_explain of every workflow path (enqueue with dependencies, a parent's success and
    failure, cancel, requeue, requeue_workflow, workflow, prune): every scan of pgq.job_deps,
    pgq.job_waits, pgq.job_history or a pgq.jobs partition through an index has an index
    condition, and none is sequential. Before: the completion's probe for any pending edge, the
    count-down joined with the whole job_waits index, the settlement hash-joined the whole
    history and _workflow_of walked job_deps_workflow_idx from its start."""
    from test_plans import WHOLE_SCANS_ALLOWED

    with connect(pgq_dsn) as conn:
        old = enqueue_graph(conn, ["wf.k0", "wf.k0"], [None, [1]])
        with explained(conn) as plans:
            ids = enqueue_graph(
                conn,
                ["wf.k1", "wf.k2", "wf.k2", "wf.k3"],
                [None, [1], [1], [2, 3, {"job": old[1]}]],
            )
            complete(conn, claim_all(conn, "wf.k0"))
            complete(conn, claim_all(conn, "wf.k1"), "fatal")
            conn.execute("SELECT * FROM pgq.requeue_workflow(%s)", (ids[0],)).fetchall()
            complete(conn, claim_all(conn, "wf.k1"))
            conn.execute("SELECT * FROM pgq.workflow(%s)", (ids[3],)).fetchall()
            conn.execute("SELECT * FROM pgq.parent_results(%s)", (ids[3],)).fetchall()
            conn.execute("SELECT * FROM pgq.cancel_workflow(%s)", (ids[0],)).fetchall()
            conn.execute("SELECT * FROM pgq.requeue(%s)", ([ids[1]],)).fetchall()
            conn.execute("SELECT pgq.prune_history(interval '0')").fetchall()
    assert len(plans) > 50
    found = set()
    for doc in plans:
        text = " ".join(doc["Query Text"].split())
        if any(phrase in text for phrase in WHOLE_SCANS_ALLOWED):
            continue
        for node in plan_nodes(doc["Plan"]):
            rel = node.get("Relation Name", "")
            if not (rel in KEYED_TABLES or rel.startswith("jobs_")):
                continue
            keyed = "Index Cond" in node or node["Node Type"] == "Bitmap Heap Scan"
            if node["Node Type"] == "Seq Scan" or (
                node["Node Type"] in ("Index Scan", "Index Only Scan") and not keyed
            ):
                found.add(f"{rel} ({node['Node Type']}, {node.get('Index Name')}): {text[:140]}")
    assert not found, "\n".join(sorted(found))
