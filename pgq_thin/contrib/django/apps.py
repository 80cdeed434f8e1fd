"""The Django app of pgq-thin: its migrations install schema ``pgq``."""

from __future__ import annotations

from django.apps import AppConfig


class PgqThinConfig(AppConfig):
    name = "pgq_thin.contrib.django"
    label = "pgq_thin"
    verbose_name = "pgq-thin job queue"
