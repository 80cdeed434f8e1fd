"""The worker and its entrypoints (run in production with `pgq-thin run shop.jobs:worker`)."""

from __future__ import annotations

from dataclasses import dataclass

from pgq_thin import Job, ThinWorker
from shop import db

worker = ThinWorker(poll_interval=0.1)  # the database comes from PGQ_DSN or --dsn


@dataclass
class ShipOrder:
    order_id: int


class OutOfStock(Exception):
    pass


@worker.entrypoint("ship_order")
def ship_order(job: Job[ShipOrder]) -> str:
    with db.session() as session, session.begin():
        order = session.get(db.Order, job.payload.order_id)
        if order is None:
            raise LookupError(f"no order {job.payload.order_id}")
        if order.item == "unobtainium":
            raise OutOfStock(order.item)
        order.shipped = True
        item = order.item
    return f"shipped {item}"
