"""The migration files against the function files and the released list (sql/migrations/README.md).

The repository's own files must pass ``scripts/new_migration.py --check``; the generator's rules
are exercised on a copy of ``sql/`` in a temporary folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.server import REPO

from scripts import new_migration as nm


def test_repository_migrations_agree_with_function_files_and_released_list() -> None:
    assert nm.check() == []


def test_every_migration_but_the_newest_is_released() -> None:
    released = {entry.revision for entry in nm.released()}
    paths = nm.migration_paths()
    assert released, "at least 0001 is released"
    assert [p.name[:4] for p in paths[:-1]] == sorted(r for r in released if r < paths[-1].name[:4])


@pytest.fixture
def sql(tmp_path: Path) -> Path:
    copy = tmp_path / "sql"
    shutil.copytree(REPO / "sql", copy)
    return copy


def _newest(sql: Path) -> Path:
    return nm.migration_paths(sql)[-1]


def _release_newest(sql: Path) -> None:
    nm.release("9.9.9", sql)


def test_an_edited_released_file_is_reported(sql: Path) -> None:
    first = nm.migration_paths(sql)[0]
    first.write_text(first.read_text() + "\n-- an innocent comment\n")
    problems = nm.check(sql)
    assert any(first.name in p and "must never change" in p for p in problems), problems


def test_a_changed_function_goes_into_the_unreleased_migration_only(sql: Path) -> None:
    # A function the unreleased migration does not re-create yet (unchanged since its release).
    unchanged = set(nm.split(_newest(sql).read_text(), "newest")[1])
    name = next(
        path.stem
        for path in sorted((sql / "functions").glob("*.sql"))
        if path.stem not in unchanged and path.stem in _released_functions(sql)
    )
    function = sql / "functions" / f"{name}.sql"
    function.write_text(function.read_text() + "\n-- changed\n")
    assert any("run `python scripts/new_migration.py`" in p for p in nm.check(sql))
    nm.write(sql)
    assert nm.check(sql) == []
    _, functions, _ = nm.split(_newest(sql).read_text(), "newest")
    assert name in functions
    assert functions[name].endswith("-- changed")
    # Reverting the change takes it out of the migration again.
    function.write_text(function.read_text().replace("\n-- changed\n", ""))
    nm.write(sql)
    assert name not in nm.split(_newest(sql).read_text(), "newest")[1]
    assert nm.check(sql) == []


def _released_functions(sql: Path) -> set[str]:
    return set(nm.split(nm.migration_paths(sql)[0].read_text(), "first")[1])


def test_a_change_after_a_release_needs_a_new_migration(sql: Path) -> None:
    _release_newest(sql)
    function = sql / "functions" / "cancel.sql"
    function.write_text(function.read_text() + "\n-- changed\n")
    problems = nm.check(sql)
    assert any("new_migration.py new SLUG" in p and "cancel" in p for p in problems), problems
    with pytest.raises(nm.MigrationFilesError, match="new SLUG"):
        nm.write(sql)
    nm.new("next_step", sql)
    newest = _newest(sql)
    assert newest.name.endswith("_next_step.sql")
    assert list(nm.split(newest.read_text(), newest.name)[1]) == ["cancel"]
    assert nm.check(sql) == []
    with pytest.raises(nm.MigrationFilesError, match="not released yet"):
        nm.new("another", sql)


def test_a_deleted_function_file_must_be_dropped_by_hand(sql: Path) -> None:
    # A released function the unreleased migration does not re-create.
    candidates = {
        "history_summary": "text[], bigint",
        "_check_name": "text, text, text",
        "_jobs_after_delete": "",
    }
    changed = set(nm.split(_newest(sql).read_text(), "newest")[1])
    name = next(n for n in candidates if n not in changed)
    (sql / "functions" / f"{name}.sql").unlink()
    assert any(name in p and "DROP FUNCTION" in p for p in nm.check(sql))
    newest = _newest(sql)
    head, functions, tail = nm.split(newest.read_text(), newest.name)
    head += f"DROP FUNCTION pgq.{name}({candidates[name]});\n"
    newest.write_text(nm.render(head, functions, tail))
    assert nm.check(sql) == []
