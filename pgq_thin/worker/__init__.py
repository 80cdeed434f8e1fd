"""The worker, :class:`ThinWorker`: claims jobs, runs the registered handlers, reports back.
No queue logic.

The worker is a loop over five SQL calls (``pgq.claim``, ``pgq.heartbeat``, ``pgq.complete``,
``pgq.release``, ``pgq.next_run_at``), plus the schedule functions; retries, backoff,
concurrency limits, stale recovery and cancellation are decided by those functions. The parts,
each in its own module:

* ``_claimer``: the claim loop (claim ahead, idle wait, wake-ups), releasing unstarted jobs;
* ``_attempts``: one attempt per claimed job, with an explicit phase and stop reason; async
  handlers run on the event loop, sync handlers on a thread pool of ``threads`` threads;
* ``_outcomes``: how an attempt ends (``Ending``) and its words: the ``outcome`` reported to
  ``pgq.complete``, SQL's ``status``, the ``log_outcome`` of logs, metrics and spans;
* ``_results``: finished attempts buffered and written with one ``pgq.complete``, by the next
  claim in the same round trip or by the flush loop;
* ``_heartbeat``: one ``pgq.heartbeat`` for every owned job per interval;
* ``_loops``: what every loop shares (waiting, the errors it survives, the periodic loop, the
  tasks of a run's loops); ``_maintenance``: pruning, pgq.maintain, the rollup;
* ``_presence``: the worker in the registry (``pgq.workers``);
* ``_worker``: the facade (settings, registration, lifecycle); ``_steps``: its run-once steps;
  ``_view``: its read-only views;
* ``_run``: one run's context (session, thread pool, listener, events), made in ``open()``;
* ``_supervisor``: restarts, signals; ``_settings`` and ``_registry``: configuration;
* ``_telemetry``: what a run tells the outside about each job (log lines with structured
  fields, metrics, trace spans; the worker's logger is ``pgq_thin.logs.worker_log``);
  ``_metrics``: the worker's own Prometheus registry and its HTTP endpoint (imported only
  with ``metrics_port``).

Every worker runs the scheduler loop too (``run_schedules``): it fires every due schedule in
the database, its own and those added from SQL or the CLI.

Connections: one autocommit connection (:class:`~pgq_thin.connection.AsyncSession`) carries
claim, heartbeat, complete and release, serialized by a lock; the listener has its own
(``listen_dsn``: direct to PostgreSQL when the calls go through a transaction-mode pooler).
Connection loss is routine: the session reconnects in place (with backoff) and re-runs the
interrupted call, so no loop needs its own reconnect logic. On every new connection the worker
first heartbeats the jobs it owns, then claims once and flushes what it buffered, with the
original leases; handlers keep running throughout.

Shutdown (``stop()``, SIGTERM, SIGINT, SIGHUP): stop claiming, let running jobs finish within
``grace_period``, then stop the rest and report them ``interrupted`` (SQL puts them back in the
queue at once, the attempt not counted); ``pgq.release``
claimed jobs that never started; flush; return. A second signal exits the process at once.
"""

from pgq_thin.worker._registry import UnknownEntrypoint
from pgq_thin.worker._settings import WorkerSettings, WorkerStats
from pgq_thin.worker._worker import ThinWorker

__all__ = ["ThinWorker", "UnknownEntrypoint", "WorkerSettings", "WorkerStats"]
