"""The mutants of scripts/mutate.py stay current: each original text is found exactly once in its
function file, so a change of the SQL that moves a mutant's text fails here (update the mutant)
instead of making the mutation run report an error many minutes in."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import mutate


def test_every_mutant_matches_its_function_file_exactly_once() -> None:
    assert mutate.check() == []


def test_the_mutants_cover_the_ring_and_the_lifecycle() -> None:
    files = {m.file for m in mutate.MUTANTS}
    assert len(mutate.MUTANTS) >= 30
    assert {"enqueue.sql", "claim.sql", "complete.sql", "maintain.sql", "_promote.sql"} <= files


def test_applying_a_mutant_changes_only_its_file(tmp_path: Path) -> None:
    functions = tmp_path / "functions"
    mutant = mutate.MUTANTS[0]
    functions.mkdir()
    original = (mutate.FUNCTIONS / mutant.file).read_text()
    (functions / mutant.file).write_text(original)
    mutate.apply(mutant, functions)
    changed = (functions / mutant.file).read_text()
    assert changed != original
    for _before, after in mutant.edits:
        assert after in changed
    with pytest.raises(mutate.MutantError, match="update the mutant"):
        mutate.apply(mutant, functions)  # its text is gone now
