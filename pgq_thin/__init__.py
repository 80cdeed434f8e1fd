"""pgq-thin: a PostgreSQL job queue whose logic lives in the database.

The queue is the SQL in schema ``pgq``; this package is a thin client for it.
Install or upgrade the schema with :func:`pgq_thin.migrate.upgrade` or ``pgq-thin install``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pgq-thin")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
