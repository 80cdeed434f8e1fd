"""``run MODULE:ATTR``: load a worker and run it until a signal (or, with ``--drain``, until
the queue is empty).

``MODULE:ATTR`` is a :class:`~pgq_thin.worker.ThinWorker`, a function (sync or async)
returning one, or an async context manager (or a function returning one) yielding one; a job
handler given by mistake is refused before anything runs, naming the worker to pass instead.
The options override the worker's settings in :func:`configure_worker`, the one place they are
applied. Logs go to stderr as text or JSON lines (``--log-format``, see :mod:`pgq_thin.logs`).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import logging
import os
import sys
import traceback
from typing import TYPE_CHECKING, Any

from pgq_thin import logs
from pgq_thin.cli._common import EXIT_OK, Command, UsageError
from pgq_thin.errors import PgqThinError, one_line

if TYPE_CHECKING:
    from pgq_thin.worker import ThinWorker

log = logging.getLogger("pgq_thin.cli")


class ImportFailed(PgqThinError):
    """The target's module (or a module it imports) raised while being imported (exit 1)."""


def _thin_worker() -> type[ThinWorker]:
    """The worker class, imported when ``run`` runs (not when ``--help`` or ``status`` do)."""
    from pgq_thin.worker import ThinWorker

    return ThinWorker


def _add_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="MODULE:ATTR",
        help="where the worker is: a ThinWorker object, a function returning one (sync or "
        "async), or an async context manager (factory) yielding one; e.g. myapp.jobs:worker",
    )
    parser.add_argument(
        "--concurrency", type=int, default=None, help="jobs run at once (default: the worker's)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="sync handlers run at once, on that many threads (default: the worker's)",
    )
    parser.add_argument(
        "--batch-size", type=int, default=None, help="jobs per claim (default: the worker's)"
    )
    parser.add_argument(
        "--prefetch",
        type=int,
        default=None,
        help="claimed jobs the worker may hold waiting for a slot, besides those running "
        "(default: the worker's; 0: claim only what can start at once)",
    )
    parser.add_argument(
        "--results-connection",
        action="store_true",
        default=False,
        help="write results on a connection of their own, beside the claims (one more "
        "connection; a busy worker drains faster)",
    )
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=None,
        help="seconds between polls when idle (default: the worker's)",
    )
    parser.add_argument(
        "--grace-period",
        type=float,
        default=None,
        help="seconds running jobs get after SIGTERM/SIGINT (default: the worker's)",
    )
    parser.add_argument(
        "--entrypoint",
        action="append",
        default=[],
        metavar="NAME",
        help="claim only this entrypoint (repeatable; default: all the worker registers)",
    )
    parser.add_argument(
        "--drain",
        action="store_true",
        default=False,
        help="exit once a claim finds nothing and nothing runs (tests, scripts)",
    )
    parser.add_argument(
        "--listen-dsn",
        default=None,
        help="where the listener connects (default: the DSN); a direct connection when --dsn is a "
        "transaction-mode pooler",
    )
    parser.add_argument(
        "--no-listen",
        action="store_true",
        default=False,
        help="poll only, no listener for notifications (when no direct connection is available)",
    )
    parser.add_argument(
        "--no-restart",
        action="store_true",
        default=False,
        help="exit on an unrecoverable error instead of restarting the worker",
    )
    parser.add_argument(
        "--max-restarts",
        type=int,
        default=None,
        help="restarts in a row before giving up (default: the worker's, 5)",
    )
    parser.add_argument(
        "--no-schedules",
        action="store_true",
        default=False,
        help="fire no cron schedules (by default every worker fires every due schedule in the "
        "database, also those added with `pgq-thin schedules add`)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve this worker's Prometheus metrics on http://ADDR:PORT/metrics (needs "
        "pip install 'pgq-thin[metrics]')",
    )
    parser.add_argument(
        "--metrics-addr",
        default=None,
        metavar="ADDR",
        help="address the metrics endpoint listens on (default: 127.0.0.1)",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        help="logging level: DEBUG (a line per job), INFO, WARNING, ERROR (default: %(default)s)",
    )
    parser.add_argument(
        "--log-format",
        default="text",
        choices=logs.FORMATS,
        help="text lines, or one JSON object per line with the job's fields (default: %(default)s)",
    )


def configure_worker(worker: ThinWorker, args: argparse.Namespace) -> None:
    """Apply the command line's settings to ``worker`` (only those given override its own).

    The one place ``run`` options reach the worker; a settings object can replace the
    attribute writes here without touching the rest of the command.
    """
    if getattr(args, "dsn", None):
        worker.dsn = args.dsn
    for name in ("concurrency", "threads", "batch_size", "poll_interval", "grace_period"):
        value = getattr(args, name)
        if value is not None:
            if value <= 0 and name != "poll_interval":
                raise UsageError(f"--{name.replace('_', '-')} must be positive, got {value}")
            setattr(worker, name, value)
    if args.prefetch is not None:
        if args.prefetch < 0:
            raise UsageError(f"--prefetch must be 0 or more, got {args.prefetch}")
        worker.prefetch = args.prefetch
    if args.results_connection:
        worker.results_connection = True
    if args.entrypoint:
        worker.restrict(args.entrypoint)
    if args.listen_dsn:
        worker.listen_dsn = args.listen_dsn
    if args.no_listen:
        worker.listen = False
    if args.no_restart:
        worker.restart_on_failure = False
    if args.max_restarts is not None:
        if args.max_restarts < 0:
            raise UsageError(f"--max-restarts must not be negative, got {args.max_restarts}")
        worker.max_restarts = args.max_restarts
    if args.no_schedules:
        worker.run_schedules = False
    if args.metrics_addr:
        worker.metrics_addr = args.metrics_addr
    if args.metrics_port is not None:
        if not 0 <= args.metrics_port <= 65535:
            raise UsageError(f"--metrics-port must be a port number, got {args.metrics_port}")
        worker.metrics_port = args.metrics_port


def load_target(target: str) -> Any:
    """The object ``MODULE:ATTR`` names (the current directory is importable)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"expected MODULE:ATTR (e.g. myapp.jobs:worker), got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name and (module_name == err.name or module_name.startswith(err.name + ".")):
            raise UsageError(f"cannot import module {module_name!r}: {err}") from None
        raise ImportFailed(_import_error(module_name, err)) from err
    except Exception as err:  # the user's module raised at import: one line, traceback at DEBUG
        raise ImportFailed(_import_error(module_name, err)) from err
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"module {module_name!r} has no attribute {attr!r}") from None
    return obj


def _import_error(module_name: str, err: BaseException) -> str:
    """One line for an exception raised while importing the user's module: what, and where
    (the innermost frame outside the import machinery); the traceback goes to DEBUG."""
    log.debug("importing %s failed", module_name, exc_info=err)
    frames = [
        f
        for f in traceback.extract_tb(err.__traceback__)
        if "importlib" not in f.filename and not f.filename.startswith("<frozen")
    ]
    where = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
    if isinstance(err, SyntaxError) and err.filename:
        where = f" ({err.filename}, line {err.lineno})"
    return (
        f"importing {module_name} failed: {type(err).__name__}: {one_line(err)}{where}; "
        "--log-level DEBUG shows the traceback"
    )


async def _run_target(obj: Any, args: argparse.Namespace) -> ThinWorker:
    cls = _thin_worker()
    if isinstance(obj, cls):
        await _arun(obj, args)
        return obj
    if hasattr(obj, "__aenter__"):
        async with obj as worker:
            return await _run_checked(worker, args)
    if callable(obj):
        _refuse_handler(obj, args.target)
        made = obj()
        if inspect.isawaitable(made):
            made = await made
        if hasattr(made, "__aenter__") and not isinstance(made, cls):
            async with made as worker:
                return await _run_checked(worker, args)
        return await _run_checked(made, args)
    raise UsageError(f"{args.target} is a {type(obj).__name__}, not a ThinWorker or a factory")


def _refuse_handler(obj: Any, target: str) -> None:
    """A target that needs arguments (a job handler, most likely) cannot be called to make a
    worker: say so, and name the workers its module has."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # no signature to read (a builtin): let it be tried
        return
    try:
        signature.bind()
    except TypeError:
        pass
    else:
        return
    module_name = target.partition(":")[0]
    module = sys.modules.get(module_name)
    cls = _thin_worker()
    workers = sorted(
        name for name, value in vars(module or object()).items() if isinstance(value, cls)
    )
    if workers:
        fix = "pass the worker instead: " + " or ".join(f"{module_name}:{w}" for w in workers)
    else:
        fix = (
            "pass a ThinWorker, or a function without arguments that returns one "
            "(e.g. myapp.jobs:worker)"
        )
    params = ", ".join(signature.parameters)
    raise UsageError(
        f"{target} is not a worker or a function that makes one: it takes arguments "
        f"({params}), like a job handler; {fix}"
    )


async def _run_checked(worker: Any, args: argparse.Namespace) -> ThinWorker:
    if not isinstance(worker, _thin_worker()):
        raise UsageError(f"{args.target} gave a {type(worker).__name__}, expected a ThinWorker")
    await _arun(worker, args)
    return worker


async def _arun(worker: ThinWorker, args: argparse.Namespace) -> None:
    configure_worker(worker, args)
    await worker.arun(until_empty=args.drain)


def _cmd_run(args: argparse.Namespace) -> int:
    level = getattr(logging, str(args.log_level).upper(), None)
    if not isinstance(level, int):
        raise UsageError(f"unknown --log-level {args.log_level!r}")
    logs.configure(level, args.log_format)
    obj = load_target(args.target)
    worker = asyncio.run(_run_target(obj, args))
    worker.abandon_stuck_threads()
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "run": Command("run a worker: pgq-thin run MODULE:ATTR", _add_run, _cmd_run),
}
