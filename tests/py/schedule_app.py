"""A scheduler-only worker for tests that run ``pgq-thin run schedule_app:worker``."""

from __future__ import annotations

from pgq_thin.worker import ThinWorker

worker = ThinWorker(poll_interval=1.0)
worker.schedule("* * * * * *", "tick.every_second", name="every-second")
