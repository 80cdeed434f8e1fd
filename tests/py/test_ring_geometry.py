"""The ring's geometry is written in several places; they must agree.

`pgq.jobs` is partitioned by `slot`: a ring of N slots (jobs_0 .. jobs_{N-1}) for due jobs and
one more partition, jobs_scheduled, for jobs not due yet. N is also the modulus of pgq._slot()
and maintain's c_slots, and pgq._keyed_candidates names every ring slot (one probe each, each
pruned when planned; the slots whose running jobs a key limit counts). The scheduled slot is a
literal in every statement that prunes it at plan time (`slot <> 4`, `slot = 4`: a parameter
would defeat plan-time pruning in the generic plans, docs/architecture.md), and in the CHECK
that ties status 'scheduled' to it. This reads the installed catalog so that changing one of
them without the others fails here.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg


def test_the_ring_and_the_scheduled_slot_agree_everywhere(
    pgq_conn: psycopg.Connection[Any],
) -> None:
    parts = dict(
        pgq_conn.execute(
            """SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
                 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'pgq.jobs'::regclass"""
        ).fetchall()
    )
    bound = {}
    for name, expr in parts.items():
        value = re.fullmatch(r"FOR VALUES IN \('?(\d+)'?\)", expr)
        assert value is not None, (name, expr)
        bound[name] = int(value.group(1))
    scheduled = bound.pop("jobs_scheduled")
    ring = len(bound)
    assert bound == {f"jobs_{k}": k for k in range(ring)}, bound
    assert scheduled == ring, "the scheduled slot is the value after the ring's"

    def source(name: str) -> str:
        row = pgq_conn.execute(
            "SELECT string_agg(prosrc, E'\\n') FROM pg_proc"
            " WHERE pronamespace = 'pgq'::regnamespace AND proname = %s",
            (name,),
        ).fetchone()
        assert row is not None and row[0], name
        return str(row[0])

    modulus = re.search(r"OPERATOR\(pg_catalog\.%\)\s*(\d+)", source("_slot"))
    assert modulus is not None and int(modulus.group(1)) == ring
    c_slots = re.search(r"c_slots\s+constant int := (\d+);", source("maintain"))
    assert c_slots is not None and int(c_slots.group(1)) == ring

    every = pgq_conn.execute(
        "SELECT string_agg(prosrc, E'\\n') FROM pg_proc WHERE pronamespace = 'pgq'::regnamespace"
        " AND proname <> '_keyed_candidates'"
    ).fetchone()
    assert every is not None
    literals = {int(k) for k in re.findall(r"\bslot\s*(?:<>|=)\s*(\d+)", every[0])}
    assert literals == {scheduled}, literals

    # The keyed walk probes each ring slot by a literal (pruned when planned) and counts running
    # jobs in every ring slot under a key limit: it names the whole ring.
    keyed = source("_keyed_candidates")
    probed = {int(k) for k in re.findall(r"\bslot\s*(?:<>|=)\s*(\d+)", keyed)}
    assert probed == set(range(ring)) | {scheduled}, probed
    held = re.search(r"THEN '\{([\d,]+)\}'::smallint\[\] END;", keyed)
    assert held is not None and [int(k) for k in held.group(1).split(",")] == list(range(ring))

    check = pgq_conn.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE conrelid = 'pgq.jobs'::regclass AND conname = 'jobs_slot_check'"
    ).fetchone()
    assert check is not None and f"(slot = {scheduled})" in check[0]
