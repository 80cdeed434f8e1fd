"""The application's engine and model."""

from __future__ import annotations

import os

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders"

    id: Mapped[int] = mapped_column(primary_key=True)
    item: Mapped[str]
    shipped: Mapped[bool] = mapped_column(default=False)


engine: sa.Engine | None = None
SessionLocal = sessionmaker()


def configure(url: str) -> sa.Engine:
    global engine
    engine = sa.create_engine(url)
    SessionLocal.configure(bind=engine)
    Base.metadata.create_all(engine)
    return engine


def session() -> Session:
    if engine is None:
        configure(os.environ["APP_DATABASE_URL"])
    return SessionLocal()
