"""Where the packaged SQL lives.

The SQL sources live in the repository's top-level ``sql/`` folder. A built wheel carries
them as ``pgq_thin/_sql`` (hatch ``force-include``); a checkout or an editable install reads
``sql/`` next to the package. Migration files are ``sql/migrations/NNNN_slug.sql`` and are
applied in ``NNNN`` order; function files are ``sql/functions/<function name>.sql``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_MIGRATION_NAME = re.compile(r"^(?P<number>\d{4})_(?P<slug>[a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    """One SQL migration file. ``revision`` (the ``NNNN`` prefix) is its Alembic revision id."""

    revision: str
    slug: str
    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    def read(self) -> str:
        return self.path.read_text(encoding="utf-8")


def sql_dir() -> Path:
    """The folder holding ``migrations/`` and ``functions/``: packaged copy first, then checkout."""
    for candidate in (_PACKAGE_DIR / "_sql", _PACKAGE_DIR.parent / "sql"):
        if (candidate / "migrations").is_dir():
            return candidate
    raise FileNotFoundError(
        f"pgq_thin cannot find its SQL: neither {_PACKAGE_DIR / '_sql'} nor "
        f"{_PACKAGE_DIR.parent / 'sql'} has a migrations/ folder"
    )


def migrations() -> list[Migration]:
    """Every migration file, sorted by its ``NNNN`` prefix.

    Raises ``ValueError`` for a ``.sql`` file whose name does not follow ``NNNN_slug.sql`` or
    for two files sharing a number, so a misnamed file can never be skipped silently.
    """
    found: dict[str, Migration] = {}
    for path in sorted((sql_dir() / "migrations").glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if match is None:
            raise ValueError(f"migration file {path.name!r} is not named NNNN_slug.sql")
        number = match["number"]
        if number in found:
            raise ValueError(
                f"migration files {found[number].name!r} and {path.name!r} share number {number}"
            )
        found[number] = Migration(revision=number, slug=match["slug"], path=path)
    return [found[number] for number in sorted(found)]


def migration(revision: str) -> Migration:
    """The migration file whose ``NNNN`` prefix is ``revision``."""
    for item in migrations():
        if item.revision == revision:
            return item
    raise LookupError(f"no SQL migration file for revision {revision!r} in {sql_dir()}")


def function_files() -> list[Path]:
    """Every ``sql/functions/*.sql`` file, sorted by name."""
    folder = sql_dir() / "functions"
    return sorted(folder.glob("*.sql")) if folder.is_dir() else []
