"""The Alembic environment shipped with pgq_thin.

One Alembic revision per SQL migration file: ``versions/NNNN_slug.py`` applies
``sql/migrations/NNNN_slug.sql`` verbatim and its revision id is ``NNNN``. Adding a
migration means adding the SQL file and a revision file of a few lines (copy the last one,
bump ``revision`` and ``down_revision``); a test checks that the two lists match.

Alembic records the installed revision in ``pgq.alembic_version``, inside our own schema, so
the host application's own Alembic history (``public.alembic_version``) is never touched.
Run these migrations through :mod:`pgq_thin.migrate` (or ``pgq-thin install``), which takes
the advisory lock and creates schema ``pgq`` first; the ``alembic`` command line is not
supported.
"""

VERSION_SCHEMA = "pgq"
VERSION_TABLE = "alembic_version"
