"""Multi-connection behaviour of the SQL core: races between real sessions on a real server.

Every test drives the public functions from several connections at once and checks an invariant
in the database afterwards. Barriers line the sessions up; nothing waits on a timer.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

AT_LATER = "now() + interval '31 seconds'"


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True)


def run_threads(n: int, target: Callable[[int], None]) -> None:
    """Run target(i) on n threads, re-raising the first failure."""
    errors: list[BaseException] = []

    def wrap(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a session did not finish within 120 s"
    if errors:
        raise errors[0]


def enqueue_n(conn: psycopg.Connection[Any], entrypoint: str, n: int) -> list[int]:
    rows = conn.execute(
        "SELECT pgq.enqueue_many(array_fill(%s::text, ARRAY[%s]), "
        "(SELECT jsonb_agg(jsonb_build_object('n', g)) FROM generate_series(1, %s) g))",
        (entrypoint, n, n),
    ).fetchall()
    return [r[0] for r in rows]


def test_disjoint_concurrent_claims(pgq_dsn: str) -> None:
    """8 sessions x 1,000 jobs: every job is claimed exactly once, no session ever blocks."""
    with connect(pgq_dsn) as conn:
        ids = enqueue_n(conn, "disjoint", 8000)
    claimed: list[list[int]] = [[] for _ in range(8)]
    barrier = threading.Barrier(8)

    def claimer(i: int) -> None:
        worker = uuid.uuid4()
        with connect(pgq_dsn) as conn:
            barrier.wait()
            while True:
                rows = conn.execute(
                    "SELECT id FROM pgq.claim(%s, ARRAY['disjoint'], 25)", (worker,)
                ).fetchall()
                if not rows:
                    return
                claimed[i].extend(r[0] for r in rows)

    run_threads(8, claimer)
    counts = Counter(j for part in claimed for j in part)
    assert sorted(counts) == sorted(ids)
    assert max(counts.values()) == 1
    assert sum(1 for part in claimed if part) >= 2, "the claims did not overlap at all"
    with connect(pgq_dsn) as conn:
        running, leases = conn.execute(
            "SELECT count(*), count(DISTINCT lease) FROM pgq.jobs WHERE status = 'running'"
        ).fetchone()
    assert running == leases == 8000


def test_concurrency_limit_holds_under_racing_claimers(pgq_dsn: str) -> None:
    """Limit 3, 8 sessions claiming at the same instant, 25 rounds: never more than 3 running."""
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.configure('limited', concurrency_limit => 3)")
        enqueue_n(conn, "limited", 120)
    rounds = 25
    start = threading.Barrier(8)
    done = threading.Barrier(8)
    per_round: list[Counter[int]] = [Counter() for _ in range(rounds)]
    lock = threading.Lock()
    observed_max = [0]

    def claimer(i: int) -> None:
        worker = uuid.uuid4()
        with connect(pgq_dsn) as conn:
            for r in range(rounds):
                start.wait()
                rows = conn.execute(
                    "SELECT id, lease FROM pgq.claim(%s, ARRAY['limited'], 10)", (worker,)
                ).fetchall()
                with lock:
                    per_round[r][i] += len(rows)
                running = conn.execute(
                    "SELECT running FROM pgq.queue_stats WHERE entrypoint = 'limited'"
                ).fetchone()[0]
                with lock:
                    observed_max[0] = max(observed_max[0], running)
                done.wait()
                if rows:
                    conn.execute(
                        "SELECT pgq.complete(%s, %s, %s, %s)",
                        (
                            worker,
                            [r[0] for r in rows],
                            [r[1] for r in rows],
                            ["successful"] * len(rows),
                        ),
                    )

    run_threads(8, claimer)
    totals = [sum(c.values()) for c in per_round]
    assert max(totals) <= 3, totals
    assert observed_max[0] <= 3
    assert sum(totals) > rounds, "the limited entrypoint made almost no progress"
    with connect(pgq_dsn) as conn:
        done_rows = conn.execute(
            "SELECT count(*) FROM pgq.job_history WHERE entrypoint = 'limited'"
        ).fetchone()[0]
    assert done_rows == sum(totals)


def test_stale_job_is_reclaimed_and_the_zombie_is_fenced(pgq_dsn: str) -> None:
    """A stale job goes to a second worker; the first can no longer heartbeat or complete it."""
    zombie, rescuer = uuid.uuid4(), uuid.uuid4()
    with connect(pgq_dsn) as a, connect(pgq_dsn) as b:
        job_id = a.execute("SELECT pgq.enqueue('fenced', %s)", (Jsonb({"k": 1}),)).fetchone()[0]
        (_, lease_a) = a.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY['fenced'])", (zombie,)
        ).fetchone()
        # Not stale yet: nobody else gets it.
        assert (
            b.execute("SELECT * FROM pgq.claim(%s, ARRAY['fenced'])", (rescuer,)).fetchall() == []
        )
        (_, lease_b, attempt) = b.execute(
            f"SELECT id, lease, attempt FROM pgq.claim(%s, ARRAY['fenced'], 1, {AT_LATER})",
            (rescuer,),
        ).fetchone()
        assert lease_b != lease_a
        assert attempt == 2
        beat = a.execute(
            "SELECT state FROM pgq.heartbeat(%s, %s, %s)", (zombie, [job_id], [lease_a])
        ).fetchone()[0]
        assert beat == "lost"
        accepted = a.execute(
            "SELECT id FROM pgq.complete(%s, %s, %s, %s)",
            (zombie, [job_id], [lease_a], ["successful"]),
        ).fetchall()
        assert accepted == []
        assert a.execute(
            "SELECT status, lease, worker_id FROM pgq.jobs WHERE id = %s", (job_id,)
        ).fetchone() == ("running", lease_b, rescuer)
        accepted = b.execute(
            "SELECT id FROM pgq.complete(%s, %s, %s, %s)",
            (rescuer, [job_id], [lease_b], ["successful"]),
        ).fetchall()
        assert accepted == [(job_id,)]
        history = b.execute(
            "SELECT status, attempt, worker_id, errors -> 0 -> 'details' ->> 'error' "
            "FROM pgq.job_history WHERE id = %s",
            (job_id,),
        ).fetchall()
        assert history == [("successful", 2, rescuer, "heartbeat timeout")]


def test_complete_and_reclaim_race_never_both_win(pgq_dsn: str) -> None:
    """A late completion racing a stale re-claim: exactly one of them owns each job."""
    with connect(pgq_dsn) as conn:
        enqueue_n(conn, "race", 400)
        first = uuid.uuid4()
        jobs = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY['race'], 400)", (first,)
        ).fetchall()
    barrier = threading.Barrier(2)
    results: dict[str, Any] = {}

    def completer(_: int) -> None:
        with connect(pgq_dsn) as conn:
            barrier.wait()
            for k in range(0, len(jobs), 20):
                part = jobs[k : k + 20]
                rows = conn.execute(
                    "SELECT id FROM pgq.complete(%s, %s, %s, %s)",
                    (first, [j[0] for j in part], [j[1] for j in part], ["successful"] * len(part)),
                ).fetchall()
                results.setdefault("completed", set()).update(r[0] for r in rows)

    def reclaimer(_: int) -> None:
        second = uuid.uuid4()
        with connect(pgq_dsn) as conn:
            barrier.wait()
            while True:
                rows = conn.execute(
                    f"SELECT id FROM pgq.claim(%s, ARRAY['race'], 20, {AT_LATER})", (second,)
                ).fetchall()
                if not rows:
                    return
                results.setdefault("reclaimed", set()).update(r[0] for r in rows)

    run_threads(2, lambda i: completer(i) if i == 0 else reclaimer(i))
    completed = results.get("completed", set())
    reclaimed = results.get("reclaimed", set())
    assert completed.isdisjoint(reclaimed)
    assert completed | reclaimed == {j[0] for j in jobs}
    with connect(pgq_dsn) as conn:
        in_history = {r[0] for r in conn.execute("SELECT id FROM pgq.job_history").fetchall()}
        still_running = {
            r[0]
            for r in conn.execute("SELECT id FROM pgq.jobs WHERE status = 'running'").fetchall()
        }
    assert in_history == completed
    assert still_running == reclaimed


def test_claim_refuses_repeatable_read(pgq_dsn: str) -> None:
    with psycopg.connect(pgq_dsn) as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        with pytest.raises(psycopg.Error) as info:
            conn.execute("SELECT * FROM pgq.claim(%s, ARRAY['x'])", (uuid.uuid4(),))
        assert info.value.sqlstate == "PQ010"
        assert "repeatable read" in str(info.value)


def test_dedupe_key_race_admits_one_job(pgq_dsn: str) -> None:
    """8 sessions enqueue the same dedupe key at once: one job; the others get PQ007 or its id."""
    barrier = threading.Barrier(8)
    outcomes: list[Any] = [None] * 8

    def producer(i: int) -> None:
        with connect(pgq_dsn) as conn:
            barrier.wait()
            mode = "existing" if i % 2 else "raise"
            try:
                outcomes[i] = conn.execute(
                    "SELECT pgq.enqueue('dedupe', NULL, dedupe_key => 'once', on_conflict => %s)",
                    (mode,),
                ).fetchone()[0]
            except psycopg.Error as exc:
                outcomes[i] = exc.sqlstate

    run_threads(8, producer)
    with connect(pgq_dsn) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM pgq.jobs WHERE dedupe_key = 'once'")]
    assert len(ids) == 1
    for i, outcome in enumerate(outcomes):
        if i % 2:
            assert outcome == ids[0]
        else:
            assert outcome in (ids[0], "PQ007")


def test_prune_entrypoints_waits_for_an_enqueue_of_a_known_lane(pgq_dsn: str) -> None:
    """An enqueue whose entrypoint and lane already exist writes nothing to pgq.entrypoints, yet
    pgq.prune_entrypoints cannot remove that entrypoint under the uncommitted job: the insert
    trigger's ROW EXCLUSIVE lock on pgq.entrypoints keeps the prune out until the commit."""
    worker = uuid.uuid4()
    with connect(pgq_dsn) as admin, connect(pgq_dsn) as producer:
        admin.execute("SELECT pgq.enqueue('prune.race')")
        job = admin.execute(
            "SELECT id, lease FROM pgq.claim(%s, '{prune.race}', 1)", (worker,)
        ).fetchone()
        assert job is not None
        admin.execute(
            "SELECT pgq.complete(%s, %s, %s, '{successful}')", (worker, [job[0]], [job[1]])
        )
        # The entrypoint is idle, unconfigured and its lane exists.
        with producer.transaction():
            producer.execute("SELECT pgq.enqueue('prune.race')")
            pruned = admin.execute(
                "SELECT pgq.prune_entrypoints(older_than => '0', lock_wait => '10 milliseconds', "
                "at => now() + interval '1 minute')"
            ).fetchone()
            assert pruned == (None,), "the prune took its lock while an enqueue was open"
        pruned = admin.execute(
            "SELECT pgq.prune_entrypoints(older_than => '0', at => now() + interval '1 minute')"
        ).fetchone()
        assert pruned == (0,)
        kept = admin.execute(
            "SELECT count(*) FROM pgq.entrypoints WHERE entrypoint = 'prune.race'"
        ).fetchone()
        assert kept == (1,)


def test_a_keyed_claim_takes_nothing_of_an_entrypoint_whose_policy_row_another_claimer_holds(
    pgq_dsn: str,
) -> None:
    """One claim over two key-limited entrypoints, the policy row of one held by another
    claimer (its claim not yet committed): the claim takes the other's jobs and none of the held
    one's, whose counts the holder is deciding (one claimer at a time per limited entrypoint)."""
    with (
        psycopg.connect(pgq_dsn, autocommit=True) as conn,
        psycopg.connect(pgq_dsn) as holder,
    ):
        for ep in ("kp.free", "kp.held"):
            conn.execute("SELECT pgq.configure(%s, key_concurrency_limit => 5)", (ep,))
            conn.execute(
                "SELECT count(*) FROM pgq.enqueue_many(array_fill(%s::text, ARRAY[4]),"
                " group_keys => '{a,b,c,d}')",
                (ep,),
            )
        holder.execute("SELECT 1 FROM pgq.entrypoints WHERE entrypoint = 'kp.held' FOR UPDATE")
        got = conn.execute(
            "SELECT entrypoint, count(*) FROM pgq.claim(%s, '{kp.free,kp.held}', 10)"
            " GROUP BY 1 ORDER BY 1",
            (uuid.uuid4(),),
        ).fetchall()
        holder.rollback()
        after = conn.execute(
            "SELECT entrypoint, count(*) FROM pgq.claim(%s, '{kp.free,kp.held}', 10)"
            " GROUP BY 1 ORDER BY 1",
            (uuid.uuid4(),),
        ).fetchall()
    assert got == [("kp.free", 4)]
    assert after == [("kp.held", 4)]
