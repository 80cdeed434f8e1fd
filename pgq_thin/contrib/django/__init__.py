"""pgq-thin in a Django project (extra ``pgq-thin[django]``).

``settings.py``::

    INSTALLED_APPS = [..., "pgq_thin.contrib.django"]
    TASKS = {"default": {"BACKEND": "pgq_thin.contrib.django.tasks.PgqBackend"}}

- ``manage.py migrate`` installs schema ``pgq`` (this app's migrations run pgq's SQL files in
  the migration's transaction, :func:`pgq_thin.migrate.upgrade_with`); an app whose own
  migration needs pgq (a trigger that enqueues, say) depends on ``("pgq_thin", "pgq_0002")``.
- Django's task framework (``django.tasks`` from Django 6; the ``django-tasks`` package before)
  enqueues through ``pgq.enqueue`` on Django's connection, so a task enqueued inside
  ``transaction.atomic()`` commits or rolls back with the request's writes.
- ``manage.py pgq_worker`` runs the tasks (``--until-empty`` for tests and one-off drains);
  ``pgq-thin run pgq_thin.contrib.django.run:worker`` does the same from the CLI.
- ``pgq_thin.Queue(django.db.connection)`` is the plain producer on the same connection.
"""
