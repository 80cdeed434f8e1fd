"""A Django project using pgq-thin: its migrations install pgq, its tasks run on pgq.

The database comes from $APP_DB_NAME, $APP_DB_USER, $APP_DB_HOST, $APP_DB_PORT. With
$APP_DRIVER=psycopg2 Django is made to use psycopg2 although psycopg 3 is installed (pgq-thin
itself needs psycopg 3): Django picks its driver once, when its PostgreSQL backend is first
imported (base.py and psycopg_any.py), so psycopg is hidden from that one import.
"""

import importlib
import os
import sys

SECRET_KEY = "not-a-secret: a test project"
DEBUG = False
USE_TZ = True
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "djproject.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

try:
    import django.tasks  # noqa: F401  Django 6: the task framework is Django's own

    TASK_APPS = []
except ImportError:  # before Django 6: the django-tasks package, the same API
    TASK_APPS = ["django_tasks"]

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    *TASK_APPS,
    "pgq_thin.contrib.django",
    "shop",
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ["APP_DB_NAME"],
        "USER": os.environ.get("APP_DB_USER", "postgres"),
        "PASSWORD": os.environ.get("APP_DB_PASSWORD", ""),
        "HOST": os.environ.get("APP_DB_HOST", ""),
        "PORT": os.environ.get("APP_DB_PORT", ""),
    }
}

TASKS = {"default": {"BACKEND": "pgq_thin.contrib.django.tasks.PgqBackend"}}

if os.environ.get("APP_DRIVER") == "psycopg2":
    hidden = {k: v for k, v in sys.modules.items() if k == "psycopg" or k.startswith("psycopg.")}
    sys.modules["psycopg"] = None  # type: ignore[assignment]
    try:
        importlib.import_module("django.db.backends.postgresql.base")
    finally:
        del sys.modules["psycopg"]
        sys.modules.update(hidden)
