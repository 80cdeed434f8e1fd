"""``manage.py pgq_worker``: run the project's Django tasks (and every other job of their
entrypoints) with a pgq-thin worker."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from pgq_thin.contrib.django.worker import build_worker


class Command(BaseCommand):
    help = "Run the Django tasks of the pgq backend with a pgq-thin worker."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dsn", help="the database (default: Django's)")
        parser.add_argument("--concurrency", type=int, default=10)
        parser.add_argument(
            "--until-empty",
            action="store_true",
            help="stop once nothing is due and nothing runs (tests, one-off drains)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        worker = build_worker(options["dsn"], concurrency=options["concurrency"])
        names = ", ".join(worker.entrypoints) or "none"
        self.stdout.write(f"pgq-thin worker for Django tasks: {names}")
        worker.run(until_empty=options["until_empty"])
