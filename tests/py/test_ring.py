"""The ring of pgq.jobs and pgq.maintain against real concurrent sessions, and ThinWorker's
maintenance step.

Single-session behaviour (sweep, promotion, carry forward, rotation, which slot is truncated,
the compact_jobs wrapper) is in tests/sql/maintain.sql.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

import psycopg
import pytest
from helpers.wait import await_for, wait_for

from pgq_thin import ThinWorker
from pgq_thin.job import Job

RING_BYTES = (
    "SELECT sum(pg_total_relation_size(format('pgq.jobs_%s', k)::regclass))::bigint"
    " FROM generate_series(0, 3) k"
)


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True)


def maintained_at(dsn: str) -> int:
    """pgq.maintained_at: the server's time of the last pass, in epoch milliseconds."""
    with connect(dsn) as conn:
        row = conn.execute("SELECT last_value FROM pgq.maintained_at").fetchone()
    assert row is not None
    return int(row[0])


def maintain(conn: psycopg.Connection[Any], may_rotate: bool = True) -> dict[str, Any]:
    """One pgq.maintain; may_rotate sets the last rotation back (the 2 s rule reads the
    server's clock) or to now."""
    conn.execute(
        "SELECT setval('pgq.ring_rotated_at', CASE WHEN %s THEN 0"
        " ELSE (extract(epoch FROM clock_timestamp()) * 1000)::bigint END)",
        (may_rotate,),
    )
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    row = cur.execute("SELECT * FROM pgq.maintain()").fetchone()
    assert row is not None
    return row


def churn(conn: psycopg.Connection[Any], entrypoint: str, n: int) -> list[int]:
    """n jobs through the public functions: enqueued, claimed, completed; returns their ids."""
    worker = uuid.uuid4()
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT * FROM pgq.enqueue_many(array_fill(%s::text, ARRAY[%s]))", (entrypoint, n)
        ).fetchall()
    ]
    claimed = conn.execute(
        "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], %s)", (worker, entrypoint, n)
    ).fetchall()
    assert sorted(c[0] for c in claimed) == sorted(ids)
    done = conn.execute(
        "SELECT * FROM pgq.complete(%s, %s::bigint[], %s::bigint[],"
        " array_fill('successful'::text, ARRAY[%s]))",
        (worker, [c[0] for c in claimed], [c[1] for c in claimed], len(claimed)),
    ).fetchall()
    assert len(done) == n
    return ids


def run_rounds(dsn: str, entrypoint: str, rounds: int, per_round: int) -> tuple[int, list[int]]:
    """rounds x per_round jobs, one pgq.maintain after each round (rotation allowed); returns
    the largest size of the ring's partitions seen and every job id."""
    peak = 0
    ids: list[int] = []
    with connect(dsn) as conn:
        for _ in range(rounds):
            ids += churn(conn, entrypoint, per_round)
            peak = max(peak, conn.execute(RING_BYTES).fetchone()[0])  # type: ignore[index]
            row = maintain(conn)
            assert row["state"] == "ok", row
    return peak, ids


def test_a_held_horizon_leaves_the_ring_bounded_and_every_job_runs_once(pgq_dsn: str) -> None:
    """With an xid held by another session, jobs keep flowing through the ring across many
    maintain calls and rotations; the ring's size stays within 2x of the same run without the
    hold (dead versions live only in the slots not truncated yet), and every job finishes
    exactly once."""
    rounds, per_round = 16, 500
    free_peak, free_ids = run_rounds(pgq_dsn, "rg.free", rounds, per_round)
    with psycopg.connect(pgq_dsn) as holder:
        holder.execute("SELECT pg_current_xact_id()")  # holds the vacuum horizon
        held_peak, held_ids = run_rounds(pgq_dsn, "rg.held", rounds, per_round)
        with connect(pgq_dsn) as conn:
            truncations = conn.execute(
                "SELECT count(*) FROM pg_class WHERE relname ~ '^jobs_[0-3]$'"
                " AND relnamespace = 'pgq'::regnamespace AND relfilenode <> oid"
            ).fetchone()
        holder.rollback()
    assert truncations is not None and truncations[0] >= 3, "every slot was truncated at least once"
    assert held_peak < 2 * free_peak, (held_peak, free_peak)
    with connect(pgq_dsn) as conn:
        history = conn.execute(
            "SELECT entrypoint, count(*), count(DISTINCT id), bool_and(status = 'successful')"
            " FROM pgq.job_history WHERE entrypoint IN ('rg.free', 'rg.held')"
            " GROUP BY entrypoint ORDER BY entrypoint"
        ).fetchall()
        live = conn.execute("SELECT count(*) FROM pgq.jobs").fetchone()
    n = rounds * per_round
    assert history == [("rg.free", n, n, True), ("rg.held", n, n, True)]
    assert len(set(free_ids) | set(held_ids)) == 2 * n
    assert live == (0,)


def drained_slot(conn: psycopg.Connection[Any]) -> int:
    """A slot other than the current one with pages of dead rows and no live row (written
    straight into pgq.jobs); the next slot, so that it is the one truncated."""
    cur = conn.execute("SELECT pgq._slot()").fetchone()[0]  # type: ignore[index]
    slot = (cur + 1) % 4
    conn.execute(
        "WITH w AS (INSERT INTO pgq.jobs (entrypoint, status, slot, ready_seq)"
        " SELECT 'rg.dead', 'queued', %s, nextval('pgq.ready_seq') FROM generate_series(1, 200)"
        " RETURNING id) SELECT count(*) FROM w",
        (slot,),
    )
    conn.execute("DELETE FROM pgq.jobs WHERE entrypoint = 'rg.dead'")
    assert conn.execute(f"SELECT pg_relation_size('pgq.jobs_{slot}')").fetchone()[0] > 0  # type: ignore[index]
    return int(slot)


def test_a_reader_of_pgq_jobs_makes_the_truncation_give_up_within_milliseconds(
    pgq_dsn: str,
) -> None:
    """A report reading pgq.jobs in an open transaction holds ACCESS SHARE on every partition:
    the truncation's lock is waited for 5 ms, then the call answers busy (no error, nothing
    truncated); once the report ends, the next call truncates."""
    with connect(pgq_dsn) as conn, psycopg.connect(pgq_dsn) as report:
        slot = drained_slot(conn)
        report.execute("SELECT count(*) FROM pgq.jobs")
        started = time.monotonic()
        row = maintain(conn, may_rotate=False)
        elapsed = time.monotonic() - started
        assert (row["state"], row["truncated"]) == ("busy", None)
        assert 4.0 <= row["lock_wait_ms"] < 100.0, row["lock_wait_ms"]
        assert elapsed < 2.0
        assert conn.execute(f"SELECT pg_relation_size('pgq.jobs_{slot}')").fetchone()[0] > 0  # type: ignore[index]
        # Claims go on meanwhile (the waiting request is gone).
        conn.execute("SET statement_timeout = '5s'")
        assert conn.execute("SELECT count(*) FROM pgq.jobs").fetchone() == (0,)
        conn.execute("RESET statement_timeout")
        report.commit()
        row = maintain(conn, may_rotate=False)
        assert (row["state"], row["truncated"]) == ("ok", f"jobs_{slot}")
        assert conn.execute(f"SELECT pg_relation_size('pgq.jobs_{slot}')").fetchone() == (0,)


def test_a_straggler_locked_elsewhere_is_carried_by_a_later_call(pgq_dsn: str) -> None:
    """Rows of the next slot that another session has locked are skipped (SKIP LOCKED), the
    slot is then not truncated; a later call carries them, same id and lease."""
    with connect(pgq_dsn) as conn, psycopg.connect(pgq_dsn) as holder:
        cur = conn.execute("SELECT pgq._slot()").fetchone()[0]  # type: ignore[index]
        nxt = (cur + 1) % 4
        ids = [
            r[0]
            for r in conn.execute(
                "INSERT INTO pgq.jobs (entrypoint, status, slot, lease, worker_id, heartbeat_at,"
                " attempt) SELECT 'rg.long', 'running', %s, 77 + g, gen_random_uuid(), now(), 1"
                " FROM generate_series(1, 2) g RETURNING id",
                (nxt,),
            ).fetchall()
        ]
        holder.execute("SELECT 1 FROM pgq.jobs WHERE id = %s FOR UPDATE", (ids[0],))
        row = maintain(conn, may_rotate=False)
        assert (row["state"], row["carried"], row["truncated"], row["rotated"]) == (
            "ok",
            1,
            None,
            False,
        )
        holder.rollback()
        row = maintain(conn, may_rotate=False)
        assert (row["carried"], row["truncated"]) == (1, f"jobs_{nxt}")
        rows = conn.execute(
            "SELECT id, slot, lease FROM pgq.jobs WHERE entrypoint = 'rg.long' ORDER BY id"
        ).fetchall()
    assert rows == [(ids[0], cur, 78), (ids[1], cur, 79)]


def test_maintain_needs_read_committed(pgq_dsn: str) -> None:
    """TRUNCATE is not MVCC-safe: under REPEATABLE READ the emptiness check could miss rows
    committed since the snapshot, so maintain refuses (PQ010)."""
    with psycopg.connect(pgq_dsn) as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        with pytest.raises(psycopg.Error, match="READ COMMITTED") as err:
            conn.execute("SELECT * FROM pgq.maintain()")
    assert err.value.sqlstate == "PQ010"


def test_worker_maintain_step_logs_at_debug_and_counts(
    pgq_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """maintain_once runs pgq.maintain once: one DEBUG line per call (a truncation included:
    one every few seconds is routine), and the worker's stats count calls and truncations."""
    with connect(pgq_dsn) as conn:
        slot = drained_slot(conn)
        conn.execute(
            "SELECT setval('pgq.ring_rotated_at', (extract(epoch FROM now()) * 1000)::bigint)"
        )
    worker = ThinWorker(pgq_dsn, maintain_interval=None)

    @worker.entrypoint("rg.none")
    async def handler(job: Job[Any]) -> None:  # pragma: no cover - nothing is queued
        raise AssertionError

    async def scenario() -> dict[str, Any]:
        async with worker:
            return await worker.maintain_once()

    with caplog.at_level(logging.DEBUG, logger="pgq_thin.worker"):
        row = asyncio.run(scenario())
    assert (row["state"], row["truncated"]) == ("ok", f"jobs_{slot}")
    lines = [r for r in caplog.records if r.getMessage().startswith("pgq-thin maintain:")]
    assert [r.levelno for r in lines] == [logging.DEBUG]
    assert f"truncated jobs_{slot}" in lines[0].getMessage()
    louder = [
        r for r in caplog.records if r.levelno >= logging.INFO and "maintain" in r.getMessage()
    ]
    assert not louder
    assert (worker.stats.maintained, worker.stats.truncated) == (1, 1)


@pytest.mark.parametrize("interval", [0.05, None])
def test_worker_maintains_every_maintain_interval_unless_off(
    pgq_dsn: str, interval: float | None
) -> None:
    """A running worker calls pgq.maintain on its own every maintain_interval (pgq.maintained_at
    moves); with None it has no such loop at all."""
    worker = ThinWorker(pgq_dsn, maintain_interval=interval)

    @worker.entrypoint("rg.none")
    async def handler(job: Job[Any]) -> None:  # pragma: no cover - nothing is queued
        raise AssertionError

    async def loops() -> set[str]:
        names = {t.get_name() for t in asyncio.all_tasks()}
        return names if "pgq-thin-flush" in names else set()

    async def scenario() -> tuple[set[str], int]:
        runner = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            names = await await_for(loops, 20.0, "the worker's loops")
            if interval is None:
                return names, await asyncio.to_thread(maintained_at, pgq_dsn)
            done = await asyncio.to_thread(
                wait_for, lambda: maintained_at(pgq_dsn), 20.0, "a worker's maintain"
            )
            return names, done
        finally:
            worker.stop()
            await runner

    names, done = asyncio.run(scenario())
    if interval is None:
        assert "pgq-thin-maintain" not in names and done == 0
    else:
        assert "pgq-thin-maintain" in names and done > 0


def test_default_worker_turns_an_idle_ring_within_one_period_of_its_due(pgq_dsn: str) -> None:
    """ThinWorker's default maintain_interval keeps the ring turning at its 2-second period: two
    rotations by a default worker are less than two periods apart on the server's clock
    (pgq.ring_rotated_at). A default of 5 s (jittered 4-6 s) fails this; its held-horizon cost
    is in docs/performance.md ("the ring's cadence")."""
    period_ms = 2000  # pgq.maintain rotates when the last rotation is this old
    worker = ThinWorker(pgq_dsn)

    @worker.entrypoint("rg.none")
    async def handler(job: Job[Any]) -> None:  # pragma: no cover - nothing is queued
        raise AssertionError

    def ring() -> tuple[int, int]:
        with connect(pgq_dsn) as conn:
            row = conn.execute(
                "SELECT s.last_value, r.last_value FROM pgq.ring_seq s, pgq.ring_rotated_at r"
            ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    def rotated_after(seq: int) -> Any:
        def probe() -> tuple[int, int] | None:
            now = ring()
            return now if now[0] > seq else None

        return probe

    async def scenario() -> list[tuple[int, int]]:
        runner = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            seen = [await asyncio.to_thread(ring)]
            for _ in range(2):
                seen.append(
                    await asyncio.to_thread(
                        wait_for, rotated_after(seen[-1][0]), 20.0, "a rotation"
                    )
                )
            return seen
        finally:
            worker.stop()
            await runner

    seen = asyncio.run(scenario())
    # one rotation per maintain call at most, so the second is a turn of its own
    assert seen[2][0] == seen[1][0] + 1
    gap = seen[2][1] - seen[1][1]
    assert period_ms <= gap < 2 * period_ms, gap


def test_a_workers_loop_call_soon_after_another_workers_pass_answers_recent(pgq_dsn: str) -> None:
    """The maintain loop's call passes min_interval = half the worker's maintain_interval: right
    after one worker's pass, another worker's loop call answers 'recent' and does nothing, so a
    fleet makes about two passes per interval whatever its size; an explicit maintain_once()
    always makes a pass."""
    workers = [ThinWorker(pgq_dsn, maintain_interval=120.0) for _ in range(2)]
    for w in workers:

        @w.entrypoint("rg.none")
        async def handler(job: Job[Any]) -> None:  # pragma: no cover - nothing is queued
            raise AssertionError

    with connect(pgq_dsn) as conn:  # the last pass an hour ago
        conn.execute(
            "SELECT setval('pgq.maintained_at',"
            " (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 3600000)"
        )

    async def scenario() -> list[Any]:
        first, second = workers
        async with first, second:
            a = await first.maintain_once(in_turn=True)
            at = await asyncio.to_thread(maintained_at, pgq_dsn)
            b = await second.maintain_once(in_turn=True)
            unchanged = await asyncio.to_thread(maintained_at, pgq_dsn) == at
            c = await second.maintain_once()
            return [a["state"], b, unchanged, c["state"]]

    a, b, unchanged, c = asyncio.run(scenario())
    assert a == "ok" and c == "ok"
    assert (b["state"], b["swept"], b["bytes"]) == ("recent", 0, None)
    assert unchanged
    assert [w.stats.maintained for w in workers] == [1, 1]


def test_recent_is_answered_without_the_maintainers_lock(pgq_dsn: str) -> None:
    """Two sessions: one is a maintainer inside an open transaction (it holds the row lock of
    pgq.maintenance until it commits). Another call without min_interval answers 'busy'; with
    min_interval, right after that pass, it answers 'recent': the rule is checked before the
    lock is asked for, so a fleet's calls never queue on it."""
    with connect(pgq_dsn) as holder, connect(pgq_dsn) as other:
        holder.execute("BEGIN")
        first = holder.execute("SELECT state FROM pgq.maintain()").fetchone()
        assert first is not None and first[0] == "ok"
        busy = other.execute("SELECT state FROM pgq.maintain()").fetchone()
        recent = other.execute(
            "SELECT state FROM pgq.maintain(min_interval => interval '1 hour')"
        ).fetchone()
        holder.execute("COMMIT")
    assert busy is not None and busy[0] == "busy"
    assert recent is not None and recent[0] == "recent"
