"""What enqueueing costs through each connection kind ``Queue`` takes: psycopg 3, psycopg2,
SQLAlchemy Core and ORM sessions on both drivers, Django's connection is not measured here (it
is a cursor of one of those drivers).

Usage: python benchmarks/enqueue_drivers.py [--dsn DSN] [--jobs 2000] [--repeat 3]

Each path enqueues --jobs jobs with one ``Queue.enqueue`` call each (the generated
``pgq.enqueue`` statement), all in one transaction of the caller's, committed at the end; a
fresh scratch database per measurement. The median of --repeat runs is printed, jobs/s and
microseconds per call, as a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
import psycopg
import psycopg2
import sqlalchemy as sa
from sqlalchemy.orm import Session

from pgq_thin.queue import Queue


def _url(dsn: str, driver: str) -> str:
    return dsn.replace("postgresql://", f"postgresql+{driver}://", 1)


def _timed(jobs: int, queue: Queue) -> float:
    t0 = time.perf_counter()
    for i in range(jobs):
        queue.enqueue("bench", {"n": i})
    return time.perf_counter() - t0


def psycopg3(db: str, jobs: int) -> float:
    with psycopg.connect(db) as conn:
        return _timed(jobs, Queue(conn))


def psycopg2_conn(db: str, jobs: int) -> float:
    conn = psycopg2.connect(db)
    try:
        with conn:
            return _timed(jobs, Queue(conn))
    finally:
        conn.close()


def sa_core(driver: str) -> Callable[[str, int], float]:
    def run(db: str, jobs: int) -> float:
        engine = sa.create_engine(_url(db, driver))
        try:
            with engine.begin() as conn:
                return _timed(jobs, Queue(conn))
        finally:
            engine.dispose()

    return run


def sa_session(driver: str) -> Callable[[str, int], float]:
    def run(db: str, jobs: int) -> float:
        engine = sa.create_engine(_url(db, driver))
        try:
            with Session(engine) as session, session.begin():
                return _timed(jobs, Queue(session))
        finally:
            engine.dispose()

    return run


PATHS: dict[str, Callable[[str, int], float]] = {
    "psycopg 3 connection": psycopg3,
    "psycopg2 connection": psycopg2_conn,
    "SQLAlchemy Connection, psycopg 3": sa_core("psycopg"),
    "SQLAlchemy Connection, psycopg2": sa_core("psycopg2"),
    "SQLAlchemy Session, psycopg 3": sa_session("psycopg"),
    "SQLAlchemy Session, psycopg2": sa_session("psycopg2"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows: list[list[Any]] = []
    for name, path in PATHS.items():
        times = []
        for _ in range(args.repeat):
            with common.scratch_db(args.dsn, "drivers") as db:
                common.install_pgq(db)
                times.append(path(db, args.jobs))
        median = statistics.median(times)
        rows.append([name, args.jobs / median, median / args.jobs * 1e6])
    print(common.table(["path", "jobs/s", "µs per enqueue"], rows))


if __name__ == "__main__":
    main()
