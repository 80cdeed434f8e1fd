"""The migration files against the function files and the released list (sql/migrations/README.md).

The repository's own files must pass ``scripts/new_migration.py --check``; the generator's rules
are exercised on a copy of ``sql/`` in a temporary folder."""

from __future__ import annotations

import re
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
        "unschedule": "text",
    }
    changed = set(nm.split(_newest(sql).read_text(), "newest")[1])
    name = next(n for n in candidates if n not in changed)
    (sql / "functions" / f"{name}.sql").unlink()
    assert any(name in p and "DROP FUNCTION" in p for p in nm.check(sql))
    newest = _newest(sql)
    parts = nm.parse(newest.read_text(), newest.name)
    parts[0] = f"{parts[0]}DROP FUNCTION pgq.{name}({candidates[name]});\n"
    newest.write_text(nm.render(parts))
    nm.write(sql)
    assert nm.check(sql) == []


def test_the_unreleased_migration_reads_top_down() -> None:
    """The DDL that needs new functions follows a section that names them; the long main section
    comes after all DDL, followed only by triggers, the copy into the ring and grants."""
    newest = nm.migration_paths()[-1]
    parts = nm.parse(newest.read_text(), newest.name)
    sections = [i for i, p in enumerate(parts) if isinstance(p, nm.Section)]
    main = next(i for i in sections if not parts[i].names)  # type: ignore[union-attr]
    after = "".join(p for p in parts[main + 1 :] if isinstance(p, str))
    statements = re.findall(r"^(?:CREATE|ALTER) (?:TABLE|TYPE|INDEX|SEQUENCE|VIEW)\b", after, re.M)
    assert statements == [], "tables, types, indexes, sequences and views come before the functions"
    assert nm.CONTENTS in parts[0], "a long migration opens with its table of contents"


def test_a_listed_section_holds_exactly_its_functions(sql: Path) -> None:
    newest = _newest(sql)
    text = newest.read_text()
    listed = next(p for p in nm.parse(text, newest.name) if isinstance(p, nm.Section) and p.names)
    assert set(listed.functions) == set(listed.names)
    # Listing a function the migration does not re-create is refused.
    unchanged = next(n for n in _released_functions(sql) if n not in nm.split(text, "x")[1])
    begin = f"{nm.BEGIN} {' '.join(listed.names)} "
    newest.write_text(text.replace(begin, f"{nm.BEGIN} {' '.join(listed.names)} {unchanged} "))
    assert any(unchanged in p and "take it out" in p for p in nm.check(sql))
    # Two sections without a list are refused.
    newest.write_text(text.replace(begin, f"{nm.BEGIN} "))
    assert any("exactly one" in p for p in nm.check(sql))


def test_contents_lists_the_headings_with_their_line_numbers() -> None:
    newest = nm.migration_paths()[-1]
    lines = newest.read_text().splitlines()
    entries = [
        re.match(r"^--\s+(\d+)  (.*)$", line)
        for line in lines[
            lines.index(next(x for x in lines if x.startswith(nm.CONTENTS))) + 1 : lines.index(
                nm.END_CONTENTS
            )
        ]
    ]
    assert entries and all(entries)
    headings = [i + 1 for i, line in enumerate(lines) if line.startswith(nm.HEADING)]
    generated = [i + 1 for i, line in enumerate(lines) if line.startswith(nm.BEGIN)]
    assert [int(e[1]) for e in entries if e] == sorted(headings + generated)
