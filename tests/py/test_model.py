"""Model-based test of the job lifecycle: seeded random sequences of every public lifecycle
function (enqueue, enqueue_many with dedupe keys and on_conflict, claim with and without
request_id and re-sent, heartbeat, complete with every outcome and repeated, release, cancel,
requeue, configure, pause/resume, pgq.maintain turning the ring) on a simulated clock, checked
after every step against the Python model of docs/sql-api.md in tests/py/helpers/model.py.
A failure is shrunk (delta debugging) and printed as a psql script for a fresh install.

PGQ_MODEL_STEPS (steps per sequence, default 120), PGQ_MODEL_RUNS (sequences, default 3) and
PGQ_MODEL_SEED (first seed; default: a fixed one) make a longer run; a failure prints its seed.
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


@pytest.fixture
def fresh(pg_server: PgServer, template_db: str) -> Any:
    @contextmanager
    def make() -> Iterator[str]:
        with pg_server.database("model", template=template_db) as dsn:
            yield dsn

    return make


def report(fresh: Any, seed: int, steps: list[dict[str, Any]], err: mdl.Mismatch) -> str:
    failing = steps[: int(str(err).split("step ", 1)[1].split(":", 1)[0])] if "step " in str(err) else steps
    small = mdl.shrink(fresh, failing, err.kind)
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
