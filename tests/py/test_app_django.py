"""A Django project (tests/py/apps/django_app: an app whose migration depends on pgq's, Django
tasks on the pgq backend, a view that enqueues in its transaction), run through its own
``manage.py migrate`` and ``manage.py test``, on psycopg 3 and on psycopg2.

In this virtualenv (Python 3.11) that is Django 5.2 with the ``django-tasks`` package (the same
API); ``test_django_6`` builds a virtualenv of a Python >= 3.12 on PATH with Django 6 and the
wheel of ``make dist``, and runs the same project there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers.apps import APPS, clean_env
from helpers.server import REPO
from psycopg.conninfo import conninfo_to_dict

from pgq_thin import migrate

APP = APPS / "django_app"


def app_env(dsn: str, driver: str) -> dict[str, str]:
    params = conninfo_to_dict(dsn)
    return clean_env(
        APP_DB_NAME=str(params["dbname"]),
        APP_DB_USER=str(params.get("user") or "postgres"),
        APP_DB_PASSWORD=str(params.get("password") or ""),
        APP_DB_HOST=str(params.get("host") or ""),
        APP_DB_PORT=str(params.get("port") or ""),
        APP_DRIVER=driver,
    )


def manage(python: str | Path, app: Path, env: dict[str, str], *args: str) -> Any:
    return subprocess.run(
        [str(python), "manage.py", *args],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def copy_app(tmp_path: Path) -> Path:
    app = tmp_path / "django_app"
    shutil.copytree(APP, app)
    return app


def check_project(python: str | Path, app: Path, dsn: str, driver: str) -> None:
    env = app_env(dsn, driver)
    show = "from django.db import connection; print(connection.Database.__name__)"
    which = manage(python, app, env, "shell", "-c", show)
    assert which.stdout.strip().splitlines()[-1] == driver, which.stderr

    migrated = manage(python, app, env, "migrate")
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    assert "Applying pgq_thin.pgq_0002... OK" in migrated.stdout
    assert migrate.current(dsn) == "0002"
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM shop_order").fetchone() == (0,)

    # `pgq-thin run` with Django's worker: a task enqueued from the shell runs
    code = "from shop.tasks import notify; print(notify.enqueue(7, channel='cli').id)"
    enqueued = manage(python, app, env, "shell", "-c", code)
    assert enqueued.returncode == 0, enqueued.stderr
    job_id = int(enqueued.stdout.strip().splitlines()[-1])
    ran = subprocess.run(
        [str(Path(python).parent / "pgq-thin"), "run", "pgq_thin.contrib.django.run:worker",
         "--drain"],
        cwd=app,
        env={**env, "DJANGO_SETTINGS_MODULE": "djproject.settings", "PYTHONPATH": str(app)},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    with psycopg.connect(dsn, autocommit=True) as conn:
        done = conn.execute(
            "SELECT status, result FROM pgq.job_results(ARRAY[%s]::bigint[])", (job_id,)
        ).fetchone()
    assert done == ("successful", "notified 7 by cli"), ran.stderr

    tested = manage(python, app, env, "test", "shop", "-v", "2")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "Ran 4 tests" in tested.stderr and "OK" in tested.stderr, tested.stderr

    # unapplying pgq's migration drops schema pgq (after the app that depends on it)
    down = manage(python, app, env, "migrate", "shop", "zero")
    assert down.returncode == 0, down.stderr
    down = manage(python, app, env, "migrate", "pgq_thin", "zero")
    assert down.returncode == 0, down.stderr
    assert migrate.current(dsn) is None


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_django_project(empty_db_dsn: str, tmp_path: Path, driver: str) -> None:
    check_project(sys.executable, copy_app(tmp_path), empty_db_dsn, driver)


def _runs(python: str, env: dict[str, str] | None = None) -> bool:
    check = "import sys; raise SystemExit(sys.version_info < (3, 12))"
    done = subprocess.run([python, "-c", check], capture_output=True, env=env, check=False)
    return done.returncode == 0


def _python_for_django_6() -> str:
    """A Python >= 3.12: $PGQ_TEST_PYTHON, else python3.13 or python3.12 on PATH, else one
    that pyenv has installed."""
    given = os.environ.get("PGQ_TEST_PYTHON")
    if given:
        assert _runs(given), f"PGQ_TEST_PYTHON={given} is not a Python >= 3.12"
        return given
    for name in ("python3.13", "python3.12"):
        found = shutil.which(name)
        if found and _runs(found):
            return found
    pyenv = shutil.which("pyenv")
    if pyenv:
        versions = subprocess.run(
            [pyenv, "versions", "--bare"], capture_output=True, text=True, check=False
        ).stdout.split()
        for version in sorted(versions, reverse=True):
            if version.startswith(("3.12", "3.13", "3.14")):
                env = {**os.environ, "PYENV_VERSION": version}
                found = subprocess.run(
                    [pyenv, "which", "python3"], capture_output=True, text=True, env=env
                ).stdout.strip()
                if found and _runs(found):
                    return found
    raise AssertionError(
        "Django 6 needs Python >= 3.12: set PGQ_TEST_PYTHON, or put python3.12 on PATH"
    )


@pytest.mark.slow
@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_django_6(empty_db_dsn: str, tmp_path: Path, driver: str) -> None:
    dist = tmp_path / "dist"
    built = subprocess.run(
        ["make", "--no-print-directory", "dist", f"DIST={dist}", f"PYTHON={sys.executable}"],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("pgq_thin-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([_python_for_django_6(), "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", f"{wheel}[django]", "django>=6,<7",
         "psycopg2-binary"],
        capture_output=True, text=True, timeout=900, check=False, env=clean_env(),
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    version = subprocess.run(
        [str(python), "-c", "import django; print(django.VERSION[0])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert version.stdout.strip() == "6"
    check_project(python, copy_app(tmp_path), empty_db_dsn, driver)
