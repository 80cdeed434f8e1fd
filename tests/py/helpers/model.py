# ruff: noqa: E501 - diagnostics quote whole rows and statements
"""A Python model of the job lifecycle contract (docs/sql-api.md) and a runner that drives
random step sequences against a real database, checking it against the model after every step.

The model is written from the documentation, never from the SQL's answers: where a value is
random (backoff jitter) the answer is checked against its documented range and then adopted;
where the documentation leaves an order open (jobs that became runnable in one statement) the
model keeps them as a tie and accepts any order among them.

A sequence is a list of symbolic steps (dicts); the runner resolves each step against the model's
state (which worker holds what, which leases are stale) with the step's own random seed, so a
shorter sequence (when shrinking) still replays deterministically. Every statement sent is
recorded as literal SQL, so a failure prints a psql script that reproduces it on a fresh install.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

EPS = ["m.a", "m.b", "m.c"]
WORKERS = [str(uuid.UUID(int=0x5EED0000_0000_4000_8000_000000000000 + i)) for i in range(1, 4)]
OTHER_WORKER = str(uuid.UUID(int=0x5EED0000_0000_4000_8000_0000000000FF))
PRIORITIES = [-1, 0, 0, 0, 5]
KEYS = [f"k{i}" for i in range(6)]
GROUPS = ["g0", "g1", "g2"]  # group keys (per-key limits and fair share)
DEFAULT_POLICY = {
    "limit": None,
    "max_attempts": 5,
    "base": 1.0,
    "max": 300.0,
    "hb": 30.0,
    "paused": False,
    "rate": None,  # rate_limit: starts per period (docs/sql-api.md, "Rate limits")
    "period": None,  # rate_period, seconds
    "key_limit": None,  # key_concurrency_limit: running jobs per group key (docs/sql-api.md)
    "per_key": False,  # rate_per_key: the rate limit applies to each group key (no key: one budget)
}
WHOLE = "*"  # the budget of a rate limit that is not per key (a group key is never "*" here)
TERMINAL = ("successful", "failed", "canceled")

# Readings of the contract where its text leaves room (each is reported with the test's
# findings; a replay script may flip one to look past a known mismatch, the suite never does).
# "Its attempt count is restored (a release is not an attempt)": also for a job the release
# ends as canceled.
RELEASE_CANCELED_RESTORES_ATTEMPT = True
# "interrupted: ... the attempt not counted (as pgq.release)": also when it ends canceled.
INTERRUPTED_CANCELED_RESTORES_ATTEMPT = True
# Decision 3, "a repeated complete answers what was decided the first time" (the error entry
# with that lease records the decision): also once the job has since finished (under another
# lease), its error list in history.
REPLAY_ANSWERS_FROM_FINISHED_JOB = True
# "after max_interruptions (default 3) consecutive interrupted attempts the next interruption
# counts as a failed attempt" (docs/sql-api.md, pgq.complete); the model never configures it.
MAX_INTERRUPTIONS = 3
# "lease and worker_id of the attempt that finished it": a release that ends a job canceled
# finished no attempt (it never started), so history records no lease, worker or start time
# (docs/sql-api.md, pgq.release).
RELEASE_HISTORY_HAS_LEASE = False
T_EPS = timedelta(microseconds=2)


class Mismatch(AssertionError):
    """The database disagrees with the model. ``kind`` names the check (used by the shrinker
    to keep shrinking towards the same failure)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"[{kind}] {message}")
        self.kind = kind


class Skip(Exception):
    """The step has nothing well-defined to do in this state (the runner sends nothing)."""


# -- SQL literals: the runner sends literal SQL so that the recorded script is what ran -------


def q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def ts(t: datetime) -> str:
    return q(t.astimezone(UTC).isoformat()) + "::timestamptz"


def arr(values: list[Any], typ: str) -> str:
    if not values:
        return f"'{{}}'::{typ}[]"
    items = ["NULL" if v is None else (q(v) if isinstance(v, str) else str(v)) for v in values]
    return f"ARRAY[{', '.join(items)}]::{typ}[]"


def js(v: Any) -> str:
    return q(json.dumps(v)) + "::jsonb"


def uu(u: str) -> str:
    return q(u) + "::uuid"


def iv(seconds: float) -> str:
    return q(f"{seconds} seconds") + "::interval"


def parse_ts(s: str) -> datetime:
    return datetime.fromisoformat(s)


# -- the model ---------------------------------------------------------------------------------


@dataclass
class Job:
    id: int
    ep: str
    priority: int
    payload: Any
    key: str | None
    status: str
    attempt: int = 0
    run_at: datetime | None = None  # None: "now()" of the enqueue, adopted when first seen
    ready: tuple[Any, ...] | None = None
    lease: int | None = None
    worker: str | None = None
    started_at: datetime | None = None
    heartbeat_at: datetime | None = None
    cancel_requested: bool = False
    claim_request: str | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    finished_at: datetime | None = None
    hist_lease: int | None = None  # lease/worker of the attempt that finished it (None: unknown)
    hist_worker: str | None = None
    hist_by: str | None = None  # complete | release | cancel | sweep
    details: Any = None
    details_known: bool = False
    enqueued_at: datetime | None = None
    group: str | None = None  # its group key
    epoch: int = 0  # bumped at every claim: a retry's stored run_at is only comparable within one


@dataclass
class CompleteRecord:
    worker: str
    ids: list[int]
    leases: list[int]
    outcomes: list[str]
    details: list[Any] | None
    at: datetime
    rows: dict[int, dict[str, Any]]  # job id -> first answer row (accepted ones)
    entry: dict[int, bool]  # job id -> the first call appended an error entry
    epoch: dict[int, int]


class Model:
    def __init__(self, start: datetime, real_now: datetime) -> None:
        self.clock = start
        self.real_now = real_now
        self.jobs: dict[int, Job] = {}
        self.policy: dict[str, dict[str, Any]] = {}
        self.ready_counter = 0
        self.last_sweep_touch: datetime | None = None  # latest time a sweep may have run
        self.max_id = 0
        self.leases: set[int] = set()
        self.held: dict[str, list[tuple[int, int]]] = {w: [] for w in WORKERS}
        self.claims: dict[str, dict[str, Any]] = {}  # worker -> last claim call (for re-sends)
        self.completes: list[CompleteRecord] = []
        self.answered: dict[tuple[str, int], tuple[CompleteRecord, int]] = {}
        self.frac = 0
        self.stats: dict[str, int] = {}
        # rate limits: every start (recorded time, jobs) of a budget since its limit was set; a
        # budget is (entrypoint, WHOLE), or with rate_per_key (entrypoint, group key or None)
        self.starts: dict[tuple[str, str | None], list[tuple[datetime, int]]] = {}

    def bump(self, what: str, n: int = 1) -> None:
        self.stats[what] = self.stats.get(what, 0) + n

    def next_ready(self) -> int:
        self.ready_counter += 1
        return self.ready_counter

    def pol(self, ep: str) -> dict[str, Any]:
        return self.policy.get(ep, DEFAULT_POLICY)

    def ensure_ep(self, ep: str) -> None:
        if ep not in self.policy:
            self.policy[ep] = dict(DEFAULT_POLICY)

    def budget(self, ep: str, group: str | None) -> tuple[str, str | None]:
        """The rate budget a job of `group` starts from."""
        return (ep, group if self.pol(ep)["per_key"] else WHOLE)

    def rate_room(self, budget: tuple[str, str | None], at: datetime) -> float:
        """Starts a rate budget leaves at `at`: the limit minus every start later than
        at - period (also those stamped after `at`)."""
        p = self.pol(budget[0])
        if p["rate"] is None:
            return math.inf
        since = at - timedelta(seconds=p["period"])
        return max(0, p["rate"] - sum(n for t, n in self.starts.get(budget, []) if t > since))

    def live(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.status not in TERMINAL]

    def running(self, ep: str | None = None) -> list[Job]:
        return [
            j for j in self.jobs.values() if j.status == "running" and (ep is None or j.ep == ep)
        ]

    def live_key_holder(self, key: str) -> Job | None:
        for j in self.live():
            if j.key == key:
                return j
        return None

    # -- the sweep and the promotion (shared by claim and maintain) ----------------------------

    def sweep_plan(self, at: datetime) -> list[tuple[Job, str]]:
        """What the stale sweep does at ``at``: (job, 'failed' | 'canceled' | 'queued')."""
        plan = []
        for j in sorted(self.running(), key=lambda j: j.id):
            p = self.pol(j.ep)
            assert j.heartbeat_at is not None
            if not j.heartbeat_at < at - timedelta(seconds=p["hb"]):
                continue
            if j.cancel_requested:
                plan.append((j, "canceled"))
            elif j.attempt >= p["max_attempts"]:
                plan.append((j, "failed"))
            elif p["paused"] or p["limit"] == 0:
                # pgq.pause: stale jobs of a paused entrypoint stay running ("concurrency_limit
                # = 0 still pauses too")
                continue
            else:
                plan.append((j, "queued"))
        return plan

    def apply_sweep(self, at: datetime) -> int:
        plan = self.sweep_plan(at)
        group = self.next_ready()
        for j, fate in plan:
            record = {
                "error": "heartbeat timeout",
                "worker_id": j.worker,
                "heartbeat_at": j.heartbeat_at,
            }
            j.errors.append({"kind": "timeout", "attempt": j.attempt, "at": at, "details": record})
            if fate == "queued":
                j.status = "queued"
                j.ready = (group, 0)
                self.bump("swept_queued")
            else:
                j.status = fate
                j.finished_at = at
                j.hist_by = "sweep"
                j.hist_lease = None
                j.hist_worker = j.worker
                j.details = record
                j.details_known = True
                self.bump(f"swept_{fate}")
            j.lease = j.worker = j.started_at = j.heartbeat_at = None
            j.claim_request = None
            j.cancel_requested = False
        self.last_sweep_touch = at
        return len(plan)

    def promotable(self, at: datetime, eps: list[str] | None) -> list[Job]:
        return sorted(
            (
                j
                for j in self.jobs.values()
                if j.status == "scheduled" and (eps is None or j.ep in eps) and j.run_at <= at  # type: ignore[operator]
            ),
            key=lambda j: j.run_at,  # type: ignore[arg-type,return-value]
        )

    def apply_promotion(self, at: datetime, eps: list[str] | None) -> int:
        jobs = self.promotable(at, eps)
        group = self.next_ready()
        for j in jobs:
            j.status = "queued"
            j.ready = (group, j.run_at.timestamp())  # type: ignore[union-attr]
        if jobs:
            self.bump("promoted", len(jobs))
        return len(jobs)


# -- the runner ---------------------------------------------------------------------------------


@dataclass
class Runner:
    conn: psycopg.Connection[Any]
    model: Model
    script: list[str] = field(default_factory=list)
    step_no: int = 0

    # -- talking to the database --------------------------------------------------------------

    def sql(self, text: str) -> list[tuple[Any, ...]]:
        self.script.append(text + ";")
        cur = self.conn.execute(text)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []

    def sql_error(self, text: str) -> str | None:
        """Run a statement expected to fail; returns its SQLSTATE (None: it succeeded)."""
        self.script.append(text + ";  -- expected to fail")
        try:
            self.conn.execute(text)  # type: ignore[arg-type]
        except psycopg.Error as e:
            return e.sqlstate
        return None

    def fail(self, kind: str, msg: str) -> None:
        raise Mismatch(kind, f"step {self.step_no}: {msg}")

    # -- the steps ----------------------------------------------------------------------------

    def run_step(self, step: dict[str, Any]) -> None:
        m = self.model
        m.clock += timedelta(seconds=step["dt"])
        rng = random.Random(step["r"])
        getattr(self, "op_" + step["op"])(rng, step)
        m.bump("op_" + step["op"])

    def _new_run_at(self, rng: random.Random) -> tuple[datetime | None, bool]:
        """(run_at, due now): NULL, a past time, or a future one on the model's clock."""
        m = self.model
        m.frac += 1
        choice = rng.random()
        if choice < 0.6:
            return None, True
        if choice < 0.75:
            return m.real_now - timedelta(
                days=1, seconds=rng.randint(0, 1000), microseconds=m.frac
            ), True
        return m.clock + timedelta(seconds=rng.randint(1, 20), microseconds=m.frac), False

    def _enqueue(self, rng: random.Random, n: int, single: bool) -> None:
        m = self.model
        elems = []
        for _ in range(n):
            run_at, due = self._new_run_at(rng)
            elems.append(
                {
                    "ep": rng.choice(EPS),
                    "payload": {"n": rng.randint(0, 10**6)},
                    "priority": rng.choice(PRIORITIES),
                    "run_at": run_at,
                    "due": due,
                    "key": rng.choice(KEYS) if rng.random() < 0.4 else None,
                    "group": rng.choice(GROUPS) if rng.random() < 0.5 else None,
                }
            )
        on_conflict = rng.choice(["raise", "existing"])
        if single:
            e = elems[0]
            text = (
                f"SELECT pgq.enqueue({q(e['ep'])}, {js(e['payload'])}, priority => {e['priority']}"
                + (f", run_at => {ts(e['run_at'])}" if e["run_at"] else "")
                + (f", dedupe_key => {q(e['key'])}" if e["key"] else "")
                + (f", group_key => {q(e['group'])}" if e["group"] else "")
                + f", on_conflict => {q(on_conflict)})"
            )
        else:
            text = (
                f"SELECT id FROM pgq.enqueue_many({arr([e['ep'] for e in elems], 'text')}, "
                f"{js([e['payload'] for e in elems])}, "
                f"priorities => {arr([e['priority'] for e in elems], 'int')}, "
                f"run_ats => {arr([e['run_at'].isoformat() if e['run_at'] else None for e in elems], 'timestamptz')}, "
                f"dedupe_keys => {arr([e['key'] for e in elems], 'text')}, "
                f"group_keys => {arr([e['group'] for e in elems], 'text')}, "
                f"on_conflict => {q(on_conflict)})"
            )
        # the model's decision, element by element
        expected: list[int | None] = []  # an existing id, or None for a new job
        seen: dict[str, int] = {}  # key -> position in this call
        conflict = False
        for pos, e in enumerate(elems):
            k = e["key"]
            if k is None:
                expected.append(None)
                continue
            holder = m.live_key_holder(k)
            if k in seen:
                if on_conflict == "raise":
                    conflict = True
                expected.append(-1 - seen[k])  # same id as that position
            elif holder is not None:
                if on_conflict == "raise":
                    conflict = True
                expected.append(holder.id)
            else:
                seen[k] = pos
                expected.append(None)
        if conflict:
            state = self.sql_error(text)
            if state != "PQ007":
                self.fail(
                    "enqueue", f"expected PQ007 (dedupe key held, on_conflict raise), got {state}"
                )
            return
        rows = self.sql(text)
        ids = [r[0] for r in rows]
        if len(ids) != n:
            self.fail("enqueue", f"{n} elements, {len(ids)} ids returned: {ids}")
        last = m.max_id
        new_ready: list[Job] = []
        for pos, (e, exp) in enumerate(zip(elems, expected, strict=False)):
            got = ids[pos]
            if exp is None:
                if got <= last:
                    self.fail(
                        "enqueue", f"position {pos + 1}: new id {got} not above {last} (ids {ids})"
                    )
                last = got
                m.ensure_ep(e["ep"])
                j = Job(
                    id=got,
                    ep=e["ep"],
                    priority=e["priority"],
                    payload=e["payload"],
                    key=e["key"],
                    status="queued" if e["due"] else "scheduled",
                    run_at=e["run_at"],
                    group=e["group"],
                )
                m.jobs[got] = j
                if e["due"]:
                    new_ready.append(j)
            elif exp < 0:
                if got != ids[-1 - exp]:
                    self.fail(
                        "enqueue", f"position {pos + 1}: same key as position {-exp}, ids {ids}"
                    )
            elif got != exp:
                self.fail(
                    "enqueue",
                    f"position {pos + 1}: key {e['key']} held by job {exp}, answered {got}",
                )
        m.max_id = max(m.max_id, last)
        for j in new_ready:  # input order
            j.ready = (m.next_ready(), 0)

    def op_enqueue(self, rng: random.Random, step: dict[str, Any]) -> None:
        self._enqueue(rng, 1, single=True)

    def op_enqueue_many(self, rng: random.Random, step: dict[str, Any]) -> None:
        self._enqueue(rng, rng.randint(1, 5), single=False)

    def _sweep_before(self, at: datetime) -> bool:
        """Whether a claim at ``at`` sweeps. The sweep runs at most once a second of the claim
        clock: at least 2 s after the last possible sweep it surely runs; closer than that the
        model cannot tell, so the clock is moved on when there is something to sweep."""
        m = self.model
        if m.last_sweep_touch is None or at - m.last_sweep_touch >= timedelta(seconds=2):
            return True
        if m.sweep_plan(at):
            m.clock = m.last_sweep_touch + timedelta(seconds=2)
            return True
        m.last_sweep_touch = at  # it may have run (nothing to do)
        return False

    def op_claim(self, rng: random.Random, step: dict[str, Any]) -> None:
        m = self.model
        w = rng.choice(WORKERS)
        prev = m.claims.get(w)
        resend = prev is not None and prev["request"] is not None and rng.random() < 0.3
        if resend:
            assert prev is not None
            eps, batch, request = prev["eps"], prev["batch"], prev["request"]
        else:
            eps = rng.sample(EPS, rng.randint(1, 3))
            batch = rng.choice([1, 1, 2, 3, 5])
            request = (
                str(uuid.UUID(int=rng.getrandbits(128), version=4)) if rng.random() < 0.6 else None
            )
        replay = [
            j
            for j in m.running()
            if request is not None and j.claim_request == request and j.worker == w and j.ep in eps
        ]
        if replay and (m.sweep_plan(m.clock) or m.promotable(m.clock, eps)):
            # whether a re-sent claim sweeps and promotes before answering is not documented:
            # a maintain first leaves it nothing to sweep or promote
            self.op_maintain(rng, {"rotate": False})
            replay = [j for j in replay if j.status == "running"]
        at = m.clock
        if not replay:
            sweeps = self._sweep_before(at)
            at = m.clock
        text = (
            f"SELECT id, lease, entrypoint, payload, priority, attempt, run_at, dedupe_key, "
            f"max_attempts, extract(epoch FROM heartbeat_timeout)::float8, heartbeat_timeout_s, "
            f"last_attempt, enqueued_at FROM pgq.claim({uu(w)}, {arr(eps, 'text')}, {batch}, "
            f"{ts(at)}" + (f", request_id => {uu(request)}" if request else "") + ")"
        )
        m.claims[w] = {"eps": eps, "batch": batch, "request": request}
        if replay:
            rows = self.sql(text)
            exp = sorted(replay, key=lambda j: (-j.priority, j.ready))
            got = [r[0] for r in rows]
            if sorted(got) != sorted(j.id for j in exp):
                self.fail(
                    "claim-resend",
                    f"re-sent claim {request} of {w}: expected the jobs still running under it "
                    f"{[j.id for j in exp]}, got {got}",
                )
            self._check_order(rows, "claim-resend")
            for r in rows:
                j = m.jobs[r[0]]
                if r[1] != j.lease or r[5] != j.attempt:
                    self.fail(
                        "claim-resend",
                        f"job {j.id}: answered lease/attempt {r[1]}/{r[5]}, holds {j.lease}/{j.attempt}",
                    )
                j.heartbeat_at = at
            m.bump("claim_resend_answered")
            return
        if sweeps:
            m.apply_sweep(at)
        m.apply_promotion(at, eps)
        rows = self.sql(text)
        # which jobs may be taken: per entrypoint the room its limit leaves, then the best batch
        room: dict[str, float] = {}
        for ep in set(eps):
            p = m.pol(ep)
            if ep not in m.policy or p["paused"]:
                room[ep] = 0
            elif p["limit"] is None:
                room[ep] = math.inf
            else:
                room[ep] = max(0, p["limit"] - len(m.running(ep)))
            if not p["per_key"]:
                room[ep] = min(room[ep], m.rate_room((ep, WHOLE), at))
        cands = {j.id: j for j in m.jobs.values() if j.status == "queued" and j.ep in room}
        # Key-limited entrypoints (key_concurrency_limit, or a rate limit per key): each group
        # key within its limits (running jobs, starts in the window; under a rate per key the
        # jobs without a key have one budget too), and keys taken in turn (fair share), not
        # best-first: the contract checked for them is the limits per key and that a claim with
        # room takes some job of theirs.
        keyed = {
            ep
            for ep in room
            if m.pol(ep)["key_limit"] is not None
            or (m.pol(ep)["per_key"] and m.pol(ep)["rate"] is not None)
        }
        key_room: dict[tuple[str, str | None], float] = {}

        def kroom(c: Job) -> float:
            if c.ep not in keyed:
                return math.inf
            if (c.ep, c.group) not in key_room:
                p = m.pol(c.ep)
                r = math.inf
                if p["key_limit"] is not None and c.group is not None:
                    busy = sum(1 for x in m.running(c.ep) if x.group == c.group)
                    r = p["key_limit"] - busy
                if p["per_key"]:
                    r = min(r, m.rate_room(m.budget(c.ep, c.group), at))
                key_room[(c.ep, c.group)] = r
            return key_room[(c.ep, c.group)]

        open_keyed = {
            c.ep for c in cands.values() if c.ep in keyed and room[c.ep] > 0 and kroom(c) > 0
        }
        # A claim of one key-limited entrypoint takes a job of every group with room (each key,
        # and the jobs without one) before any group gets a second: at least this many.
        one_keyed = len(set(eps)) == 1 and eps[0] in keyed
        groups = {c.group for c in cands.values() if c.ep in keyed and kroom(c) > 0}
        at_least = min(batch, room[eps[0]], len(groups)) if one_keyed else 0
        taken: list[Job] = []
        for pos, r in enumerate(rows):
            j = cands.get(r[0])
            if j is None:
                self.fail(
                    "claim",
                    f"claimed job {r[0]} is not a queued job of {eps} in the model (answer {[x[0] for x in rows]})",
                )
                return
            if room[j.ep] <= 0:
                self.fail(
                    "claim",
                    f"claimed job {j.id} of {j.ep} beyond its room (limit {m.pol(j.ep)['limit']}, paused {m.pol(j.ep)['paused']})",
                )
            if kroom(j) <= 0:
                self.fail(
                    "claim-key",
                    f"claimed job {j.id} of {j.ep}, key {j.group}, beyond its key limits (running {m.pol(j.ep)['key_limit']}, rate per key {m.pol(j.ep)['rate'] if m.pol(j.ep)['per_key'] else None})",
                )
            key = (-j.priority, j.ready)
            better = [
                c.id
                for c in cands.values()
                if room[c.ep] > 0
                and c.ep not in keyed
                and c.id not in {t.id for t in taken}
                and (-c.priority, c.ready) < key
            ]  # type: ignore[operator]
            if better:
                self.fail(
                    "claim-order",
                    f"claim answer {[x[0] for x in rows]} took job {j.id} at position {pos + 1} before {better} (priority desc, then ready order)",
                )
            taken.append(j)
            room[j.ep] -= 1
            if (j.ep, j.group) in key_room:
                key_room[(j.ep, j.group)] -= 1
            del cands[j.id]
        left = [c.id for c in cands.values() if room[c.ep] > 0 and c.ep not in keyed]
        if len(rows) < batch and left:
            self.fail(
                "claim", f"claimed {len(rows)} of batch {batch}, but {left} could still be claimed"
            )
        m.bump(
            "claimed_within_key_limits",
            sum(1 for t in taken if t.ep in keyed and t.group is not None),
        )
        if len(rows) < at_least:
            self.fail(
                "claim-key",
                f"claimed {len(rows)} of batch {batch} from key-limited {eps[0]}, whose groups {sorted(map(str, groups))} each had a job within their limits",
            )
        starved = sorted(open_keyed - {t.ep for t in taken})
        if len(rows) < batch and starved:
            self.fail(
                "claim-key",
                f"claimed {len(rows)} of batch {batch}, none of key-limited {starved}, which had jobs within their limits",
            )
        for r, j in zip(rows, taken, strict=False):
            p = m.pol(j.ep)
            lease = r[1]
            if lease in m.leases:
                self.fail("lease", f"job {j.id}: lease {lease} given before")
            m.leases.add(lease)
            j.status = "running"
            j.attempt += 1
            j.lease, j.worker, j.started_at, j.heartbeat_at = lease, w, at, at
            j.claim_request = request
            j.epoch += 1
            m.held[w].append((j.id, lease))
            if j.run_at is None:
                j.run_at = r[6]
            if j.enqueued_at is None:
                j.enqueued_at = r[12]
            exp = (
                j.ep,
                j.payload,
                j.priority,
                j.attempt,
                j.run_at,
                j.key,
                p["max_attempts"],
                p["hb"],
                p["hb"],
                j.attempt >= p["max_attempts"],
                j.enqueued_at,
            )
            got = (r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12])
            if exp != got:
                self.fail("claim-row", f"job {j.id}: claimed row {got}, model {exp}")
        for budget, n in Counter(m.budget(j.ep, j.group) for j in taken).items():
            if m.pol(budget[0])["rate"] is not None:
                # recorded at the later of the claim's time and the budget's last recorded one
                log = m.starts.setdefault(budget, [])
                log.append((max([at] + [t for t, _ in log[-1:]]), n))
                m.bump("rate_starts_per_key" if budget[1] != WHOLE else "rate_starts", n)
        m.bump("claimed", len(rows))

    def _check_order(self, rows: list[tuple[Any, ...]], kind: str) -> None:
        keys = [(-self.model.jobs[r[0]].priority, self.model.jobs[r[0]].ready) for r in rows]
        if any(a > b for a, b in itertools.pairwise(keys)):  # type: ignore[operator]
            self.fail(kind, f"answer {[r[0] for r in rows]} not by priority desc, then ready order")

    def _pick(
        self, rng: random.Random, w: str, zombie_p: float = 0.25
    ) -> tuple[list[int], list[int]]:
        """Some jobs the worker holds (current leases) and perhaps one it held once (a stale
        lease: a zombie write)."""
        m = self.model
        mine = [(j.id, j.lease) for j in sorted(m.running(), key=lambda j: j.id) if j.worker == w]
        picked = rng.sample(mine, rng.randint(min(1, len(mine)), len(mine))) if mine else []
        stale = [
            (i, lease)
            for i, lease in m.held[w]
            if m.jobs[i].lease != lease and i not in {p[0] for p in picked}
        ]
        if stale and rng.random() < zombie_p:
            picked.insert(rng.randint(0, len(picked)), rng.choice(stale))
        return [p[0] for p in picked], [p[1] for p in picked]  # type: ignore[misc]

    def op_heartbeat(self, rng: random.Random, step: dict[str, Any]) -> None:
        m = self.model
        w = rng.choice(WORKERS)
        ids, leases = self._pick(rng, w)
        at = m.clock
        rows = self.sql(
            f"SELECT id, state FROM pgq.heartbeat({uu(w)}, {arr(ids, 'bigint')}, {arr(leases, 'bigint')}, {ts(at)})"
        )
        exp = []
        for i, lease in zip(ids, leases, strict=False):
            j = m.jobs[i]
            if j.status == "running" and j.worker == w and j.lease == lease:
                exp.append((i, "cancel_requested" if j.cancel_requested else "ok"))
                j.heartbeat_at = at
            else:
                exp.append((i, "lost"))
                m.bump("zombie_heartbeat")
        if [tuple(r) for r in rows] != exp:
            self.fail("heartbeat", f"answer {rows}, model {exp}")

    def _details(self, rng: random.Random, outcome: str) -> Any:
        c = rng.random()
        if c < 0.25:
            return None
        if outcome == "failed" and c < 0.5:
            return {
                "error": "rate limited",
                "retry_after": rng.choice([0, round(rng.uniform(0.5, 30), 3)]),
            }
        if outcome == "successful":
            return {"result": rng.randint(0, 99)}
        return {"error": "boom", "n": rng.randint(0, 99)}

    def op_complete(self, rng: random.Random, step: dict[str, Any]) -> None:
        m = self.model
        w = rng.choice(WORKERS)
        ids, leases = self._pick(rng, w)
        outcomes = [
            rng.choice(
                [
                    "successful",
                    "failed",
                    "failed",
                    "interrupted",
                    "interrupted",
                    "canceled",
                    "fatal",
                ]
            )
            for _ in ids
        ]
        details = [self._details(rng, o) for o in outcomes] if rng.random() < 0.85 else None
        self._complete(w, ids, leases, outcomes, details, m.clock, record=True)

    def op_complete_replay(self, rng: random.Random, step: dict[str, Any]) -> None:
        m = self.model
        if not m.completes:
            raise Skip
        rec = rng.choice(m.completes)
        w = rec.worker if rng.random() < 0.85 else OTHER_WORKER
        self._complete(w, rec.ids, rec.leases, rec.outcomes, rec.details, rec.at, record=False)

    def _complete(
        self,
        w: str,
        ids: list[int],
        leases: list[int],
        outcomes: list[str],
        details: list[Any] | None,
        at: datetime,
        record: bool,
    ) -> None:
        m = self.model
        text = (
            f"SELECT id, status, attempt, max_attempts, run_at, retry_in_s FROM pgq.complete({uu(w)}, "
            f"{arr(ids, 'bigint')}, {arr(leases, 'bigint')}, {arr(outcomes, 'text')}, "
            f"{'NULL' if details is None else js(details)}, {ts(at)})"
        )
        rows = self.sql(text)
        got = {r[0]: r for r in rows}
        if [r[0] for r in rows] != [i for i in ids if i in got] or len(got) != len(rows):
            self.fail("complete", f"answer ids {[r[0] for r in rows]} not in input order of {ids}")
        rec = CompleteRecord(w, ids, leases, outcomes, details, at, {}, {}, {})
        queued_now: list[Job] = []
        exp_ids = []
        for pos, (i, lease, outcome) in enumerate(zip(ids, leases, outcomes, strict=False)):
            j = m.jobs[i]
            d = details[pos] if details is not None else None
            r = got.get(i)
            if not (j.status == "running" and j.worker == w and j.lease == lease):
                first = m.answered.get((w, lease))
                answerable = False
                if first is not None:
                    frec, fid = first
                    answerable = (
                        frec.entry[fid]
                        and (REPLAY_ANSWERS_FROM_FINISHED_JOB or j.status not in TERMINAL)
                    ) or (j.status in TERMINAL and j.hist_lease == lease and j.hist_worker == w)
                if not answerable:
                    if r is not None:
                        self.fail(
                            "zombie",
                            f"job {i}: complete by {w} under lease {lease} (not owned, never decided under it) answered {r}",
                        )
                    m.bump("zombie_complete")
                    continue
                exp_ids.append(i)
                m.bump("complete_replayed")
                fr = frec.rows[fid]
                if r is None:
                    self.fail(
                        "complete-replay",
                        f"job {i} (now {j.status}, lease {j.lease or j.hist_lease}): repeated complete under lease {lease} answered nothing; first answer {fr}",
                    )
                    continue
                if (r[1], r[2]) != (fr["status"], fr["attempt"]) or r[3] not in (
                    fr["max_attempts"],
                    m.pol(j.ep)["max_attempts"],
                ):
                    self.fail(
                        "complete-replay",
                        f"job {i}: repeated complete answered {r[1:4]}, first answer {fr}",
                    )
                if fr["status"] == "retry":
                    # "answers what was decided the first time": the retry's run_at as stored
                    # with its decision (a requeue or a later retry since does not change it);
                    # retry_in_s: seconds from this call's at (a due time already past: 0)
                    in_s = (fr["run_at"] - at).total_seconds()
                    if (
                        r[4] != fr["run_at"]
                        or r[5] is None
                        or min(abs(r[5] - in_s), abs(r[5] - max(in_s, 0))) > 1e-5
                    ):
                        self.fail(
                            "complete-replay",
                            f"job {i}: repeated retry answered run_at {r[4]} / {r[5]} (first answer {fr})",
                        )
                continue
            exp_ids.append(i)
            if r is None:
                self.fail(
                    "complete",
                    f"job {i}: owned by {w} under lease {lease}, complete answered nothing",
                )
                continue
            p = m.pol(j.ep)
            n = j.attempt
            entry = None
            # "an interrupted attempt of a job whose last max_interruptions (3) entries were all
            # interrupted attempts counts": decided as failed, its details noted.
            streak = 0
            for e in reversed(j.errors):
                if e["kind"] != "interrupted" and not e.get("counted"):
                    break
                streak += 1
            counted = outcome == "interrupted" and streak >= MAX_INTERRUPTIONS
            if counted:
                d = {
                    **(d or {}),
                    "interrupted": True,
                    "message": f"interrupted {streak + 1} times in a row (max_interruptions "
                    f"{MAX_INTERRUPTIONS}), so this interruption counts as a failed attempt"
                    + (f": {d['message']}" if isinstance(d, dict) and "message" in d else ""),
                }
                outcome = "failed"
                m.bump("interruption_counted")
            if outcome == "successful":
                decision = "successful"
            elif outcome == "canceled":
                decision = "canceled"
            elif outcome == "fatal":  # "dead at once, whatever attempts are left"
                decision = "canceled" if j.cancel_requested else "failed"
                entry = {
                    "kind": "fatal",
                    "attempt": n,
                    "at": at,
                    "lease": lease,
                    "details": d,
                    "worker": w,
                    "decision": decision,
                }
            elif outcome == "interrupted":
                decision = "canceled" if j.cancel_requested else "retry"
                entry = {
                    "kind": "interrupted",
                    "attempt": n,
                    "at": at,
                    "lease": lease,
                    "details": d,
                    "worker": w,
                    "decision": decision,
                }
            else:
                decision = (
                    "canceled"
                    if j.cancel_requested
                    else ("retry" if n < p["max_attempts"] else "failed")
                )
                entry = {
                    "kind": "failed",
                    "attempt": n,
                    "at": at,
                    "lease": lease,
                    "details": d,
                    "worker": w,
                    "decision": decision,
                    "counted": counted,
                }
            if r[1] != decision or r[2] != n or r[3] != p["max_attempts"]:
                self.fail(
                    "complete",
                    f"job {i} ({outcome}, attempt {n} of {p['max_attempts']}, cancel requested {j.cancel_requested}): answered {r[1:4]}, model ({decision}, {n}, {p['max_attempts']})",
                )
            if entry is not None:
                j.errors.append(entry)
            if decision == "retry":
                if outcome == "interrupted":
                    delay_lo = delay_hi = 0.0
                    j.attempt = n - 1
                elif isinstance(d, dict) and "retry_after" in d:
                    delay_lo = delay_hi = float(d["retry_after"])
                else:
                    cap = min(p["max"], p["base"] * 2 ** (n - 1))
                    delay_lo, delay_hi = cap / 2, cap
                if r[5] is None or r[4] is None or not (delay_lo - 1e-6 <= r[5] <= delay_hi + 1e-6):
                    self.fail(
                        "backoff",
                        f"job {i}: retry_in_s {r[5]} outside [{delay_lo}, {delay_hi}] (attempt {n}, policy {p}, details {d})",
                    )
                if r[4] is not None and abs((r[4] - at).total_seconds() - (r[5] or 0)) > 1e-5:
                    self.fail(
                        "backoff", f"job {i}: run_at {r[4]} is not at + retry_in_s ({at} + {r[5]})"
                    )
                j.run_at = r[4]
                if delay_hi == 0:
                    j.status = "queued"
                    queued_now.append(j)
                else:
                    j.status = "scheduled"
                    j.ready = None
                m.bump("retry")
            else:
                if r[4] is not None or r[5] is not None:
                    self.fail(
                        "complete", f"job {i}: {decision} answered run_at/retry_in_s {r[4]}/{r[5]}"
                    )
                j.status = decision
                j.finished_at = at
                j.hist_by, j.hist_lease, j.hist_worker = "complete", lease, w
                j.details, j.details_known = d, True
                if outcome == "interrupted" and INTERRUPTED_CANCELED_RESTORES_ATTEMPT:
                    j.attempt = n - 1
                m.bump("finished_" + decision)
            j.lease = j.worker = j.started_at = j.heartbeat_at = None
            j.claim_request = None
            j.cancel_requested = False
            rec.rows[i] = {
                "status": r[1],
                "attempt": r[2],
                "max_attempts": r[3],
                "run_at": r[4],
                "retry_in_s": r[5],
            }
            rec.entry[i] = entry is not None
            rec.epoch[i] = j.epoch
            m.answered[(w, lease)] = (rec, i)
        if [r[0] for r in rows] != exp_ids:
            self.fail(
                "complete",
                f"answered ids {[r[0] for r in rows]}, model {exp_ids} (input {ids}, leases {leases})",
            )
        if queued_now:
            group = m.next_ready()
            for j in queued_now:
                j.ready = (group, 0)
        if record and rec.rows:
            m.completes.append(rec)

    def op_release(self, rng: random.Random, step: dict[str, Any]) -> None:
        m = self.model
        w = rng.choice(WORKERS)
        ids, leases = self._pick(rng, w)
        at = m.clock
        rows = self.sql(
            f"SELECT id, status FROM pgq.release({uu(w)}, {arr(ids, 'bigint')}, {arr(leases, 'bigint')}, {ts(at)})"
        )
        exp = []
        group = m.next_ready()
        for i, lease in zip(ids, leases, strict=False):
            j = m.jobs[i]
            if not (j.status == "running" and j.worker == w and j.lease == lease):
                m.bump("zombie_release")
                continue
            if j.cancel_requested:
                if RELEASE_CANCELED_RESTORES_ATTEMPT:
                    j.attempt -= 1
                exp.append((i, "canceled"))
                j.status = "canceled"
                j.finished_at = at
                j.hist_by, j.hist_lease, j.hist_worker = "release", lease, w
                j.details_known = False
            else:
                j.attempt -= 1
                exp.append((i, "queued"))
                j.status = "queued"
                j.ready = (group, 0)
            j.lease = j.worker = j.started_at = j.heartbeat_at = None
            j.claim_request = None
            j.cancel_requested = False
        if sorted(tuple(r) for r in rows) != sorted(exp):
            self.fail("release", f"answer {rows}, model {exp}")

    def _some_ids(self, rng: random.Random) -> list[int]:
        m = self.model
        if not m.jobs:
            return []
        pool = list(m.jobs)
        ids = rng.sample(pool, rng.randint(1, min(4, len(pool))))
        if rng.random() < 0.2:
            ids.append(m.max_id + 1000)  # unknown id
        return ids

    def op_cancel(self, rng: random.Random, step: dict[str, Any]) -> None:
        m = self.model
        ids = self._some_ids(rng)
        at = m.clock
        rows = self.sql(f"SELECT id FROM pgq.cancel({arr(ids, 'bigint')}, {ts(at)})")
        canceled, flagged = [], []
        for i in ids:
            j = m.jobs.get(i)
            if j is None or j.status in TERMINAL:
                continue
            if j.status == "running":
                flagged.append(i)
                j.cancel_requested = True
            else:
                canceled.append(i)
                j.status = "canceled"
                j.finished_at = at
                j.hist_by, j.hist_lease, j.hist_worker = "cancel", None, None
                j.details_known = False
                j.ready = None
                m.bump("canceled_queued")
        got = [r[0] for r in rows]
        if sorted(got[: len(canceled)]) != sorted(canceled) or sorted(
            got[len(canceled) :]
        ) != sorted(flagged):
            self.fail(
                "cancel", f"answer {got}, model: canceled {canceled} first, then flagged {flagged}"
            )

    def op_requeue(self, rng: random.Random, step: dict[str, Any]) -> None:
        m = self.model
        dead = [j.id for j in m.jobs.values() if j.status in ("failed", "canceled")]
        if not dead:
            raise Skip
        ids = rng.sample(dead, rng.randint(1, min(3, len(dead))))
        if rng.random() < 0.2:
            ids.append(rng.choice(list(m.jobs)))  # perhaps live or successful: ignored
        ids = list(dict.fromkeys(ids))
        # `at` is the due time of the requeued jobs, compared with the server's now() like an
        # enqueue's run_at: the model's clock (ahead of the server's) makes them scheduled, a
        # time before the run started queued at once
        m.frac += 1
        later = rng.random() < 0.5
        at = m.clock if later else m.real_now - timedelta(hours=1, microseconds=m.frac)
        text = f"SELECT id FROM pgq.requeue({arr(ids, 'bigint')}, {ts(at)})"
        back = sorted(i for i in ids if m.jobs[i].status in ("failed", "canceled"))
        keys = [m.jobs[i].key for i in back if m.jobs[i].key is not None]
        if any(m.live_key_holder(k) for k in keys) or len(keys) != len(set(keys)):
            state = self.sql_error(text)
            if state != "PQ007":
                self.fail(
                    "requeue", f"requeue {ids}: a dedupe key is held, expected PQ007, got {state}"
                )
            return
        rows = self.sql(text)
        if [r[0] for r in rows] != back:
            self.fail("requeue", f"requeue {ids}: answer {[r[0] for r in rows]}, model {back}")
        group = m.next_ready()
        for i in back:
            j = m.jobs[i]
            j.status = "scheduled" if later else "queued"
            j.attempt = 0
            j.run_at = at
            j.ready = None if later else (group, 0)
            j.finished_at = None
            j.hist_lease = j.hist_worker = j.hist_by = None
            m.bump("requeued")

    def op_configure(self, rng: random.Random, step: dict[str, Any]) -> None:
        m = self.model
        ep = rng.choice(EPS)
        args: dict[str, Any] = {}
        if rng.random() < 0.4:
            args["concurrency_limit"] = rng.choice([0, 1, 1, 2, 3])
        if rng.random() < 0.5:
            args["max_attempts"] = rng.randint(1, 4)
        if rng.random() < 0.4:
            args["backoff_base"] = rng.choice([0, 0.5, 1, 2, 5])
        if rng.random() < 0.4:
            args["backoff_max"] = rng.choice([0, 1, 3, 10, 60])
        if rng.random() < 0.5:
            args["heartbeat_timeout"] = rng.choice([1, 2, 5, 10, 30])
        if rng.random() < 0.3:  # running jobs per group key (only reset removes it)
            args["key_concurrency_limit"] = rng.choice([1, 1, 2])
        if rng.random() < 0.5:  # a rate limit (set with its period), or 0: none
            args["rate_limit"] = rng.choice([0, 1, 2, 3])
            if args["rate_limit"]:
                args["rate_period"] = rng.choice([5, 20, 60])
        if (
            rng.random() < 0.4
        ):  # the rate limit per group key (with one), or for the whole entrypoint
            args["rate_per_key"] = rng.random() < 0.7
            if args["rate_per_key"] and not args.get("rate_limit"):
                args["rate_limit"] = rng.choice([1, 2])
                args["rate_period"] = rng.choice([20, 60])
        reset = rng.random() < 0.15
        text = f"SELECT entrypoint, concurrency_limit, max_attempts, extract(epoch FROM backoff_base)::float8, extract(epoch FROM backoff_max)::float8, extract(epoch FROM heartbeat_timeout)::float8, rate_limit, extract(epoch FROM rate_period)::float8, key_concurrency_limit, rate_per_key FROM pgq.configure({q(ep)}"
        for k, v in args.items():
            val = iv(v) if k.startswith(("backoff", "heartbeat", "rate_period")) else v
            text += f", {k} => {str(val).lower() if isinstance(v, bool) else val}"
        text += f", reset => {'true' if reset else 'false'})"
        cur = dict(m.pol(ep))
        new = dict(DEFAULT_POLICY, paused=cur["paused"]) if reset else dict(cur)
        ren = {
            "concurrency_limit": "limit",
            "max_attempts": "max_attempts",
            "backoff_base": "base",
            "backoff_max": "max",
            "heartbeat_timeout": "hb",
            "rate_limit": "rate",
            "rate_period": "period",
            "key_concurrency_limit": "key_limit",
            "rate_per_key": "per_key",
        }
        for k, v in args.items():
            new[ren[k]] = v
        if new["rate"] == 0:  # removes the limit and its period
            new["rate"] = new["period"] = None
        if new["base"] > new["max"]:
            state = self.sql_error(text)
            if state != "PQ008":
                self.fail(
                    "configure",
                    f"backoff_max {new['max']} below backoff_base {new['base']}: expected PQ008, got {state}",
                )
            return
        rows = self.sql(text)
        exp = (
            ep, new["limit"], new["max_attempts"], new["base"], new["max"], new["hb"],
            new["rate"], None if new["period"] is None else float(new["period"]), new["key_limit"],
            new["per_key"],
        )  # fmt: skip
        if tuple(rows[0]) != exp:
            self.fail("configure", f"row {rows[0]}, model {exp}")
        if cur["rate"] is not None and (new["rate"] is None or new["per_key"] != cur["per_key"]):
            # a removed limit, or budgets that now mean something else, forget their starts
            for budget in [b for b in m.starts if b[0] == ep]:
                del m.starts[budget]
        m.policy[ep] = new

    def op_pause(self, rng: random.Random, step: dict[str, Any]) -> None:
        m = self.model
        eps = rng.sample(EPS, rng.randint(1, 2))
        rows = self.sql(f"SELECT entrypoint FROM pgq.pause({arr(eps, 'text')}, {ts(m.clock)})")
        for ep in eps:
            m.ensure_ep(ep)
            m.policy[ep]["paused"] = True
        if sorted(r[0] for r in rows) != sorted(eps):
            self.fail("pause", f"answer {rows}, model {sorted(eps)}")

    def op_resume(self, rng: random.Random, step: dict[str, Any]) -> None:
        m = self.model
        eps = rng.sample(EPS, rng.randint(1, 3))
        self.sql(f"SELECT entrypoint FROM pgq.resume({arr(eps, 'text')})")
        for ep in eps:
            if ep in m.policy:
                m.policy[ep]["paused"] = False

    def op_maintain(self, rng: random.Random, step: dict[str, Any]) -> None:
        m = self.model
        at = m.clock
        if rng.random() < 0.2:
            # A worker's call right after another's pass: 'recent', and nothing done (the
            # check after the step finds every job as the model left it).
            self.sql(
                "SELECT setval('pgq.maintained_at',"
                " (extract(epoch FROM clock_timestamp()) * 1000)::bigint) > 0 AS just_passed"
            )
            rows = self.sql(
                "SELECT state, swept, promoted, carried, truncated, rotated, lock_wait_ms"
                f" FROM pgq.maintain({ts(at)}, interval '1 hour')"
            )
            if tuple(rows[0]) != ("recent", 0, 0, 0, None, False, None):
                self.fail("maintain", f"min_interval 1 hour right after a pass: {rows[0]}")
            m.bump("recent", 1)
            return
        if step.get("rotate"):
            self.sql("SELECT setval('pgq.ring_rotated_at', 0) > 0 AS may_rotate")
        swept = m.apply_sweep(at)
        promoted = m.apply_promotion(at, None)
        rows = self.sql(
            f"SELECT state, swept, promoted, carried, truncated, rotated, lock_wait_ms FROM pgq.maintain({ts(at)})"
        )
        state, r_swept, r_promoted, carried, truncated, rotated, _ = rows[0]
        if state not in ("ok", "busy") or (state == "busy" and truncated is not None):
            self.fail("maintain", f"answer {rows[0]}")
        if (r_swept, r_promoted) != (swept, promoted):
            self.fail(
                "maintain", f"swept/promoted {r_swept}/{r_promoted}, model {swept}/{promoted}"
            )
        m.bump("carried", carried)
        m.bump("rotated", int(bool(rotated)))
        m.bump("truncated", int(truncated is not None))

    def op_take_tokens(self, rng: random.Random, step: dict[str, Any]) -> None:
        """pgq.take_tokens: starts taken outside a job share the budget of the entrypoint's
        claims (all or nothing); refused with the starts left and the time it would be granted."""
        m = self.model
        ep = rng.choice(EPS)
        p = m.pol(ep)
        rate = p["rate"]
        tokens = rng.choice([1, 1, 1, 2, 3]) if rng.random() < 0.9 else rng.choice([0, -1, 4])
        per_key = p["per_key"]
        key = rng.choice(GROUPS) if per_key and rng.random() < 0.8 else None
        if not per_key and rng.random() < 0.1:
            key = rng.choice(GROUPS)  # a key for an entrypoint with one budget
        at = m.clock
        text = (
            f"SELECT granted, remaining, retry_at FROM pgq.take_tokens({q(ep)}, {tokens}, "
            f"{'NULL' if key is None else q(key)}, {ts(at)})"
        )
        if rate is None or not 1 <= tokens <= rate or (key is not None and not per_key):
            expect = "PQ008" if rate is None else "PQ009"
            state = self.sql_error(text)
            if state != expect:
                self.fail("take-tokens", f"{text}: expected {expect}, got {state}")
            m.bump("take_tokens_refused_input")
            return
        budget = (ep, key if per_key else WHOLE)
        room = m.rate_room(budget, at)
        used = rate - room
        granted, remaining, retry_at = self.sql(text)[0]
        log = m.starts.setdefault(budget, [])
        if used + tokens <= rate:
            exp = (True, int(rate - used - tokens), None)
            # recorded at the later of `at` and the budget's last recorded time, as a claim's
            log.append((max([at] + [t for t, _ in log[-1:]]), tokens))
            m.bump("take_tokens_granted")
        else:
            # granted once the oldest starts of the window that must leave it have left
            since = at - timedelta(seconds=p["period"])
            shed, acc, due = used + tokens - rate, 0, at
            for t, n in log:
                if t > since:
                    acc += n
                    if acc >= shed:
                        due = max(t + timedelta(seconds=p["period"]), at)
                        break
            exp = (False, int(max(rate - used, 0)), due)
            m.bump("take_tokens_not_now")
        got = (granted, remaining, retry_at)
        if got != exp:
            self.fail("take-tokens", f"{text}: answer {got}, model {exp}")

    def op_bad_at(self, rng: random.Random, step: dict[str, Any]) -> None:
        """A time argument out of range is PQ009 and changes nothing."""
        w = rng.choice(WORKERS)
        ids, leases = self._pick(rng, w, zombie_p=0)
        bad = rng.choice(
            [
                "'infinity'::timestamptz",
                "'-infinity'::timestamptz",
                "'1969-12-31 23:59:59+00'::timestamptz",
                "'9000-01-01 00:00:00+00'::timestamptz",
            ]
        )
        fn = rng.choice(["release", "heartbeat", "complete", "claim", "cancel", "take_tokens"])
        if fn == "release":
            text = f"SELECT * FROM pgq.release({uu(w)}, {arr(ids, 'bigint')}, {arr(leases, 'bigint')}, {bad})"
        elif fn == "heartbeat":
            text = f"SELECT * FROM pgq.heartbeat({uu(w)}, {arr(ids, 'bigint')}, {arr(leases, 'bigint')}, {bad})"
        elif fn == "complete":
            text = f"SELECT * FROM pgq.complete({uu(w)}, {arr(ids, 'bigint')}, {arr(leases, 'bigint')}, {arr(['successful'] * len(ids), 'text')}, NULL, {bad})"
        elif fn == "claim":
            text = f"SELECT * FROM pgq.claim({uu(w)}, {arr(EPS, 'text')}, 3, {bad})"
        elif fn == "take_tokens":
            text = f"SELECT * FROM pgq.take_tokens({q(rng.choice(EPS))}, 1, NULL, {bad})"
        else:
            text = f"SELECT * FROM pgq.cancel({arr(ids, 'bigint')}, {bad})"
        state = self.sql_error(text)
        if state != "PQ009":
            self.fail("bad-at", f"pgq.{fn} with at {bad}: expected PQ009, got {state}")

    # -- the check after every step -----------------------------------------------------------

    def check(self) -> None:
        m = self.model
        cur = self.conn.cursor()
        live = cur.execute(
            "SELECT id, entrypoint, status, priority, attempt, run_at, enqueued_at, lease, worker_id::text,"
            " started_at, heartbeat_at, cancel_requested, errors, dedupe_key, claim_request::text,"
            " ready_seq, slot, payload FROM pgq.jobs ORDER BY id"
        ).fetchall()
        hist = cur.execute(
            "SELECT id, entrypoint, status, priority, attempt, dedupe_key, enqueued_at, finished_at,"
            " worker_id::text, lease, details, errors, payload FROM pgq.job_history ORDER BY id"
        ).fetchall()
        keys = dict(cur.execute("SELECT dedupe_key, job_id FROM pgq.live_keys").fetchall())
        live_ids = [r[0] for r in live]
        hist_ids = [r[0] for r in hist]
        if len(set(live_ids)) != len(live_ids):
            self.fail("invariant", f"a job is twice in pgq.jobs: {sorted(live_ids)}")
        both = set(live_ids) & set(hist_ids)
        if both:
            self.fail("invariant", f"jobs both live and in history: {sorted(both)}")
        everywhere = set(live_ids) | set(hist_ids)
        if everywhere != set(m.jobs):
            self.fail(
                "invariant",
                f"lost: {sorted(set(m.jobs) - everywhere)}, unknown: {sorted(everywhere - set(m.jobs))}",
            )
        running_leases = [r[7] for r in live if r[2] == "running"]
        if len(set(running_leases)) != len(running_leases):
            self.fail("invariant", f"two running jobs share a lease: {running_leases}")
        for r in live:
            self._check_live(r)
        for r in hist:
            self._check_hist(r)
        exp_keys = {j.key: j.id for j in m.live() if j.key is not None}
        if keys != exp_keys:
            self.fail("dedupe", f"pgq.live_keys {keys}, model {exp_keys}")
        # ready order: queued jobs by ready number follow the model's order of becoming runnable
        queued = sorted((r for r in live if r[2] == "queued"), key=lambda r: r[15])
        order = [m.jobs[r[0]].ready for r in queued]
        for a, b, ra, rb in zip(order, order[1:], queued, queued[1:], strict=False):
            if a > b:  # type: ignore[operator]
                self.fail(
                    "ready-order",
                    f"job {ra[0]} (ready {ra[15]}) became runnable after job {rb[0]} (ready {rb[15]}) in the model",
                )
        for ep in EPS:
            p = m.pol(ep)
            n = sum(1 for r in live if r[1] == ep and r[2] == "running")
            if p["limit"] is not None and n > p["limit"] and not self._limit_lowered(ep):
                self.fail("limit", f"{ep}: {n} running over limit {p['limit']}")

    def _limit_lowered(self, ep: str) -> bool:
        # a configure may lower the limit below what is running: only claims must respect it
        return True

    def _errors_match(self, j: Job, got: list[dict[str, Any]]) -> str | None:
        if len(got) != len(j.errors):
            return f"{len(got)} error entries, model {len(j.errors)}: {got} / {j.errors}"
        for g, e in zip(got, j.errors, strict=False):
            if g.get("attempt") != e["attempt"] or parse_ts(g["at"]) != e["at"]:
                return f"entry {g} vs model {e}"
            if e["kind"] == "timeout":
                d = g.get("details") or {}
                if (
                    g.get("lease") is not None
                    or d.get("error") != "heartbeat timeout"
                    or d.get("worker_id") != e["details"]["worker_id"]
                    or parse_ts(d["heartbeat_at"]) != e["details"]["heartbeat_at"]
                ):
                    return f"heartbeat-timeout entry {g} vs model {e}"
            else:
                if g.get("lease") != e["lease"] or g.get("details") != e["details"]:
                    return f"entry {g} vs model {e}"
                if g.get("outcome") != {"interrupted": "interrupted", "fatal": "fatal"}.get(
                    e["kind"]
                ):
                    return f"entry {g}: outcome vs model {e['kind']}"
                if g.get("worker_id") != e["worker"] or g.get("decision") != e["decision"]:
                    return f"entry {g}: worker_id/decision vs model {e['worker']}/{e['decision']}"
        return None

    def _check_live(self, r: tuple[Any, ...]) -> None:
        m = self.model
        (
            i,
            ep,
            status,
            prio,
            attempt,
            run_at,
            enq,
            lease,
            worker,
            started,
            hb,
            cancel,
            errors,
            key,
            creq,
            ready,
            slot,
            payload,
        ) = r
        j = m.jobs[i]
        if j.enqueued_at is None:
            j.enqueued_at = enq
        if j.run_at is None and status != "scheduled":
            j.run_at = run_at
        exp = (j.ep, j.status, j.priority, j.attempt, j.key, j.enqueued_at, j.payload)
        if (ep, status, prio, attempt, key, enq, payload) != exp:
            self.fail(
                "job",
                f"job {i}: (entrypoint, status, priority, attempt, dedupe_key, enqueued_at, payload) = {(ep, status, prio, attempt, key, enq, payload)}, model {exp}",
            )
        if run_at != j.run_at:
            self.fail("job", f"job {i} ({status}): run_at {run_at}, model {j.run_at}")
        if status == "running":
            exp2 = (
                j.lease,
                j.worker,
                j.started_at,
                j.heartbeat_at,
                j.cancel_requested,
                j.claim_request,
            )
            if (lease, worker, started, hb, cancel, creq) != exp2:
                self.fail(
                    "lease",
                    f"job {i}: (lease, worker, started_at, heartbeat_at, cancel_requested, claim_request) = {(lease, worker, started, hb, cancel, creq)}, model {exp2}",
                )
        elif (lease, worker, started, hb) != (None, None, None, None) or cancel:
            self.fail(
                "job",
                f"job {i} ({status}): lease/worker/started_at/heartbeat_at/cancel {lease, worker, started, hb, cancel}, expected unset",
            )
        if (status == "scheduled") != (slot == 4) or (status == "queued" and ready is None):
            self.fail("job", f"job {i} ({status}): slot {slot}, ready_seq {ready}")
        problem = self._errors_match(j, errors)
        if problem:
            self.fail("errors", f"job {i}: {problem}")

    def _check_hist(self, r: tuple[Any, ...]) -> None:
        m = self.model
        (i, ep, status, prio, attempt, key, enq, fin, worker, lease, details, errors, payload) = r
        j = m.jobs[i]
        if j.enqueued_at is None:
            j.enqueued_at = enq
        exp = (
            j.ep,
            j.status,
            j.priority,
            j.attempt,
            j.key,
            j.enqueued_at,
            j.finished_at,
            j.payload,
        )
        if (ep, status, prio, attempt, key, enq, fin, payload) != exp:
            self.fail(
                "history",
                f"job {i} (finished by {j.hist_by}): (entrypoint, status, priority, attempt, dedupe_key, enqueued_at, finished_at, payload) = {(ep, status, prio, attempt, key, enq, fin, payload)}, model {exp}",
            )
        if (j.hist_by == "complete" or (j.hist_by == "release" and RELEASE_HISTORY_HAS_LEASE)) and (
            lease,
            worker,
        ) != (j.hist_lease, j.hist_worker):
            self.fail(
                "history",
                f"job {i}: history lease/worker {lease}/{worker}, model {j.hist_lease}/{j.hist_worker} (finished by {j.hist_by})",
            )
        if (
            j.hist_by == "release"
            and not RELEASE_HISTORY_HAS_LEASE
            and (lease, worker) != (None, None)
        ):
            self.fail(
                "history",
                f"job {i}: a release records no lease or worker, history has {lease}/{worker}",
            )
        if j.details_known:
            if j.hist_by == "sweep":
                d = details or {}
                if (
                    d.get("error") != "heartbeat timeout"
                    or d.get("worker_id") != j.details["worker_id"]
                    or parse_ts(d["heartbeat_at"]) != j.details["heartbeat_at"]
                ):
                    self.fail("history", f"job {i}: details {details}, model {j.details}")
            elif details != j.details:
                self.fail("history", f"job {i}: details {details}, model {j.details}")
        problem = self._errors_match(j, errors)
        if problem:
            self.fail("errors", f"job {i} (history): {problem}")


# -- sequences, runs and shrinking ---------------------------------------------------------------

WEIGHTS = {
    "enqueue": 10,
    "enqueue_many": 8,
    "claim": 20,
    "heartbeat": 9,
    "complete": 18,
    "complete_replay": 4,
    "release": 5,
    "cancel": 5,
    "requeue": 4,
    "configure": 5,
    "pause": 2,
    "resume": 3,
    "maintain": 5,
    "bad_at": 2,
    "take_tokens": 3,
}


def generate(seed: int, n: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    ops, weights = zip(*WEIGHTS.items(), strict=False)
    steps = []
    for _ in range(n):
        c = rng.random()
        dt = (
            0
            if c < 0.3
            else 1
            if c < 0.6
            else rng.randint(2, 4)
            if c < 0.85
            else rng.randint(5, 40)
            if c < 0.97
            else rng.randint(60, 400)
        )
        op = rng.choices(ops, weights)[0]
        step = {"op": op, "dt": dt, "r": rng.getrandbits(32)}
        if op == "maintain":
            step["rotate"] = rng.random() < 0.7
        steps.append(step)
    return steps


def run(dsn: str, steps: list[dict[str, Any]]) -> Runner:
    """Runs the steps on a fresh install, checking after each; raises Mismatch (with the
    runner's script attached as ``.script``)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET TIME ZONE 'UTC'")
        real_now = conn.execute("SELECT date_trunc('second', now())").fetchone()[0]  # type: ignore[index]
        model = Model(start=real_now + timedelta(hours=1), real_now=real_now)
        runner = Runner(conn, model)
        for no, step in enumerate(steps, 1):
            runner.step_no = no
            runner.script.append(
                f"-- step {no}: {step['op']} at {model.clock + timedelta(seconds=step['dt'])}"
            )
            try:
                runner.run_step(step)
            except Skip:
                runner.script.pop()
                continue
            except Mismatch as e:
                e.script = runner.script  # type: ignore[attr-defined]
                raise
            except psycopg.Error as e:
                err = Mismatch("sql-error", f"step {no} ({step['op']}): {e.sqlstate} {e}")
                err.script = runner.script  # type: ignore[attr-defined]
                raise err from e
            try:
                runner.check()
            except Mismatch as e:
                e.script = runner.script  # type: ignore[attr-defined]
                raise
        return runner


def shrink(
    fresh_dsn: Any, steps: list[dict[str, Any]], kind: str, budget: int = 60, seconds: float = 30
) -> list[dict[str, Any]]:
    """Delta debugging: drop chunks of steps while the run still fails with the same kind of
    mismatch (at most ``budget`` replays and about ``seconds``); ``fresh_dsn`` is a context
    manager factory of fresh installed databases."""
    tries = 0
    deadline = time.monotonic() + seconds

    def fails(candidate: list[dict[str, Any]]) -> bool:
        nonlocal tries
        tries += 1
        with fresh_dsn() as dsn:
            try:
                run(dsn, candidate)
            except Mismatch as e:
                return e.kind == kind
        return False

    n = 2
    while len(steps) >= 2 and tries < budget and time.monotonic() < deadline:
        chunk = math.ceil(len(steps) / n)
        reduced = False
        for start in range(0, len(steps), chunk):
            candidate = steps[:start] + steps[start + chunk :]
            if candidate and tries < budget and time.monotonic() < deadline and fails(candidate):
                steps, n, reduced = candidate, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(steps):
                break
            n = min(len(steps), n * 2)
    return steps
