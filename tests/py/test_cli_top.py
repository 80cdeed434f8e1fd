"""``pgq-thin top`` in a real terminal: tmux runs it, the test reads the screen and checks the
numbers against what SQL reports, watches it refresh, then quits it with ``q`` or Ctrl-C and
checks the exit status."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from helpers.wait import wait_for

from pgq_thin import Admin, Queue

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    """A tmux server of its own with one 140x45 window running a command."""

    def __init__(self, command: list[str], status: Path) -> None:
        self.socket = f"pgq-top-{secrets.token_hex(4)}"
        self.status = status
        line = " ".join(_quote(a) for a in command)
        script = f"{line}; echo $? > {_quote(str(status))}; sleep 60"
        self.tmux("new-session", "-d", "-x", "140", "-y", "45", "-s", "top", script)

    def tmux(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=20,
            env={**os.environ, "PGQ_THIN_DATA": "/nonexistent/pgq-thin-test"},
            cwd=REPO,
            check=True,
        )
        return result.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "top")

    def press(self, key: str) -> None:
        self.tmux("send-keys", "-t", "top", key)

    def exit_status(self) -> int:
        text = wait_for(
            lambda: self.status.exists() and self.status.read_text().strip(),
            15,
            "top to exit",
        )
        return int(text)

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[list[Terminal]]:
    made: list[Terminal] = []
    yield made
    for t in made:
        t.kill()


def _showing(top: Terminal, first: str) -> str:
    """The screen once it has a row starting with ``first`` (else empty)."""
    screen = top.screen()
    return screen if row(screen, first) else ""


def row(screen: str, first: str) -> list[str]:
    """The cells of the screen line that starts with ``first`` (split on blanks)."""
    for line in screen.splitlines():
        cells = line.split()
        if cells and cells[0] == first:
            return cells
    return []


def test_top_shows_what_sql_reports_refreshes_and_quits_on_q(
    pgq_dsn: str, tmp_path: Path, terminal: list[Terminal]
) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue_many("top.a", [{"i": i} for i in range(7)])
        queue.enqueue_many("top.a", [{}, {}, {}], run_ats=3600.0)
        dead = queue.enqueue("top.dead")
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.configure('top.dead', max_attempts => 1)")
        conn.execute(
            "SELECT pgq.complete(c.worker, ARRAY[c.id], ARRAY[c.lease], ARRAY['failed'],"
            ' \'[{"error": "OSError", "message": "disk full"}]\'::jsonb)'
            " FROM (SELECT gen_random_uuid() AS worker) w,"
            " LATERAL (SELECT w.worker, j.id, j.lease"
            "          FROM pgq.claim(w.worker, ARRAY['top.dead'], 1) j) c"
        )
        conn.execute(
            "SELECT pgq.register_worker('5eed0000-0000-4000-8000-000000000001', '{top.a}',"
            " host => 'box-1', pid => 4242)"
        )
    with Admin(pgq_dsn) as admin:
        sql = {m.entrypoint: m for m in admin.metrics()}["top.a"]
    assert (sql.due, sql.delayed, sql.running, sql.stale) == (7, 3, 0, 0)

    top = Terminal([sys.executable, "-m", "pgq_thin", "top", "--dsn", pgq_dsn], tmp_path / "status")
    terminal.append(top)
    screen = wait_for(lambda: _showing(top, "top.a"), 20, "the screen")
    assert "pgq-thin top" in screen and "q quits" in screen
    cells = row(screen, "top.a")
    assert cells[1:5] == [str(sql.due), str(sql.delayed), str(sql.running), str(sql.stale)]
    assert row(screen, "top.dead")[1:3] == ["0", "0"]
    worker = row(screen, "5eed0000")
    assert worker[1:4] == ["active", "box-1", "4242"]
    failure = next(line for line in screen.splitlines() if str(dead) in line.split())
    assert "top.dead" in failure and "OSError" in failure and "disk full" in failure

    with Queue(pgq_dsn) as queue:  # the next refresh (every second) shows them
        queue.enqueue_many("top.a", [{}, {}])
    wait_for(lambda: row(top.screen(), "top.a")[1:2] == ["9"], 10, "a refresh with due 9")

    top.press("q")
    assert top.exit_status() == 0
    after = top.screen()
    assert "Traceback" not in after and row(after, "top.a") == []  # the normal screen is back


def test_top_quits_cleanly_on_ctrl_c(
    pgq_dsn: str, tmp_path: Path, terminal: list[Terminal]
) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue("top.c")
    top = Terminal([sys.executable, "-m", "pgq_thin", "top", "--dsn", pgq_dsn], tmp_path / "status")
    terminal.append(top)
    wait_for(lambda: row(top.screen(), "top.c"), 20, "the screen")
    top.press("C-c")
    assert top.exit_status() == 0
    assert "Traceback" not in top.screen()


def test_top_once_prints_one_screen(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue_many("top.o", [{}, {}])
    result = subprocess.run(
        [sys.executable, "-m", "pgq_thin", "top", "--once", "--dsn", pgq_dsn],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "140"},
    )
    assert result.returncode == 0, result.stderr
    assert row(result.stdout, "top.o")[1:3] == ["2", "0"]


def test_top_without_pgq_reader_shows_the_numbers_and_says_why_not_the_failures(
    pgq_dsn: str, login_role: Callable[..., str]
) -> None:
    producer = login_role("pgq_producer")
    with Queue(pgq_dsn) as queue:
        queue.enqueue("top.r")
    result = subprocess.run(
        [sys.executable, "-m", "pgq_thin", "top", "--once", "--dsn", producer],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    assert row(result.stdout, "top.r")[1:2] == ["1"]
    assert "last failures: role pgq_t_" in result.stdout
    assert "lacks pgq_reader (or pgq_admin)" in result.stdout


def test_top_shows_a_rate_sparkline_and_who_serves(pgq_dsn: str) -> None:
    """The sparkline is pgq.metrics_series (jobs finished per minute, the last 30 minutes);
    ``served`` is pgq.metrics' column: NO and for how long when due jobs have no worker."""
    from pgq_thin.cli.top import SPARK_MINUTES, sparkline

    assert sparkline([0, 1, 4, 8]) == "▁▂▅█" and sparkline([0, 0]) == "▁▁"
    with Queue(pgq_dsn) as queue:
        queue.enqueue_many("top.spark", [{} for _ in range(4)])
        queue.enqueue("top.nobody")
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        worker = "5a5a0000-0000-4000-8000-000000000001"
        conn.execute("SELECT pgq.register_worker(%s, ARRAY['top.spark'])", (worker,))
        for job_id, lease in conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY['top.spark'], 4)", (worker,)
        ).fetchall():
            conn.execute(
                "SELECT pgq.complete(%s, ARRAY[%s::bigint], ARRAY[%s::bigint],"
                " ARRAY['successful'])",
                (worker, job_id, lease),
            )
    with Admin(pgq_dsn) as admin:

        def counted() -> bool:
            admin.metrics()  # advances the rollup
            return any(p.successful == 4 for p in admin.metrics_series("top.spark"))

        wait_for(counted, timeout=30, what="the rollup to count the four jobs")
    result = subprocess.run(
        [sys.executable, "-m", "pgq_thin", "top", "--once", "--dsn", pgq_dsn],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    spark = row(result.stdout, "top.spark")
    assert spark[-2] == "yes" and len(spark[-1]) == SPARK_MINUTES
    assert spark[-1][-1] == "█" or spark[-1][-2] == "█"  # this minute (or the one before)
    nobody = row(result.stdout, "top.nobody")
    assert nobody[-3] == "NO" and nobody[-2].endswith("s") and set(nobody[-1]) == {"▁"}
