"""The fixed-rate producer grid shared by the benchmark agents (pgq-thin and PgQueuer).

Dependency-free (standard library only), so both agents import it: ``thin_agent.py`` in the
pgq-thin venv and ``peers/pgqueuer_agent.py`` in the peer venv.

A schedule is a list of phases, each an offered rate (jobs/s) held for some seconds. At every
tick the producer enqueues, in one batched call, every job that is due by now on a fixed grid
(rate x time since the phase began), so a late tick catches up and the offered rate holds.
Phases run back to back (``pause`` 0: the rate changes at the boundary without a gap) or with
a pause between them. The caller supplies the enqueue call; the grid keeps per phase the jobs
sent, the calls made, the lag behind the grid and a histogram of enqueue call durations (the
longest pause a producer saw: a table lock on the hot table shows up here).

    grid = Grid([(2000, 30), (5000, 30)], tick_ms=10, max_batch=1000)
    for phase, k in grid.steps():          # sleeps between ticks itself
        t = time.time_ns()
        enqueue(k jobs with payload {"t": t, "p": phase})
        grid.sent(phase, k, time.time_ns() - t)
    grid.report()                          # one dict per phase

The async variant ``asteps`` awaits ``asyncio.sleep`` instead of sleeping.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any


class Histogram:
    """Log-spaced buckets (1 % precision) of microsecond values; same layout as
    ``common.LogHistogram`` (kept here so this module needs nothing else)."""

    def __init__(self, lo_us: float = 1.0, hi_us: float = 1e9, precision: float = 0.01) -> None:
        self.lo = lo_us
        self.base = math.log1p(precision)
        self.n = int(math.log(hi_us / lo_us) / self.base) + 2
        self.counts: dict[int, int] = {}
        self.total = 0
        self.max_us = 0.0

    def record(self, us: float) -> None:
        idx = 0 if us <= self.lo else min(self.n - 1, int(math.log(us / self.lo) / self.base) + 1)
        self.counts[idx] = self.counts.get(idx, 0) + 1
        self.total += 1
        self.max_us = max(self.max_us, us)

    def percentile(self, p: float) -> float:
        if not self.total:
            return float("nan")
        rank = max(1, math.ceil(self.total * p / 100.0))
        seen = 0
        for idx in sorted(self.counts):
            seen += self.counts[idx]
            if seen >= rank:
                return min(self.max_us, self.lo * math.exp(self.base * idx))
        return self.max_us


class Grid:
    def __init__(
        self,
        phases: Sequence[tuple[float, float]],
        tick_ms: float = 10.0,
        max_batch: int = 1000,
        pause: float = 0.0,
        start_ns: int | None = None,
    ) -> None:
        """phases: (rate, seconds) each. start_ns: wall clock (time.time_ns) at which the first
        phase begins (the producer waits for it), so another process can act on the phase
        boundaries; None: now."""
        self.phases = [(float(r), float(s)) for r, s in phases]
        self.tick = tick_ms / 1000.0
        self.max_batch = max_batch
        self.pause = pause
        self.start_ns = start_ns
        self.stats: list[dict[str, Any]] = []
        self._enq: list[Histogram] = []

    def _wait_until_ns(self, t_ns: int) -> float:
        return max(0.0, (t_ns - time.time_ns()) / 1e9)

    def _plan(self) -> Iterator[tuple[str, Any]]:
        """Yields ("sleep", seconds) or ("send", (phase, k)); reads the clock itself."""
        if self.start_ns is not None:
            yield "sleep", self._wait_until_ns(self.start_ns)
        # Phase p starts at an absolute time on the wall clock (back to back, or after a pause),
        # so the boundaries do not drift with the producer's own delays.
        begin_ns = time.time_ns() if self.start_ns is None else self.start_ns
        for p, (rate, seconds) in enumerate(self.phases):
            total = int(rate * seconds)
            st: dict[str, Any] = {
                "phase": p,
                "rate": rate,
                "seconds_planned": seconds,
                "sent": 0,
                "calls": 0,
                "max_lag_ms": 0.0,
                "start_ns": begin_ns,
            }
            self.stats.append(st)
            self._enq.append(Histogram())
            end_ns = begin_ns + int(seconds * 1e9)
            i = 0
            # Bounded: the phase ends at its planned time; jobs not sent by then are not sent
            # (the producer fell behind: "sent" shows it).
            while st["sent"] < total and time.time_ns() < end_ns + int(1e9):
                i += 1
                elapsed = (time.time_ns() - begin_ns) / 1e9
                due = min(total, int(elapsed * rate) + 1)
                if due > st["sent"]:
                    k = min(due - st["sent"], self.max_batch)
                    st["max_lag_ms"] = max(st["max_lag_ms"], (elapsed - st["sent"] / rate) * 1000.0)
                    yield "send", (p, k)
                delay = (begin_ns + int(i * self.tick * 1e9) - time.time_ns()) / 1e9
                if delay > 0:
                    yield "sleep", delay
            yield "sleep", self._wait_until_ns(end_ns)
            st["end_ns"] = time.time_ns()
            begin_ns = end_ns + int(self.pause * 1e9)
            if self.pause:
                yield "sleep", self._wait_until_ns(begin_ns)

    def steps(self) -> Iterator[tuple[int, int]]:
        for kind, v in self._plan():
            if kind == "sleep":
                if v > 0:
                    time.sleep(v)
            else:
                yield v

    async def asteps(self) -> AsyncIterator[tuple[int, int]]:
        for kind, v in self._plan():
            if kind == "sleep":
                if v > 0:
                    await asyncio.sleep(v)
            else:
                yield v

    def sent(self, phase: int, k: int, call_ns: int) -> None:
        """Record an enqueue call of k jobs that took call_ns."""
        st = self.stats[phase]
        st["sent"] += k
        st["calls"] += 1
        self._enq[phase].record(call_ns / 1000.0)

    def report(self) -> list[dict[str, Any]]:
        out = []
        for st, h in zip(self.stats, self._enq, strict=True):
            end = st.get("end_ns", time.time_ns())
            out.append(
                {
                    **st,
                    "seconds": (end - st["start_ns"]) / 1e9,
                    "enqueue_p50_ms": h.percentile(50) / 1000.0,
                    "enqueue_p99_ms": h.percentile(99) / 1000.0,
                    "enqueue_max_ms": h.max_us / 1000.0,
                }
            )
        return out


def phases_arg(rates: str, seconds: float) -> list[tuple[float, float]]:
    """The steady benchmarks' phases: each rate of "R1,R2" for the same seconds."""
    return [(float(r), seconds) for r in rates.split(",")]


def schedule_arg(text: str) -> list[tuple[float, float]]:
    """A schedule as "rate:seconds,rate:seconds" (held_horizon.py)."""
    out = []
    for part in text.split(","):
        rate, seconds = part.split(":")
        out.append((float(rate), float(seconds)))
    return out


class PickupRecorder:
    """The worker side of held_horizon.py, the same in both agents: per phase of the producer's
    schedule, a histogram of pickup latency (handler start minus the producer's clock just
    before its enqueue call: both processes read this machine's clock), the jobs started by the
    phase's end plus ``grace`` seconds ("in time"), handler starts per second of the run (any
    phase), and job ids seen twice (a job run again)."""

    def __init__(self, phases: Sequence[tuple[float, float]], start_ns: int, grace: float) -> None:
        self.start_ns = start_ns
        self.ends: list[int] = []
        t = start_ns
        for _, seconds in phases:
            t += int(seconds * 1e9)
            self.ends.append(t + int(grace * 1e9))
        self.hists = [Histogram() for _ in phases]
        self.in_time = [0] * len(phases)
        self.per_second: dict[int, int] = {}
        self.seen: set[Any] = set()
        self.dups = 0

    def record(self, job_id: Any, phase: int, sent_ns: int, now_ns: int) -> None:
        if job_id in self.seen:
            self.dups += 1
        else:
            self.seen.add(job_id)
        self.hists[phase].record((now_ns - sent_ns) / 1000.0)
        if now_ns <= self.ends[phase]:
            self.in_time[phase] += 1
        sec = (now_ns - self.start_ns) // 1_000_000_000
        self.per_second[sec] = self.per_second.get(sec, 0) + 1

    def report(self) -> dict[str, Any]:
        return {
            "handled": sum(h.total for h in self.hists),
            "unique": len(self.seen),
            "dups": self.dups,
            "per_second": {str(k): v for k, v in sorted(self.per_second.items())},
            "phases": [
                {
                    "handled": h.total,
                    "in_time": n,
                    "p50_ms": h.percentile(50) / 1000.0,
                    "p95_ms": h.percentile(95) / 1000.0,
                    "p99_ms": h.percentile(99) / 1000.0,
                    "max_ms": h.max_us / 1000.0,
                }
                for h, n in zip(self.hists, self.in_time, strict=True)
            ],
        }
