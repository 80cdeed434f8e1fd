"""Flow control against a real server: unique by period (dedupe keys kept after the job
finished), through the Python client and under racing sessions.

Barriers and held transactions line sessions up. Nothing sleeps.
"""

from __future__ import annotations

import json
import threading
import uuid
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers.plans import explained, plan_nodes
from helpers.wait import wait_for

from pgq_thin import Admin, Queue
from pgq_thin.errors import DedupeConflict

WORKER = uuid.UUID("00000000-0000-0000-0000-00000000f100")


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True)


def run_to_success(conn: psycopg.Connection[Any], entrypoint: str, at: str = "now()") -> list[int]:
    """Claim every queued job of entrypoint and complete it successfully at `at`."""
    rows = conn.execute(
        "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], 100)", (WORKER, entrypoint)
    ).fetchall()
    ids = [r[0] for r in rows]
    conn.execute(
        f"SELECT pgq.complete(%s, %s, %s, array_fill('successful'::text, ARRAY[%s]), at => {at})",
        (WORKER, ids, [r[1] for r in rows], len(rows)),
    )
    return ids


def test_client_sees_kept_key(pgq_dsn: str) -> None:
    """Admin.configure sets the period; Queue.enqueue raises DedupeConflict for a key a finished
    job keeps, and on_conflict="existing" answers that job's id."""
    with Admin(pgq_dsn) as admin, Queue(pgq_dsn) as queue, connect(pgq_dsn) as conn:
        config = admin.configure("daily", dedupe_period=timedelta(hours=24))
        assert config.dedupe_period == timedelta(hours=24)
        assert config.dedupe_states == ["successful"]
        first = queue.enqueue("daily", {"day": "2026-12-01"}, dedupe_key="daily-report:2026-12-01")
        assert run_to_success(conn, "daily") == [first]
        with pytest.raises(DedupeConflict, match="kept until"):
            queue.enqueue("daily", dedupe_key="daily-report:2026-12-01")
        again = queue.enqueue("daily", dedupe_key="daily-report:2026-12-01", on_conflict="existing")
        assert again == first
        live = conn.execute("SELECT count(*) FROM pgq.jobs WHERE entrypoint = 'daily'").fetchone()
        assert live == (0,)
        # Another day is another key.
        assert queue.enqueue("daily", dedupe_key="daily-report:2026-12-02") != first


def test_racing_enqueues_take_an_expired_key_once(pgq_dsn: str) -> None:
    """8 sessions enqueue the same key, kept by a job whose period has run out: exactly one new
    job gets it, every other session answers that job's id (on_conflict => 'existing')."""
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.configure('race', dedupe_period => '1 hour')")
        old = conn.execute("SELECT pgq.enqueue('race', dedupe_key => 'race-key')").fetchone()
        assert old is not None
        run_to_success(conn, "race", at="now() - interval '2 hours'")
    answers: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def enqueue(_: int) -> None:
        with connect(pgq_dsn) as c:
            barrier.wait()
            row = c.execute(
                "SELECT pgq.enqueue('race', dedupe_key => 'race-key', on_conflict => 'existing')"
            ).fetchone()
            assert row is not None
            with lock:
                answers.append(row[0])

    threads = [threading.Thread(target=enqueue, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    assert len(answers) == 8
    assert len(set(answers)) == 1 and answers[0] != old[0]
    with connect(pgq_dsn) as conn:
        ids = conn.execute("SELECT array_agg(id) FROM pgq.jobs WHERE entrypoint = 'race'")
        assert ids.fetchone() == ([answers[0]],)


def test_an_enqueue_racing_the_holders_complete_sees_the_finished_job(pgq_dsn: str) -> None:
    """The live holder finishes while an enqueue of its key waits on the key: once the complete
    commits, the enqueue takes the free live key, then finds the finished job and answers it
    (no second job). The enqueue is held at the exact point by the complete's open transaction."""
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.configure('holder', dedupe_period => '1 hour')")
        row = conn.execute("SELECT pgq.enqueue('holder', dedupe_key => 'held')").fetchone()
        assert row is not None
        claimed = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, '{holder}')", (WORKER,)
        ).fetchall()
        assert [c[0] for c in claimed] == [row[0]]
        answer: list[int] = []
        with psycopg.connect(pgq_dsn) as finisher, connect(pgq_dsn) as producer:
            finisher.execute(
                "SELECT pgq.complete(%s, %s, %s, '{successful}')",
                (WORKER, [row[0]], [claimed[0][1]]),
            )  # the live key is deleted, not committed yet
            pid = producer.info.backend_pid

            def enqueue() -> None:
                got = producer.execute(
                    "SELECT pgq.enqueue('holder', dedupe_key => 'held', on_conflict => 'existing')"
                ).fetchone()
                assert got is not None
                answer.append(got[0])

            t = threading.Thread(target=enqueue)
            t.start()
            wait_for(
                lambda: conn.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
                    (pid,),
                ).fetchone(),
                what="the enqueue waiting on the key",
            )
            finisher.commit()
            t.join(timeout=60)
            assert not t.is_alive()
        assert answer == [row[0]]
        left = conn.execute(
            "SELECT (SELECT count(*) FROM pgq.jobs WHERE entrypoint = 'holder'),"
            " (SELECT count(*) FROM pgq.live_keys WHERE dedupe_key = 'held')"
        ).fetchone()
        assert left == (0, 0)


# --- Per-key concurrency and fair share -------------------------------------------------------

MAX_RUNNING_PER_KEY = """
SELECT coalesce(max(n), 0)
  FROM (SELECT count(*) AS n FROM pgq.jobs
         WHERE entrypoint = %s AND status = 'running' AND group_key IS NOT NULL
         GROUP BY group_key) s"""


def test_per_key_limit_holds_under_four_competing_workers(pgq_dsn: str) -> None:
    """4 workers claim 180 jobs of 6 keys with key_concurrency_limit 2: no key ever has more
    than 2 running jobs, sampled after every claim by the claimer, by a sampler session, and
    by a trigger at the end of every claim statement (what the claim left behind, before its
    commit: no other claimer of the entrypoint can add running jobs meanwhile). Every job runs
    exactly once and history keeps its key."""
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.configure('pk', key_concurrency_limit => 2)")
        for k in range(6):
            conn.execute(
                "SELECT pgq.enqueue_many(array_fill('pk'::text, ARRAY[30]),"
                " group_keys => array_fill(%s::text, ARRAY[30]))",
                (f"tenant-{k}",),
            )
        conn.execute("CREATE TABLE public.pk_samples (n bigint)")
        conn.execute(
            "CREATE FUNCTION public.pk_sample() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " INSERT INTO public.pk_samples SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n"
            " FROM pgq.jobs WHERE entrypoint = 'pk' AND status = 'running'"
            " AND group_key IS NOT NULL"
            " GROUP BY group_key) s; RETURN NULL; END $$"
        )
        conn.execute(
            "CREATE TRIGGER pk_sample AFTER UPDATE ON pgq.jobs"
            " FOR EACH STATEMENT EXECUTE FUNCTION public.pk_sample()"
        )
    seen: list[int] = []
    done = threading.Event()
    lock = threading.Lock()
    barrier = threading.Barrier(5)

    def worker(i: int) -> None:
        wid = uuid.UUID(int=0xF200 + i)
        with connect(pgq_dsn) as c:
            barrier.wait()
            while not done.is_set():
                rows = c.execute(
                    "SELECT id, lease FROM pgq.claim(%s, '{pk}', 3)", (wid,)
                ).fetchall()
                sample = c.execute(MAX_RUNNING_PER_KEY, ("pk",)).fetchone()
                assert sample is not None
                with lock:
                    seen.append(sample[0])
                if rows:
                    c.execute(
                        "SELECT pgq.complete(%s, %s, %s,"
                        " array_fill('successful'::text, ARRAY[%s]))",
                        (wid, [r[0] for r in rows], [r[1] for r in rows], len(rows)),
                    )
                left = c.execute("SELECT count(*) FROM pgq.jobs WHERE entrypoint = 'pk'").fetchone()
                if left == (0,):
                    done.set()

    def sampler() -> None:
        with connect(pgq_dsn) as c:
            barrier.wait()
            while not done.is_set():
                sample = c.execute(MAX_RUNNING_PER_KEY, ("pk",)).fetchone()
                assert sample is not None
                with lock:
                    seen.append(sample[0])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    threads.append(threading.Thread(target=sampler))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "the workers did not drain 180 jobs within 120 s"
    assert seen and max(seen) <= 2
    with connect(pgq_dsn) as conn:
        at_claims = conn.execute("SELECT max(n), count(*) FROM public.pk_samples").fetchone()
        assert at_claims is not None
        assert at_claims[0] == 2, "the limit was reached (else the test could not fail)"
        history = conn.execute(
            "SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE status = 'successful'),"
            " count(DISTINCT group_key) FROM pgq.job_history WHERE entrypoint = 'pk'"
        ).fetchone()
        assert history == (180, 180, 180, 6)


def test_one_busy_key_cannot_starve_nine_small_ones(pgq_dsn: str) -> None:
    """Fair share: 100,000 jobs of one key enqueued first, then 10 each of nine keys. Claims of
    10 take the ten keys in turn, one job each, so the nine small keys are done within the first
    10 claims (100 jobs; first in, first out would have run 100,000 jobs first)."""
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.configure('fair', key_concurrency_limit => 1000000)")
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill('fair'::text, ARRAY[100000]),"
            " group_keys => array_fill('busy'::text, ARRAY[100000]))"
        )
        for k in range(9):
            conn.execute(
                "SELECT count(*) FROM pgq.enqueue_many(array_fill('fair'::text, ARRAY[10]),"
                " group_keys => array_fill(%s::text, ARRAY[10]))",
                (f"small-{k}",),
            )
        claims = 0
        claimed = 0
        while True:
            rows = conn.execute(
                "SELECT c.id, c.lease FROM pgq.claim(%s, '{fair}', 10) c", (WORKER,)
            ).fetchall()
            claims += 1
            claimed += len(rows)
            conn.execute(
                "SELECT pgq.complete(%s, %s, %s, array_fill('successful'::text, ARRAY[%s]))",
                (WORKER, [r[0] for r in rows], [r[1] for r in rows], len(rows)),
            )
            left = conn.execute(
                "SELECT count(*) FROM pgq.jobs WHERE entrypoint = 'fair' AND group_key <> 'busy'"
            ).fetchone()
            if left == (0,) or claims > 100:
                break
        assert (claims, claimed) == (10, 100)
        busy_done = conn.execute(
            "SELECT count(*) FROM pgq.job_history WHERE entrypoint = 'fair' AND group_key = 'busy'"
        ).fetchone()
        assert busy_done == (10,)


def test_admin_key_stats_shows_the_keys_waiting_on_their_limit(pgq_dsn: str) -> None:
    """Admin.key_stats (pgq.key_stats): per key of a key-limited entrypoint, queued and
    running jobs and whether its queued jobs wait on the key's limit."""
    with Admin(pgq_dsn) as admin, Queue(pgq_dsn) as queue, connect(pgq_dsn) as conn:
        admin.configure("stats", key_concurrency_limit=1)
        queue.enqueue_many("stats", [1, 2, 3, 4], group_keys=["busy", "busy", "busy", "calm"])
        claimed = conn.execute("SELECT count(*) FROM pgq.claim(%s, '{stats}', 10)", (WORKER,))
        assert claimed.fetchone() == (2,)
        rows = admin.key_stats(["stats"])
        assert [(r["group_key"], r["queued"], r["running"], r["at_limit"]) for r in rows] == [
            ("busy", 2, 1, True),
            ("calm", 0, 1, True),
        ]


def test_a_finished_job_of_a_key_limited_entrypoint_wakes_the_workers(pgq_dsn: str) -> None:
    """A slot of a key-limited entrypoint frees when one of its running jobs finishes: the
    delete trigger sends {"kind": "enqueued"} for it, so a waiting worker claims at once."""
    with connect(pgq_dsn) as conn, connect(pgq_dsn) as listener:
        conn.execute("SELECT pgq.configure('wake', key_concurrency_limit => 1)")
        conn.execute("SELECT pgq.enqueue_many('{wake,wake}', group_keys => '{k,k}')")
        rows = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, '{wake}', 2)", (WORKER,)
        ).fetchall()
        assert len(rows) == 1, "the key's limit of 1 held the second job back"
        listener.execute("LISTEN pgq_events")
        conn.execute(
            "SELECT pgq.complete(%s, %s, %s, '{successful}')", (WORKER, [rows[0][0]], [rows[0][1]])
        )
        payloads = [json.loads(n.payload) for n in listener.notifies(timeout=10, stop_after=1)]
        assert payloads == [{"kind": "enqueued", "entrypoints": ["wake"]}]


def test_the_keyed_claim_uses_the_key_index_when_slots_look_empty(
    pgq_dsn: str,
) -> None:
    """The keyed claim walks the keys and picks each key's oldest job through jobs_key_idx.
    With the ring's slots' statistics saying they are nearly empty (a slot analyzed while it
    held a few rows, then filled), the plans walked the lane's ready index instead, the key's
    hash a filter: the pick ("hash = key", ORDER BY ready_seq) read hundreds of jobs per key
    and the walk's step a bitmap scan of every queued job of the lane. In a loop of claims of
    10 over 10,000 keys: 508 jobs/s before, 3,270/s after. Checked under auto_explain: no scan
    of a jobs partition filters on the key's hash."""
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.configure('kp.a', key_concurrency_limit => 1000000)")
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill('kp.a'::text, ARRAY[20000]),"
            " group_keys => ARRAY(SELECT 'key-' || (g % 10000) FROM generate_series(1, 20000) g))"
        )
        conn.execute("ANALYZE pgq.jobs")
        # The statistics a slot keeps when it was analyzed nearly empty and has filled since.
        conn.execute(
            "UPDATE pg_class SET reltuples = 1"
            " WHERE relnamespace = 'pgq'::regnamespace AND relname ~ '^jobs_[0-3]$'"
        )
        worker = uuid.uuid4()
        for _ in range(3):  # the function's plans are made here, then reused
            conn.execute("SELECT id FROM pgq.claim(%s, '{kp.a}', 10)", (worker,)).fetchall()
        with explained(conn) as plans:
            got = conn.execute("SELECT id FROM pgq.claim(%s, '{kp.a}', 10)", (worker,)).fetchall()
    assert len(got) == 10
    filtered = [
        f"{n['Relation Name']} via {n.get('Index Name')}: {n['Filter']}"
        for doc in plans
        for n in plan_nodes(doc["Plan"])
        if n.get("Relation Name", "").startswith("jobs_")
        and "hashtextextended" in n.get("Filter", "")
    ]
    assert not filtered, "\n".join(filtered)


def test_the_keyed_claim_counts_the_running_jobs_of_the_keys_it_meets_only(
    pgq_dsn: str,
) -> None:
    """A key limit's claim counts running jobs per key it meets (jobs_key_running_idx), not
    every running job of the entrypoint: with 500 jobs of one key running, a claim of one job
    of another key reads a handful of rows. Counted over the whole entrypoint, a claim's cost
    grew with the fleet's running jobs: 9.3 M server instructions for a claim of one with 1,000
    running against 3.0 M with none (benchmarks/claim_instructions.py --running)."""
    worker = uuid.uuid4()
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.configure('kr.a', key_concurrency_limit => 1000)")
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill('kr.a'::text, ARRAY[500]),"
            " group_keys => array_fill('busy'::text, ARRAY[500]))"
        )
        running = conn.execute(
            "SELECT count(*) FROM pgq.claim(%s, '{kr.a}', 1000)", (worker,)
        ).fetchone()
        assert running == (500,)
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill('kr.a'::text, ARRAY[20]),"
            " group_keys => ARRAY(SELECT 'key-' || g FROM generate_series(1, 20) g))"
        )
        with explained(conn, analyze=True) as plans:
            got = conn.execute("SELECT id FROM pgq.claim(%s, '{kr.a}', 1)", (worker,)).fetchall()
        keys = conn.execute(
            "SELECT group_key FROM pgq.jobs WHERE id = ANY(%s)", ([r[0] for r in got],)
        ).fetchall()
    assert len(keys) == 1 and keys[0][0] != "busy"
    read = {
        f"{n['Relation Name']} via {n.get('Index Name')}": n["Actual Rows"] * n["Actual Loops"]
        for doc in plans
        for n in plan_nodes(doc["Plan"])
        if n.get("Relation Name", "").startswith("jobs_") and n.get("Actual Rows")
    }
    assert sum(read.values()) < 20, read


def test_a_claim_over_keys_all_at_their_limit_walks_in_few_passes(pgq_dsn: str) -> None:
    """Keys met at their limit make the key walk go on in another pass; each further pass walks
    twice as far, so a claim where every key is full costs a few passes (1, 2, 4, ... keys up to
    the walk's bound of 100 + 4 x quota), not one pass per key."""
    worker = uuid.uuid4()
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.configure('kf.a', key_concurrency_limit => 1)")
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill('kf.a'::text, ARRAY[600]),"
            " group_keys => ARRAY(SELECT 'key-' || (g % 300) FROM generate_series(1, 600) g))"
        )
        taken = conn.execute(
            "SELECT count(*) FROM pgq.claim(%s, '{kf.a}', 1000)", (worker,)
        ).fetchone()
        assert taken == (300,)  # one job of each key: all at their limit
        with explained(conn) as plans:
            got = conn.execute("SELECT id FROM pgq.claim(%s, '{kf.a}', 1)", (worker,)).fetchall()
    assert got == []
    walks = [
        doc
        for doc in plans
        if any(n["Node Type"] == "Recursive Union" for n in plan_nodes(doc["Plan"]))
    ]
    assert 1 <= len(walks) <= 8, f"{len(walks)} passes of the key walk"


def test_two_entrypoints_whose_names_share_a_hash_keep_their_own_keyed_jobs(
    pgq_dsn: str,
) -> None:
    """jobs_key_idx leads with hashtext(entrypoint), so two entrypoints whose names hash alike
    share its entries: the key walk, the pick of a key's jobs and the count of key-limited
    backlog must each take only their own entrypoint's jobs (they compare the name too)."""
    worker = uuid.uuid4()
    with connect(pgq_dsn) as conn:
        row = conn.execute(
            "SELECT array_agg(n ORDER BY n) FROM"
            " (SELECT 'hc.' || g AS n FROM generate_series(1, 300000) g) x"
            " GROUP BY hashtext(n) HAVING count(*) > 1 LIMIT 1"
        ).fetchone()
        assert row is not None
        a, b = row[0][:2]
        assert conn.execute("SELECT hashtext(%s) = hashtext(%s)", (a, b)).fetchone() == (True,)
        # The same keys for both, their entries interleaved in the index: b's job of a key
        # comes before each of a's but the first (above a's cursor, from the walk's or round
        # 2's position).
        order = (
            [(a, 0)]
            + [(b, k) for k in range(20)]
            + [(a, k) for k in range(1, 20)]
            + [(b, k) for k in range(20)]
            + [(a, k) for k in range(20)]
            + [(b, k) for k in range(20)]
            + [(a, k) for k in range(20)]
        )
        for ep in (a, b):
            conn.execute("SELECT pgq.configure(%s, key_concurrency_limit => 1)", (ep,))
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(%s::text[], group_keys => %s::text[])",
            ([ep for ep, _ in order], [f"key-{k}" for _, k in order]),
        )
        claimed = conn.execute(
            "SELECT j.entrypoint, j.group_key FROM pgq.jobs j"
            " WHERE j.id IN (SELECT c.id FROM pgq.claim(%s, ARRAY[%s], 100) c)",
            (worker, a),
        ).fetchall()
        # One job of each of a's 20 keys (the limit), none of b's.
        assert sorted(claimed) == sorted((a, f"key-{k}") for k in range(20))
        # The backlog waiting on the key limit: a's 40 queued, b's 10 (two more of each of the
        # 5 keys it runs); a count by key hash alone would add the other's jobs of those keys.
        conn.execute("SELECT count(*) FROM pgq.claim(%s, ARRAY[%s], 5)", (worker, b)).fetchone()
        limited = dict(
            conn.execute(
                "SELECT entrypoint, key_limited FROM pgq.metrics(ARRAY[%s, %s])", (a, b)
            ).fetchall()
        )
        assert limited == {a: 40, b: 10}
        # With room for two more of each key, round 1 takes one and round 2 (a key's further
        # jobs, past b's interleaved ones) the other: a's, never b's.
        conn.execute("SELECT pgq.configure(%s, key_concurrency_limit => 3)", (a,))
        more = conn.execute(
            "SELECT entrypoint FROM pgq.claim(%s, ARRAY[%s], 100)", (worker, a)
        ).fetchall()
        assert more == [(a,)] * 40
        assert conn.execute(
            "SELECT entrypoint, status, count(*) FROM pgq.jobs WHERE entrypoint IN (%s, %s)"
            " GROUP BY 1, 2 ORDER BY 1, 2",
            (a, b),
        ).fetchall() == sorted([(a, "running", 60), (b, "queued", 55), (b, "running", 5)])


def test_the_keyed_claim_skips_a_job_another_session_holds_locked(pgq_dsn: str) -> None:
    """Round 1 locks each key's job where the walk read it (a TID scan), SKIP LOCKED: a job
    another session holds (a cancel in progress) is neither waited for nor taken; its key waits
    for the next claim, which takes it once the lock is gone."""
    worker = uuid.uuid4()
    with connect(pgq_dsn) as conn, connect(pgq_dsn) as holder:
        conn.execute("SELECT pgq.configure('kl.a', key_concurrency_limit => 1)")
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM pgq.enqueue_many(array_fill('kl.a'::text, ARRAY[10]),"
                " group_keys => ARRAY(SELECT 'key-' || g FROM generate_series(1, 10) g))"
            ).fetchall()
        ]
        held = ids[3]
        holder.execute("BEGIN")
        holder.execute("SELECT id FROM pgq.jobs WHERE id = %s FOR UPDATE", (held,))
        # A claim that waited on the lock would fail here instead of hanging the test.
        conn.execute("SET lock_timeout = '5s'")
        first = {
            r[0]
            for r in conn.execute(
                "SELECT id FROM pgq.claim(%s, '{kl.a}', 10)", (worker,)
            ).fetchall()
        }
        assert first == set(ids) - {held}
        holder.execute("ROLLBACK")
        second = conn.execute("SELECT id FROM pgq.claim(%s, '{kl.a}', 10)", (worker,)).fetchall()
        assert second == [(held,)]
