"""The shop's Django tasks, run by pgq (TASKS in settings)."""

try:
    from django.tasks import task
except ImportError:  # before Django 6
    from django_tasks import task

from shop.models import Order


@task(priority=10)
def ship(order_id: int) -> str:
    order = Order.objects.get(pk=order_id)
    if order.item == "unobtainium":
        raise LookupError(f"{order.item} is out of stock")
    order.shipped = True
    order.save()
    return f"shipped {order.item}"


@task()
async def notify(order_id: int, channel: str = "mail") -> str:
    return f"notified {order_id} by {channel}"


def with_context(context: object, order_id: int) -> None:
    """Made a task by a test: the pgq backend refuses tasks that take a context."""
