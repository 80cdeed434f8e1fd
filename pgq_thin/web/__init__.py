"""The web dashboard (extra ``web``): ``pgq-thin web``, or :func:`create_app` in an ASGI server.

Server-rendered pages over the admin API (:class:`~pgq_thin.admin.AsyncAdmin`), with no
query of their own: the overview (entrypoints, workers, last dead jobs; refreshing itself),
one entrypoint (policy, figures, jobs by state with keyset paging), one job, the failed jobs
(filter, select, requeue, delete), the schedules, and a search by job id or dedupe key.
Actions need the token the server was started with and what the database lets its role do;
see docs/web.md and :mod:`pgq_thin.web.security`.
"""

from __future__ import annotations

from pgq_thin.web.app import WebConfig, create_app

__all__ = ["WebConfig", "create_app"]
