"""A view: the order, its shipping task and a plain pgq job commit together, or not at all."""

from django.db import connection, transaction
from django.http import HttpRequest, JsonResponse

from pgq_thin import Queue
from shop.models import Order
from shop.tasks import notify, ship


def place_order(request: HttpRequest) -> JsonResponse:
    item = request.GET.get("item", "book")
    with transaction.atomic():
        order = Order.objects.create(item=item)
        shipping = ship.enqueue(order.id)
        notify.enqueue(order.id, channel="sms")
        Queue(connection).enqueue("audit.order_placed", {"order": order.id})
        if item == "fail":
            raise ValueError("the view failed after enqueueing")
    return JsonResponse({"order": order.id, "shipping": shipping.id})
