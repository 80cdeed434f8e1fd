"""A small shop on SQLAlchemy's ORM: placing an order enqueues its shipping in the same
transaction; the worker ships it."""
