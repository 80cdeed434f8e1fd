"""The shop's own tests, run with `manage.py test`: the test database gets pgq through the
migrations, a view enqueues in its transaction, the worker command runs the tasks."""

from django.core.management import call_command
from django.db import connection
from django.test import Client, TransactionTestCase

from pgq_thin import Admin
from shop.models import Order
from shop.tasks import ship, with_context

try:
    from django.tasks import TaskResultStatus, task
    from django.tasks.exceptions import InvalidTask
except ImportError:  # before Django 6
    from django_tasks import TaskResultStatus, task
    from django_tasks.exceptions import InvalidTaskError as InvalidTask


def queued() -> dict[str, int]:
    """Live jobs per entrypoint (pgq.queue_stats); pgq's tables outlive the test's flush."""
    return {s.entrypoint: s.queued for s in Admin(connection).stats() if s.queued}


def added(before: dict[str, int]) -> dict[str, int]:
    now = queued()
    return {k: now[k] - before.get(k, 0) for k in now if now[k] != before.get(k, 0)}


class OrderTests(TransactionTestCase):
    def test_the_view_enqueues_and_the_worker_ships(self) -> None:
        before = queued()
        answer = Client().get("/orders", {"item": "book"}).json()
        self.assertEqual(
            added(before), {"audit.order_placed": 1, "shop.tasks.notify": 1, "shop.tasks.ship": 1}
        )
        result = ship.get_result(answer["shipping"])
        self.assertEqual(result.status, TaskResultStatus.READY)
        self.assertEqual(result.args, [answer["order"]])
        job = Admin(connection).job(int(answer["shipping"]))
        self.assertEqual((job.priority, job.headers["django_queue"]), (10, "default"))

        call_command("pgq_worker", "--until-empty", "--concurrency", "2")

        self.assertTrue(Order.objects.get(pk=answer["order"]).shipped)
        result.refresh()
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(result.return_value, "shipped book")
        # the async task ran too; the plain job has no handler in this worker: it waits
        self.assertEqual(added(before), {"audit.order_placed": 1})

    def test_a_failing_view_enqueues_nothing(self) -> None:
        before = queued()
        with self.assertRaises(ValueError):
            Client(raise_request_exception=True).get("/orders", {"item": "fail"})
        self.assertEqual(Order.objects.count(), 0)
        self.assertEqual(added(before), {})

    def test_a_failing_task_is_retried_by_pgq(self) -> None:
        answer = Client().get("/orders", {"item": "unobtainium"}).json()
        call_command("pgq_worker", "--until-empty")
        result = ship.get_result(answer["shipping"])
        self.assertEqual(result.status, TaskResultStatus.READY)  # the retry waits its backoff
        self.assertEqual(result.errors[0].exception_class, LookupError)
        self.assertIn("out of stock", result.errors[0].traceback)

    def test_a_task_taking_a_context_is_refused(self) -> None:
        before = queued()
        with self.assertRaisesMessage(InvalidTask, "takes a context"):
            task(takes_context=True)(with_context).enqueue(1)
        self.assertEqual(added(before), {})
