"""The dashboard in a real browser: headless Chromium (Debian's package, driven by Playwright
with ``executable_path``; nothing downloaded) against a real server and a real database.

Covers: the overview shows the counts SQL reports and refreshes itself without a reload;
pausing an entrypoint from the page stops a running ThinWorker claiming it (and resuming lets
it run); requeueing a dead job from its page runs it to success; HTML in payloads, errors and
names renders as text; actions are hidden and refused without the token and for a read-only
role; the failed list filters, selects, requeues and deletes; schedules are added, fired and
removed; the search box finds jobs by id and dedupe key; listings page with a cursor. The
overview, a job page and the failed list are saved as PNG (to docs/images with
PGQ_UPDATE_GOLDEN=1, as ``make golden`` does).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers.wait import wait_for
from helpers.web import TOKEN, an_hour_of_history, chromium_path, screenshot_dir, serving
from test_admin import kill

from pgq_thin import Admin, Job, Queue, ThinWorker

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
Page = Any  # playwright.sync_api.Page


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        pytest.skip("chromium is not installed (scripts/provision.py installs Debian's)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def new_page(browser: Any) -> Iterator[Callable[[], Page]]:
    contexts: list[Any] = []

    def make() -> Page:
        context = browser.new_context(viewport={"width": 1360, "height": 860})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        return page

    yield make
    for context in contexts:
        context.close()


def sign_in(page: Page, url: str, who: str = "alice", token: str = TOKEN) -> None:
    page.goto(url + "/login")
    page.fill("input[name=who]", who)
    page.fill("input[name=token]", token)
    page.click("#login button")
    expect(page.locator("#actor")).to_have_text(who)


def post_from_page(page: Page, path: str, form: dict[str, str]) -> int:
    """Send a POST from inside the page (same origin, its cookies): the status code."""
    status: int = page.evaluate(
        """([path, form]) => fetch(path, {method: "POST", body: new URLSearchParams(form),
                                         redirect: "manual"}).then(r => r.status)""",
        [path, form],
    )
    return status


def fail_with_traceback(dsn: str, entrypoint: str, message: str) -> None:
    """Make the due jobs of an entrypoint dead, with an error, a message and a traceback."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.configure(%s, max_attempts => 1)", (entrypoint,))
        worker = uuid.uuid4()
        claimed = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], 100)", (worker, entrypoint)
        ).fetchall()
        for job_id, lease in claimed:
            details = {
                "error": "CardDeclined",
                "message": message,
                "traceback": 'Traceback (most recent call last):\n  File "shop.py", line 41, in '
                f"charge\n    raise CardDeclined(order)\nCardDeclined: {message}",
            }
            conn.execute(
                "SELECT pgq.complete(%s, ARRAY[%s::bigint], ARRAY[%s::bigint], ARRAY['failed'],"
                " jsonb_build_array(%s::jsonb))",
                (worker, job_id, lease, psycopg.types.json.Jsonb(details)),
            )


class RunningWorker:
    """A ThinWorker running in a thread of the test, recording the jobs it ran."""

    def __init__(self, dsn: str, *entrypoints: str) -> None:
        self.ran: list[tuple[str, int]] = []
        self.worker = ThinWorker(
            dsn, concurrency=2, batch_size=1, poll_interval=0.3, run_schedules=False
        )
        for name in entrypoints:
            self.worker.entrypoint(name)(self._handler(name))
        self.thread = threading.Thread(target=self._run, name="pgq-worker", daemon=True)

    def _handler(self, name: str) -> Callable[[Job[Any]], Any]:
        async def handle(job: Job[Any]) -> dict[str, Any]:
            self.ran.append((name, job.id))
            return {"handled_by": "test worker", "entrypoint": name}

        return handle

    def _run(self) -> None:
        asyncio.run(self.worker.arun(install_signal_handlers=False))

    def __enter__(self) -> RunningWorker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.worker.stop()
        self.thread.join(30)


def status_of(dsn: str, job_id: int) -> str | None:
    with Admin(dsn) as admin:
        job = admin.job(job_id)
    return None if job is None else job.status


def test_overview_shows_the_counts_sql_reports(
    pgq_dsn: str, new_page: Callable[[], Page], tmp_path: Path
) -> None:
    from datetime import timedelta

    # the last hour for the charts: jobs run over 45 minutes, five of charge_card dead
    an_hour_of_history(pgq_dsn, ["send_email", "charge_card"], dead=["charge_card"])
    with Queue(pgq_dsn) as queue:
        queue.enqueue_many("send_email", [{"to": f"user{i}@example.com"} for i in range(37)])
        queue.enqueue_many(
            "resize_image", [{"n": i} for i in range(12)], run_ats=timedelta(hours=1)
        )
        queue.enqueue_many("charge_card", [{"order": 4700 + i} for i in range(4)])
        queue.enqueue_many("nightly_report", [{"day": "2026-11-30"}])
    fail_with_traceback(pgq_dsn, "charge_card", "card declined for order")
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        worker = uuid.uuid4()
        conn.execute(
            "SELECT * FROM pgq.register_worker(%s, '{send_email,resize_image}', 'app-host-1',"
            " 4242, 'pgq-thin worker', '0.1.0')",
            (worker,),
        )
        conn.execute("SELECT * FROM pgq.claim(%s, '{send_email}', 3)", (worker,))
    with Admin(pgq_dsn) as admin:
        admin.pause("resize_image")

    with serving(pgq_dsn) as web:
        page = new_page()
        page.goto(web.url + "/")
        with Admin(pgq_dsn) as admin:
            sql = {m.entrypoint: m for m in admin.metrics()}
        assert set(sql) == {"send_email", "resize_image", "charge_card", "nightly_report"}
        for entrypoint, m in sql.items():
            row = page.locator(f'#entrypoints tr[data-entrypoint="{entrypoint}"]')
            for column in ("due", "delayed", "running", "stale"):
                expect(row.locator(f'[data-col="{column}"]')).to_have_text(str(getattr(m, column)))
            expect(row.locator(".badge.paused")).to_have_count(1 if m.paused else 0)
        assert (sql["send_email"].due, sql["send_email"].running) == (34, 3)
        expect(page.locator("#workers")).to_contain_text("app-host-1")
        expect(page.locator("#last-failures tbody tr")).to_have_count(9)  # 4 + 5 of the hour
        expect(page.locator("#last-failures")).to_contain_text("card declined for order")

        # the figures refresh in place, without reloading the page
        page.evaluate("window.__not_reloaded = true")
        with Queue(pgq_dsn) as queue:
            queue.enqueue_many("send_email", [{"late": i} for i in range(5)])
        due = page.locator('#entrypoints tr[data-entrypoint="send_email"] [data-col="due"]')
        expect(due).to_have_text("39")
        assert page.evaluate("window.__not_reloaded") is True
        sign_in(page, web.url)  # the page with its actions, for the picture
        expect(page.locator('tr[data-entrypoint="send_email"] button')).to_have_text("pause")
        expect(page.locator('tr[data-entrypoint="resize_image"] button')).to_have_text("resume")
        # the charts of the last hour, drawn by the server (SVG), refreshed with the figures:
        # dead jobs in 5 minutes of the history and in this one (fail_with_traceback)
        bars = page.locator('#charts svg[data-chart="finished"] rect.bar-successful')
        expect(bars).not_to_have_count(0)
        expect(page.locator('#charts svg[data-chart="finished"] rect.bar-failed')).to_have_count(6)
        expect(page.locator('#charts svg[data-chart="backlog"] polyline')).not_to_have_count(0)
        expect(page.locator('#charts svg[data-chart="latency"] polyline')).not_to_have_count(0)
        page.screenshot(path=str(screenshot_dir(tmp_path) / "overview.png"), full_page=True)
        page.goto(web.url + "/entrypoint?name=charge_card")
        expect(page.locator('#charts svg[data-chart="finished"] rect.bar-failed')).to_have_count(6)
        page.screenshot(path=str(screenshot_dir(tmp_path) / "entrypoint.png"), full_page=True)


def test_pausing_from_the_page_stops_a_running_worker(
    pgq_dsn: str, new_page: Callable[[], Page]
) -> None:
    with RunningWorker(pgq_dsn, "web.pause", "web.other") as running, Queue(pgq_dsn) as queue:
        first = queue.enqueue("web.pause")
        wait_for(lambda: ("web.pause", first) in running.ran, 20, "the worker to run a job")
        with serving(pgq_dsn) as web:
            page = new_page()
            sign_in(page, web.url)
            row = page.locator('#entrypoints tr[data-entrypoint="web.pause"]')
            row.get_by_role("button", name="pause").click()
            expect(page.locator("#flash")).to_have_text("paused web.pause")
            expect(row.locator(".badge.paused")).to_have_count(1)

            held = queue.enqueue("web.pause")  # older than the marker: claimed first if not paused
            marker = queue.enqueue("web.other")
            wait_for(lambda: ("web.other", marker) in running.ran, 20, "the worker to go on")
            assert ("web.pause", held) not in running.ran
            assert status_of(pgq_dsn, held) == "queued"

            page.goto(web.url + "/entrypoint?name=web.pause")
            page.get_by_role("button", name="Resume").click()
            expect(page.locator("#flash")).to_have_text("resumed web.pause")
            wait_for(lambda: ("web.pause", held) in running.ran, 20, "the paused job to run")
            expect(page.locator("#paused")).to_have_count(0)
            page.goto(web.url + "/actions")  # who did it, newest first
            expect(page.locator("#actions tbody tr").nth(0)).to_contain_text("resumed web.pause")
            expect(page.locator("#actions tbody tr").nth(1)).to_contain_text("alice")
            expect(page.locator("#actions tbody tr").nth(1)).to_contain_text("paused web.pause")


def test_requeue_a_dead_job_from_its_page_and_it_finishes(
    pgq_dsn: str, new_page: Callable[[], Page], tmp_path: Path
) -> None:
    with Queue(pgq_dsn) as queue:
        job_id = queue.enqueue(
            "charge_card",
            {"order": 4711, "amount": {"value": "12.50", "currency": "EUR"}},
            dedupe_key="order-4711",
            headers={"tenant": "shop-eu"},
        )
    fail_with_traceback(pgq_dsn, "charge_card", "card declined for order 4711")
    with serving(pgq_dsn) as web:
        page = new_page()
        sign_in(page, web.url)
        page.goto(f"{web.url}/jobs/{job_id}")
        expect(page.locator("#job-status")).to_have_text("failed")
        expect(page.locator("pre.traceback")).to_contain_text('File "shop.py", line 41')
        expect(page.locator("#payload")).to_contain_text('"currency": "EUR"')
        page.screenshot(path=str(screenshot_dir(tmp_path) / "job.png"), full_page=True)

        with RunningWorker(pgq_dsn, "charge_card"):
            page.get_by_role("button", name="Requeue").click()
            expect(page.locator("#flash")).to_have_text(f"requeued 1 of 1 job(s): {job_id}")
            wait_for(lambda: status_of(pgq_dsn, job_id) == "successful", 20, "the job to finish")
        page.reload()
        expect(page.locator("#job-status")).to_have_text("successful")
        expect(page.locator("#result")).to_contain_text('"handled_by": "test worker"')


def test_a_workflow_is_drawn_and_its_failed_part_requeued_runs_to_the_end(
    pgq_dsn: str, new_page: Callable[[], Page], tmp_path: Path
) -> None:
    """A fan-out/fan-in whose split died: the job page draws six boxes that do not overlap, the
    split red and the rest canceled; Requeue failed part brings the workflow back and a worker
    runs it in order to the merge."""
    names = [
        "report.split",
        "report.part",
        "report.part",
        "report.part",
        "report.part",
        "report.merge",
    ]
    with Queue(pgq_dsn) as queue:
        ids = queue.enqueue_many(
            names, [None] * 6, depends_on=[None, [1], [1], [1], [1], [2, 3, 4, 5]]
        )
    fail_with_traceback(pgq_dsn, "report.split", "the input file was empty")
    with serving(pgq_dsn) as web:
        page = new_page()
        sign_in(page, web.url)
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(f"{web.url}/jobs/{ids[5]}")
        nodes = page.locator("#workflow-graph a.wf-node")
        expect(nodes).to_have_count(6)
        expect(page.locator(f'#workflow-graph a[data-job="{ids[0]}"]')).to_have_attribute(
            "data-state", "failed"
        )
        boxes = [nodes.nth(i).bounding_box() for i in range(6)]
        for i, a in enumerate(boxes):
            assert a is not None and a["width"] > 100 and a["height"] > 20
            for b in boxes[i + 1 :]:
                assert b is not None
                apart_x = a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                apart_y = a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"]
                assert apart_x or apart_y, (a, b)
        expect(page.locator("#workflow-graph path.wf-edge")).to_have_count(8)
        page.screenshot(path=str(screenshot_dir(tmp_path) / "workflow.png"), full_page=True)

        with RunningWorker(pgq_dsn, "report.split", "report.part", "report.merge") as worker:
            page.get_by_role("button", name="Requeue failed part").click()
            expect(page.locator("#flash")).to_contain_text("requeued 6 job(s) of the workflow")
            wait_for(lambda: status_of(pgq_dsn, ids[5]) == "successful", 30, "the merge to run")
        assert worker.ran[0][1] == ids[0] and worker.ran[-1][1] == ids[5]
        page.reload()
        expect(page.locator('#workflow-graph a[data-state="successful"]')).to_have_count(6)


def test_html_in_payloads_errors_and_names_renders_as_text(
    pgq_dsn: str, new_page: Callable[[], Page]
) -> None:
    evil = '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>'
    entrypoint = "<b>bold</b>"
    with Queue(pgq_dsn) as queue:
        job_id = queue.enqueue(entrypoint, {"html": evil}, dedupe_key="<i>key</i>")
    fail_with_traceback(pgq_dsn, entrypoint, evil)
    with serving(pgq_dsn) as web:
        page = new_page()
        for path in (
            "/",
            f"/jobs/{job_id}",
            "/failed",
            f"/entrypoint?name={entrypoint}&state=failed",
        ):
            page.goto(web.url + path)
            assert page.evaluate("window.__pwned") is None, path
            assert page.locator("main script, main img, main b, main i").count() == 0, path
        page.goto(f"{web.url}/jobs/{job_id}")
        expect(page.locator("#payload")).to_contain_text(evil.replace('"', '\\"'))
        expect(page.locator("h1 + div")).to_contain_text("<i>key</i>")
        page.goto(web.url + "/")
        expect(page.locator("#entrypoints")).to_contain_text("<b>bold</b>")


def test_actions_are_hidden_and_refused_without_the_token(
    pgq_dsn: str, new_page: Callable[[], Page]
) -> None:
    with Queue(pgq_dsn) as queue:
        job_id = queue.enqueue("web.guarded")
    with serving(pgq_dsn) as web:
        page = new_page()
        page.goto(web.url + "/")
        expect(page.locator("#sign-in")).to_be_visible()
        assert page.locator('form[action^="/actions/"]').count() == 0
        page.goto(f"{web.url}/jobs/{job_id}")
        assert page.locator('form[action^="/actions/"]').count() == 0
        assert post_from_page(page, "/actions/cancel", {"ids": str(job_id)}) == 403

        page.goto(web.url + "/login")
        page.fill("input[name=who]", "mallory")
        page.fill("input[name=token]", "not-the-token")
        page.click("#login button")
        expect(page.locator("#login-error")).to_contain_text("Wrong token")
        assert post_from_page(page, "/actions/cancel", {"ids": str(job_id)}) == 403
    assert status_of(pgq_dsn, job_id) == "queued"


def test_read_only_mode_hides_and_refuses_actions(
    pgq_dsn: str, new_page: Callable[[], Page], login_role: Callable[..., str]
) -> None:
    with Queue(pgq_dsn) as queue:
        job_id = queue.enqueue("web.ro")
    kill(pgq_dsn, "web.ro")
    # no token: read-only for everyone
    with serving(pgq_dsn, token=None) as web:
        page = new_page()
        for path in ("/", f"/jobs/{job_id}", "/failed", "/schedules", "/entrypoint?name=web.ro"):
            page.goto(web.url + path)
            expect(page.locator(".badge.ro")).to_have_text("read-only")
            assert page.locator('form[action^="/actions/"]').count() == 0, path
        assert post_from_page(page, "/actions/requeue", {"ids": str(job_id)}) == 403
    # a token, but a database role that may only read
    with serving(login_role("pgq_reader")) as web:
        page = new_page()
        sign_in(page, web.url)
        expect(page.locator(".flash.warn")).to_contain_text("may only read")
        page.goto(f"{web.url}/jobs/{job_id}")
        assert page.locator('form[action^="/actions/"]').count() == 0
        csrf = page.locator('meta[name="csrf"]').get_attribute("content")
        assert post_from_page(page, "/actions/requeue", {"ids": str(job_id), "csrf": csrf}) == 403
    assert status_of(pgq_dsn, job_id) == "failed"


def test_failed_list_filters_selects_requeues_and_deletes(
    pgq_dsn: str, new_page: Callable[[], Page], tmp_path: Path
) -> None:
    with Queue(pgq_dsn) as queue:
        card = queue.enqueue_many("charge_card", [{"order": 4800 + i} for i in range(3)])
        mail = queue.enqueue_many("send_email", [{"to": "x@example.com"}] * 2)
    fail_with_traceback(pgq_dsn, "charge_card", "card declined")
    kill(pgq_dsn, "send_email", "SMTP 451: try again later")
    with serving(pgq_dsn) as web:
        page = new_page()
        page.on("dialog", lambda dialog: dialog.accept())
        sign_in(page, web.url)
        page.goto(web.url + "/failed")
        expect(page.locator("#selected tbody tr")).to_have_count(5)
        page.screenshot(path=str(screenshot_dir(tmp_path) / "failed.png"), full_page=True)

        page.fill("input[name=error]", "smtp")
        page.get_by_role("button", name="Filter").click()
        expect(page.locator("#selected tbody tr")).to_have_count(2)
        page.check(f'input[name=ids][value="{mail[0]}"]')
        page.click("#requeue-selected")
        expect(page.locator("#flash")).to_have_text(f"requeued 1 of 1 job(s): {mail[0]}")
        assert status_of(pgq_dsn, mail[0]) == "queued"

        page.goto(web.url + "/failed?entrypoint=charge_card")
        page.check(".select-all")
        page.click("#delete-selected")
        expect(page.locator("#flash")).to_have_text(
            "deleted 3 of 3 finished job(s): " + ", ".join(str(i) for i in sorted(card))
        )
        assert [status_of(pgq_dsn, i) for i in card] == [None, None, None]
        assert status_of(pgq_dsn, mail[1]) == "failed"


def test_schedules_add_fire_and_remove(pgq_dsn: str, new_page: Callable[[], Page]) -> None:
    with serving(pgq_dsn) as web:
        page = new_page()
        page.on("dialog", lambda dialog: dialog.accept())
        sign_in(page, web.url)
        page.goto(web.url + "/schedules")
        form = page.locator("#add-schedule")
        form.locator("input[name=name]").fill("nightly-report")
        form.locator("input[name=entrypoint]").fill("build_report")
        form.locator("input[name=cron]").fill("0 3 * * *")
        form.locator("input[name=timezone]").fill("Europe/Berlin")
        form.locator("textarea[name=payload]").fill('{"kind": "daily"}')
        form.get_by_role("button", name="Save schedule").click()
        expect(page.locator("#flash")).to_contain_text("schedule nightly-report saved")
        row = page.locator("#schedules tbody tr", has_text="nightly-report")
        expect(row).to_contain_text("Europe/Berlin")

        row.get_by_role("button", name="fire now").click()
        expect(page.locator("#flash")).to_contain_text("schedule nightly-report fired: job ")
        with Admin(pgq_dsn) as admin:
            (schedule,) = admin.schedules()
            assert schedule.last_job_id is not None
            job = admin.job(schedule.last_job_id)
        assert job is not None and (job.entrypoint, job.payload) == (
            "build_report",
            {"kind": "daily"},
        )
        expect(row.locator(f'a[href="/jobs/{job.id}"]')).to_have_count(1)

        form.locator("input[name=cron]").fill("every day")
        form.locator("input[name=name]").fill("bad")
        form.locator("input[name=entrypoint]").fill("x")
        form.get_by_role("button", name="Save schedule").click()
        expect(page.locator("#flash.error")).to_contain_text("every day")

        page.locator("#schedules tbody tr", has_text="nightly-report").get_by_role(
            "button", name="remove"
        ).click()
        expect(page.locator("#flash")).to_have_text("schedule nightly-report removed")
        expect(page.locator("#schedules")).to_contain_text("no schedules")


def test_search_by_id_and_dedupe_key(pgq_dsn: str, new_page: Callable[[], Page]) -> None:
    with Queue(pgq_dsn) as queue:
        job_id = queue.enqueue("web.search", dedupe_key="invoice-2026-0042")
    with serving(pgq_dsn) as web:
        page = new_page()
        page.goto(web.url + "/")
        page.fill("form.search input", "invoice-2026-0042")
        page.press("form.search input", "Enter")
        expect(page.locator("h1")).to_contain_text(f"Job {job_id}")
        page.fill("form.search input", str(job_id))
        page.press("form.search input", "Enter")
        page.wait_for_url(f"{web.url}/jobs/{job_id}")
        page.fill("form.search input", "no-such-key")
        page.press("form.search input", "Enter")
        expect(page.locator("main")).to_contain_text("No job has the id or dedupe key")


def test_jobs_page_with_a_cursor(pgq_dsn: str, new_page: Callable[[], Page]) -> None:
    with Queue(pgq_dsn) as queue:
        ids = queue.enqueue_many("web.pages", [{"n": i} for i in range(120)])
    with serving(pgq_dsn) as web:
        page = new_page()
        page.goto(web.url + "/entrypoint?name=web.pages&state=queued")
        seen: list[int] = []
        for _ in range(3):
            cells = page.locator("table.jobs tbody tr td:first-child").all_inner_texts()
            seen += [int(c) for c in cells]
            if page.locator("#next-page").count() == 0:
                break
            href = page.locator("#next-page").get_attribute("href") or ""
            assert "after=q%2C" in href and "offset" not in href
            page.click("#next-page")
        assert seen == ids  # claim order: same priority, oldest first; every job once
