"""pgq_thin.testing's Jobs beyond what the SQLAlchemy app's own suite uses: the async run, the
delay, run_at, dedupe_key and count checks, and the messages when they do not hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from helpers.db import aio

from pgq_thin import AsyncQueue, Job, Queue, ThinWorker
from pgq_thin.testing import ANY, Jobs


def test_the_checks_of_assert_enqueued(pgq_dsn: str) -> None:
    due = datetime(2030, 1, 1, tzinfo=UTC)
    with Queue(pgq_dsn) as queue:
        queue.enqueue("mail", {"to": "a"}, run_at=timedelta(minutes=5), dedupe_key="a")
        queue.enqueue("mail", {"to": "b"}, run_at=due)
        queue.enqueue("mail", {"to": "b"}, priority=3)
    jobs = Jobs(pgq_dsn)
    try:
        assert [j.payload for j in jobs.enqueued("mail")] == [{"to": "a"}, {"to": "b"}, {"to": "b"}]
        jobs.assert_enqueued("mail", {"to": "a"}, delay=timedelta(minutes=5), dedupe_key="a")
        jobs.assert_enqueued("mail", {"to": "b"}, run_at=due)
        jobs.assert_enqueued("mail", {"to": "b"}, count=2)
        jobs.assert_enqueued("mail", ANY, count=3)
        with pytest.raises(AssertionError, match=r"1 time\(s\), found 2"):
            jobs.assert_enqueued("mail", {"to": "b"}, count=1)
        with pytest.raises(AssertionError) as caught:
            jobs.assert_enqueued("mail", {"to": "a"}, delay=timedelta(minutes=6))
        assert "delay datetime.timedelta(seconds=360)" in str(caught.value)
        assert "delay 0:05:00, dedupe_key 'a'" in str(caught.value)
        with pytest.raises(AssertionError, match="expected no job of 'mail' enqueued"):
            jobs.assert_not_enqueued("mail")
        jobs.assert_not_enqueued("other")
        with pytest.raises(AssertionError, match=r"live jobs of 'other':\n  \(none\)"):
            jobs.assert_enqueued("other")
    finally:
        jobs.close()


@aio
async def test_the_async_run_uses_the_workers_own_handlers(pgq_dsn: str) -> None:
    worker = ThinWorker(poll_interval=0.05)  # no database of its own: the run names it
    seen: list[int] = []

    @worker.entrypoint("count")
    async def count(job: Job[dict[str, int]]) -> int:
        seen.append(job.payload["n"])
        if job.payload["n"] == 2:
            async with AsyncQueue(pgq_dsn) as more:  # a job enqueued by a handler runs too
                await more.enqueue("count", {"n": 3})
        return job.payload["n"] * 10

    async with AsyncQueue(pgq_dsn) as queue:
        await count.aenqueue(queue, {"n": 1})
        await queue.enqueue(count, {"n": 2})
    jobs = Jobs(pgq_dsn)
    try:
        ran = await jobs.arun(worker)
        assert ran.statuses == {"successful": 2}
        assert sorted(r.result for r in ran.results) == [10, 20]
        assert sorted(seen) == [1, 2, 3] and ran.left == []
        assert worker.dsn is None  # given back as it was
    finally:
        jobs.close()
