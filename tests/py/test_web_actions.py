"""The dashboard's bulk and form actions over real HTTP (bearer token, JSON answers): requeue
all dead jobs since a time, requeue or delete every job matching the failed-list filter,
cancel, and bad input answered with the reason, nothing changed."""

from __future__ import annotations

from typing import Any

import httpx
from helpers.web import TOKEN, serving
from test_admin import kill

from pgq_thin import Admin, Queue

BEARER = {"Authorization": f"Bearer {TOKEN}", "X-Pgq-Actor": "test"}


def act(client: httpx.Client, path: str, **form: Any) -> dict[str, Any]:
    answer = client.post(path, data=form, headers=BEARER)
    body: dict[str, Any] = answer.json()
    assert answer.status_code == (200 if body["ok"] else 400), body
    return body


def statuses(dsn: str, ids: list[int]) -> list[str | None]:
    with Admin(dsn) as admin:
        return [None if (j := admin.job(i)) is None else j.status for i in ids]


def test_requeue_dead_jobs_since_a_time(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        ids = queue.enqueue_many("act.since", [{"n": i} for i in range(3)])
    kill(pgq_dsn, "act.since")
    with serving(pgq_dsn) as web, web.client() as client:
        later = act(
            client, "/actions/requeue-failed", entrypoint="act.since", since="2999-01-01T00:00"
        )
        assert (
            later["message"]
            == "requeued 0 failed job(s) of act.since since 2999-01-01 00:00:00+00:00"
        )
        assert statuses(pgq_dsn, ids) == ["failed"] * 3
        done = act(client, "/actions/requeue-failed", entrypoint="act.since", since="2000-01-01")
        assert done["message"].startswith("requeued 3 failed job(s) of act.since")
        assert statuses(pgq_dsn, ids) == ["queued"] * 3
        bad = act(client, "/actions/requeue-failed", entrypoint="act.since", since="last week")
        assert not bad["ok"] and "not a time" in bad["message"]


def test_requeue_and_delete_every_job_matching_the_filter(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        timeouts = queue.enqueue_many("act.match", [{"n": i} for i in range(2)])
    kill(pgq_dsn, "act.match", "timed out")
    with Queue(pgq_dsn) as queue:
        refused = queue.enqueue_many("act.match", [{"n": i} for i in range(2)])
    kill(pgq_dsn, "act.match", "connection refused")
    with serving(pgq_dsn) as web, web.client() as client:
        done = act(client, "/actions/requeue-matching", entrypoint="act.match", error="TIMED")
        assert done["message"] == "requeued 2 matching job(s)"
        assert statuses(pgq_dsn, timeouts) == ["queued", "queued"]
        done = act(client, "/actions/delete-matching", entrypoint="act.match", status="failed")
        assert done["message"] == "deleted 2 matching job(s)"
        assert statuses(pgq_dsn, refused) == [None, None]
        bad = act(client, "/actions/delete-matching", status="successful")
        assert not bad["ok"] and "unknown status" in bad["message"]


def test_cancel_and_bad_input(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        job = queue.enqueue("act.cancel")
    with serving(pgq_dsn) as web, web.client() as client:
        assert act(client, "/actions/cancel", ids=str(job))["message"] == (
            f"canceled 1 of 1 job(s): {job}"
        )
        assert statuses(pgq_dsn, [job]) == ["canceled"]
        for path, form, reason in (
            ("/actions/cancel", {}, "no job selected"),
            ("/actions/requeue", {"ids": "seven"}, "must be numbers"),
            ("/actions/pause", {"entrypoint": ""}, "entrypoint is required"),
            ("/actions/pause", {"entrypoint": "a\tb"}, "invalid entrypoint"),
            (
                "/actions/schedule-add",
                {"name": "s", "entrypoint": "e", "cron": "* * * * *", "payload": "{oops"},
                "not JSON",
            ),
            ("/actions/schedule-fire", {"name": "nope"}, "no schedule 'nope'"),
        ):
            bad = act(client, path, **form)
            assert not bad["ok"] and reason in bad["message"], (path, bad)
        with Admin(pgq_dsn) as admin:
            assert admin.schedules() == [] and not any(m.paused for m in admin.metrics())


def test_a_job_page_shows_its_workflow_and_cancels_it(pgq_dsn: str) -> None:
    """The job page of a job with dependencies lists its workflow (what each job waits for and
    feeds, the edge states); the Cancel workflow action ends every unfinished job of it."""
    with Queue(pgq_dsn) as queue:
        ids = queue.enqueue_many(["w.a", "w.b", "w.c"], [None] * 3, depends_on=[None, [1], [1, 2]])
    with serving(pgq_dsn) as web, web.client() as client:
        page = client.get(f"/jobs/{ids[1]}", headers=BEARER).text
        assert 'id="workflow"' in page and "3 jobs" in page
        assert f'<tr data-job="{ids[1]}" class="this">' in page
        row = page.split(f'<tr data-job="{ids[2]}"')[1].split("</tr>")[0]
        assert "s-waiting" in row and f"/jobs/{ids[0]}" in row and f"/jobs/{ids[1]}" in row
        done = act(client, "/actions/cancel-workflow", ids=str(ids[1]))
        assert done["message"].startswith("canceled 3 job(s) of the workflow of job"), done
        page = client.get(f"/jobs/{ids[0]}", headers=BEARER).text
        assert "Cancel workflow" not in page  # nothing left to cancel
    with Admin(pgq_dsn) as admin:
        assert {w["state"] for w in admin.workflow(ids[0])} == {"canceled"}


def test_a_job_page_draws_its_workflow_and_requeues_the_failed_part(pgq_dsn: str) -> None:
    """The job page draws the workflow (a box per job, an arrow per edge, each styled by its
    state); after a parent died and canceled its children, Requeue failed part brings the three
    back, the children waiting for it again, and the button goes."""
    with Queue(pgq_dsn) as queue:
        ids = queue.enqueue_many(
            ["w.d", "w.e", "w.f", "w.g"], [None] * 4, depends_on=[None, [1], [1], [2, 3]]
        )
    kill(pgq_dsn, "w.d")
    with serving(pgq_dsn) as web, web.client() as client:
        page = client.get(f"/jobs/{ids[3]}", headers=BEARER).text
        svg = page.split('<svg class="wf-graph"')[1].split("</svg>")[0]
        assert svg.count('class="wf-node"') == 4
        assert f'data-job="{ids[0]}" data-state="failed"' in svg
        assert f'data-job="{ids[3]}" data-state="canceled"' in svg
        assert svg.count('class="wf-edge e-failed"') == 4  # from d, and from e and f canceled
        done = act(client, "/actions/requeue-workflow", ids=str(ids[3]))
        assert done["message"].startswith("requeued 4 job(s) of the workflow of job"), done
        page = client.get(f"/jobs/{ids[0]}", headers=BEARER).text
        assert "Requeue failed part" not in page
        svg = page.split('<svg class="wf-graph"')[1].split("</svg>")[0]
        assert svg.count('class="wf-edge e-pending"') == 4
    assert statuses(pgq_dsn, ids) == ["queued", "waiting", "waiting", "waiting"]
