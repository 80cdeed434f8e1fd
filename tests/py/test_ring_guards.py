"""Guards of the ring that only show when something happens at the wrong instant or at scale.

Each test here catches a one-line bug that the rest of the suite let through (scripts/mutate.py
plants them; its mutant names are in the docstrings):

- the ready-number fence taken after the number is drawn, or not held by a producer of ready
  numbers (enqueue, enqueue_many, release, a retry, the stale sweep, promotion, requeue): a
  claim moves the lane's cursor past the uncommitted number and the job is never claimed;
- pgq.maintain truncating without looking again under its lock, or taking a slot that holds
  only running jobs for empty;
- the concurrency limit counting only the current slot's running jobs;
- the promotion caps (1,000 per claim, 10,000 per maintain) and their earliest-first order;
- statements on queued or running jobs that read jobs_scheduled too (one index more per call).

Sessions are lined up by locks and pg_stat_activity, never by timers.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers.plans import explained, plan_nodes
from helpers.server import REPO
from helpers.wait import wait_for
from test_plans import explain_every_path

LATER = "now() + interval '1 hour'"


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True)


def claim(
    conn: psycopg.Connection[Any], ep: str | list[str], n: int = 1, at: str = "now()"
) -> list[tuple[int, int]]:
    eps = [ep] if isinstance(ep, str) else ep
    return conn.execute(
        f"SELECT id, lease FROM pgq.claim(%s, %s, %s, {at})", (uuid.uuid4(), eps, n)
    ).fetchall()


def maintain(conn: psycopg.Connection[Any], may_rotate: bool, at: str = "NULL") -> dict[str, Any]:
    conn.execute(
        "SELECT setval('pgq.ring_rotated_at', CASE WHEN %s THEN 0"
        " ELSE (extract(epoch FROM clock_timestamp()) * 1000)::bigint END)",
        (may_rotate,),
    )
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    row = cur.execute(f"SELECT * FROM pgq.maintain({at})").fetchone()
    assert row is not None
    return row


def waiting_on_lock(conn: psycopg.Connection[Any], pid: int) -> bool:
    row = conn.execute(
        "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s", (pid,)
    ).fetchone()
    return bool(row and row[0])


@contextmanager
def in_thread(target: Callable[[], None]) -> Iterator[None]:
    """Run target on a thread for the block; re-raise its failure after the block."""
    errors: list[BaseException] = []

    def wrap() -> None:
        try:
            target()
        except BaseException as exc:  # pragma: no cover - re-raised below
            errors.append(exc)

    thread = threading.Thread(target=wrap)
    thread.start()
    try:
        yield
    finally:
        thread.join(timeout=60)
    assert not thread.is_alive(), "the session did not finish within 60 s"
    if errors:
        raise errors[0]


# --- The fence ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        "SELECT pgq.enqueue('fence')",
        "SELECT * FROM pgq.enqueue_many(ARRAY['fence'])",
    ],
    ids=["enqueue", "enqueue_many"],
)
def test_the_fence_is_held_before_a_producer_draws_its_ready_number(
    pgq_dsn: str, call: str
) -> None:
    """A producer stopped after its INSERT drew a ready number (its insert trigger waits for a
    lock on pgq.entrypoints): a claim meanwhile must not move the lane's cursor past that
    number, so the job is claimed once the producer commits (mutants
    enqueue_fence_after_insert, enqueue_many_fence_after_insert, ready_lock_single_noop)."""
    with connect(pgq_dsn) as conn, connect(pgq_dsn) as producer, psycopg.connect(pgq_dsn) as holder:
        conn.execute("SELECT pgq.enqueue('fence')")
        assert len(claim(conn, "fence")) == 1  # the lane and the entrypoint exist, committed
        holder.execute("LOCK TABLE pgq.entrypoints IN SHARE MODE")
        pid = producer.info.backend_pid
        out: list[int] = []

        def produce() -> None:
            out.extend(r[0] for r in producer.execute(call).fetchall())

        with in_thread(produce):
            wait_for(lambda: waiting_on_lock(conn, pid), what="the producer waiting in its trigger")
            assert claim(conn, "fence") == []  # the producer's row is not committed yet
            holder.rollback()
        assert len(out) == 1
        got = claim(conn, "fence")
        assert [g[0] for g in got] == out, "the committed job must be claimable"


def run_one(conn: psycopg.Connection[Any], ep: str) -> None:
    """One job of ep enqueued, claimed and completed."""
    conn.execute("SELECT pgq.enqueue(%s)", (ep,))
    w = uuid.uuid4()
    ((jid, lease),) = conn.execute(
        "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], 1)", (w, ep)
    ).fetchall()
    done = conn.execute(
        "SELECT status FROM pgq.complete(%s, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],"
        " ARRAY['successful'])",
        (w, jid, lease),
    ).fetchall()
    assert done == [("successful",)]


def _release(conn: psycopg.Connection[Any], ep: str) -> str:
    conn.execute("SELECT pgq.enqueue(%s)", (ep,))
    w = uuid.uuid4()
    jid, lease = conn.execute(
        "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], 1)", (w, ep)
    ).fetchone()  # type: ignore[misc]
    return f"SELECT * FROM pgq.release('{w}', ARRAY[{jid}]::bigint[], ARRAY[{lease}]::bigint[])"


def _retry(conn: psycopg.Connection[Any], ep: str) -> str:
    conn.execute("SELECT pgq.enqueue(%s)", (ep,))
    w = uuid.uuid4()
    jid, lease = conn.execute(
        "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], 1)", (w, ep)
    ).fetchone()  # type: ignore[misc]
    return (
        f"SELECT * FROM pgq.complete('{w}', ARRAY[{jid}]::bigint[], ARRAY[{lease}]::bigint[],"
        " ARRAY['failed'], '[{\"retry_after\": 0}]')"
    )


def _sweep(conn: psycopg.Connection[Any], ep: str) -> str:
    conn.execute("SELECT pgq.enqueue(%s)", (ep,))
    assert len(claim(conn, ep)) == 1  # stale an hour later
    return f"SELECT * FROM pgq.maintain({LATER})"


def _promote(conn: psycopg.Connection[Any], ep: str) -> str:
    conn.execute("SELECT pgq.enqueue(%s, delay => interval '1 minute')", (ep,))
    return f"SELECT * FROM pgq.maintain({LATER})"


def _requeue(conn: psycopg.Connection[Any], ep: str) -> str:
    jid = conn.execute("SELECT pgq.enqueue(%s)", (ep,)).fetchone()[0]  # type: ignore[index]
    conn.execute("SELECT * FROM pgq.cancel(ARRAY[%s]::bigint[])", (jid,)).fetchall()
    return f"SELECT * FROM pgq.requeue(ARRAY[{jid}]::bigint[])"


@pytest.mark.parametrize(
    "prepare",
    [_release, _retry, _sweep, _promote, _requeue],
    ids=["release", "retry", "sweep", "promote", "requeue"],
)
def test_every_producer_of_ready_numbers_holds_the_fence_to_commit(
    pgq_dsn: str, prepare: Callable[[psycopg.Connection[Any], str], str]
) -> None:
    """A call that gives a job a new ready number, in a transaction still open while another
    session claims: the claim must leave the lane's cursor below that number, so the job is
    claimed after the commit (mutants release_fence_removed, complete_retry_fence_removed,
    sweep_fence_removed, promote_fence_removed, requeue_fence_removed)."""
    ep = "fence2"
    with connect(pgq_dsn) as conn, psycopg.connect(pgq_dsn) as producer:
        run_one(conn, ep)  # the lane exists; its cursor is at the last number
        call = prepare(conn, ep)
        producer.execute(call).fetchall()
        moved = producer.execute(
            "SELECT count(*) FROM pgq.jobs WHERE entrypoint = %s AND status = 'queued'", (ep,)
        ).fetchone()
        assert moved == (1,), "the call queued the job (in its open transaction)"
        assert claim(conn, ep, at=LATER) == []
        producer.commit()
        assert len(claim(conn, ep, at=LATER)) == 1, "the committed job must be claimable"


# --- pgq.maintain's truncation ------------------------------------------------------------------


def test_a_job_committed_after_maintains_first_look_is_not_truncated(pgq_dsn: str) -> None:
    """A producer's job in a slot that stopped being current, committed after pgq.maintain
    found the slot empty and before it locked it (maintain is held between the two by a lock
    on pgq.maintained_at): the check under the lock sees the job and the slot stays (mutant
    maintain_no_recheck)."""
    with (
        connect(pgq_dsn) as conn,
        psycopg.connect(pgq_dsn) as producer,
        psycopg.connect(pgq_dsn) as holder,
        connect(pgq_dsn) as maintainer,
    ):
        slot = conn.execute("SELECT pgq._slot()").fetchone()[0]  # type: ignore[index]
        jid = producer.execute("SELECT pgq.enqueue('late')").fetchone()[0]  # type: ignore[index]
        first = maintain(conn, may_rotate=True)  # rotates; the slot's lock is the producer's
        assert first["rotated"] and first["truncated"] is None, first
        holder.execute("ALTER SEQUENCE pgq.maintained_at NO CYCLE")  # maintain's setval waits
        pid = maintainer.info.backend_pid
        out: list[dict[str, Any]] = []
        with in_thread(lambda: out.append(maintain(maintainer, may_rotate=False))):
            wait_for(lambda: waiting_on_lock(conn, pid), what="maintain waiting on maintained_at")
            producer.commit()
            holder.rollback()
        assert out[0]["truncated"] is None, out[0]
        row = conn.execute("SELECT slot, status FROM pgq.jobs WHERE id = %s", (jid,)).fetchone()
        assert row == (slot, "queued")
        assert [c[0] for c in claim(conn, "late")] == [jid]


def test_a_running_job_survives_the_rotations_and_is_carried(pgq_dsn: str) -> None:
    """A job claimed in one slot keeps running while the ring turns: its slot is not empty
    (not truncated), and when the ring comes round to it the job is carried into the current
    slot with its lease; its heartbeat and complete are accepted (mutant
    maintain_running_is_empty)."""
    with connect(pgq_dsn) as conn:
        w = uuid.uuid4()
        conn.execute("SELECT pgq.enqueue('long')")
        jid, lease = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY['long'], 1)", (w,)
        ).fetchone()  # type: ignore[misc]
        start = conn.execute("SELECT pgq._slot()").fetchone()[0]  # type: ignore[index]
        for turn in range(1, 4):
            row = maintain(conn, may_rotate=True)
            assert row["rotated"], row
            assert conn.execute("SELECT pgq._slot()").fetchone() == ((start + turn) % 4,)
            beat = conn.execute(
                "SELECT state FROM pgq.heartbeat(%s, %s::bigint[], %s::bigint[])",
                (w, [jid], [lease]),
            ).fetchall()
            assert beat == [("ok",)], f"after rotation {turn}"
        # The ring has come round: the job's slot is the next one, and it is carried.
        row = maintain(conn, may_rotate=True)
        assert row["carried"] == 1 and not row["rotated"], row
        assert conn.execute("SELECT slot FROM pgq.jobs WHERE id = %s", (jid,)).fetchone() == (
            (start + 3) % 4,
        )
        done = conn.execute(
            "SELECT id, status FROM pgq.complete(%s, %s::bigint[], %s::bigint[],"
            " ARRAY['successful'])",
            (w, [jid], [lease]),
        ).fetchall()
        assert done == [(jid, "successful")]


# --- Limits -------------------------------------------------------------------------------------


def test_the_concurrency_limit_counts_running_jobs_of_every_slot(pgq_dsn: str) -> None:
    """Limit 1: a job running in a slot the ring has left still counts (mutant
    limit_counts_current_slot)."""
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.configure('lim', concurrency_limit => 1)")
        conn.execute("SELECT * FROM pgq.enqueue_many(ARRAY['lim', 'lim'])").fetchall()
        assert len(claim(conn, "lim", 5)) == 1
        assert maintain(conn, may_rotate=True)["rotated"]
        conn.execute("SELECT pgq.enqueue('lim')")  # one queued in the new slot too
        assert claim(conn, "lim", 5) == [], "one job runs: limit 1 claims nothing more"
        running = conn.execute(
            "SELECT count(*) FROM pgq.jobs WHERE entrypoint = 'lim' AND status = 'running'"
        ).fetchone()
        assert running == (1,)


# --- Promotion caps -----------------------------------------------------------------------------


def scheduled(conn: psycopg.Connection[Any], ep: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pgq.jobs WHERE entrypoint = %s AND status = 'scheduled'", (ep,)
    ).fetchone()
    assert row is not None
    return int(row[0])


def delayed(conn: psycopg.Connection[Any], ep: str, n: int, delay: str = "1 minute") -> list[int]:
    rows = conn.execute(
        "SELECT * FROM pgq.enqueue_many(array_fill(%s::text, ARRAY[%s]),"
        " delays => array_fill(%s::interval, ARRAY[%s]))",
        (ep, n, delay, n),
    ).fetchall()
    return [r[0] for r in rows]


def test_a_claim_promotes_at_most_1000_due_jobs(pgq_dsn: str) -> None:
    """(mutant claim_promote_uncapped)"""
    with connect(pgq_dsn) as conn:
        delayed(conn, "cap", 1500)
        assert len(claim(conn, "cap", 1, at=LATER)) == 1
        assert scheduled(conn, "cap") == 500
        assert len(claim(conn, "cap", 1, at=LATER)) == 1
        assert scheduled(conn, "cap") == 0


def test_maintain_promotes_at_most_10000_due_jobs(pgq_dsn: str) -> None:
    """(mutant maintain_promote_uncapped)"""
    with connect(pgq_dsn) as conn:
        delayed(conn, "cap", 10_001)
        row = maintain(conn, may_rotate=False, at=LATER)
        assert row["promoted"] == 10_000, row
        assert scheduled(conn, "cap") == 1


def test_the_capped_promotion_takes_the_earliest_due_jobs(pgq_dsn: str) -> None:
    """More than 1,000 due: the earliest (of another entrypoint, enqueued last) is promoted and
    claimed first, not left scheduled behind later ones (mutant promote_unordered)."""
    with connect(pgq_dsn) as conn:
        delayed(conn, "early.b", 1000, "2 minutes")
        (first,) = delayed(conn, "early.z", 1, "1 minute")
        got = claim(conn, ["early.b", "early.z"], 1, at=LATER)
        assert [g[0] for g in got] == [first]
        assert scheduled(conn, "early.z") == 0


def test_a_capped_promotion_reads_no_more_due_jobs_than_it_moves(pgq_dsn: str) -> None:
    """With 5,000 jobs due, a claim's promotion reads 1,000 index entries of jobs_scheduled (the
    earliest, in the index's (run_at, id) order), not every due job sorted: that read cost each
    claim 100 ms with 200,000 due, until all were promoted. maintain's promotion of every
    entrypoint reads each one's earliest the same way, never the jobs scheduled later."""
    with connect(pgq_dsn) as conn:
        delayed(conn, "bound.a", 5000)
        delayed(conn, "bound.b", 3000, "1 day")  # not due at LATER: never read
        with explained(conn, analyze=True) as plans:
            assert len(claim(conn, "bound.a", 1, at=LATER)) == 1
            promoted = maintain(conn, may_rotate=False, at=LATER)["promoted"]
        assert promoted == 4000
        read = [
            (" ".join(d["Query Text"].split())[:60], n["Actual Rows"] * n["Actual Loops"])
            for d in plans
            for n in plan_nodes(d["Plan"])
            if n.get("Relation Name") == "jobs_scheduled"
            and n["Node Type"] in ("Index Scan", "Index Only Scan")
        ]
        # The claim's probe (one entry), then each promotion's read of the earliest due jobs.
        picks = [rows for text, rows in read if text.startswith("SELECT array_agg(f.id")]
        assert picks == [1000, 4000], read


def index_entries_read(conn: psycopg.Connection[Any], index: str) -> int:
    """Entries this session's scans read from an index (of every partition, for a partitioned
    one), counted so far and not yet reported: dead entries a held vacuum horizon keeps
    included (the count is taken before the heap is visited)."""
    row = conn.execute(
        "SELECT sum(pg_stat_get_xact_tuples_returned(i))::int FROM (SELECT %s::regclass AS i"
        " UNION ALL SELECT inhrelid FROM pg_inherits WHERE inhparent = %s::regclass) x",
        (index, index),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_maintain_reads_only_the_rate_starts_that_left_their_window_since_its_last_pass(
    pgq_dsn: str,
) -> None:
    """Under a held vacuum horizon the rate starts maintain removed stay in the index as dead
    entries. Each pass reads from its last pass's time (pgq.rate_cut_at) less a second, so it
    reads the two seconds of starts it removes, not the minute before the window: 60 s of
    dead entries per pass cost the server a fifth of a core at 5,000 jobs/s (a rate limit per
    key), every second of the hold."""
    base = "timestamptz '2031-03-01 00:00:00+00'"
    with connect(pgq_dsn) as conn, psycopg.connect(pgq_dsn) as holder:
        conn.execute(
            "SELECT pgq.configure('cut.a', rate_limit => 1000000, rate_period => '1 second')"
        )
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM pgq.entrypoints").fetchone()  # holds the horizon
        for second in range(90):
            conn.execute(
                f"SELECT pgq.take_tokens('cut.a', 1, at => {base} + %s * interval '1 second'"
                " + k * interval '1 ms') FROM generate_series(1, 10) AS k",
                (second,),
            ).fetchall()
            maintain(conn, may_rotate=False, at=f"{base} + interval '{second}.5 seconds'")
        live = "SELECT count(*)::int FROM pgq.rate_starts WHERE entrypoint = 'cut.a'"
        before = conn.execute(live).fetchone()
        with conn.transaction():
            read = -index_entries_read(conn, "pgq.rate_starts_time_idx")
            maintain(conn, may_rotate=False, at=f"{base} + interval '90.5 seconds'")
            read += index_entries_read(conn, "pgq.rate_starts_time_idx")
        after = conn.execute(live).fetchone()
        holder.rollback()
    # The pass removes the ten starts of 00:01:29 and reads the second before them: 20 entries
    # (the minute's walk read 600; before that, a hash join read the whole index: 900).
    assert (before, after) == ((10,), (0,))
    assert read <= 30, read


def test_the_wait_of_a_rate_limit_per_key_reads_one_key_with_a_backlog(pgq_dsn: str) -> None:
    """pgq.next_run_at for a rate limit per key asks whether the keys of the window's oldest
    starts have queued jobs. It stops at the first that does, and reads each key's newest entry
    of jobs_key_idx first: under a held vacuum horizon the entries of the jobs claimed since are
    dead but still read, and they are the key's oldest. Before, it asked for each of the 100
    oldest starts, each from the key's oldest entry: at 2,000 jobs/s held, a third of a core."""
    with connect(pgq_dsn) as conn, psycopg.connect(pgq_dsn) as holder:
        conn.execute(
            "SELECT pgq.configure('due.k', rate_limit => 2, rate_period => '1 hour',"
            " rate_per_key => true)"
        )
        conn.execute(
            "SELECT pgq.enqueue_many(array_fill('due.k'::text, ARRAY[800]),"
            " group_keys => (SELECT array_agg('k' || (g % 40)) FROM generate_series(1, 800) g))"
        ).fetchall()
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM pgq.entrypoints").fetchone()  # holds the horizon
        for _ in range(4):  # each key's budget of two, used up
            claim(conn, "due.k", 40)
        assert claim(conn, "due.k", 40) == []
        with conn.transaction():
            read = -index_entries_read(conn, "pgq.jobs_key_idx")
            row = conn.execute(
                "SELECT pgq.next_run_at('{due.k}') - (SELECT min(started_at) FROM pgq.rate_starts)"
            ).fetchone()
            read += index_entries_read(conn, "pgq.jobs_key_idx")
        holder.rollback()
    assert row is not None and row[0] == timedelta(hours=1)
    # One entry: the newest of the first start's key (the old way read 40 keys x 3 entries).
    assert read <= 3, read


def test_the_wait_of_a_rate_limit_per_key_reads_nothing_below_the_cursor(pgq_dsn: str) -> None:
    """With no queued job (a worker that keeps up), no key waits: pgq.next_run_at asks for
    each of the window's oldest starts whether its key has a queued job. Every entry of
    jobs_key_idx is then a job claimed since, dead but kept by a held vacuum horizon; the probe
    reads only the entries above the lane's cursor (none here), not every claimed job of the
    key: at 2,000 jobs/s held, what was left of the wait's cost."""
    with connect(pgq_dsn) as conn, psycopg.connect(pgq_dsn) as holder:
        conn.execute(
            "SELECT pgq.configure('due.e', rate_limit => 1000, rate_period => '1 hour',"
            " rate_per_key => true)"
        )
        conn.execute(
            "SELECT pgq.enqueue_many(array_fill('due.e'::text, ARRAY[800]),"
            " group_keys => (SELECT array_agg('k' || (g % 40)) FROM generate_series(1, 800) g))"
        ).fetchall()
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM pgq.entrypoints").fetchone()  # holds the horizon
        while claim(conn, "due.e", 100):
            pass  # every job runs; the last, empty claim moves the cursor past them
        with conn.transaction():
            read = -index_entries_read(conn, "pgq.jobs_key_idx")
            row = conn.execute(
                "SELECT pgq.next_run_at('{due.e}') - (SELECT s.started_at FROM pgq.rate_starts s"
                " ORDER BY s.started_at OFFSET 99 LIMIT 1)"
            ).fetchone()
            read += index_entries_read(conn, "pgq.jobs_key_idx")
        holder.rollback()
    # No key of the 100 oldest starts waits: a worker asks again when the 100th leaves.
    assert row == (timedelta(hours=1),)
    # 100 starts asked about, no entry above the cursor (the probe from the newest entry read
    # each key's 20 claimed jobs: 2,000).
    assert read == 0, read


# --- Plans: jobs_scheduled left out --------------------------------------------------------------

# A condition on queued or running jobs (not inside an aggregate's FILTER).
_ON_LIVE_JOBS = re.compile(
    r"(?<!FILTER \()(?:AND|WHERE) \w+\.status = (?:'queued'|'running'|c_queued|c_running)(?!\w)"
)
# Statements that may read jobs_scheduled although they name a live status, by a phrase of
# their text: pgq._archive finds jobs by id in any state (a canceled scheduled job too), with
# the running status only in its lease fence; pgq.prune_workers' probe of a worker's running
# jobs (not a hot path).
_ANY_STATE = ("WITH input AS", "WHERE j.worker_id = g.worker_id")


def test_statements_on_queued_or_running_jobs_leave_jobs_scheduled_out(pgq_dsn: str) -> None:
    """Every statement that reads queued or running jobs (and no scheduled ones) says slot <> 4,
    so that its plan leaves jobs_scheduled out: without it every call probes one index more
    (mutants claim_lane_read_slot, lane_cursor_slot, heartbeat_slot)."""
    with connect(pgq_dsn) as conn:
        explained = explain_every_path(conn)
    found = set()
    for doc in explained:
        text = " ".join(doc["Query Text"].split())
        if "scheduled" in text or not _ON_LIVE_JOBS.search(text):
            continue
        if any(phrase in text for phrase in _ANY_STATE):
            continue
        if any(n.get("Relation Name") == "jobs_scheduled" for n in plan_nodes(doc["Plan"])):
            found.add(text[:160])
    assert not found, "\n".join(sorted(found))


# --- Nobody waits for another claimer or maintainer ----------------------------------------------


def test_a_claim_skips_a_job_another_claimer_holds(pgq_dsn: str) -> None:
    """(mutant claim_jobs_wait)"""
    with connect(pgq_dsn) as conn, psycopg.connect(pgq_dsn) as holder:
        conn.execute("SELECT * FROM pgq.enqueue_many(ARRAY['skip', 'skip'])").fetchall()
        held = claim(holder, "skip")  # its transaction stays open: the row stays locked
        conn.execute("SET lock_timeout = '1s'")
        got = claim(conn, "skip")
        assert len(held) == len(got) == 1 and held != got


def test_a_claim_of_a_limited_entrypoint_skips_it_while_another_claimer_holds_it(
    pgq_dsn: str,
) -> None:
    """(mutant claim_limit_waits)"""
    with connect(pgq_dsn) as conn, psycopg.connect(pgq_dsn) as holder:
        conn.execute("SELECT pgq.configure('skip.lim', concurrency_limit => 5)")
        conn.execute("SELECT * FROM pgq.enqueue_many(ARRAY['skip.lim', 'skip.lim'])").fetchall()
        assert len(claim(holder, "skip.lim")) == 1  # holds the policy row to its commit
        conn.execute("SET lock_timeout = '1s'")
        assert claim(conn, "skip.lim") == []
        holder.commit()
        assert len(claim(conn, "skip.lim")) == 1


def test_a_second_maintainer_answers_busy_at_once(pgq_dsn: str) -> None:
    """(mutant maintain_waits)"""
    with connect(pgq_dsn) as conn, psycopg.connect(pgq_dsn) as holder:
        holder.execute("SELECT * FROM pgq.maintain()").fetchall()  # its transaction stays open
        conn.execute("SET lock_timeout = '1s'")
        assert maintain(conn, may_rotate=False)["state"] == "busy"
        holder.commit()
        assert maintain(conn, may_rotate=False)["state"] == "ok"


# --- Leases: the same worker's old lease --------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        "SELECT id FROM pgq.complete(%s, %s::bigint[], %s::bigint[], ARRAY['successful'])",
        "SELECT id FROM pgq.complete(%s, %s::bigint[], %s::bigint[], ARRAY['failed'])",
        "SELECT id FROM pgq.release(%s, %s::bigint[], %s::bigint[])",
        "SELECT id FROM pgq.heartbeat(%s, %s::bigint[], %s::bigint[]) WHERE state <> 'lost'",
    ],
    ids=["complete-successful", "complete-failed", "release", "heartbeat"],
)
def test_an_old_lease_of_the_same_worker_is_refused(pgq_dsn: str, call: str) -> None:
    """A job swept as stale and claimed again by the same worker: the first attempt's lease
    is refused, only the worker id matches (mutants archive_no_lease, complete_failure_no_lease,
    release_no_lease, heartbeat_no_lease)."""
    with connect(pgq_dsn) as conn:
        w = uuid.uuid4()
        conn.execute("SELECT pgq.enqueue('old')")
        ((jid, old),) = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY['old'], 1)", (w,)
        ).fetchall()
        ((again, new),) = conn.execute(
            f"SELECT id, lease FROM pgq.claim(%s, ARRAY['old'], 1, {LATER})", (w,)
        ).fetchall()
        assert again == jid and new != old
        assert conn.execute(call, (w, [jid], [old])).fetchall() == []
        row = conn.execute("SELECT status, lease FROM pgq.jobs WHERE id = %s", (jid,)).fetchone()
        assert row == ("running", new)


# --- Lock order, as written ----------------------------------------------------------------------


def test_every_waiting_lock_of_several_rows_is_taken_in_a_set_order() -> None:
    """A locking read that waits (no SKIP LOCKED) and may lock several rows (its statement
    finds them with = ANY or unnest) says ORDER BY just before FOR UPDATE, so two calls lock
    shared rows in the same order and never deadlock. Today's plans often lock in id order
    without it (an index scan for id = ANY sorts the ids), so only the text shows a missing
    ORDER BY (mutants complete_lock_order, release_lock_order)."""
    lock = re.compile(r"FOR (?:NO KEY )?UPDATE(?! SKIP LOCKED)(?! OF \w+ SKIP LOCKED)(?!\w)")
    missing = []
    for path in sorted((REPO / "sql" / "functions").glob("*.sql")):
        code = "\n".join(line.split("--", 1)[0] for line in path.read_text().splitlines())
        for statement in code.split(";"):
            flat = " ".join(statement.split())
            for found in lock.finditer(flat):
                if "= ANY (" not in flat and "unnest(" not in flat:
                    continue
                before = flat[: found.start()]
                tail = before[before.rfind("ORDER BY") :] if "ORDER BY" in before else ""
                # ORDER BY ... directly before the lock (a LIMIT between them is fine).
                if not tail or any(w in tail for w in (" WHERE ", " FROM ", " JOIN ")):
                    missing.append(f"{path.name}: ...{before[-80:]} {found.group()}")
    assert not missing, "\n".join(missing)
