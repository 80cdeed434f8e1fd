"""The plans of the functions' statements on pgq.jobs, made while the ring's partitions are empty.

The functions run with generic plans (made once per session, reused until an invalidation), and
pgq.maintain truncates ring slots, so a plan is often made while a slot is empty (never analyzed:
the planner guesses) and then used while that slot holds tens of thousands of row versions. A
statement that finds jobs by id must then still look them up by id: if the planner may prove a
partial index's predicate from the statement (``status = 'queued'`` for jobs_ready_idx), an
empty slot makes a full scan of that index look as cheap as a look-up, and the plan walks every
entry of the slot on every call, dead ones included while the vacuum horizon is held
(docs/decisions/0006, "Plans made on empty slots").

The check: auto_explain (nested statements, plans only) while the public functions run every
path once on a fresh database (every slot empty); every scan of a jobs partition through an
index must have an index condition, unless the statement is one that reads a whole partial index
on purpose (listed below, with why); and no nested loop may probe pgq.jobs once per input row or
read the input once per job (docs/decisions/0007): the functions that pair input arrays with jobs
join them by hash, one scan by id per partition, whatever the statistics say.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest
from helpers.plans import explained, plan_nodes

# Statements that read a whole partition or a whole partial index on purpose, by a phrase of
# their text: every running job (the stale sweep, the running counts of pgq.metrics, the
# workers registry's pruning), the emptiness and straggler probes of pgq.maintain (bounded),
# and the queue_stats view (it counts every live job); maintain's carry, which reads the whole
# next slot (at most 1,000 live jobs) and deletes from that one partition what it read (dynamic
# SQL on one named partition, planned on each call, sequential scans allowed on purpose).
WHOLE_SCANS_ALLOWED = (
    "FILTER (WHERE s.dead) AS dead_ids",
    "AS stale FROM eps e JOIN pgq.jobs j",
    "WHERE j.worker_id = g.worker_id",
    "SELECT NOT EXISTS (SELECT 1 FROM pgq.jobs_",
    "LIMIT 1001) s",
    "j FOR UPDATE SKIP LOCKED) j",
    "WITH moved AS (DELETE FROM pgq.jobs_",
    "SELECT * FROM pgq.queue_stats",
    # the charts' backlog sample (once a minute): the running count walks the running jobs
    "INSERT INTO pgq.metrics_backlog (entrypoint, minute, due, running)",
    # maintain's hourly pass over every rate start (rows a gap in maintenance left behind)
    "DELETE FROM pgq.rate_starts s WHERE NOT EXISTS",
)
# Tables that may be read whole: one row per entrypoint (the policies) and per entrypoint and
# priority (the lanes, whose number is capped).
SMALL_TABLES = ("entrypoints", "lanes")


def full_scans(explained: list[dict[str, Any]]) -> list[str]:
    """Index scans of a table of pgq that do not seek their index (without an index condition,
    or with conditions on later columns only: the whole index read, each entry checked), and
    sequential scans of a pgq.jobs partition, as 'relation via index: the statement's first
    line'. Each plan carries the leading column of every index of pgq
    (:func:`explain_every_path`)."""
    found = []
    for doc in explained:
        text = doc["Query Text"]
        if any(phrase in " ".join(text.split()) for phrase in WHOLE_SCANS_ALLOWED):
            continue
        for node in plan_nodes(doc["Plan"]):
            rel = node.get("Relation Name", "")
            if node.get("Schema") not in (None, "pgq") or not rel or rel in SMALL_TABLES:
                continue
            first = " ".join(text.split())[:120]
            if node["Node Type"] in ("Index Scan", "Index Only Scan"):
                if node["Index Name"] not in doc["leads"]:
                    continue  # a catalog's
                lead = doc["leads"][node["Index Name"]]
                conds = node.get("Index Cond", "")
                # PostgreSQL prints each index condition with the index's column on its left.
                if not any(c.lstrip("(").startswith(f"{lead} ") for c in conds.split(" AND ")):
                    found.append(
                        f"{rel} via {node['Index Name']} ({conds or 'no condition'}): {first}"
                    )
            elif node["Node Type"] == "Seq Scan" and rel.startswith("jobs_"):
                found.append(f"{rel} sequentially: {first}")
    return found


# Nested loops over pgq.jobs that are per lane or per entrypoint, not per job, by a phrase of
# their statement: the claim's probe of each lane from its cursor, the stale counts of
# pgq.metrics and the queue_stats view (per entrypoint), next_run_at's earliest scheduled job
# (per entrypoint asked for).
LOOPS_ALLOWED = (
    "CROSS JOIN LATERAL ( SELECT j.id, j.entrypoint, j.priority, j.ready_seq FROM pgq.jobs j",
    "AS stale FROM eps e JOIN pgq.jobs j",
    "SELECT * FROM pgq.queue_stats",
    "FROM unnest(next_run_at.entrypoints) AS e(name) CROSS JOIN LATERAL",
    # the charts' backlog sample, once a minute: per entrypoint, each count capped like metrics
    "INSERT INTO pgq.metrics_backlog (entrypoint, minute, due, running)",
    # promotion: each entrypoint's earliest due jobs, at most max_rows of each
    "FROM unnest(coalesce(_promote.entrypoints,",
    # the keyed claim's walk: one probe of jobs_key_idx per key it steps to (bounded), in the
    # slots where the lane has queued jobs above its cursor: one probe per slot (each pruned
    # to its partition as it runs)
    "WITH RECURSIVE walk",
    "FROM generate_series(0, 3) AS k(s) CROSS JOIN LATERAL",
    # a rate limit per key's wait: whether the window's oldest starts' keys wait (at most 100,
    # up to the first that does)
    "SELECT o.started_at FROM (SELECT s.started_at, s.key_hash FROM pgq.rate_starts s",
    # pgq.key_stats: per key-limited entrypoint
    "k.running >= e.key_concurrency_limit FROM pgq.entrypoints e CROSS JOIN LATERAL",
)


def scans_of_jobs(plan: dict[str, Any]) -> set[str]:
    """The pgq.jobs partitions scanned in a plan's subtree (its init and sub plans left out:
    they run once, or are another statement's business)."""
    found = set()
    stack = [plan]
    while stack:
        node = stack.pop()
        rel = node.get("Relation Name", "")
        if node.get("Schema") in (None, "pgq") and rel.startswith("jobs_"):
            found.add(rel)
        stack += [
            c
            for c in node.get("Plans", [])
            if c.get("Parent Relationship") in ("Outer", "Inner", "Member", None)
        ]
    return found


def has_input_scan(plan: dict[str, Any]) -> bool:
    """Whether a subtree reads a function's result (the input arrays: unnest)."""
    return any(n["Node Type"] == "Function Scan" for n in plan_nodes(plan))


def loops_over_jobs(explained: list[dict[str, Any]]) -> list[str]:
    """Nested loops that look jobs up once per input row (the inner side scans a partition of
    pgq.jobs: every partition is probed for every job), or read the input once per job (a jobs
    scan on one side, the input arrays on the other): ADR 0007 rules both out, whatever the
    statistics say. As 'shape: the statement's first 120 characters'."""
    found = []
    for doc in explained:
        text = " ".join(doc["Query Text"].split())
        if any(phrase in text for phrase in LOOPS_ALLOWED):
            continue
        for node in plan_nodes(doc["Plan"]):
            if node["Node Type"] != "Nested Loop":
                continue
            sides = {c.get("Parent Relationship"): c for c in node.get("Plans", [])}
            outer, inner = sides["Outer"], sides["Inner"]
            probed = scans_of_jobs(inner)
            if probed:
                found.append(f"probes {sorted(probed)} per outer row: {text[:120]}")
            elif scans_of_jobs(outer) and has_input_scan(inner):
                found.append(f"reads the input once per job: {text[:120]}")
    return found


def explain_every_path(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """The plans (auto_explain, JSON) of every statement run by :func:`run_every_path`, each
    with "leads": the leading column (or expression) of every index of schema pgq, by name."""
    with explained(conn) as plans:
        run_every_path(conn)
    assert len(plans) > 100  # the plans were seen
    leads = dict(
        conn.execute(
            "SELECT c.relname::text, pg_get_indexdef(c.oid, 1, true) FROM pg_class c"
            " WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind = 'i'"
        ).fetchall()
    )
    for doc in plans:
        doc["leads"] = leads
    return plans


def test_jobs_are_found_by_id_when_plans_are_made_on_empty_slots(pgq_dsn: str) -> None:
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        # Every slot empty and never analyzed, as after a truncation.
        ring = conn.execute(
            "SELECT sum(pg_relation_size(format('pgq.jobs_%s', k)::regclass))"
            " FROM generate_series(0, 3) k"
        ).fetchone()
        assert ring == (0,)
        explained = explain_every_path(conn)
    found = sorted(set(full_scans(explained)))
    assert not found, "\n".join(found)
    loops = sorted(set(loops_over_jobs(explained)))
    assert not loops, "\n".join(loops)


def test_jobs_are_found_by_id_when_slots_were_analyzed_full_of_dead_rows(pgq_dsn: str) -> None:
    """ANALYZE (autovacuum's) of a slot whose rows are all finished: the planner then believes
    the slot empty (reltuples 0) while its indexes are full of entries, as under a held
    horizon, and a scan of a whole index costs it no more than a look-up."""
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        # Two thousand finished jobs in the current slot, then ANALYZE.
        w = uuid.uuid4()
        conn.execute("SELECT * FROM pgq.enqueue_many(array_fill('churn'::text, ARRAY[2000]))")
        jobs = conn.execute("SELECT id, lease FROM pgq.claim(%s, ARRAY['churn'], 2000)", (w,))
        ids, leases = zip(*jobs.fetchall(), strict=True)
        conn.execute(
            "SELECT * FROM pgq.complete(%s, %s, %s, array_fill('successful'::text, ARRAY[2000]))",
            (w, list(ids), list(leases)),
        ).fetchall()
        conn.execute("ANALYZE pgq.jobs_0, pgq.jobs_1, pgq.jobs_2, pgq.jobs_3, pgq.jobs_scheduled")
        stats = conn.execute(
            "SELECT relpages, reltuples FROM pg_class"
            " WHERE oid = format('pgq.jobs_%s', pgq._slot())::regclass"
        ).fetchone()
        assert stats is not None and stats[0] > 0 and stats[1] == 0, stats
        explained = explain_every_path(conn)
    found = sorted(set(full_scans(explained)))
    assert not found, "\n".join(found)
    loops = sorted(set(loops_over_jobs(explained)))
    assert not loops, "\n".join(loops)


def test_no_loop_over_partitions_with_a_backlog_in_an_unanalyzed_slot_after_a_truncation(
    pgq_dsn: str,
) -> None:
    """The drain's state without ANALYZE (docs/decisions/0007): a backlog of 2,000 jobs in a
    slot never analyzed, the slot before it just truncated by pgq.maintain, stragglers in the
    next slot for maintain's carry. Every plan is made now (a new session), as a worker's are
    after it connects or after the truncation invalidated them. The planner's guesses then made
    the functions join their input to pgq.jobs by nested loops: every partition probed once per
    job (20,000 jobs drained at a fifth of their analyzed pace)."""
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        w = uuid.uuid4()
        conn.execute("SELECT * FROM pgq.enqueue_many(array_fill('plans'::text, ARRAY[500]))")
        jobs = conn.execute("SELECT id, lease FROM pgq.claim(%s, ARRAY['plans'], 500)", (w,))
        ids, leases = zip(*jobs.fetchall(), strict=True)
        conn.execute(
            "SELECT * FROM pgq.complete(%s, %s, %s, array_fill('successful'::text, ARRAY[500]))",
            (w, list(ids), list(leases)),
        ).fetchall()
        turned = conn.execute("SELECT rotated, truncated FROM pgq.maintain()").fetchone()
        assert turned == (True, "jobs_0"), turned  # slot 1 current, slot 0 truncated
        # Three stragglers in the next slot (2), entered while it was current (of another
        # entrypoint: the paths' claims leave them to the carry).
        conn.execute("SELECT setval('pgq.ring_seq', 2)")
        conn.execute("SELECT * FROM pgq.enqueue_many(array_fill('stragglers'::text, ARRAY[3]))")
        conn.execute("SELECT setval('pgq.ring_seq', 1)")
        conn.execute("SELECT * FROM pgq.enqueue_many(array_fill('plans'::text, ARRAY[2000]))")
        state = conn.execute(
            "SELECT pg_relation_size('pgq.jobs_0'), pg_relation_size('pgq.jobs_1') > 0,"
            " (SELECT reltuples FROM pg_class WHERE oid = 'pgq.jobs_1'::regclass),"
            " (SELECT count(*) FROM pgq.jobs_2)"
        ).fetchone()
        assert state == (0, True, -1, 3), state
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        explained = explain_every_path(conn)
        carried = [d for d in explained if "INSERT INTO pgq.jobs_1" in d["Query Text"]]
    assert carried, "maintain's carry ran"
    found = sorted(set(full_scans(explained)))
    assert not found, "\n".join(found)
    loops = sorted(set(loops_over_jobs(explained)))
    assert not loops, "\n".join(loops)


def run_every_path(conn: psycopg.Connection[Any]) -> None:
    """Each public function on pgq.jobs once through each of its paths."""
    w = uuid.uuid4()
    ep = "plans"
    conn.execute("SELECT pgq.configure(%s, max_attempts => 3)", (ep,))
    conn.execute("SELECT * FROM pgq.enqueue_many(array_fill(%s::text, ARRAY[20]))", (ep,))
    conn.execute("SELECT pgq.enqueue(%s, dedupe_key => 'k1')", (ep,))
    conn.execute("SELECT pgq.enqueue(%s, run_at => now() + interval '1 minute')", (ep,))
    conn.execute("SELECT * FROM pgq.find_by_dedupe_key('k1')").fetchall()

    def claim(n: int, at: str = "now()", worker: uuid.UUID = w) -> list[tuple[int, int]]:
        return conn.execute(
            f"SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], %s, {at})", (worker, ep, n)
        ).fetchall()

    jobs = claim(12)
    ids, leases = [j[0] for j in jobs], [j[1] for j in jobs]
    conn.execute("SELECT * FROM pgq.heartbeat(%s, %s, %s)", (w, ids, leases)).fetchall()
    outcomes = ["successful"] * 3 + ["failed"] * 4 + ["interrupted", "canceled"]
    details: list[Any] = [None] * 3 + [{"retry_after": 0}] * 2 + [{"retry_after": 60}] * 2
    details += [None, None]
    conn.execute(
        "SELECT * FROM pgq.complete(%s, %s, %s, %s, %s)",
        (w, ids[:9], leases[:9], outcomes, json.dumps(details)),
    ).fetchall()
    # The same call again (its answer lost): answered from history and the error lists.
    conn.execute(
        "SELECT * FROM pgq.complete(%s, %s, %s, %s, %s)",
        (w, ids[:9], leases[:9], outcomes, json.dumps(details)),
    ).fetchall()
    conn.execute("SELECT * FROM pgq.release(%s, %s, %s)", (w, ids[9:10], leases[9:10])).fetchall()
    conn.execute("SELECT * FROM pgq.cancel(%s)", (ids[10:12],)).fetchall()  # running
    queued = conn.execute(
        "SELECT id FROM pgq.list_jobs(%s, 'queued', page_size => 2)", (ep,)
    ).fetchall()
    conn.execute("SELECT * FROM pgq.cancel(%s)", ([q[0] for q in queued],)).fetchall()
    # A claim re-sent with its request id.
    request = uuid.uuid4()
    for _ in range(2):
        conn.execute(
            "SELECT id FROM pgq.claim(%s, ARRAY[%s], 2, NULL, %s)", (w, ep, request)
        ).fetchall()
    # Stale jobs swept by a claim an hour later (and by pgq.maintain), delayed ones promoted.
    claim(5)
    claim(1, "now() + interval '1 hour'", uuid.uuid4())
    conn.execute("SELECT * FROM pgq.maintain(now() + interval '2 hours')").fetchall()
    for state in ("queued", "running", "scheduled"):
        conn.execute("SELECT * FROM pgq.list_jobs(%s, %s)", (ep, state)).fetchall()
    conn.execute("SELECT * FROM pgq.job(%s)", (ids[0],)).fetchall()
    conn.execute("SELECT * FROM pgq.metrics()").fetchall()
    conn.execute("SELECT * FROM pgq.queue_stats").fetchall()
    conn.execute("SELECT pgq.next_run_at(ARRAY[%s])", (ep,)).fetchall()
    dead = conn.execute(
        "SELECT array_agg(id) FROM pgq.job_history WHERE status <> 'successful'"
    ).fetchone()
    assert dead is not None and dead[0]
    conn.execute("SELECT * FROM pgq.requeue(%s)", (dead[0],)).fetchall()
    conn.execute("SELECT * FROM pgq.delete_jobs(%s)", (ids[12:13] or ids[:1],)).fetchall()
    conn.execute("SELECT * FROM pgq.prune_workers(now() + interval '1 day')").fetchall()
    run_flow_control_paths(conn)


def run_flow_control_paths(conn: psycopg.Connection[Any]) -> None:
    """The claim, its wait and the readers of an entrypoint with a key limit and a rate limit
    per key, and of one with a rate limit: each budget used up, so the claim comes back short
    and pgq.next_run_at looks for the next key whose budget grows."""
    w = uuid.uuid4()
    keyed, rated = "plans.keyed", "plans.rated"
    conn.execute(
        "SELECT pgq.configure(%s, key_concurrency_limit => 2, rate_limit => 2,"
        " rate_period => '1 hour', rate_per_key => true)",
        (keyed,),
    )
    conn.execute("SELECT pgq.configure(%s, rate_limit => 3, rate_period => '1 hour')", (rated,))
    conn.execute(
        "SELECT * FROM pgq.enqueue_many(array_fill(%s::text, ARRAY[13]), group_keys =>"
        " ARRAY(SELECT CASE WHEN g < 13 THEN 'key-' || g %% 4 END FROM generate_series(1, 13) g))",
        (keyed,),
    )
    conn.execute("SELECT * FROM pgq.enqueue_many(array_fill(%s::text, ARRAY[5]))", (rated,))
    for _ in range(2):
        for ep in (keyed, rated):
            conn.execute("SELECT id FROM pgq.claim(%s, ARRAY[%s], 10)", (w, ep)).fetchall()
            conn.execute("SELECT pgq.next_run_at(ARRAY[%s])", (ep,)).fetchall()
    conn.execute("SELECT * FROM pgq.take_tokens(%s, 1, 'key-1')", (keyed,)).fetchall()
    conn.execute("SELECT * FROM pgq.take_tokens(%s)", (rated,)).fetchall()
    conn.execute("SELECT * FROM pgq.rate_waits(ARRAY[%s, %s])", (keyed, rated)).fetchall()
    conn.execute("SELECT * FROM pgq.rate_stats()").fetchall()
    conn.execute("SELECT * FROM pgq.key_stats()").fetchall()
    conn.execute("SELECT * FROM pgq.metrics()").fetchall()


def test_the_keyed_walk_reads_only_the_slots_with_queued_jobs_above_the_cursor(
    pgq_dsn: str,
) -> None:
    """Each step of the keyed walk seeks the next key in jobs_key_idx; in a slot where the lane
    has no queued job above its cursor (a drained slot waiting for its truncation, an empty
    one), that seek read the rest of the lane's entries there, all below the cursor, for
    nothing, once per key: under a held vacuum horizon at 2,000 jobs/s, 35 buffers per step in
    the drained slot against 3 in the current one. The claim first asks which slots have such a
    job (one probe each) and the walk's probes are pruned to those."""
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.configure('ks.a', key_concurrency_limit => 1000)")
        enqueue = (
            "SELECT count(*) FROM pgq.enqueue_many(array_fill('ks.a'::text, ARRAY[%s]),"
            " group_keys => ARRAY(SELECT 'key-' || (g %% 50) FROM generate_series(1, %s) g))"
        )
        conn.execute(enqueue, (200, 200))
        worker = uuid.uuid4()
        assert (
            len(conn.execute("SELECT id FROM pgq.claim(%s, '{ks.a}', 200)", (worker,)).fetchall())
            == 200
        )
        # The claimed jobs run on in their slot; the ring turns onto an empty one.
        conn.execute("SELECT setval('pgq.ring_rotated_at', 0)")
        assert conn.execute("SELECT rotated FROM pgq.maintain()").fetchone() == (True,)
        conn.execute(enqueue, (100, 100))
        with explained(conn, analyze=True) as plans:
            got = conn.execute("SELECT id FROM pgq.claim(%s, '{ks.a}', 10)", (worker,)).fetchall()
        slots = conn.execute(
            "SELECT array_agg(DISTINCT slot ORDER BY slot) FROM pgq.jobs WHERE entrypoint = 'ks.a'"
        ).fetchone()
    assert len(got) == 10 and slots is not None and len(slots[0]) == 2
    walked = {
        n["Relation Name"]
        for doc in plans
        if "WITH RECURSIVE walk" in doc["Query Text"]
        for n in plan_nodes(doc["Plan"])
        if n.get("Relation Name", "").startswith("jobs_")
        and n.get("Index Name", "").endswith("_ready_seq_idx")  # jobs_key_idx's partitions
        and n.get("Actual Loops", 0) > 0
    }
    assert walked == {f"jobs_{max(slots[0])}"}, walked


def test_a_claim_under_a_rate_limit_per_key_reads_the_windows_of_its_keys_in_its_walk(
    pgq_dsn: str,
) -> None:
    """The room of each key under a rate limit per key is two probes of rate_starts_key_idx in
    the walk's own statement (pgq._rate_window, inlined). A function call per key started a
    statement of its own per key (its executor start-up was most of what a rate per key added to
    a claim), and the budget of the jobs without a key was read on every claim, its turn come or
    not. So the statements whose plans read pgq.rate_starts in a claim are as many for 8 keys as
    for 2: the walk's and the record of the starts."""
    counts = []
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT pgq.configure('kw.a', rate_limit => 100, rate_period => '1 hour',"
            " rate_per_key => true)"
        )
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill('kw.a'::text, ARRAY[400]),"
            " group_keys => ARRAY(SELECT 'key-' || (g % 200) FROM generate_series(1, 400) g))"
        )
        worker = uuid.uuid4()
        for keys in (2, 8, 2, 8):
            with explained(conn) as plans:
                got = conn.execute(
                    "SELECT id FROM pgq.claim(%s, '{kw.a}', %s)", (worker, keys)
                ).fetchall()
            assert len(got) == keys
            counts.append(
                sum(
                    any(n.get("Relation Name") == "rate_starts" for n in plan_nodes(doc["Plan"]))
                    for doc in plans
                )
            )
        starts = conn.execute(
            "SELECT count(*), sum(tokens) FROM pgq.rate_starts WHERE entrypoint = 'kw.a'"
        ).fetchone()
    assert starts == (20, 20)  # one row per key claimed: the record ran
    assert counts[2:] == [2, 2], counts


def _keyed_claim_plans(dsn: str, policy: str) -> list[dict[str, Any]]:
    """The plans of one claim of 5 jobs of an entrypoint with `policy`, 40 jobs queued over 20
    keys (after one claim, so every plan is cached as a claim finds it)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"SELECT pgq.configure('kr.a', {policy})")
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill('kr.a'::text, ARRAY[40]),"
            " group_keys => ARRAY(SELECT 'key-' || (g % 20) FROM generate_series(1, 40) g))"
        )
        worker = uuid.uuid4()
        assert (
            len(conn.execute("SELECT id FROM pgq.claim(%s, '{kr.a}', 5)", (worker,)).fetchall())
            == 5
        )
        with explained(conn) as plans:
            got = conn.execute("SELECT id FROM pgq.claim(%s, '{kr.a}', 5)", (worker,)).fetchall()
    assert len(got) == 5
    return plans


def test_a_claim_reads_no_bitmap_on_an_unanalyzed_install(pgq_dsn: str) -> None:
    """Every statement of a claim finds its rows by index probes whatever the statistics say
    (pgq.claim sets enable_bitmapscan off for itself and the functions it calls). Planned without
    statistics, its UPDATE by ids read each ring partition through a bitmap of its id index, one
    heap page per job of a keyed claim through the bitmap: 9,000 instructions per job more than
    the same claim analyzed, which put a rate limit per key at 2.00x a claim without limits."""
    plans = _keyed_claim_plans(pgq_dsn, "key_concurrency_limit => 1000")
    bitmaps = [
        (doc["Query Text"][:60], n["Node Type"])
        for doc in plans
        for n in plan_nodes(doc["Plan"])
        if n["Node Type"].startswith("Bitmap")
    ]
    assert not bitmaps, bitmaps
    updates = [
        n
        for doc in plans
        for n in plan_nodes(doc["Plan"])
        if n.get("Node Type") == "ModifyTable"
        and n.get("Operation") == "Update"
        and n.get("Relation Name") == "jobs"
    ]
    assert len(updates) == 1


def _child_indexes(dsn: str, parent: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = %s::regclass",
            (parent,),
        ).fetchall()
    return {r[0] for r in rows}


def test_a_keyed_claim_records_its_rate_starts_in_the_statement_that_chooses_its_jobs(
    pgq_dsn: str,
) -> None:
    """The starts of a keyed claim under a rate limit are inserted by a data-modifying CTE of
    pgq._claim_keyed's statement, the one that calls pgq._keyed_candidates (pgq._rate_rows
    inlined): a function call per claim ran a statement of its own, whose executor start-up
    cost a rate limit per key 16,500 instructions per job at ten jobs per claim."""
    plans = _keyed_claim_plans(
        pgq_dsn, "rate_limit => 100, rate_period => '1 hour', rate_per_key => true"
    )
    inserting = [
        doc
        for doc in plans
        if any(
            n.get("Node Type") == "ModifyTable" and n.get("Relation Name") == "rate_starts"
            for n in plan_nodes(doc["Plan"])
        )
    ]
    assert len(inserting) == 1, [d["Query Text"][:80] for d in inserting]
    assert any(
        n.get("Function Name") == "_keyed_candidates" for n in plan_nodes(inserting[0]["Plan"])
    ), inserting[0]["Query Text"][:200]


def test_a_keyed_claim_probes_each_ring_slot_for_its_lane_without_partition_pruning_at_run_time(
    pgq_dsn: str,
) -> None:
    """Which ring slots hold a queued job of the lane above its cursor is one index probe per
    slot, each reading its partition alone, pruned when the plan was made (the slot a literal).
    A lateral probe per slot of generate_series(0, 3) read them through an Append that was
    pruned again on every execution, and its start-up cost every keyed claim 4,000 instructions
    per job at ten jobs per claim."""
    plans = _keyed_claim_plans(pgq_dsn, "key_concurrency_limit => 1000")
    ready = _child_indexes(pgq_dsn, "pgq.jobs_ready_idx")
    probes = [
        doc
        for doc in plans
        if any(n.get("Index Name") in ready for n in plan_nodes(doc["Plan"]))
        and "_keyed_candidates.cursor" in doc["Query Text"]
    ]
    assert len(probes) == 1, [d["Query Text"][:80] for d in probes]
    nodes = plan_nodes(probes[0]["Plan"])
    assert sorted(n["Relation Name"] for n in nodes if n.get("Index Name") in ready) == [
        f"jobs_{s}" for s in range(4)
    ]
    assert not [
        n["Node Type"]
        for n in nodes
        if n["Node Type"] in ("Append", "Merge Append", "Function Scan")
    ]


@pytest.mark.parametrize(
    ("policy", "counted"),
    [
        ("rate_limit => 100, rate_period => '1 hour', rate_per_key => true", 0),
        ("key_concurrency_limit => 1000", 4),
    ],
)
def test_the_keyed_walk_starts_the_scans_of_running_jobs_only_under_a_key_limit(
    pgq_dsn: str, policy: str, counted: int
) -> None:
    """The walk counts the running jobs of the keys it met (jobs_key_running_idx, one scan per
    ring slot) only for a key_concurrency_limit. Under a rate limit per key alone those scans
    are pruned before they start: their start-up cost that claim 6,400 instructions per job at
    ten jobs per claim for a count it never used."""
    plans = _keyed_claim_plans(pgq_dsn, policy)
    running = _child_indexes(pgq_dsn, "pgq.jobs_key_running_idx")
    walks = [doc for doc in plans if "WITH RECURSIVE walk" in doc["Query Text"]]
    assert len(walks) == 1
    scans = [n for n in plan_nodes(walks[0]["Plan"]) if n.get("Index Name") in running]
    assert len(scans) == counted, [n.get("Relation Name") for n in scans]


def test_complete_reads_only_the_slots_its_jobs_are_in(pgq_dsn: str) -> None:
    """The completion's locked read and its archive DELETE read only the ring slots their jobs
    are in (the leases name them: lease mod 4): the executor prunes the other partitions when
    it starts the plan. Read by id in every slot, each of these statements started and probed
    all five partitions (ADR 0010, "Left open")."""
    w = uuid.uuid4()
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        before = conn.execute("SELECT last_value FROM pgq.ring_seq").fetchone()
        assert before is not None
        conn.execute("SELECT setval('pgq.ring_seq', 6)")  # new jobs enter slot 2
        try:
            conn.execute("SELECT * FROM pgq.enqueue_many(array_fill('pl_slot'::text, ARRAY[5]))")
            jobs = conn.execute(
                "SELECT id, lease FROM pgq.claim(%s, ARRAY['pl_slot'], 5)", (w,)
            ).fetchall()
            ids, leases = zip(*jobs, strict=True)
            with explained(conn) as plans:
                done = conn.execute(
                    "SELECT count(*) FROM pgq.complete(%s, %s, %s, %s)",
                    (w, list(ids), list(leases), ["successful"] * 5),
                ).fetchone()
        finally:
            conn.execute("SELECT setval('pgq.ring_seq', %s)", before)
    assert len(jobs) == 5 and done == (5,)

    def read_by(phrase: str) -> list[set[str]]:
        return [
            {
                n["Relation Name"]
                for n in plan_nodes(d["Plan"])
                if n.get("Relation Name", "").startswith("jobs_")
            }
            for d in plans
            if phrase in " ".join(d["Query Text"].split())
        ]

    assert read_by("FROM (SELECT j.id FROM pgq.jobs j WHERE j.id = ANY (r_ids)") == [{"jobs_2"}]
    assert read_by("DELETE FROM pgq.jobs j USING input i") == [{"jobs_2"}]
