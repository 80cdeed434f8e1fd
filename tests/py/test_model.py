# ruff: noqa: E501 - diagnostics quote whole rows and statements
"""Model-based test of the job lifecycle: seeded random sequences of every public lifecycle
function (enqueue, enqueue_many with dedupe keys and on_conflict, claim with and without
request_id and re-sent, heartbeat, complete with every outcome and repeated, release, cancel,
requeue, configure with rate limits (whole entrypoint and per key) and key limits, group keys, pause/resume, pgq.maintain turning
the ring or answering recent, and take_tokens) on a simulated clock, checked after every step against the Python model of docs/sql-api.md in tests/py/helpers/model.py.
A failure is shrunk (delta debugging) and printed as a psql script for a fresh install.

PGQ_MODEL_STEPS (steps per sequence, default 120), PGQ_MODEL_RUNS (sequences, default 3) and
PGQ_MODEL_SEED (first seed; default: a fixed one) make a longer run; a failure prints its seed
(the first failure is shrunk for at most PGQ_MODEL_SHRINK_S seconds, default 20).
The concurrent test (PGQ_MODEL_CONCURRENT_STEPS) checks the global invariants only.
"""

from __future__ import annotations

import os
import random
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers import model as mdl
from helpers.server import PgServer

STEPS = int(os.environ.get("PGQ_MODEL_STEPS", "120"))
RUNS = int(os.environ.get("PGQ_MODEL_RUNS", "3"))
SEED = int(os.environ.get("PGQ_MODEL_SEED", "20261201"))
CONCURRENT_STEPS = int(os.environ.get("PGQ_MODEL_CONCURRENT_STEPS", "60"))
SHRUNK: list[int] = []


@pytest.fixture
def fresh(pg_server: PgServer, template_db: str) -> Any:
    @contextmanager
    def make() -> Iterator[str]:
        with pg_server.database("model", template=template_db) as dsn:
            yield dsn

    return make


def report(fresh: Any, seed: int, steps: list[dict[str, Any]], err: mdl.Mismatch) -> str:
    failing = (
        steps[: int(str(err).split("step ", 1)[1].split(":", 1)[0])]
        if "step " in str(err)
        else steps
    )
    # only the first failure of a session is shrunk: the file stays short when several fail
    seconds = 0.0 if SHRUNK else float(os.environ.get("PGQ_MODEL_SHRINK_S", "20"))
    SHRUNK.append(seed)
    small = mdl.shrink(fresh, failing, err.kind, seconds=seconds)
    with fresh() as dsn:
        try:
            mdl.run(dsn, small)
            script, final = [], "(the shrunk sequence passed on replay)"
        except mdl.Mismatch as e2:
            script, final = e2.script, str(e2)  # type: ignore[attr-defined]
    return (
        f"seed {seed} (PGQ_MODEL_SEED={seed} PGQ_MODEL_RUNS=1 PGQ_MODEL_STEPS={len(steps)}): {err}\n"
        f"shrunk from {len(failing)} to {len(small)} steps: {final}\n"
        "-- psql script, on a fresh install (SET TIME ZONE 'UTC'):\n" + "\n".join(script)
    )


@pytest.mark.parametrize("run_no", range(RUNS))
def test_model_sequence(pgq_dsn: str, fresh: Any, run_no: int) -> None:
    seed = SEED + run_no
    steps = mdl.generate(seed, STEPS)
    try:
        runner = mdl.run(pgq_dsn, steps)
    except mdl.Mismatch as err:
        pytest.fail(report(fresh, seed, steps, err), pytrace=False)
    print(f"seed {seed}: {len(steps)} steps, {dict(sorted(runner.model.stats.items()))}")


class Log:
    """What the sessions of the concurrent run were answered (appended under a lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.enqueued: set[int] = set()
        self.claims: list[tuple[str, int, int, bool]] = []  # worker, id, lease, re-sent
        self.ends: list[
            tuple[str, int, int, str]
        ] = []  # worker, id, lease, status (complete/release)
        self.canceled_queued: Counter[int] = Counter()
        self.requeued: Counter[int] = Counter()
        self.errors: list[str] = []

    def add(self, attr: str, items: Any) -> None:
        with self.lock:
            target = getattr(self, attr)
            if isinstance(target, (set, Counter)):
                target.update(items)
            else:
                target.extend(items)


class Clock:
    """One clock for every session, moved on a quarter second by every call."""

    def __init__(self, start: Any) -> None:
        self.t = start
        self.lock = threading.Lock()

    def tick(self) -> str:
        with self.lock:
            self.t += timedelta(milliseconds=250)
            return mdl.ts(self.t)


def test_concurrent_sessions_keep_the_global_invariants(pgq_dsn: str) -> None:
    """Producers, workers (some turning zombie: they stop heartbeating while the shared clock
    moves past the heartbeat timeout, then try to finish), cancels, requeues and maintainers at
    once; afterwards nothing is lost or duplicated, no job is live and finished, every lease is
    unique and ended at most once (by its own worker), and no job finished more often than it
    was requeued (plus once)."""
    seed = SEED
    log = Log()
    eps = mdl.EPS
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        for ep in eps:
            conn.execute(
                "SELECT pgq.configure(%s, max_attempts => 3, backoff_base => '0.5 s',"
                " backoff_max => '2 s', heartbeat_timeout => '2 s', concurrency_limit => %s)",
                (ep, 2 if ep == "m.c" else None),
            )
        start = conn.execute("SELECT date_trunc('second', now()) + interval '1 hour'").fetchone()[0]  # type: ignore[index]
    clock = Clock(start)

    def producer(i: int) -> None:
        rng = random.Random(seed * 100 + i)
        with psycopg.connect(pgq_dsn, autocommit=True) as c:
            for _ in range(CONCURRENT_STEPS):
                x = rng.random()
                if x < 0.6:
                    n = rng.randint(1, 4)
                    keys = [rng.choice(mdl.KEYS) if rng.random() < 0.3 else None for _ in range(n)]
                    args = (
                        [rng.choice(eps) for _ in range(n)],
                        [rng.choice([0, 0, 5]) for _ in range(n)],
                        keys,
                    )
                    for _try in range(5):
                        try:
                            ids = [
                                r[0]
                                for r in c.execute(
                                    "SELECT id FROM pgq.enqueue_many(%s::text[],"
                                    " priorities => %s::int[], dedupe_keys => %s::text[],"
                                    " on_conflict => 'existing')",
                                    args,
                                ).fetchall()
                            ]
                            break
                        except psycopg.Error as e:
                            # docs/errors.md, PQ007 with 'existing': the holder finished during
                            # the call, its key is free: retry the call (nothing was added).
                            if e.sqlstate != "PQ007" or "released while enqueueing" not in str(e):
                                raise
                    else:
                        raise AssertionError("enqueue_many kept meeting released keys")
                    log.add("enqueued", ids)
                elif x < 0.8 and log.enqueued:
                    with log.lock:
                        ids = rng.sample(sorted(log.enqueued), min(3, len(log.enqueued)))
                    at = clock.tick()
                    live = {
                        r[0]: r[1]
                        for r in c.execute(
                            "SELECT id, status FROM pgq.jobs WHERE id = ANY(%s)", (ids,)
                        )
                    }
                    got = [
                        r[0]
                        for r in c.execute(f"SELECT id FROM pgq.cancel(%s::bigint[], {at})", (ids,))
                    ]
                    # only the queued ones it moved to history count as finishes; a flagged
                    # running job finishes through its worker or the sweep
                    hist = {
                        r[0]
                        for r in c.execute(
                            "SELECT id FROM pgq.job_history WHERE id = ANY(%s) AND status = 'canceled' AND finished_at = "
                            + at,
                            (got,),
                        )
                    }
                    log.add(
                        "canceled_queued",
                        [i for i in got if i in hist and live.get(i) in ("queued", "scheduled")],
                    )
                else:
                    dead = [
                        r[0]
                        for r in c.execute(
                            "SELECT id FROM pgq.job_history WHERE status IN ('failed', 'canceled') ORDER BY random() LIMIT 2"
                        )
                    ]
                    try:
                        got = [
                            r[0]
                            for r in c.execute(
                                f"SELECT id FROM pgq.requeue(%s::bigint[], {clock.tick()})", (dead,)
                            )
                        ]
                    except psycopg.Error as e:
                        if e.sqlstate != "PQ007":
                            raise
                        got = []
                    log.add("requeued", got)

    def worker(i: int) -> None:
        rng = random.Random(seed * 100 + 10 + i)
        w = (
            mdl.WORKERS[i % len(mdl.WORKERS)]
            if i < len(mdl.WORKERS)
            else str(uuid.UUID(int=rng.getrandbits(128), version=4))
        )
        held: list[tuple[int, int]] = []
        zombie: list[tuple[int, int]] = []
        last_request: str | None = None
        with psycopg.connect(pgq_dsn, autocommit=True) as c:
            for _ in range(CONCURRENT_STEPS):
                x = rng.random()
                if x < 0.35 or not held:
                    resend = last_request is not None and rng.random() < 0.25
                    request = (
                        last_request
                        if resend
                        else str(uuid.UUID(int=rng.getrandbits(128), version=4))
                    )
                    rows = c.execute(
                        f"SELECT id, lease FROM pgq.claim(%s, %s, %s, {clock.tick()}, request_id => %s)",
                        (w, eps, rng.randint(1, 4), request),
                    ).fetchall()
                    known = {lease for _, lease in held + zombie}
                    log.add("claims", [(w, r[0], r[1], resend and r[1] in known) for r in rows])
                    new = [(r[0], r[1]) for r in rows if r[1] not in known]
                    again = {i for i, _ in new}  # claimed again: the old lease is a zombie's
                    zombie += [h for h in held if h[0] in again]
                    held = [h for h in held if h[0] not in again] + new
                    last_request = request
                elif x < 0.5:
                    ids = [h[0] for h in held]
                    c.execute(
                        f"SELECT * FROM pgq.heartbeat(%s, %s::bigint[], %s::bigint[], {clock.tick()})",
                        (w, ids, [h[1] for h in held]),
                    )
                elif x < 0.85 or x > 0.95:
                    pick = rng.sample(held, rng.randint(1, len(held)))
                    if zombie and rng.random() < 0.5 and zombie[0][0] not in {p[0] for p in pick}:
                        pick.append(zombie.pop(0))
                    rng.shuffle(pick)  # any order: the functions lock jobs in id order
                    outcomes = [
                        rng.choice(["successful", "failed", "interrupted", "canceled"])
                        for _ in pick
                    ]
                    rows = c.execute(
                        f"SELECT id, status FROM pgq.complete(%s, %s::bigint[], %s::bigint[], %s::text[], NULL, {clock.tick()})",
                        (w, [p[0] for p in pick], [p[1] for p in pick], outcomes),
                    ).fetchall()
                    lease_of = dict(pick)
                    log.add("ends", [(w, r[0], lease_of[r[0]], r[1]) for r in rows])
                    held = [h for h in held if h not in pick]
                elif x < 0.9:
                    pick = rng.sample(held, rng.randint(1, len(held)))
                    rows = c.execute(
                        f"SELECT id, status FROM pgq.release(%s, %s::bigint[], %s::bigint[], {clock.tick()})",
                        (w, [p[0] for p in pick], [p[1] for p in pick]),
                    ).fetchall()
                    lease_of = dict(pick)
                    log.add("ends", [(w, r[0], lease_of[r[0]], "released-" + r[1]) for r in rows])
                    held = [h for h in held if h not in pick]
                else:
                    # turn zombie: keep the jobs without heartbeating; the clock runs on
                    zombie += held
                    held = []

    def maintainer(i: int) -> None:
        rng = random.Random(seed * 100 + 20 + i)
        with psycopg.connect(pgq_dsn, autocommit=True) as c:
            for _ in range(CONCURRENT_STEPS // 2):
                if rng.random() < 0.5:
                    c.execute("SELECT setval('pgq.ring_rotated_at', 0)")
                c.execute(f"SELECT * FROM pgq.maintain({clock.tick()})").fetchall()

    def guard(fn: Any, i: int) -> None:
        try:
            fn(i)
        except BaseException as e:
            log.errors.append(
                f"{fn.__name__} {i}: {type(e).__name__} {getattr(e, 'sqlstate', '')} {e}"
            )

    threads = [threading.Thread(target=guard, args=(producer, i)) for i in range(2)]
    threads += [threading.Thread(target=guard, args=(worker, i)) for i in range(4)]
    threads += [threading.Thread(target=guard, args=(maintainer, i)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not log.errors, f"seed {seed}: sessions failed: {log.errors}"

    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        live = conn.execute(
            "SELECT id, status, lease, worker_id::text, dedupe_key FROM pgq.jobs"
        ).fetchall()
        hist = conn.execute(
            "SELECT id, status, lease, worker_id::text FROM pgq.job_history"
        ).fetchall()
        keys = dict(conn.execute("SELECT dedupe_key, job_id FROM pgq.live_keys").fetchall())
    problems: list[str] = []
    live_ids = [r[0] for r in live]
    hist_ids = {r[0] for r in hist}
    if len(set(live_ids)) != len(live_ids):
        problems.append(
            f"a job twice in pgq.jobs: {sorted(k for k, v in Counter(live_ids).items() if v > 1)}"
        )
    if set(live_ids) & hist_ids:
        problems.append(f"live and finished: {sorted(set(live_ids) & hist_ids)}")
    if (set(live_ids) | hist_ids) != log.enqueued:
        problems.append(
            f"lost {sorted(log.enqueued - set(live_ids) - hist_ids)}, unknown {sorted((set(live_ids) | hist_ids) - log.enqueued)}"
        )
    given: dict[int, tuple[str, int]] = {}
    for w, i, lease, resent in log.claims:
        if resent:
            if given.get(lease) != (w, i):
                problems.append(
                    f"re-sent claim answered lease {lease} of job {i} to {w}, given {given.get(lease)}"
                )
        elif lease in given:
            problems.append(f"lease {lease} given twice: {given[lease]} and {(w, i)}")
        else:
            given[lease] = (w, i)
    ended = Counter(lease for _, _, lease, _ in log.ends)
    problems += [f"lease {lease} ended {n} times" for lease, n in ended.items() if n > 1]
    problems += [
        f"lease {lease} of job {i} ended by {w}, claimed as {given.get(lease)}"
        for w, i, lease, _ in log.ends
        if given.get(lease) != (w, i)
    ]
    finishes = Counter(
        i
        for _, i, _, s in log.ends
        if s in ("successful", "failed", "canceled", "released-canceled")
    )
    finishes.update(log.canceled_queued)
    for i, n in finishes.items():
        allowed = log.requeued[i] + (1 if i in hist_ids else 0)
        if n > allowed:
            problems.append(
                f"job {i} finished {n} times, requeued {log.requeued[i]} times, in history: {i in hist_ids}"
            )
    running = [(r[2], r[3], r[0]) for r in live if r[1] == "running"]
    if len({r[0] for r in running}) != len(running):
        problems.append(f"running jobs share a lease: {running}")
    problems += [
        f"job {i} runs under lease {lease} of {w}, never given so"
        for lease, w, i in running
        if given.get(lease) != (w, i)
    ]
    for i, status, lease, w in hist:
        if status == "successful" and (w, i, lease, "successful") not in set(log.ends):
            problems.append(
                f"job {i} successful in history under {lease}/{w}, no such complete answered"
            )
    live_keys = {r[4]: r[0] for r in live if r[4] is not None}
    if len(live_keys) != sum(1 for r in live if r[4] is not None) or live_keys != keys:
        problems.append(
            f"dedupe keys: live jobs {sorted((r[4], r[0]) for r in live if r[4])}, pgq.live_keys {keys}"
        )
    assert not problems, f"seed {seed}: " + "; ".join(problems[:20])
    print(
        f"concurrent seed {seed}: {len(log.enqueued)} jobs, {len(log.claims)} claimed, {len(log.ends)} ended,"
        f" {sum(log.requeued.values())} requeued, {len(hist)} in history"
    )
