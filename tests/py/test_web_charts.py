"""The charts of the last hour on the overview and on an entrypoint's page: SVG drawn by the
server from ``pgq.metrics_series`` (no script), one bar per minute stacked by status, the due
backlog as a line with gaps where no sample was taken, wait and run p95 as lines."""

from __future__ import annotations

import re
from typing import Any

from helpers.web import an_hour_of_history, serving

from pgq_thin import Admin
from pgq_thin.web.charts import BOTTOM, HEIGHT, TOP, nice_max


def chart(html: str, kind: str) -> str:
    found = re.search(rf'<svg class="chart" data-chart="{kind}".*?</svg>', html, re.S)
    assert found, f"no {kind} chart"
    return found[0]


def bars(svg: str, status: str) -> dict[str, tuple[int, float]]:
    """minute -> (jobs, bar height) of one status."""
    found = re.findall(
        rf'<rect class="bar-{status}" x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)"'
        rf' fill="#\w+"><title>(\d\d:\d\d): (\d+) {status}</title>',
        svg,
    )
    return {minute: (int(n), float(h)) for h, minute, n in found}


def test_nice_max() -> None:
    assert [nice_max(v) for v in (0, 0.3, 1, 7, 11, 23, 240, 999)] == [
        1, 0.5, 1, 10, 20, 25, 250, 1000
    ]  # fmt: skip


def test_the_overview_and_an_entrypoint_page_chart_the_last_hour(pgq_dsn: str) -> None:
    done = an_hour_of_history(pgq_dsn, ["chart.a", "chart.b"], dead=["chart.a"])["chart.a"]
    with Admin(pgq_dsn) as admin:
        admin.metrics()
        mine = admin.metrics_series("chart.a")
        every = admin.metrics_series(combined=True)
    assert sum(p.successful + p.failed for p in mine) == done
    with serving(pgq_dsn, token=None) as server, server.client() as client:
        page = client.get("/entrypoint?name=chart.a").text
        overview = client.get("/").text
        live = client.get("/live/overview").text
    assert "<script" not in chart(page, "finished")
    check(page, mine)
    check(overview, every)
    assert chart(live, "finished") == chart(overview, "finished")  # the charts refresh too


def check(html: str, points: list[Any]) -> None:
    finished = chart(html, "finished")
    ok, dead = bars(finished, "successful"), bars(finished, "failed")
    want_ok = {f"{p.minute:%H:%M}": p.successful for p in points if p.successful}
    want_dead = {f"{p.minute:%H:%M}": p.failed for p in points if p.failed}
    assert {m: n for m, (n, _) in ok.items()} == want_ok
    assert {m: n for m, (n, _) in dead.items()} == want_dead
    # heights are proportional to the counts, on a scale from 0 to a round top
    top = nice_max(max(p.successful + p.failed + p.canceled for p in points))
    per_job = (HEIGHT - TOP - BOTTOM) / top
    assert all(abs(h - n * per_job) <= 0.06 for n, h in [*ok.values(), *dead.values()])
    assert f">{top:,.0f}</text>" in finished  # the scale is written on the axis

    backlog = chart(html, "backlog")
    sampled = [p for p in points if p.due is not None]
    assert sampled, "the rollup sampled the backlog each minute"
    lines = re.findall(r'<polyline class="line-due" points="([^"]+)"', backlog)
    drawn = sum(len(line.split()) for line in lines) + backlog.count("<circle")
    assert drawn == len(sampled)  # one point per sample; a gap where none was taken
    latency = chart(html, "latency")
    assert 'class="line-run"' in latency and 'class="line-wait"' in latency


def test_an_entrypoint_nobody_serves_is_marked(pgq_dsn: str) -> None:
    import psycopg

    from pgq_thin import Queue

    with Queue(pgq_dsn) as queue:
        queue.enqueue("served.yes")
        queue.enqueue("served.typo")
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.register_worker(gen_random_uuid(), ARRAY['served.yes'])")
    with serving(pgq_dsn, token=None) as server, server.client() as client:
        overview = client.get("/").text
        typo = client.get("/entrypoint?name=served.typo").text
        fine = client.get("/entrypoint?name=served.yes").text

    def row(name: str) -> str:
        found = re.search(rf'<tr data-entrypoint="{re.escape(name)}".*?</tr>', overview, re.S)
        assert found
        return found[0]

    assert '<span class="badge unserved"' in row("served.typo")
    assert "unserved" not in row("served.yes")
    assert re.search(r'id="ep-served">no, for [\d.]+ (ms|s)<', typo)
    assert 'id="ep-served">yes<' in fine and 'class="badge unserved"' not in fine
