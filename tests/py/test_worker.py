"""ThinWorker against a real database: handlers, retries, cancellation, delays, typed payloads.

Workers run in this process; steps that need precise control use the run-once methods
(``claim_once``, ``heartbeat_once``, ``flush_once``) instead of timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from helpers.wait import await_for

from pgq_thin import calls
from pgq_thin.admin import Admin
from pgq_thin.job import CancelJob, Job, RetryAfter
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker, UnknownEntrypoint


def history(dsn: str) -> dict[int, dict[str, Any]]:
    with psycopg.connect(dsn) as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        cur.execute("SELECT * FROM pgq.job_history")
        return {r["id"]: r for r in cur.fetchall()}


def live(dsn: str) -> dict[int, dict[str, Any]]:
    with psycopg.connect(dsn) as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        cur.execute("SELECT * FROM pgq.jobs")
        return {r["id"]: r for r in cur.fetchall()}


async def ahistory_status(dsn: str, job_id: int) -> str | None:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute("SELECT status FROM pgq.job_history WHERE id = %s", (job_id,))
        row = await cur.fetchone()
        return None if row is None else str(row[0])


async def alive_status(dsn: str, job_id: int) -> str | None:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute("SELECT status FROM pgq.jobs WHERE id = %s", (job_id,))
        row = await cur.fetchone()
        return None if row is None else str(row[0])


def test_sync_and_async_handlers(pgq_dsn: str) -> None:
    seen: dict[str, list[tuple[int, str]]] = {"a": [], "s": []}
    worker = ThinWorker(pgq_dsn, concurrency=4, batch_size=3)

    @worker.entrypoint("async_ep")
    async def on_async(job: Job[Any]) -> dict[str, int]:
        await asyncio.sleep(0)
        seen["a"].append((job.payload["n"], threading.current_thread().name))
        return {"double": job.payload["n"] * 2}

    @worker.entrypoint("sync_ep")
    def on_sync(job: Job[Any]) -> None:
        seen["s"].append((job.payload["n"], threading.current_thread().name))

    with Queue(pgq_dsn) as q:
        a_ids = q.enqueue_many("async_ep", [{"n": i} for i in range(10)])
        s_ids = q.enqueue_many("sync_ep", [{"n": i} for i in range(10)], headers={"h": 1})
    worker.run(until_empty=True)

    rows = history(pgq_dsn)
    assert sorted(rows) == sorted(a_ids + s_ids)
    assert {r["status"] for r in rows.values()} == {"successful"}
    assert {r["attempt"] for r in rows.values()} == {1}
    assert rows[a_ids[3]]["details"] == {"result": {"double": 6}}
    assert sorted(n for n, _ in seen["a"]) == list(range(10))
    assert sorted(n for n, _ in seen["s"]) == list(range(10))
    assert {t for _, t in seen["a"]} == {threading.main_thread().name}
    assert all(t.startswith("pgq-thin-job") for _, t in seen["s"])
    assert live(pgq_dsn) == {}
    assert worker.stats.successful == 20


def test_one_complete_call_per_flush(pgq_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    alone: list[int] = []  # results written by a pgq.complete call of their own
    carried: list[int] = []  # results written in the round trip of the next claim
    real, real_pair = calls.acomplete, calls.acomplete_and_claim

    async def counting(conn: Any, wid: Any, ids: Any, *rest: Any) -> list[int]:
        alone.append(len(ids))
        return await real(conn, wid, ids, *rest)

    async def counting_pair(conn: Any, wid: Any, done: Any, *rest: Any) -> Any:
        carried.append(len(done[0]))
        return await real_pair(conn, wid, done, *rest)

    monkeypatch.setattr(calls, "acomplete", counting)
    monkeypatch.setattr(calls, "acomplete_and_claim", counting_pair)
    worker = ThinWorker(pgq_dsn, concurrency=10, batch_size=10)

    @worker.entrypoint("noop")
    async def noop(job: Job[Any]) -> None:
        pass

    with Queue(pgq_dsn) as q:
        q.enqueue_many("noop", [None] * 100)
    worker.run(until_empty=True)
    assert sum(alone) + sum(carried) == 100
    assert len(alone) + len(carried) <= 15, (alone, carried)  # about one call per batch
    # While claims come back full, the claim that follows a batch writes its results: the
    # flush loop leaves them to it rather than spend a round trip of its own.
    assert len(alone) <= 1, (alone, carried)
    assert worker.stats.successful == 100


def test_next_claim_is_sent_before_the_claimed_jobs_are_taken_in(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for two batches, the claim of the next batch goes out before the jobs of the
    batch just claimed are taken in and started: the database works on it meanwhile."""
    claimed_before: list[int] = []  # jobs taken in when each claim call began
    real, real_pair = calls.aclaim, calls.acomplete_and_claim
    # no scheduler: its first statements at start would hold the session the claims share
    worker = ThinWorker(pgq_dsn, concurrency=10, batch_size=5, listen=False, run_schedules=False)

    async def claim(*args: Any) -> Any:
        claimed_before.append(worker.stats.claimed)
        return await real(*args)

    async def pair(*args: Any) -> Any:
        claimed_before.append(worker.stats.claimed)
        return await real_pair(*args)

    monkeypatch.setattr(calls, "aclaim", claim)
    monkeypatch.setattr(calls, "acomplete_and_claim", pair)

    @worker.entrypoint("noop")
    async def noop(job: Job[Any]) -> None:
        pass

    with Queue(pgq_dsn) as q:
        q.enqueue_many("noop", [None] * 20)
    worker.run(until_empty=True)
    assert worker.stats.successful == 20
    assert claimed_before[:2] == [0, 0], (
        claimed_before
    )  # the 2nd claim left before the 1st's 5 jobs were taken in


def test_jobs_claimed_ahead_are_released_when_stopping(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker is told to stop while the claim of the next batch is on its way: the jobs
    of both claims are released, none is left claimed."""
    # no scheduler: its first statements at start would hold the session the claims share
    worker = ThinWorker(pgq_dsn, concurrency=10, batch_size=5, listen=False, run_schedules=False)
    real = calls.aclaim
    calls_made: list[int] = []

    async def claim(*args: Any) -> Any:
        calls_made.append(1)
        if len(calls_made) == 2:  # the claim sent ahead: stop now, before it answers
            worker.stop()
        return await real(*args)

    monkeypatch.setattr(calls, "aclaim", claim)

    @worker.entrypoint("noop")
    async def noop(job: Job[Any]) -> None:
        raise AssertionError("must not run")

    with Queue(pgq_dsn) as q:
        ids = q.enqueue_many("noop", [None] * 20)
    worker.run()
    assert len(calls_made) == 2
    assert (worker.stats.claimed, worker.stats.released) == (10, 10)
    rows = live(pgq_dsn)
    assert sorted(rows) == sorted(ids)
    assert {(r["status"], r["attempt"]) for r in rows.values()} == {("queued", 0)}


def test_retry_then_success(pgq_dsn: str) -> None:
    worker = ThinWorker(pgq_dsn)

    @worker.entrypoint("flaky")
    async def flaky(job: Job[Any]) -> None:
        if job.attempt < 3:
            raise ValueError(f"boom {job.attempt}")

    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure("flaky", backoff_base=timedelta(0), backoff_max=timedelta(0))
        job_id = q.enqueue("flaky", {"x": 1})
    worker.run(until_empty=True)

    row = history(pgq_dsn)[job_id]
    assert (row["status"], row["attempt"]) == ("successful", 3)
    assert [e["details"]["error"] for e in row["errors"]] == ["ValueError", "ValueError"]
    assert row["errors"][0]["details"]["message"] == "boom 1"
    assert "Traceback" in row["errors"][0]["details"]["traceback"]


def test_dead_after_max_attempts(pgq_dsn: str) -> None:
    worker = ThinWorker(pgq_dsn)

    @worker.entrypoint("doomed")
    def doomed(job: Job[Any]) -> None:
        raise RuntimeError("always")

    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure(
            "doomed", max_attempts=3, backoff_base=timedelta(0), backoff_max=timedelta(0)
        )
        job_id = q.enqueue("doomed")
    worker.run(until_empty=True)

    row = history(pgq_dsn)[job_id]
    assert (row["status"], row["attempt"]) == ("failed", 3)
    assert row["details"]["error"] == "RuntimeError"
    assert len(row["errors"]) == 3
    assert worker.stats.failed == 3


def test_retry_after_and_cancel_job_signals(pgq_dsn: str) -> None:
    worker = ThinWorker(pgq_dsn)

    @worker.entrypoint("later")
    async def later(job: Job[Any]) -> None:
        if job.attempt == 1:
            raise RetryAfter(0)

    @worker.entrypoint("give_up")
    async def give_up(job: Job[Any]) -> None:
        raise CancelJob("not needed any more")

    with Queue(pgq_dsn) as q:
        later_id = q.enqueue("later")
        give_up_id = q.enqueue("give_up")
    worker.run(until_empty=True)

    rows = history(pgq_dsn)
    assert (rows[later_id]["status"], rows[later_id]["attempt"]) == ("successful", 2)
    assert rows[later_id]["errors"][0]["details"]["retry_after"] == 0
    assert rows[give_up_id]["status"] == "canceled"
    assert rows[give_up_id]["details"]["message"] == "not needed any more"


def test_cancel_running_async_job_via_notification(pgq_dsn: str) -> None:
    started = asyncio.Event()
    outcome: list[str] = []

    async def scenario() -> None:
        worker = ThinWorker(pgq_dsn, poll_interval=30)

        @worker.entrypoint("long")
        async def long(job: Job[Any]) -> None:
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                outcome.append("cancelled")
                raise

        with Queue(pgq_dsn) as q:
            job_id = q.enqueue("long")
        run = asyncio.create_task(worker.arun(install_signal_handlers=False))
        await asyncio.wait_for(started.wait(), 10)
        # The job may start before the listener runs LISTEN: a cancel sent then would only be
        # seen at the next heartbeat (10 s). Wait until the worker listens.
        await await_for(lambda: asyncio.sleep(0, worker.listening), 10, "the listener to listen")
        with Queue(pgq_dsn) as q:
            assert q.cancel([job_id]) == [job_id]
        # The cancel notification triggers a heartbeat; its answer cancels the task.
        await await_for(lambda: ahistory_status(pgq_dsn, job_id), 10, "the job to be canceled")
        worker.stop()
        await asyncio.wait_for(run, 10)
        assert await ahistory_status(pgq_dsn, job_id) == "canceled"

    asyncio.run(scenario())
    assert outcome == ["cancelled"]


def test_cancel_running_sync_job_via_heartbeat(pgq_dsn: str) -> None:
    started = threading.Event()
    saw_flag: list[bool] = []

    async def scenario() -> None:
        worker = ThinWorker(pgq_dsn, listen=False)

        @worker.entrypoint("long_sync")
        def long_sync(job: Job[Any]) -> None:
            started.set()
            saw_flag.append(job.cancelled.wait(30))
            job.raise_if_cancelled()  # gives up because of the cancel: canceled

        with Queue(pgq_dsn) as q:
            job_id = q.enqueue("long_sync")
        async with worker:
            assert [j.id for j in await worker.claim_once()] == [job_id]
            assert await asyncio.to_thread(started.wait, 10)
            assert await worker.heartbeat_once() == {job_id: "ok"}
            with Queue(pgq_dsn) as q:
                q.cancel([job_id])
            assert await worker.heartbeat_once() == {job_id: "cancel_requested"}
            assert await worker.wait_idle(10)
            assert await worker.flush_once() == 1
        row = history(pgq_dsn)[job_id]
        assert row["status"] == "canceled"
        assert row["details"]["cancel_requested"] is True

    asyncio.run(scenario())
    assert saw_flag == [True]


@pytest.mark.parametrize("handler_kind", ["sync", "async"])
def test_a_handler_that_finishes_after_a_cancel_request_is_successful(
    pgq_dsn: str, handler_kind: str
) -> None:
    """SQL's rule, not the worker's: a cancel request does not turn a handler that finished
    its work into a canceled job (only one that gave up because of it, or failed)."""
    started = threading.Event()

    async def scenario() -> None:
        worker = ThinWorker(pgq_dsn, listen=False)

        if handler_kind == "sync":

            @worker.entrypoint("finisher")
            def finisher(job: Job[Any]) -> str:
                started.set()
                job.cancelled.wait(30)
                return "done anyway"

        else:

            @worker.entrypoint("finisher")
            async def afinisher(job: Job[Any]) -> str:
                started.set()
                with contextlib.suppress(asyncio.CancelledError):  # it finishes its work anyway
                    await asyncio.sleep(30)
                return "done anyway"

        with Queue(pgq_dsn) as q:
            job_id = q.enqueue("finisher")
        async with worker:
            assert [j.id for j in await worker.claim_once()] == [job_id]
            assert await asyncio.to_thread(started.wait, 10)
            with Queue(pgq_dsn) as q:
                q.cancel([job_id])
            assert await worker.heartbeat_once() == {job_id: "cancel_requested"}
            assert await worker.wait_idle(10)
            assert await worker.flush_once() == 1
        row = history(pgq_dsn)[job_id]
        assert row["status"] == "successful"
        assert row["details"] == {"result": "done anyway", "cancel_requested": True}

    asyncio.run(scenario())


def test_lost_lease_cancels_the_task_and_drops_the_result(pgq_dsn: str) -> None:
    async def scenario() -> None:
        started = asyncio.Event()
        worker = ThinWorker(pgq_dsn, listen=False)

        @worker.entrypoint("zombie")
        async def zombie(job: Job[Any]) -> None:
            started.set()
            await asyncio.sleep(60)

        with Queue(pgq_dsn) as q:
            job_id = q.enqueue("zombie")
        async with worker:
            await worker.claim_once()
            await asyncio.wait_for(started.wait(), 10)
            # Another worker takes the job over as if our heartbeat had gone stale.
            thief = uuid.uuid4()
            with psycopg.connect(pgq_dsn, autocommit=True) as conn:
                stolen = conn.execute(
                    "SELECT id FROM pgq.claim(%s, ARRAY['zombie'], 1, now() + interval '1 hour')",
                    (thief,),
                ).fetchall()
            assert stolen == [(job_id,)]
            assert await worker.heartbeat_once() == {job_id: "lost"}
            assert await worker.wait_idle(5)
            assert await worker.flush_once() == 0
            assert worker.stats.lost == 1
        row = live(pgq_dsn)[job_id]
        assert (row["status"], str(row["worker_id"]), row["attempt"]) == ("running", str(thief), 2)

    asyncio.run(scenario())


def test_release_unstarted_jobs(pgq_dsn: str) -> None:
    async def scenario() -> None:
        worker = ThinWorker(pgq_dsn, listen=False, batch_size=5)

        @worker.entrypoint("never")
        async def never(job: Job[Any]) -> None:
            raise AssertionError("must not run")

        with Queue(pgq_dsn) as q:
            ids = q.enqueue_many("never", [None] * 3)
        async with worker:
            claimed = await worker.claim_once(start=False)
            assert sorted(j.id for j in claimed) == ids
            assert sorted(await worker.release_unstarted()) == ids
        rows = live(pgq_dsn)
        assert {(r["status"], r["attempt"]) for r in rows.values()} == {("queued", 0)}

    asyncio.run(scenario())


def test_release_right_after_the_claim_frees_the_slots(pgq_dsn: str) -> None:
    """Released after their tasks were made but before they ran: the tasks end at their first
    step without calling the handler, and their slots are free again."""

    async def scenario() -> None:
        worker = ThinWorker(pgq_dsn, listen=False, batch_size=5, concurrency=5)

        @worker.entrypoint("never")
        async def never(job: Job[Any]) -> None:
            raise AssertionError("must not run")

        with Queue(pgq_dsn) as q:
            ids = q.enqueue_many("never", [None] * 3)
        async with worker:
            claimed = await worker.claim_once()  # tasks made, none has run yet
            assert sorted(j.id for j in claimed) == ids
            assert sorted(await worker.release_unstarted()) == ids
            assert await worker.wait_idle(5)
            assert await worker.flush_once() == 0
            assert (worker.stats.successful, worker.stats.failed, worker.stats.released) == (
                0,
                0,
                3,
            )
        rows = live(pgq_dsn)
        assert {(r["status"], r["attempt"]) for r in rows.values()} == {("queued", 0)}

    asyncio.run(scenario())


def test_delayed_job_runs_when_due_not_at_the_poll_interval(pgq_dsn: str) -> None:
    ran: list[tuple[datetime, datetime | None]] = []

    async def scenario() -> None:
        worker = ThinWorker(pgq_dsn, poll_interval=60)  # a poll would be far too late

        @worker.entrypoint("delayed")
        async def delayed(job: Job[Any]) -> None:
            async with await psycopg.AsyncConnection.connect(pgq_dsn) as conn:
                now = (await (await conn.execute("SELECT clock_timestamp()")).fetchone())[0]
            ran.append((now, job.run_at))

        run = asyncio.create_task(worker.arun(install_signal_handlers=False))
        with Queue(pgq_dsn) as q:
            job_id = q.enqueue("delayed", run_at=timedelta(seconds=1.5))
        await await_for(lambda: ahistory_status(pgq_dsn, job_id), 10, "the delayed job")
        worker.stop()
        await asyncio.wait_for(run, 10)

    asyncio.run(scenario())
    ((now, run_at),) = ran
    assert run_at is not None and now >= run_at
    assert now - run_at < timedelta(seconds=3)


def test_a_claim_that_is_not_full_still_wakes_for_the_next_delayed_job(pgq_dsn: str) -> None:
    """The first claim finds one due job of a batch of 10 (not a full claim); the worker
    must still ask pgq.next_run_at and start the job due 1 s later about 1 s later, not at the
    30 s poll."""
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        now_id = conn.execute("SELECT pgq.enqueue('partial')").fetchone()[0]
        later_id = conn.execute(
            "SELECT pgq.enqueue('partial', run_at => now() + interval '1 second')"
        ).fetchone()[0]
        due = conn.execute("SELECT run_at FROM pgq.jobs WHERE id = %s", (later_id,)).fetchone()[0]

    async def scenario() -> None:
        worker = ThinWorker(pgq_dsn, poll_interval=30, listen=False, batch_size=10)

        @worker.entrypoint("partial")
        async def partial(job: Job[Any]) -> None:
            pass

        run = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            await await_for(lambda: ahistory_status(pgq_dsn, later_id), 10, "the delayed job")
        finally:
            worker.stop()
            await asyncio.wait_for(run, 10)

    asyncio.run(scenario())
    started = {i: r["started_at"] for i, r in history(pgq_dsn).items()}
    assert set(started) == {now_id, later_id}
    assert timedelta(0) <= started[later_id] - due < timedelta(seconds=1.5)


def test_notifications_about_entrypoints_it_does_not_claim_do_not_wake_it(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker restricted to "mine" (with a handler for "other" too) does not claim on a
    notification about "other"."""
    claims: list[int] = []
    real = calls.aclaim

    async def counting(*args: Any) -> Any:
        claims.append(1)
        return await real(*args)

    monkeypatch.setattr(calls, "aclaim", counting)

    async def scenario() -> None:
        worker = ThinWorker(pgq_dsn, poll_interval=60, flush_interval=0)
        done: list[str] = []

        @worker.entrypoint("mine")
        async def mine(job: Job[Any]) -> None:
            done.append("mine")

        @worker.entrypoint("other")
        async def other(job: Job[Any]) -> None:  # pragma: no cover - not claimed
            done.append("other")

        worker.restrict(["mine"])
        run = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            await await_for(lambda: asyncio.sleep(0, worker.listening), 10, "listening")
            with Queue(pgq_dsn) as q:
                q.enqueue("mine")  # after this one ran, the start-up claims are behind us
            await await_for(lambda: asyncio.sleep(0, len(done) == 1), 10, "the first job")
            # Its notification may come after it was claimed (by the claim the listener's
            # start triggers) and cause one more claim: wait until the claims have settled.
            before = -1
            while before != len(claims):
                before = len(claims)
                with contextlib.suppress(AssertionError):
                    await await_for(lambda n=before: asyncio.sleep(0, len(claims) > n), 0.5, "a")
            with Queue(pgq_dsn) as q:
                q.enqueue("other")
            with pytest.raises(AssertionError, match="timed out"):  # a claim would come in ms
                await await_for(lambda: asyncio.sleep(0, len(claims) > before), 1.0, "a claim")
            with Queue(pgq_dsn) as q:
                q.enqueue("mine")
            await await_for(lambda: asyncio.sleep(0, len(done) == 2), 10, "the second job")
            assert len(claims) == before + 1  # the claim for the second job only
            assert done == ["mine", "mine"]
        finally:
            worker.stop()
            await asyncio.wait_for(run, 10)

    asyncio.run(scenario())


@dataclass
class Order:
    order_id: int
    sku: str
    qty: int = 1


def test_typed_payloads(pgq_dsn: str) -> None:
    got: list[Order] = []
    worker = ThinWorker(pgq_dsn)

    @worker.entrypoint("orders")
    async def orders(job: Job[Order]) -> None:
        got.append(job.payload)

    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure("orders", max_attempts=1)
        ok = q.enqueue("orders", Order(order_id=1, sku="abc"))
        wrong_type = q.enqueue("orders", {"order_id": "one", "sku": "abc"})
        missing = q.enqueue("orders", {"sku": "abc"})
        unknown = q.enqueue("orders", {"order_id": 2, "sku": "x", "colour": "red"})
    worker.run(until_empty=True)

    rows = history(pgq_dsn)
    assert got == [Order(order_id=1, sku="abc", qty=1)]
    assert rows[ok]["status"] == "successful"
    for job_id, needle in ((wrong_type, "order_id"), (missing, "order_id"), (unknown, "colour")):
        assert rows[job_id]["status"] == "failed"
        assert rows[job_id]["details"]["error"] == "PayloadValidationError"
        assert needle in rows[job_id]["details"]["message"]


def test_typed_payload_with_pydantic(pgq_dsn: str) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Email(pydantic.BaseModel):  # type: ignore[misc, name-defined]
        to: str

    got: list[Any] = []
    worker = ThinWorker(pgq_dsn)

    @worker.entrypoint("mail", payload_type=Email)
    def mail(job: Job[Any]) -> None:
        got.append(job.payload)

    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure("mail", max_attempts=1)
        q.enqueue("mail", {"to": "a@b.c"})
        bad = q.enqueue("mail", {"too": 1})
    worker.run(until_empty=True)
    assert [g.to for g in got] == ["a@b.c"]
    assert history(pgq_dsn)[bad]["details"]["error"] == "PayloadValidationError"


def test_restrict_to_unknown_entrypoint_is_an_error() -> None:
    worker = ThinWorker("")

    @worker.entrypoint("a")
    def a(job: Job[Any]) -> None:
        pass

    with pytest.raises(UnknownEntrypoint, match="nope"):
        worker.restrict(["nope"])


def test_history_is_pruned_after_the_retention(pgq_dsn: str) -> None:
    """prune_once deletes finished jobs older than history_retention and keeps the rest."""
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        old, new = (conn.execute("SELECT pgq.enqueue('prune.me')").fetchone()[0] for _ in range(2))
        w = uuid.uuid4()
        for job_id, finished in ((old, "now() - interval '8 days'"), (new, "now()")):
            lease = conn.execute(
                "SELECT lease FROM pgq.claim(%s, ARRAY['prune.me']) WHERE id = %s", (w, job_id)
            ).fetchone()
            assert lease is not None, "claims take jobs in id order"
            conn.execute(
                f"SELECT pgq.complete(%s, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],"
                f" ARRAY['successful'], at => {finished})",
                (w, job_id, lease[0]),
            )
    worker = ThinWorker(pgq_dsn, history_retention=timedelta(days=7))

    @worker.entrypoint("prune.me")
    async def handler(job: Job[Any]) -> None:  # pragma: no cover - nothing is queued
        raise AssertionError

    async def scenario() -> int:
        async with worker:
            return await worker.prune_once()

    assert asyncio.run(scenario()) == 1
    assert sorted(history(pgq_dsn)) == [new]
    off = ThinWorker(pgq_dsn, history_retention=None)
    off.entrypoint("prune.me")(handler)

    async def disabled() -> int:
        async with off:
            return await off.prune_once()

    assert asyncio.run(disabled()) == 0
