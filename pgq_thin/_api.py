"""The public SQL API of schema pgq as Python. GENERATED from sql/api.json by
scripts/gen_api.py (``make golden``): do not edit.

One typed builder per ``pgq`` function returns a :class:`Call` of its answer, typed and
shaped from the result columns (run it with ``pgq_thin._sql_runner.run`` or ``arun``); an
argument left out (or None) takes its SQL default, and only those without a default may
be given by position. :data:`FUNCTIONS`,
:data:`COLUMNS`, :data:`NEEDS` and :data:`SIGNATURES` are the manifest's tables; the
records at the end are its result rows (``pgq_thin.records`` re-exports them)."""

# ruff: noqa: E501, F401
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from pgq_thin import _record_mixins
from pgq_thin._statements import (
    Call,
    Fn,
    Row,
    column,
    first,
    optional,
    record,
    records,
    rows,
    value,
)

REVISION = "0002"

#: Each function: its arguments (name, SQL type), how many have no default, a scalar.
FUNCTIONS: dict[str, Fn] = {
    "cancel": Fn("pgq.cancel", (("ids", "bigint[]"), ("at", "timestamp with time zone")), 1, False),
    "cancel_workflow": Fn("pgq.cancel_workflow", (("job_id", "bigint"), ("at", "timestamp with time zone")), 1, False),
    "claim": Fn("pgq.claim", (("worker_id", "uuid"), ("entrypoints", "text[]"), ("batch_size", "integer"), ("at", "timestamp with time zone"), ("request_id", "uuid")), 2, False),
    "claim_schedules": Fn("pgq.claim_schedules", (("worker_id", "uuid"), ("batch_size", "integer"), ("at", "timestamp with time zone")), 1, False),
    "compact_jobs": Fn("pgq.compact_jobs", (("max_rows", "integer"), ("max_bytes", "bigint"), ("lock_wait", "interval"), ("at", "timestamp with time zone")), 0, False),
    "complete": Fn("pgq.complete", (("worker_id", "uuid"), ("ids", "bigint[]"), ("leases", "bigint[]"), ("outcomes", "text[]"), ("details", "jsonb"), ("at", "timestamp with time zone")), 4, False),
    "configure": Fn("pgq.configure", (("entrypoint", "text"), ("concurrency_limit", "integer"), ("max_attempts", "integer"), ("backoff_base", "interval"), ("backoff_max", "interval"), ("heartbeat_timeout", "interval"), ("reset", "boolean"), ("run_timeout", "interval"), ("max_interruptions", "integer"), ("max_snoozes", "integer"), ("dedupe_period", "interval"), ("dedupe_states", "text[]"), ("key_concurrency_limit", "integer"), ("rate_limit", "integer"), ("rate_period", "interval"), ("rate_per_key", "boolean")), 1, False),
    "delete_history": Fn("pgq.delete_history", (("entrypoint", "text"), ("statuses", "text[]"), ("since", "timestamp with time zone"), ("until", "timestamp with time zone"), ("error", "text"), ("max_jobs", "integer")), 0, True),
    "delete_jobs": Fn("pgq.delete_jobs", (("ids", "bigint[]"),), 1, False),
    "enqueue": Fn("pgq.enqueue", (("entrypoint", "text"), ("payload", "jsonb"), ("priority", "integer"), ("run_at", "timestamp with time zone"), ("dedupe_key", "text"), ("headers", "jsonb"), ("on_conflict", "text"), ("delay", "interval"), ("timeout", "interval"), ("group_key", "text")), 1, True),
    "enqueue_many": Fn("pgq.enqueue_many", (("entrypoints", "text[]"), ("payloads", "jsonb"), ("priorities", "integer[]"), ("run_ats", "timestamp with time zone[]"), ("dedupe_keys", "text[]"), ("headers", "jsonb"), ("on_conflict", "text"), ("delays", "interval[]"), ("timeouts", "interval[]"), ("group_keys", "text[]"), ("depends_on", "jsonb")), 1, False),
    "entrypoint_config": Fn("pgq.entrypoint_config", (("entrypoints", "text[]"),), 0, False),
    "find_by_dedupe_key": Fn("pgq.find_by_dedupe_key", (("dedupe_key", "text"), ("max_rows", "integer")), 1, False),
    "find_history": Fn("pgq.find_history", (("entrypoint", "text"), ("statuses", "text[]"), ("since", "timestamp with time zone"), ("until", "timestamp with time zone"), ("error", "text"), ("after", "text"), ("page_size", "integer")), 0, False),
    "fire_schedule": Fn("pgq.fire_schedule", (("worker_id", "uuid"), ("name", "text"), ("lease", "bigint"), ("next_after_due", "timestamp with time zone"), ("next_after_now", "timestamp with time zone"), ("at", "timestamp with time zone")), 4, False),
    "fire_schedule_now": Fn("pgq.fire_schedule_now", (("name", "text"), ("at", "timestamp with time zone")), 1, True),
    "heartbeat": Fn("pgq.heartbeat", (("worker_id", "uuid"), ("ids", "bigint[]"), ("leases", "bigint[]"), ("at", "timestamp with time zone")), 3, False),
    "history_summary": Fn("pgq.history_summary", (("entrypoints", "text[]"), ("since_id", "bigint")), 0, False),
    "job": Fn("pgq.job", (("id", "bigint"),), 1, False),
    "job_results": Fn("pgq.job_results", (("ids", "bigint[]"),), 1, False),
    "key_stats": Fn("pgq.key_stats", (("entrypoints", "text[]"), ("max_keys", "integer")), 0, False),
    "list_jobs": Fn("pgq.list_jobs", (("entrypoint", "text"), ("state", "text"), ("after", "text"), ("page_size", "integer")), 2, False),
    "maintain": Fn("pgq.maintain", (("at", "timestamp with time zone"), ("min_interval", "interval")), 0, False),
    "metrics": Fn("pgq.metrics", (("entrypoints", "text[]"), ("percentile_window", "interval"), ("at", "timestamp with time zone")), 0, False),
    "metrics_series": Fn("pgq.metrics_series", (("entrypoints", "text[]"), ("combined", "boolean"), ("at", "timestamp with time zone")), 0, False),
    "next_run_at": Fn("pgq.next_run_at", (("entrypoints", "text[]"), ("at", "timestamp with time zone")), 1, True),
    "next_schedule_at": Fn("pgq.next_schedule_at", (("worker_id", "uuid"), ("at", "timestamp with time zone")), 0, True),
    "parent_results": Fn("pgq.parent_results", (("job_id", "bigint"),), 1, False),
    "pause": Fn("pgq.pause", (("entrypoints", "text[]"), ("at", "timestamp with time zone")), 1, False),
    "prune_entrypoints": Fn("pgq.prune_entrypoints", (("older_than", "interval"), ("lock_wait", "interval"), ("at", "timestamp with time zone")), 0, True),
    "prune_history": Fn("pgq.prune_history", (("older_than", "interval"), ("at", "timestamp with time zone"), ("batch", "integer")), 1, True),
    "prune_workers": Fn("pgq.prune_workers", (("at", "timestamp with time zone"),), 0, True),
    "rate_stats": Fn("pgq.rate_stats", (("entrypoints", "text[]"), ("at", "timestamp with time zone")), 0, False),
    "rate_waits": Fn("pgq.rate_waits", (("entrypoints", "text[]"), ("at", "timestamp with time zone")), 1, False),
    "register_worker": Fn("pgq.register_worker", (("worker_id", "uuid"), ("entrypoints", "text[]"), ("host", "text"), ("pid", "integer"), ("application_name", "text"), ("version", "text"), ("metadata", "jsonb"), ("timeout", "interval"), ("at", "timestamp with time zone")), 1, False),
    "release": Fn("pgq.release", (("worker_id", "uuid"), ("ids", "bigint[]"), ("leases", "bigint[]"), ("at", "timestamp with time zone")), 3, False),
    "release_schedule": Fn("pgq.release_schedule", (("worker_id", "uuid"), ("name", "text"), ("lease", "bigint"), ("error", "text"), ("retry_after", "interval"), ("at", "timestamp with time zone")), 3, True),
    "requeue": Fn("pgq.requeue", (("ids", "bigint[]"), ("at", "timestamp with time zone")), 1, False),
    "requeue_history": Fn("pgq.requeue_history", (("entrypoint", "text"), ("statuses", "text[]"), ("since", "timestamp with time zone"), ("until", "timestamp with time zone"), ("error", "text"), ("max_jobs", "integer"), ("at", "timestamp with time zone")), 0, False),
    "requeue_workflow": Fn("pgq.requeue_workflow", (("job_id", "bigint"), ("at", "timestamp with time zone")), 1, False),
    "resume": Fn("pgq.resume", (("entrypoints", "text[]"),), 1, False),
    "rollup_metrics": Fn("pgq.rollup_metrics", (("max_rows", "integer"), ("at", "timestamp with time zone")), 0, False),
    "schedule": Fn("pgq.schedule", (("name", "text"), ("entrypoint", "text"), ("cron", "text"), ("next_run_at", "timestamp with time zone"), ("timezone", "text"), ("payload", "jsonb"), ("priority", "integer"), ("headers", "jsonb"), ("catch_up", "text"), ("misfire_grace", "interval"), ("fire_timeout", "interval")), 4, False),
    "take_tokens": Fn("pgq.take_tokens", (("entrypoint", "text"), ("tokens", "integer"), ("rate_key", "text"), ("at", "timestamp with time zone")), 1, False),
    "unregister_worker": Fn("pgq.unregister_worker", (("worker_id", "uuid"),), 1, True),
    "unschedule": Fn("pgq.unschedule", (("name", "text"),), 1, True),
    "workflow": Fn("pgq.workflow", (("job_id", "bigint"),), 1, False),
}

#: The result columns of each function, and the columns of each readable relation.
COLUMNS: dict[str, tuple[str, ...]] = {
    "cancel": ("id",),
    "cancel_workflow": ("id",),
    "claim": ("id", "lease", "entrypoint", "payload", "headers", "priority", "attempt", "enqueued_at", "run_at", "dedupe_key", "max_attempts", "heartbeat_timeout", "heartbeat_timeout_s", "last_attempt", "run_timeout_s", "taken_over"),
    "claim_schedules": ("name", "lease", "entrypoint", "cron", "timezone", "due_at", "db_now"),
    "compact_jobs": ("compacted", "reason", "rows", "bytes_before", "bytes_after"),
    "complete": ("id", "status", "attempt", "max_attempts", "run_at", "retry_in_s"),
    "configure": ("entrypoint", "concurrency_limit", "max_attempts", "backoff_base", "backoff_max", "heartbeat_timeout", "updated_at", "paused_at", "paused_by", "run_timeout", "max_interruptions", "max_snoozes", "dedupe_period", "dedupe_states", "key_concurrency_limit", "rate_limit", "rate_period", "rate_per_key"),
    "delete_history": ("delete_history",),
    "delete_jobs": ("id",),
    "enqueue": ("enqueue",),
    "enqueue_many": ("id",),
    "entrypoint_config": ("entrypoint", "concurrency_limit", "max_attempts", "backoff_base", "backoff_max", "heartbeat_timeout", "updated_at", "paused_at", "paused_by", "run_timeout", "max_interruptions", "max_snoozes", "dedupe_period", "dedupe_states", "key_concurrency_limit", "rate_limit", "rate_period", "rate_per_key"),
    "find_by_dedupe_key": ("id", "entrypoint", "status", "priority", "attempt", "dedupe_key", "enqueued_at", "run_at", "started_at", "heartbeat_at", "finished_at", "worker_id", "error", "message", "cursor", "silent_s"),
    "find_history": ("id", "entrypoint", "status", "priority", "attempt", "dedupe_key", "enqueued_at", "run_at", "started_at", "heartbeat_at", "finished_at", "worker_id", "error", "message", "cursor", "silent_s"),
    "fire_schedule": ("state", "job_id"),
    "fire_schedule_now": ("fire_schedule_now",),
    "heartbeat": ("id", "state"),
    "history_summary": ("entrypoint", "status", "jobs", "max_attempt", "avg_latency_s"),
    "job": ("id", "entrypoint", "status", "priority", "attempt", "max_attempts", "payload", "headers", "dedupe_key", "enqueued_at", "run_at", "started_at", "heartbeat_at", "finished_at", "wait_s", "run_s", "worker_id", "cancel_requested", "result", "details", "errors", "schedule", "schedule_due_at", "silent_s", "deadline_at"),
    "job_results": ("id", "status", "finished", "result", "error", "attempt", "finished_at"),
    "key_stats": ("entrypoint", "group_key", "queued", "running", "key_concurrency_limit", "at_limit"),
    "list_jobs": ("id", "entrypoint", "status", "priority", "attempt", "dedupe_key", "enqueued_at", "run_at", "started_at", "heartbeat_at", "finished_at", "worker_id", "error", "message", "cursor", "silent_s"),
    "maintain": ("state", "swept", "promoted", "carried", "truncated", "rotated", "lock_wait_ms", "bytes"),
    "metrics": ("entrypoint", "paused", "queued", "due", "delayed", "running", "stale", "lag_s", "successful_1m", "failed_1m", "canceled_1m", "successful_5m", "failed_5m", "canceled_5m", "successful_15m", "failed_15m", "canceled_15m", "throughput_1m", "throughput_5m", "throughput_15m", "wait_p50_s", "wait_p95_s", "wait_p99_s", "run_p50_s", "run_p95_s", "run_p99_s", "successful_total", "failed_total", "canceled_total", "rollup_caught_up", "served", "unserved_s", "rate_remaining", "rate_wait_s", "rate_keys_used_up", "keys_at_limit", "key_limited"),
    "metrics_series": ("entrypoint", "minute", "successful", "failed", "canceled", "due", "running", "wait_p95_s", "run_p95_s"),
    "next_run_at": ("next_run_at",),
    "next_schedule_at": ("next_schedule_at",),
    "parent_results": ("parent_id", "status", "result"),
    "pause": ("entrypoint", "concurrency_limit", "max_attempts", "backoff_base", "backoff_max", "heartbeat_timeout", "updated_at", "paused_at", "paused_by", "run_timeout", "max_interruptions", "max_snoozes", "dedupe_period", "dedupe_states", "key_concurrency_limit", "rate_limit", "rate_period", "rate_per_key"),
    "prune_entrypoints": ("prune_entrypoints",),
    "prune_history": ("prune_history",),
    "prune_workers": ("prune_workers",),
    "rate_stats": ("entrypoint", "rate_limit", "rate_period", "rate_per_key", "started", "remaining", "budgets", "budgets_used_up", "next_start_at"),
    "rate_waits": ("entrypoint", "next_start_at"),
    "register_worker": ("started_at", "last_seen_at", "gone_after", "heartbeat_interval"),
    "release": ("id", "status"),
    "release_schedule": ("release_schedule",),
    "requeue": ("id",),
    "requeue_history": ("id",),
    "requeue_workflow": ("id",),
    "resume": ("entrypoint", "concurrency_limit", "max_attempts", "backoff_base", "backoff_max", "heartbeat_timeout", "updated_at", "paused_at", "paused_by", "run_timeout", "max_interruptions", "max_snoozes", "dedupe_period", "dedupe_states", "key_concurrency_limit", "rate_limit", "rate_period", "rate_per_key"),
    "rollup_metrics": ("rolled", "caught_up", "busy"),
    "schedule": ("name", "entrypoint", "cron", "timezone", "payload", "headers", "priority", "catch_up", "misfire_grace", "fire_timeout", "next_run_at", "last_run_at", "last_job_id", "state", "worker_id", "lease", "heartbeat_at", "created_at", "updated_at", "retry_at", "last_error"),
    "take_tokens": ("granted", "remaining", "retry_at"),
    "unregister_worker": ("unregister_worker",),
    "unschedule": ("unschedule",),
    "workflow": ("id", "entrypoint", "state", "attempt", "finished_at", "parents", "children", "workflow_id"),
    "failed_jobs": ("id", "entrypoint", "attempt", "payload", "headers", "priority", "dedupe_key", "enqueued_at", "started_at", "finished_at", "worker_id", "details", "errors"),
    "queue_stats": ("entrypoint", "queued", "due", "running", "stale", "oldest_queued_age", "concurrency_limit", "max_attempts", "heartbeat_timeout", "paused"),
    "schedules": ("name", "entrypoint", "cron", "timezone", "payload", "headers", "priority", "catch_up", "misfire_grace", "fire_timeout", "next_run_at", "last_run_at", "last_job_id", "state", "worker_id", "lease", "heartbeat_at", "created_at", "updated_at", "retry_at", "last_error"),
    "worker_status": ("worker_id", "state", "host", "pid", "application_name", "entrypoints", "version", "metadata", "client_addr", "started_at", "last_seen_at", "silent_s", "timeout", "running", "stale", "job_ids", "job_silent_s"),
}

#: Identity signatures, as has_function_privilege takes them.
SIGNATURES: dict[str, str] = {
    "cancel": "pgq.cancel(bigint[],timestamp with time zone)",
    "cancel_workflow": "pgq.cancel_workflow(bigint,timestamp with time zone)",
    "claim": "pgq.claim(uuid,text[],integer,timestamp with time zone,uuid)",
    "claim_schedules": "pgq.claim_schedules(uuid,integer,timestamp with time zone)",
    "compact_jobs": "pgq.compact_jobs(integer,bigint,interval,timestamp with time zone)",
    "complete": "pgq.complete(uuid,bigint[],bigint[],text[],jsonb,timestamp with time zone)",
    "configure": "pgq.configure(text,integer,integer,interval,interval,interval,boolean,interval,integer,integer,interval,text[],integer,integer,interval,boolean)",
    "delete_history": "pgq.delete_history(text,text[],timestamp with time zone,timestamp with time zone,text,integer)",
    "delete_jobs": "pgq.delete_jobs(bigint[])",
    "enqueue": "pgq.enqueue(text,jsonb,integer,timestamp with time zone,text,jsonb,text,interval,interval,text)",
    "enqueue_many": "pgq.enqueue_many(text[],jsonb,integer[],timestamp with time zone[],text[],jsonb,text,interval[],interval[],text[],jsonb)",
    "entrypoint_config": "pgq.entrypoint_config(text[])",
    "find_by_dedupe_key": "pgq.find_by_dedupe_key(text,integer)",
    "find_history": "pgq.find_history(text,text[],timestamp with time zone,timestamp with time zone,text,text,integer)",
    "fire_schedule": "pgq.fire_schedule(uuid,text,bigint,timestamp with time zone,timestamp with time zone,timestamp with time zone)",
    "fire_schedule_now": "pgq.fire_schedule_now(text,timestamp with time zone)",
    "heartbeat": "pgq.heartbeat(uuid,bigint[],bigint[],timestamp with time zone)",
    "history_summary": "pgq.history_summary(text[],bigint)",
    "job": "pgq.job(bigint)",
    "job_results": "pgq.job_results(bigint[])",
    "key_stats": "pgq.key_stats(text[],integer)",
    "list_jobs": "pgq.list_jobs(text,text,text,integer)",
    "maintain": "pgq.maintain(timestamp with time zone,interval)",
    "metrics": "pgq.metrics(text[],interval,timestamp with time zone)",
    "metrics_series": "pgq.metrics_series(text[],boolean,timestamp with time zone)",
    "next_run_at": "pgq.next_run_at(text[],timestamp with time zone)",
    "next_schedule_at": "pgq.next_schedule_at(uuid,timestamp with time zone)",
    "parent_results": "pgq.parent_results(bigint)",
    "pause": "pgq.pause(text[],timestamp with time zone)",
    "prune_entrypoints": "pgq.prune_entrypoints(interval,interval,timestamp with time zone)",
    "prune_history": "pgq.prune_history(interval,timestamp with time zone,integer)",
    "prune_workers": "pgq.prune_workers(timestamp with time zone)",
    "rate_stats": "pgq.rate_stats(text[],timestamp with time zone)",
    "rate_waits": "pgq.rate_waits(text[],timestamp with time zone)",
    "register_worker": "pgq.register_worker(uuid,text[],text,integer,text,text,jsonb,interval,timestamp with time zone)",
    "release": "pgq.release(uuid,bigint[],bigint[],timestamp with time zone)",
    "release_schedule": "pgq.release_schedule(uuid,text,bigint,text,interval,timestamp with time zone)",
    "requeue": "pgq.requeue(bigint[],timestamp with time zone)",
    "requeue_history": "pgq.requeue_history(text,text[],timestamp with time zone,timestamp with time zone,text,integer,timestamp with time zone)",
    "requeue_workflow": "pgq.requeue_workflow(bigint,timestamp with time zone)",
    "resume": "pgq.resume(text[])",
    "rollup_metrics": "pgq.rollup_metrics(integer,timestamp with time zone)",
    "schedule": "pgq.schedule(text,text,text,timestamp with time zone,text,jsonb,integer,jsonb,text,interval,interval)",
    "take_tokens": "pgq.take_tokens(text,integer,text,timestamp with time zone)",
    "unregister_worker": "pgq.unregister_worker(uuid)",
    "unschedule": "pgq.unschedule(text)",
    "workflow": "pgq.workflow(bigint)",
}

#: What a role must hold to call each function (to read each relation), and the fix a
#: PrivilegeMissing names.
OWNER_ONLY = "connect as the owner of schema pgq, or as an operator role with the grants" " in docs/operations.md"
NEEDS: dict[str, tuple[str, str]] = {
    "cancel": ("pgq_producer (or pgq_admin)", 'GRANT pgq_producer TO {role}'),
    "cancel_workflow": ("pgq_producer (or pgq_admin)", 'GRANT pgq_producer TO {role}'),
    "claim": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "claim_schedules": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "compact_jobs": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "complete": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "configure": ("pgq_admin (or the owner)", 'GRANT pgq_admin TO {role}'),
    "delete_history": ("pgq_admin (or the owner)", 'GRANT pgq_admin TO {role}'),
    "delete_jobs": ("pgq_admin (or the owner)", 'GRANT pgq_admin TO {role}'),
    "enqueue": ("pgq_producer", 'GRANT pgq_producer TO {role}'),
    "enqueue_many": ("pgq_producer", 'GRANT pgq_producer TO {role}'),
    "entrypoint_config": ("pgq_reader (or pgq_admin)", 'GRANT pgq_reader TO {role}'),
    "find_by_dedupe_key": ("pgq_reader (or pgq_admin)", 'GRANT pgq_reader TO {role}'),
    "find_history": ("pgq_reader (or pgq_admin)", 'GRANT pgq_reader TO {role}'),
    "fire_schedule": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "fire_schedule_now": ("pgq_admin (or the owner)", 'GRANT pgq_admin TO {role}'),
    "heartbeat": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "history_summary": ("pgq_producer (or pgq_worker or pgq_reader or pgq_admin)", 'GRANT pgq_producer TO {role}'),
    "job": ("pgq_reader (or pgq_admin)", 'GRANT pgq_reader TO {role}'),
    "job_results": ("pgq_producer (or pgq_worker or pgq_reader or pgq_admin)", 'GRANT pgq_producer TO {role}'),
    "key_stats": ("pgq_reader (or pgq_admin)", 'GRANT pgq_reader TO {role}'),
    "list_jobs": ("pgq_reader (or pgq_admin)", 'GRANT pgq_reader TO {role}'),
    "maintain": ("pgq_worker (or pgq_admin)", 'GRANT pgq_worker TO {role}'),
    "metrics": ("pgq_producer (or pgq_worker or pgq_reader or pgq_admin)", 'GRANT pgq_producer TO {role}'),
    "metrics_series": ("pgq_producer (or pgq_worker or pgq_reader or pgq_admin)", 'GRANT pgq_producer TO {role}'),
    "next_run_at": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "next_schedule_at": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "parent_results": ("pgq_producer (or pgq_worker or pgq_reader or pgq_admin)", 'GRANT pgq_producer TO {role}'),
    "pause": ("pgq_admin (or the owner)", 'GRANT pgq_admin TO {role}'),
    "prune_entrypoints": ("pgq_worker (or pgq_admin)", 'GRANT pgq_worker TO {role}'),
    "prune_history": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "prune_workers": ("pgq_worker (or pgq_admin)", 'GRANT pgq_worker TO {role}'),
    "rate_stats": ("pgq_producer (or pgq_worker or pgq_reader or pgq_admin)", 'GRANT pgq_producer TO {role}'),
    "rate_waits": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "register_worker": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "release": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "release_schedule": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "requeue": ("pgq_admin (or the owner)", 'GRANT pgq_admin TO {role}'),
    "requeue_history": ("pgq_admin (or the owner)", 'GRANT pgq_admin TO {role}'),
    "requeue_workflow": ("pgq_admin (or the owner)", 'GRANT pgq_admin TO {role}'),
    "resume": ("pgq_admin (or the owner)", 'GRANT pgq_admin TO {role}'),
    "rollup_metrics": ("pgq_worker (or pgq_admin)", 'GRANT pgq_worker TO {role}'),
    "schedule": ("pgq_admin (or the owner)", 'GRANT pgq_admin TO {role}'),
    "take_tokens": ("pgq_producer (or pgq_worker or pgq_admin)", 'GRANT pgq_producer TO {role}'),
    "unregister_worker": ("pgq_worker", 'GRANT pgq_worker TO {role}'),
    "unschedule": ("pgq_admin (or the owner)", 'GRANT pgq_admin TO {role}'),
    "workflow": ("pgq_producer (or pgq_worker or pgq_reader or pgq_admin)", 'GRANT pgq_producer TO {role}'),
    "failed_jobs": ("pgq_reader (or pgq_admin)", 'GRANT pgq_reader TO {role}'),
    "queue_stats": ("pgq_reader (or pgq_producer or pgq_worker or pgq_admin)", 'GRANT pgq_reader TO {role}'),
    "schedules": ("pgq_reader (or pgq_producer or pgq_worker or pgq_admin)", 'GRANT pgq_reader TO {role}'),
    "worker_status": ("pgq_reader (or pgq_producer or pgq_worker or pgq_admin)", 'GRANT pgq_reader TO {role}'),
}


def cancel(ids: Sequence[int | None], *, at: datetime | timedelta | None = None) -> Call[list[int]]:
    """``pgq.cancel(bigint[],timestamp with time zone)``, ``RETURNS TABLE(id bigint)``.
    Cancels jobs: queued ones go to history as canceled, running ones are flagged and their
    worker notified. Returns the ids affected.
    """
    return FUNCTIONS["cancel"].call(column, ids=ids, at=at)


def cancel_workflow(job_id: int, *, at: datetime | timedelta | None = None) -> Call[list[int]]:
    """``pgq.cancel_workflow(bigint,timestamp with time zone)``, ``RETURNS TABLE(id bigint)``.
    Cancels every job of job_id's workflow that has not ended (as pgq.cancel); returns the
    ids canceled or flagged.
    """
    return FUNCTIONS["cancel_workflow"].call(column, job_id=job_id, at=at)


def claim(worker_id: UUID, entrypoints: Sequence[str | None], *, batch_size: int | None = None, at: datetime | timedelta | None = None, request_id: UUID | None = None) -> Call[list[Row]]:
    """``pgq.claim(uuid,text[],integer,timestamp with time zone,uuid)``, ``RETURNS SETOF pgq.claimed_job``.
    Claims up to batch_size runnable jobs: priority desc, then ready order (stale jobs are
    swept and queued again first). SKIP LOCKED; respects concurrency limits; each claim gets
    a new lease. A claim re-sent with the same request_id answers the same jobs.
    """
    return FUNCTIONS["claim"].call(rows, worker_id=worker_id, entrypoints=entrypoints, batch_size=batch_size, at=at, request_id=request_id)


def claim_schedules(worker_id: UUID, *, batch_size: int | None = None, at: datetime | timedelta | None = None) -> Call[list[Row]]:
    """``pgq.claim_schedules(uuid,integer,timestamp with time zone)``, ``RETURNS TABLE(name text, lease bigint, entrypoint text, cron text, timezone text, due_at timestamp with time zone, db_now timestamp with time zone)``.
    Claims due schedules (or ones whose claimer went silent) with a lease; returns cron,
    time zone, due time and the database clock.
    """
    return FUNCTIONS["claim_schedules"].call(rows, worker_id=worker_id, batch_size=batch_size, at=at)


def compact_jobs(*, max_rows: int | None = None, max_bytes: int | None = None, lock_wait: timedelta | None = None, at: datetime | timedelta | None = None) -> Call[list[Row]]:
    """``pgq.compact_jobs(integer,bigint,interval,timestamp with time zone)``, ``RETURNS TABLE(compacted boolean, reason text, rows bigint, bytes_before bigint, bytes_after bigint)``.
    The 0.1.0 name of pgq.maintain, answering in its old columns (compacted = a slot
    truncated, reason = state, rows = jobs carried, bytes before and after).
    """
    return FUNCTIONS["compact_jobs"].call(rows, max_rows=max_rows, max_bytes=max_bytes, lock_wait=lock_wait, at=at)


def complete(worker_id: UUID, ids: Sequence[int | None], leases: Sequence[int | None], outcomes: Sequence[str | None], *, details: Any | None = None, at: datetime | timedelta | None = None) -> Call[list[Row]]:
    """``pgq.complete(uuid,bigint[],bigint[],text[],jsonb,timestamp with time zone)``, ``RETURNS TABLE(id bigint, status text, attempt integer, max_attempts integer, run_at timestamp with time zone, retry_in_s double precision)``.
    Ends attempts owned under these leases with what the worker observed (successful,
    failed, interrupted, canceled, snoozed, fatal); answers per job what SQL decided: status
    successful, failed (dead), canceled, retry or snoozed, attempt, max_attempts, and for a
    retry or snooze run_at and retry_in_s. Stale leases are ignored.
    """
    return FUNCTIONS["complete"].call(rows, worker_id=worker_id, ids=ids, leases=leases, outcomes=outcomes, details=details, at=at)


def configure(entrypoint: str, *, concurrency_limit: int | None = None, max_attempts: int | None = None, backoff_base: timedelta | None = None, backoff_max: timedelta | None = None, heartbeat_timeout: timedelta | None = None, reset: bool | None = None, run_timeout: timedelta | None = None, max_interruptions: int | None = None, max_snoozes: int | None = None, dedupe_period: timedelta | None = None, dedupe_states: Sequence[str | None] | None = None, key_concurrency_limit: int | None = None, rate_limit: int | None = None, rate_period: timedelta | None = None, rate_per_key: bool | None = None) -> Call[EntrypointConfig]:
    """``pgq.configure(text,integer,integer,interval,interval,interval,boolean,interval,integer,integer,interval,text[],integer,integer,interval,boolean)``, ``RETURNS pgq.entrypoints``.
    Sets the policy of one entrypoint for every worker: concurrency_limit (0 pauses),
    max_attempts, backoff_base, backoff_max, heartbeat_timeout, run_timeout (0 removes it),
    max_interruptions, max_snoozes, dedupe_period and dedupe_states (dedupe keys kept after
    the job finished), key_concurrency_limit (running jobs per group key; claims take keys
    in turn), rate_limit per rate_period (starts in any window, for the entrypoint or with
    rate_per_key each group key; 0 removes it). NULL leaves a setting unchanged; reset =>
    true restores defaults first.
    """
    return FUNCTIONS["configure"].call(record(EntrypointConfig), entrypoint=entrypoint, concurrency_limit=concurrency_limit, max_attempts=max_attempts, backoff_base=backoff_base, backoff_max=backoff_max, heartbeat_timeout=heartbeat_timeout, reset=reset, run_timeout=run_timeout, max_interruptions=max_interruptions, max_snoozes=max_snoozes, dedupe_period=dedupe_period, dedupe_states=dedupe_states, key_concurrency_limit=key_concurrency_limit, rate_limit=rate_limit, rate_period=rate_period, rate_per_key=rate_per_key)


def delete_history(*, entrypoint: str | None = None, statuses: Sequence[str | None] | None = None, since: datetime | timedelta | None = None, until: datetime | timedelta | None = None, error: str | None = None, max_jobs: int | None = None) -> Call[int]:
    """``pgq.delete_history(text,text[],timestamp with time zone,timestamp with time zone,text,integer)``, ``RETURNS bigint``.
    Bulk delete of history rows matching entrypoint, statuses (failed by default), finish
    time and error text, up to max_jobs per call; returns how many.
    """
    return FUNCTIONS["delete_history"].call(value, entrypoint=entrypoint, statuses=statuses, since=since, until=until, error=error, max_jobs=max_jobs)


def delete_jobs(ids: Sequence[int | None]) -> Call[list[int]]:
    """``pgq.delete_jobs(bigint[])``, ``RETURNS TABLE(id bigint)``.
    Deletes finished jobs (history rows) by id, skipping live jobs, unknown ids and rows
    locked right now; returns the ids deleted.
    """
    return FUNCTIONS["delete_jobs"].call(column, ids=ids)


def enqueue(entrypoint: str, *, payload: Any | None = None, priority: int | None = None, run_at: datetime | timedelta | None = None, dedupe_key: str | None = None, headers: Any | None = None, on_conflict: str | None = None, delay: timedelta | None = None, timeout: timedelta | None = None, group_key: str | None = None) -> Call[int]:
    """``pgq.enqueue(text,jsonb,integer,timestamp with time zone,text,jsonb,text,interval,interval,text)``, ``RETURNS bigint``.
    Adds one job; returns its id. Due at run_at, or delay after now (not both), or now;
    dedupe_key is unique among live jobs (on_conflict: raise or existing); timeout is its
    run time limit (NULL: the entrypoint's); group_key is its key for per-key limits and
    fair share.
    """
    return FUNCTIONS["enqueue"].call(value, entrypoint=entrypoint, payload=payload, priority=priority, run_at=run_at, dedupe_key=dedupe_key, headers=headers, on_conflict=on_conflict, delay=delay, timeout=timeout, group_key=group_key)


def enqueue_many(entrypoints: Sequence[str | None], *, payloads: Any | None = None, priorities: Sequence[int | None] | None = None, run_ats: Sequence[datetime | None] | None = None, dedupe_keys: Sequence[str | None] | None = None, headers: Any | None = None, on_conflict: str | None = None, delays: Sequence[timedelta | None] | None = None, timeouts: Sequence[timedelta | None] | None = None, group_keys: Sequence[str | None] | None = None, depends_on: Any | None = None) -> Call[list[int]]:
    """``pgq.enqueue_many(text[],jsonb,integer[],timestamp with time zone[],text[],jsonb,text,interval[],interval[],text[],jsonb)``, ``RETURNS TABLE(id bigint)``.
    Adds many jobs in one statement; returns their ids in input order. payloads and headers
    are JSON arrays; optional arguments must match entrypoints in length; run_ats or delays
    (server clock) per job; timeouts (run time limits) and group_keys per job; depends_on (a
    JSON array: the jobs each waits for, by position in the call or by id). on_conflict:
    raise (PQ007) or existing.
    """
    return FUNCTIONS["enqueue_many"].call(column, entrypoints=entrypoints, payloads=payloads, priorities=priorities, run_ats=run_ats, dedupe_keys=dedupe_keys, headers=headers, on_conflict=on_conflict, delays=delays, timeouts=timeouts, group_keys=group_keys, depends_on=depends_on)


def entrypoint_config(*, entrypoints: Sequence[str | None] | None = None) -> Call[list[EntrypointConfig]]:
    """``pgq.entrypoint_config(text[])``, ``RETURNS SETOF pgq.entrypoints``.
    The stored policy rows of entrypoints (NULL: all), by entrypoint; names never configured
    or enqueued are left out.
    """
    return FUNCTIONS["entrypoint_config"].call(records(EntrypointConfig), entrypoints=entrypoints)


def find_by_dedupe_key(dedupe_key: str, *, max_rows: int | None = None) -> Call[list[JobListing]]:
    """``pgq.find_by_dedupe_key(text,integer)``, ``RETURNS SETOF pgq.job_listing``.
    The jobs carrying a dedupe key: the live one first, then finished ones newest first (at
    most max_rows).
    """
    return FUNCTIONS["find_by_dedupe_key"].call(records(JobListing), dedupe_key=dedupe_key, max_rows=max_rows)


def find_history(*, entrypoint: str | None = None, statuses: Sequence[str | None] | None = None, since: datetime | timedelta | None = None, until: datetime | timedelta | None = None, error: str | None = None, after: str | None = None, page_size: int | None = None) -> Call[list[JobListing]]:
    """``pgq.find_history(text,text[],timestamp with time zone,timestamp with time zone,text,text,integer)``, ``RETURNS SETOF pgq.job_listing``.
    Finished jobs (failed by default) by entrypoint, finish time and error text, newest
    first, keyset-paged through the cursor column.
    """
    return FUNCTIONS["find_history"].call(records(JobListing), entrypoint=entrypoint, statuses=statuses, since=since, until=until, error=error, after=after, page_size=page_size)


def fire_schedule(worker_id: UUID, name: str, lease: int, next_after_due: datetime | timedelta, *, next_after_now: datetime | timedelta | None = None, at: datetime | timedelta | None = None) -> Call[list[Row]]:
    """``pgq.fire_schedule(uuid,text,bigint,timestamp with time zone,timestamp with time zone,timestamp with time zone)``, ``RETURNS TABLE(state text, job_id bigint)``.
    Fires a claimed tick as a job deduplicated by schedule and due time (or skips a missed
    tick under catch_up skip) and stores the next run; lease-guarded: returns fired, skipped
    or lost.
    """
    return FUNCTIONS["fire_schedule"].call(rows, worker_id=worker_id, name=name, lease=lease, next_after_due=next_after_due, next_after_now=next_after_now, at=at)


def fire_schedule_now(name: str, *, at: datetime | timedelta | None = None) -> Call[int]:
    """``pgq.fire_schedule_now(text,timestamp with time zone)``, ``RETURNS bigint``.
    Fires a schedule once now (a job as a tick would enqueue, deduplicated by schedule and
    time) without moving its next run; returns the job id.
    """
    return FUNCTIONS["fire_schedule_now"].call(value, name=name, at=at)


def heartbeat(worker_id: UUID, ids: Sequence[int | None], leases: Sequence[int | None], *, at: datetime | timedelta | None = None) -> Call[list[Row]]:
    """``pgq.heartbeat(uuid,bigint[],bigint[],timestamp with time zone)``, ``RETURNS TABLE(id bigint, state text)``.
    Refreshes the heartbeat of jobs this lease still owns; one row per id: ok,
    cancel_requested, timed_out (ended as a failed attempt past its time limit) or lost.
    """
    return FUNCTIONS["heartbeat"].call(rows, worker_id=worker_id, ids=ids, leases=leases, at=at)


def history_summary(*, entrypoints: Sequence[str | None] | None = None, since_id: int | None = None) -> Call[list[HistorySummary]]:
    """``pgq.history_summary(text[],bigint)``, ``RETURNS TABLE(entrypoint text, status text, jobs bigint, max_attempt integer, avg_latency_s double precision)``.
    Finished jobs per entrypoint and status: count, most attempts, mean enqueue-to-finish
    seconds (ids >= since_id).
    """
    return FUNCTIONS["history_summary"].call(records(HistorySummary), entrypoints=entrypoints, since_id=since_id)


def job(id: int) -> Call[JobInfo | None]:
    """``pgq.job(bigint)``, ``RETURNS SETOF pgq.job_info``.
    One job by id, live or finished: status, attempts, payload, timings (wait_s, run_s),
    worker, errors of every attempt, details, result, the schedule tick that fired it; for a
    running job how long it has been silent and its deadline.
    """
    return FUNCTIONS["job"].call(optional(JobInfo), id=id)


def job_results(ids: Sequence[int | None]) -> Call[list[JobResult]]:
    """``pgq.job_results(bigint[])``, ``RETURNS TABLE(id bigint, status text, finished boolean, result jsonb, error jsonb, attempt integer, finished_at timestamp with time zone)``.
    Status and result of jobs by id, for producers waiting on them: one row per id (unknown
    when absent); result of successful jobs, error details of failed or canceled ones; no
    payload.
    """
    return FUNCTIONS["job_results"].call(records(JobResult), ids=ids)


def key_stats(*, entrypoints: Sequence[str | None] | None = None, max_keys: int | None = None) -> Call[list[Row]]:
    """``pgq.key_stats(text[],integer)``, ``RETURNS TABLE(entrypoint text, group_key text, queued bigint, running bigint, key_concurrency_limit integer, at_limit boolean)``.
    The busiest group keys of key-limited entrypoints: queued, running, the limit and
    whether the key is at it (its queued jobs wait on the key's limit).
    """
    return FUNCTIONS["key_stats"].call(rows, entrypoints=entrypoints, max_keys=max_keys)


def list_jobs(entrypoint: str, state: str, *, after: str | None = None, page_size: int | None = None) -> Call[list[JobListing]]:
    """``pgq.list_jobs(text,text,text,integer)``, ``RETURNS SETOF pgq.job_listing``.
    One page of the jobs of an entrypoint in a state (queued in claim order, scheduled by
    due time, running by id, finished newest first), keyset-paged through the cursor column.
    """
    return FUNCTIONS["list_jobs"].call(records(JobListing), entrypoint=entrypoint, state=state, after=after, page_size=page_size)


def maintain(*, at: datetime | timedelta | None = None, min_interval: timedelta | None = None) -> Call[Row]:
    """``pgq.maintain(timestamp with time zone,interval)``, ``RETURNS TABLE(state text, swept integer, promoted integer, carried integer, truncated text, rotated boolean, lock_wait_ms double precision, bytes bigint)``.
    Stale sweep, promotion of due jobs, and the ring's reclaim (carry stragglers, rotate,
    truncate one drained slot); one maintainer at a time, others answer busy; with
    min_interval, a call soon after the last pass answers recent.
    """
    return FUNCTIONS["maintain"].call(first, at=at, min_interval=min_interval)


def metrics(*, entrypoints: Sequence[str | None] | None = None, percentile_window: timedelta | None = None, at: datetime | timedelta | None = None) -> Call[list[EntrypointMetrics]]:
    """``pgq.metrics(text[],interval,timestamp with time zone)``, ``RETURNS TABLE(entrypoint text, paused boolean, queued bigint, due bigint, delayed bigint, running bigint, stale bigint, lag_s double precision, successful_1m bigint, failed_1m bigint, canceled_1m bigint, successful_5m bigint, failed_5m bigint, canceled_5m bigint, successful_15m bigint, failed_15m bigint, canceled_15m bigint, throughput_1m double precision, throughput_5m double precision, throughput_15m double precision, wait_p50_s double precision, wait_p95_s double precision, wait_p99_s double precision, run_p50_s double precision, run_p95_s double precision, run_p99_s double precision, successful_total bigint, failed_total bigint, canceled_total bigint, rollup_caught_up boolean, served boolean, unserved_s double precision, rate_remaining bigint, rate_wait_s double precision, rate_keys_used_up bigint, keys_at_limit bigint, key_limited bigint)``.
    Per entrypoint: paused, queued/due/delayed (due and delayed exact up to 10,000 each),
    running, stale, lag_s; finished per status over 1/5/15 min and throughput (10-second
    buckets); wait/run p50/p95/p99 over percentile_window; totals; served (a live worker
    serves it) and unserved_s; what waits on a rate or key limit. Advances the rollup first
    (bounded).
    """
    return FUNCTIONS["metrics"].call(records(EntrypointMetrics), entrypoints=entrypoints, percentile_window=percentile_window, at=at)


def metrics_series(*, entrypoints: Sequence[str | None] | None = None, combined: bool | None = None, at: datetime | timedelta | None = None) -> Call[list[MetricsPoint]]:
    """``pgq.metrics_series(text[],boolean,timestamp with time zone)``, ``RETURNS TABLE(entrypoint text, minute timestamp with time zone, successful bigint, failed bigint, canceled bigint, due bigint, running bigint, wait_p95_s double precision, run_p95_s double precision)``.
    The last hour per minute, for charts: finished per status, the due and running backlog
    sampled each minute, wait and run p95; per entrypoint, or combined. Reads only.
    """
    return FUNCTIONS["metrics_series"].call(records(MetricsPoint), entrypoints=entrypoints, combined=combined, at=at)


def next_run_at(entrypoints: Sequence[str | None], *, at: datetime | timedelta | None = None) -> Call[datetime | None]:
    """``pgq.next_run_at(text[],timestamp with time zone)``, ``RETURNS timestamp with time zone``.
    Earliest run_at after at among scheduled jobs of these entrypoints, or when a rate
    limit's budget next grows (NULL if neither): how long an idle worker may sleep.
    """
    return FUNCTIONS["next_run_at"].call(value, entrypoints=entrypoints, at=at)


def next_schedule_at(*, worker_id: UUID | None = None, at: datetime | timedelta | None = None) -> Call[datetime | None]:
    """``pgq.next_schedule_at(uuid,timestamp with time zone)``, ``RETURNS timestamp with time zone``.
    Earliest time a schedule becomes due (or a silent claimer may be taken over); with a
    worker_id, only the schedules it may claim (their entrypoint served); NULL without any.
    """
    return FUNCTIONS["next_schedule_at"].call(value, worker_id=worker_id, at=at)


def parent_results(job_id: int) -> Call[list[Row]]:
    """``pgq.parent_results(bigint)``, ``RETURNS TABLE(parent_id bigint, status text, result jsonb)``.
    The jobs job_id depends on, with their final status and result (details.result): what a
    fan-in job merges.
    """
    return FUNCTIONS["parent_results"].call(rows, job_id=job_id)


def pause(entrypoints: Sequence[str | None], *, at: datetime | timedelta | None = None) -> Call[list[EntrypointConfig]]:
    """``pgq.pause(text[],timestamp with time zone)``, ``RETURNS SETOF pgq.entrypoints``.
    Pauses entrypoints for every worker (no queued job or stale re-claim starts) without
    touching their policy; enqueueing goes on. Returns the policy rows.
    """
    return FUNCTIONS["pause"].call(records(EntrypointConfig), entrypoints=entrypoints, at=at)


def prune_entrypoints(*, older_than: timedelta | None = None, lock_wait: timedelta | None = None, at: datetime | timedelta | None = None) -> Call[int]:
    """``pgq.prune_entrypoints(interval,interval,timestamp with time zone)``, ``RETURNS bigint``.
    Removes entrypoint rows with no live job, no schedule, the default policy, not paused
    and unchanged for older_than; returns how many (NULL: lock not taken within lock_wait).
    """
    return FUNCTIONS["prune_entrypoints"].call(value, older_than=older_than, lock_wait=lock_wait, at=at)


def prune_history(older_than: timedelta, *, at: datetime | timedelta | None = None, batch: int | None = None) -> Call[int]:
    """``pgq.prune_history(interval,timestamp with time zone,integer)``, ``RETURNS bigint``.
    Deletes up to batch history rows finished more than older_than ago; returns how many.
    Call until it returns less than batch.
    """
    return FUNCTIONS["prune_history"].call(value, older_than=older_than, at=at, batch=batch)


def prune_workers(*, at: datetime | timedelta | None = None) -> Call[int]:
    """``pgq.prune_workers(timestamp with time zone)``, ``RETURNS bigint``.
    Deletes registry rows of workers gone for over 15 minutes that hold no running job;
    returns how many.
    """
    return FUNCTIONS["prune_workers"].call(value, at=at)


def rate_stats(*, entrypoints: Sequence[str | None] | None = None, at: datetime | timedelta | None = None) -> Call[list[Row]]:
    """``pgq.rate_stats(text[],timestamp with time zone)``, ``RETURNS TABLE(entrypoint text, rate_limit integer, rate_period interval, rate_per_key boolean, started bigint, remaining bigint, budgets bigint, budgets_used_up bigint, next_start_at timestamp with time zone)``.
    The rate limits of these entrypoints (NULL: all): starts in the window, what is left,
    budgets (keys) with starts and those used up, and when the budget next grows.
    """
    return FUNCTIONS["rate_stats"].call(rows, entrypoints=entrypoints, at=at)


def rate_waits(entrypoints: Sequence[str | None], *, at: datetime | timedelta | None = None) -> Call[list[Row]]:
    """``pgq.rate_waits(text[],timestamp with time zone)``, ``RETURNS TABLE(entrypoint text, next_start_at timestamp with time zone)``.
    The entrypoints among these whose whole-entrypoint rate limit is used up, and when one
    more start fits: a worker ignores their enqueue notifications until then.
    """
    return FUNCTIONS["rate_waits"].call(rows, entrypoints=entrypoints, at=at)


def register_worker(worker_id: UUID, *, entrypoints: Sequence[str | None] | None = None, host: str | None = None, pid: int | None = None, application_name: str | None = None, version: str | None = None, metadata: Any | None = None, timeout: timedelta | None = None, at: datetime | timedelta | None = None) -> Call[WorkerRegistration]:
    """``pgq.register_worker(uuid,text[],text,integer,text,text,jsonb,interval,timestamp with time zone)``, ``RETURNS TABLE(started_at timestamp with time zone, last_seen_at timestamp with time zone, gone_after interval, heartbeat_interval interval)``.
    Announces a worker in the registry (pgq.workers); idempotent, keeps started_at.
    pgq.heartbeat keeps it fresh; returns started_at, last_seen_at, gone_after (the timeout)
    and heartbeat_interval (timeout / 3).
    """
    return FUNCTIONS["register_worker"].call(record(WorkerRegistration), worker_id=worker_id, entrypoints=entrypoints, host=host, pid=pid, application_name=application_name, version=version, metadata=metadata, timeout=timeout, at=at)


def release(worker_id: UUID, ids: Sequence[int | None], leases: Sequence[int | None], *, at: datetime | timedelta | None = None) -> Call[list[Row]]:
    """``pgq.release(uuid,bigint[],bigint[],timestamp with time zone)``, ``RETURNS TABLE(id bigint, status text)``.
    Returns claimed, never-started jobs to the queue without counting an attempt (a job
    whose cancel was requested ends canceled); returns id and status per job.
    """
    return FUNCTIONS["release"].call(rows, worker_id=worker_id, ids=ids, leases=leases, at=at)


def release_schedule(worker_id: UUID, name: str, lease: int, *, error: str | None = None, retry_after: timedelta | None = None, at: datetime | timedelta | None = None) -> Call[str]:
    """``pgq.release_schedule(uuid,text,bigint,text,interval,timestamp with time zone)``, ``RETURNS text``.
    Gives back a claimed schedule that cannot be fired (no next cron time): idle again, not
    claimed before retry_after, error kept in last_error; lease-guarded: released or lost.
    """
    return FUNCTIONS["release_schedule"].call(value, worker_id=worker_id, name=name, lease=lease, error=error, retry_after=retry_after, at=at)


def requeue(ids: Sequence[int | None], *, at: datetime | timedelta | None = None) -> Call[list[int]]:
    """``pgq.requeue(bigint[],timestamp with time zone)``, ``RETURNS TABLE(id bigint)``.
    Puts failed (dead) or canceled jobs from history back in the queue with attempt 0;
    returns the ids requeued.
    """
    return FUNCTIONS["requeue"].call(column, ids=ids, at=at)


def requeue_history(*, entrypoint: str | None = None, statuses: Sequence[str | None] | None = None, since: datetime | timedelta | None = None, until: datetime | timedelta | None = None, error: str | None = None, max_jobs: int | None = None, at: datetime | timedelta | None = None) -> Call[list[int]]:
    """``pgq.requeue_history(text,text[],timestamp with time zone,timestamp with time zone,text,integer,timestamp with time zone)``, ``RETURNS TABLE(id bigint)``.
    Bulk requeue of failed (or canceled) jobs matching entrypoint, finish time and error
    text, up to max_jobs per call, skipping jobs whose dedupe key is held; returns the ids
    requeued.
    """
    return FUNCTIONS["requeue_history"].call(column, entrypoint=entrypoint, statuses=statuses, since=since, until=until, error=error, max_jobs=max_jobs, at=at)


def requeue_workflow(job_id: int, *, at: datetime | timedelta | None = None) -> Call[list[int]]:
    """``pgq.requeue_workflow(bigint,timestamp with time zone)``, ``RETURNS TABLE(id bigint)``.
    Requeues every job of job_id's workflow that ended failed or canceled (as pgq.requeue,
    in one call: a job comes back waiting for a parent that comes back with it); returns the
    ids requeued.
    """
    return FUNCTIONS["requeue_workflow"].call(column, job_id=job_id, at=at)


def resume(entrypoints: Sequence[str | None]) -> Call[list[EntrypointConfig]]:
    """``pgq.resume(text[])``, ``RETURNS SETOF pgq.entrypoints``.
    Resumes paused entrypoints with their policy as configured, and wakes idle workers;
    returns the policy rows of the known ones.
    """
    return FUNCTIONS["resume"].call(records(EntrypointConfig), entrypoints=entrypoints)


def rollup_metrics(*, max_rows: int | None = None, at: datetime | timedelta | None = None) -> Call[Rollup]:
    """``pgq.rollup_metrics(integer,timestamp with time zone)``, ``RETURNS TABLE(rolled bigint, caught_up boolean, busy boolean)``.
    Counts newly finished jobs (history rows in transaction order, exactly once) into
    10-second metric buckets and totals; at most about max_rows per call; never waits for
    another caller. Returns rolled, caught_up, busy.
    """
    return FUNCTIONS["rollup_metrics"].call(record(Rollup), max_rows=max_rows, at=at)


def schedule(name: str, entrypoint: str, cron: str, next_run_at: datetime | timedelta, *, timezone: str | None = None, payload: Any | None = None, priority: int | None = None, headers: Any | None = None, catch_up: str | None = None, misfire_grace: timedelta | None = None, fire_timeout: timedelta | None = None) -> Call[Schedule]:
    """``pgq.schedule(text,text,text,timestamp with time zone,text,jsonb,integer,jsonb,text,interval,interval)``, ``RETURNS pgq.schedules``.
    Registers or updates a cron schedule idempotently; next_run_at is kept unless the cron
    expression or time zone changed.
    """
    return FUNCTIONS["schedule"].call(record(Schedule), name=name, entrypoint=entrypoint, cron=cron, next_run_at=next_run_at, timezone=timezone, payload=payload, priority=priority, headers=headers, catch_up=catch_up, misfire_grace=misfire_grace, fire_timeout=fire_timeout)


def take_tokens(entrypoint: str, *, tokens: int | None = None, rate_key: str | None = None, at: datetime | timedelta | None = None) -> Call[Tokens]:
    """``pgq.take_tokens(text,integer,text,timestamp with time zone)``, ``RETURNS TABLE(granted boolean, remaining integer, retry_at timestamp with time zone)``.
    Takes tokens from a rate-limited entrypoint's budget outside a job (all or nothing), so
    application code shares the limit with the entrypoint's jobs: granted, starts remaining
    in the window, and when refused the time it would be granted.
    """
    return FUNCTIONS["take_tokens"].call(record(Tokens), entrypoint=entrypoint, tokens=tokens, rate_key=rate_key, at=at)


def unregister_worker(worker_id: UUID) -> Call[bool]:
    """``pgq.unregister_worker(uuid)``, ``RETURNS boolean``.
    Removes a worker from the registry (clean stop); returns true if it was registered.
    """
    return FUNCTIONS["unregister_worker"].call(value, worker_id=worker_id)


def unschedule(name: str) -> Call[bool]:
    """``pgq.unschedule(text)``, ``RETURNS boolean``.
    Removes a schedule; returns true if it existed.
    """
    return FUNCTIONS["unschedule"].call(value, name=name)


def workflow(job_id: int) -> Call[list[Row]]:
    """``pgq.workflow(bigint)``, ``RETURNS TABLE(id bigint, entrypoint text, state text, attempt integer, finished_at timestamp with time zone, parents jsonb, children bigint[], workflow_id bigint)``.
    Every job of a workflow (given its id or any of its jobs), live or finished: state,
    parents (with each edge's state), children and the workflow id.
    """
    return FUNCTIONS["workflow"].call(rows, job_id=job_id)


#: Each field of :class:`Privileges` and the function (or view) it stands for.
PRIVILEGE_FUNCTIONS: dict[str, str] = {
    "read_jobs": "pgq.job(bigint)",
    "read_failed": "pgq.failed_jobs",
    "pause": "pgq.pause(text[],timestamp with time zone)",
    "resume": "pgq.resume(text[])",
    "cancel": "pgq.cancel(bigint[],timestamp with time zone)",
    "requeue": "pgq.requeue(bigint[],timestamp with time zone)",
    "requeue_history": "pgq.requeue_history(text,text[],timestamp with time zone,timestamp with time zone,text,integer,timestamp with time zone)",
    "delete_history": "pgq.delete_history(text,text[],timestamp with time zone,timestamp with time zone,text,integer)",
    "delete_jobs": "pgq.delete_jobs(bigint[])",
    "schedule": "pgq.schedule(text,text,text,timestamp with time zone,text,jsonb,integer,jsonb,text,interval,interval)",
    "unschedule": "pgq.unschedule(text)",
    "fire_schedule_now": "pgq.fire_schedule_now(text,timestamp with time zone)",
    "configure": "pgq.configure(text,integer,integer,interval,interval,interval,boolean,interval,integer,integer,interval,text[],integer,integer,interval,boolean)",
}
PRIVILEGES = "SELECT coalesce(has_function_privilege(to_regprocedure('pgq.job(bigint)'), 'EXECUTE'), false) AS read_jobs, coalesce(has_table_privilege(to_regclass('pgq.failed_jobs'), 'SELECT'), false) AS read_failed, coalesce(has_function_privilege(to_regprocedure('pgq.pause(text[],timestamp with time zone)'), 'EXECUTE'), false) AS pause, coalesce(has_function_privilege(to_regprocedure('pgq.resume(text[])'), 'EXECUTE'), false) AS resume, coalesce(has_function_privilege(to_regprocedure('pgq.cancel(bigint[],timestamp with time zone)'), 'EXECUTE'), false) AS cancel, coalesce(has_function_privilege(to_regprocedure('pgq.requeue(bigint[],timestamp with time zone)'), 'EXECUTE'), false) AS requeue, coalesce(has_function_privilege(to_regprocedure('pgq.requeue_history(text,text[],timestamp with time zone,timestamp with time zone,text,integer,timestamp with time zone)'), 'EXECUTE'), false) AS requeue_history, coalesce(has_function_privilege(to_regprocedure('pgq.delete_history(text,text[],timestamp with time zone,timestamp with time zone,text,integer)'), 'EXECUTE'), false) AS delete_history, coalesce(has_function_privilege(to_regprocedure('pgq.delete_jobs(bigint[])'), 'EXECUTE'), false) AS delete_jobs, coalesce(has_function_privilege(to_regprocedure('pgq.schedule(text,text,text,timestamp with time zone,text,jsonb,integer,jsonb,text,interval,interval)'), 'EXECUTE'), false) AS schedule, coalesce(has_function_privilege(to_regprocedure('pgq.unschedule(text)'), 'EXECUTE'), false) AS unschedule, coalesce(has_function_privilege(to_regprocedure('pgq.fire_schedule_now(text,timestamp with time zone)'), 'EXECUTE'), false) AS fire_schedule_now, coalesce(has_function_privilege(to_regprocedure('pgq.configure(text,integer,integer,interval,interval,interval,boolean,interval,integer,integer,interval,text[],integer,integer,interval,boolean)'), 'EXECUTE'), false) AS configure"


@dataclass(frozen=True)
class Privileges(_record_mixins.PrivilegesMixin):
    """What the connected role may call (gen_api.PRIVILEGES); False: hidden."""

    read_jobs: bool = False
    read_failed: bool = False
    pause: bool = False
    resume: bool = False
    cancel: bool = False
    requeue: bool = False
    requeue_history: bool = False
    delete_history: bool = False
    delete_jobs: bool = False
    schedule: bool = False
    unschedule: bool = False
    fire_schedule_now: bool = False
    configure: bool = False


def privileges() -> Call[Privileges]:
    return Call(PRIVILEGES, (), record(Privileges))


# --- records: a frozen dataclass per kind of row (gen_api.RECORDS)


@dataclass(frozen=True)
class EntrypointStats:
    """One row of view ``pgq.queue_stats``: Per entrypoint: queued, due, running, stale
    (heartbeat older than its timeout), age of the oldest queued job, its policy, and
    whether it is paused."""

    entrypoint: str
    queued: int
    due: int
    running: int
    stale: int
    oldest_queued_age: timedelta | None
    concurrency_limit: int | None
    max_attempts: int
    heartbeat_timeout: timedelta
    paused: bool


@dataclass(frozen=True)
class FailedJob(_record_mixins.FailedJobMixin):
    """One row of view ``pgq.failed_jobs``: Dead jobs: attempts used up. pgq.requeue(ids)
    puts them back in the queue."""

    id: int
    entrypoint: str
    attempt: int
    payload: Any
    headers: dict[str, Any] | None
    priority: int
    dedupe_key: str | None
    enqueued_at: datetime
    started_at: datetime | None
    finished_at: datetime
    worker_id: UUID | None
    details: Any
    errors: list[Any]


@dataclass(frozen=True)
class HistorySummary:
    """One row of ``pgq.history_summary()``: Finished jobs per entrypoint and status: count,
    most attempts, mean enqueue-to-finish seconds (ids >= since_id)."""

    entrypoint: str
    status: str
    jobs: int
    max_attempt: int
    avg_latency_s: float


@dataclass(frozen=True)
class EntrypointConfig(_record_mixins.EntrypointConfigMixin):
    """One row of ``pgq.entrypoint_config()``: The stored policy rows of entrypoints (NULL:
    all), by entrypoint; names never configured or enqueued are left out."""

    entrypoint: str
    concurrency_limit: int | None
    max_attempts: int
    backoff_base: timedelta
    backoff_max: timedelta
    heartbeat_timeout: timedelta
    updated_at: datetime
    paused_at: datetime | None
    paused_by: str | None
    run_timeout: timedelta | None
    max_interruptions: int | None
    max_snoozes: int | None
    dedupe_period: timedelta | None
    dedupe_states: list[str] | None
    key_concurrency_limit: int | None
    rate_limit: int | None
    rate_period: timedelta | None
    rate_per_key: bool | None


@dataclass(frozen=True)
class Schedule:
    """One row of table ``pgq.schedules``: Cron schedules: one row each. pgq.claim_schedules
    / pgq.fire_schedule turn due rows into jobs."""

    name: str
    entrypoint: str
    cron: str
    timezone: str
    payload: Any
    headers: dict[str, Any] | None
    priority: int
    catch_up: str
    misfire_grace: timedelta
    fire_timeout: timedelta
    next_run_at: datetime
    last_run_at: datetime | None
    last_job_id: int | None
    state: str
    worker_id: UUID | None
    lease: int | None
    heartbeat_at: datetime | None
    created_at: datetime
    updated_at: datetime
    retry_at: datetime | None
    last_error: str | None


@dataclass(frozen=True)
class EntrypointMetrics:
    """One row of ``pgq.metrics()``: Per entrypoint: paused, queued/due/delayed (due and
    delayed exact up to 10,000 each), running, stale, lag_s; finished per status over 1/5/15
    min and throughput (10-second buckets); wait/run p50/p95/p99 over percentile_window;
    totals; served (a live worker serves it) and unserved_s; what waits on a rate or key
    limit. Advances the rollup first (bounded)."""

    entrypoint: str
    paused: bool
    queued: int
    due: int
    delayed: int
    running: int
    stale: int
    lag_s: float
    successful_1m: int
    failed_1m: int
    canceled_1m: int
    successful_5m: int
    failed_5m: int
    canceled_5m: int
    successful_15m: int
    failed_15m: int
    canceled_15m: int
    throughput_1m: float
    throughput_5m: float
    throughput_15m: float
    wait_p50_s: float | None
    wait_p95_s: float | None
    wait_p99_s: float | None
    run_p50_s: float | None
    run_p95_s: float | None
    run_p99_s: float | None
    successful_total: int
    failed_total: int
    canceled_total: int
    rollup_caught_up: bool
    served: bool
    unserved_s: float | None
    rate_remaining: int | None
    rate_wait_s: float | None
    rate_keys_used_up: int | None
    keys_at_limit: int | None
    key_limited: int | None


@dataclass(frozen=True)
class WorkerStatus:
    """One row of view ``pgq.worker_status``: Per worker: state (active; gone when silent
    past its timeout; unregistered: holds jobs but never registered), what it announced,
    last seen, silent_s, the running jobs it holds (running, stale, job_ids) and
    job_silent_s, the longest silence among them (seconds since their oldest heartbeat)."""

    worker_id: UUID
    state: str
    host: str | None
    pid: int | None
    application_name: str | None
    entrypoints: list[str] | None
    version: str | None
    metadata: Any
    client_addr: Any
    started_at: datetime | None
    last_seen_at: datetime | None
    silent_s: float | None
    timeout: timedelta | None
    running: int
    stale: int
    job_ids: list[int]
    job_silent_s: float | None


@dataclass(frozen=True)
class WorkerRegistration:
    """One row of ``pgq.register_worker()``: Announces a worker in the registry
    (pgq.workers); idempotent, keeps started_at. pgq.heartbeat keeps it fresh; returns
    started_at, last_seen_at, gone_after (the timeout) and heartbeat_interval (timeout / 3)."""

    started_at: datetime
    last_seen_at: datetime
    gone_after: timedelta
    heartbeat_interval: timedelta


@dataclass(frozen=True)
class Rollup:
    """One row of ``pgq.rollup_metrics()``: Counts newly finished jobs (history rows in
    transaction order, exactly once) into 10-second metric buckets and totals; at most about
    max_rows per call; never waits for another caller. Returns rolled, caught_up, busy."""

    rolled: int
    caught_up: bool
    busy: bool


@dataclass(frozen=True)
class MetricsPoint:
    """One row of ``pgq.metrics_series()``: The last hour per minute, for charts: finished
    per status, the due and running backlog sampled each minute, wait and run p95; per
    entrypoint, or combined. Reads only."""

    entrypoint: str | None
    minute: datetime
    successful: int
    failed: int
    canceled: int
    due: int | None
    running: int | None
    wait_p95_s: float | None
    run_p95_s: float | None


@dataclass(frozen=True)
class JobInfo:
    """One row of ``pgq.job()``: One job by id, live or finished: status, attempts, payload,
    timings (wait_s, run_s), worker, errors of every attempt, details, result, the schedule
    tick that fired it; for a running job how long it has been silent and its deadline."""

    id: int
    entrypoint: str
    status: str
    priority: int
    attempt: int
    max_attempts: int
    payload: Any
    headers: dict[str, Any] | None
    dedupe_key: str | None
    enqueued_at: datetime
    run_at: datetime | None
    started_at: datetime | None
    heartbeat_at: datetime | None
    finished_at: datetime | None
    wait_s: float | None
    run_s: float | None
    worker_id: UUID | None
    cancel_requested: bool | None
    result: Any
    details: Any
    errors: list[Any] | None
    schedule: str | None
    schedule_due_at: datetime | None
    silent_s: float | None
    deadline_at: datetime | None


@dataclass(frozen=True)
class JobResult:
    """One row of ``pgq.job_results()``: Status and result of jobs by id, for producers
    waiting on them: one row per id (unknown when absent); result of successful jobs, error
    details of failed or canceled ones; no payload."""

    id: int
    status: str
    finished: bool
    result: Any
    error: Any
    attempt: int | None
    finished_at: datetime | None


@dataclass(frozen=True)
class JobListing:
    """One row of ``pgq.list_jobs()``: One page of the jobs of an entrypoint in a state
    (queued in claim order, scheduled by due time, running by id, finished newest first),
    keyset-paged through the cursor column."""

    id: int
    entrypoint: str
    status: str
    priority: int
    attempt: int
    dedupe_key: str | None
    enqueued_at: datetime
    run_at: datetime | None
    started_at: datetime | None
    heartbeat_at: datetime | None
    finished_at: datetime | None
    worker_id: UUID | None
    error: str | None
    message: str | None
    cursor: str
    silent_s: float | None


@dataclass(frozen=True)
class Tokens:
    """One row of ``pgq.take_tokens()``: Takes tokens from a rate-limited entrypoint's
    budget outside a job (all or nothing), so application code shares the limit with the
    entrypoint's jobs: granted, starts remaining in the window, and when refused the time it
    would be granted."""

    granted: bool
    remaining: int
    retry_at: datetime | None
