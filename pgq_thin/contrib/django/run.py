"""``pgq-thin run pgq_thin.contrib.django.run:worker``: Django set up from
``DJANGO_SETTINGS_MODULE``, then the worker of :func:`~pgq_thin.contrib.django.worker.build_worker`
(``--dsn`` or ``PGQ_DSN`` win over Django's database)."""

from __future__ import annotations

import os

import django

django.setup()

from pgq_thin.contrib.django.worker import build_worker  # noqa: E402
from pgq_thin.dsn import ENV_VAR  # noqa: E402

worker = build_worker(os.environ.get(ENV_VAR) or None)
