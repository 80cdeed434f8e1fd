"""What a view calls: the order and its shipping job commit together, or not at all."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session

from pgq_thin import Queue
from shop import db
from shop.jobs import ShipOrder, ship_order


def place_order(session: Session, item: str, *, express: bool = False) -> db.Order:
    order = db.Order(item=item)
    session.add(order)
    session.flush()  # the id
    ship_order.enqueue(
        Queue(session),
        ShipOrder(order.id),
        priority=10 if express else 0,
        run_at=None if express else timedelta(seconds=0),
    )
    return order
