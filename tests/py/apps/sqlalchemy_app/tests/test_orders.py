"""The shop's own tests: what a view enqueues, and what the real worker then does."""

from __future__ import annotations

from datetime import timedelta

import pytest
from shop import db
from shop.jobs import ship_order, worker
from shop.service import place_order

from pgq_thin.testing import ANY, Jobs


def test_placing_an_order_enqueues_its_shipping(pgq_jobs: Jobs) -> None:
    with db.session() as session, session.begin():
        order_id = place_order(session, "book", express=True).id
    pgq_jobs.assert_enqueued(ship_order, {"order_id": order_id}, priority=10)
    pgq_jobs.assert_enqueued("ship_order", ANY, delay=None, count=1)

    ran = pgq_jobs.run(worker)

    assert ran.statuses == {"successful": 1}
    assert ran.results[0].result == "shipped book"
    pgq_jobs.assert_not_enqueued(ship_order)
    with db.session() as session:
        assert session.get(db.Order, order_id).shipped


def test_a_rolled_back_order_enqueues_nothing(pgq_jobs: Jobs) -> None:
    with db.session() as session:
        place_order(session, "pen")
        session.rollback()
    pgq_jobs.assert_not_enqueued(ship_order)
    assert pgq_jobs.run(worker).results == []


def test_a_failing_handler_is_retried_by_the_database(pgq_jobs: Jobs) -> None:
    with db.session() as session, session.begin():
        order_id = place_order(session, "unobtainium").id
    ran = pgq_jobs.run(worker)
    # the first attempt failed; SQL queued the retry after its backoff, not due yet
    assert ran.statuses == {"scheduled": 1}
    [left] = ran.left
    assert left.attempt == 1 and "OutOfStock" in str(left.errors)
    with db.session() as session:
        assert not session.get(db.Order, order_id).shipped


def test_the_assertions_say_what_is_there(pgq_jobs: Jobs) -> None:
    with db.session() as session, session.begin():
        order_id = place_order(session, "lamp").id
    with pytest.raises(AssertionError) as caught:
        pgq_jobs.assert_enqueued(ship_order, {"order_id": order_id}, priority=10)
    message = str(caught.value)
    expected = f"expected a job of 'ship_order', payload {{'order_id': {order_id}}}, priority 10"
    assert expected in message
    assert f"payload {{'order_id': {order_id}}}, priority 0" in message
    pgq_jobs.assert_enqueued(ship_order, {"order_id": order_id}, delay=timedelta(0))
