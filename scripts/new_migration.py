"""Write migrations from the function files: the one way SQL changes reach an install.

Functions are edited only in ``sql/functions/<name>.sql``. A migration is
``sql/migrations/NNNN_slug.sql``: hand-written DDL (tables, types, indexes, drops, grants) around
one generated section that re-creates every function whose file changed since the migrations
before it. ``sql/migrations/RELEASED`` lists the released migrations with their SHA-256: a
released file never changes again.

Usage (from the repository root):

    python scripts/new_migration.py                # regenerate the functions section of the
                                                   # newest migration (it must be unreleased)
    python scripts/new_migration.py new SLUG       # start migration NNNN_SLUG.sql (the newest
                                                   # one must be released)
    python scripts/new_migration.py --check        # exit 1 if anything above would change a
                                                   # file, or a released file was edited
    python scripts/new_migration.py release VER    # record the newest migration as released in
                                                   # package version VER

The generated section lies between the lines ``-- BEGIN FUNCTIONS`` and ``-- END FUNCTIONS``.
A function file deleted since an earlier migration must be dropped by the hand-written part of
the newest migration (``DROP FUNCTION pgq.name(...)``); a changed signature needs the old one
dropped there too (the suite fails on overloaded names).
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SQL = ROOT / "sql"
BEGIN = "-- BEGIN FUNCTIONS"
END = "-- END FUNCTIONS"
BEGIN_LINE = f"{BEGIN} (written by scripts/new_migration.py from sql/functions/; do not edit here)"
_FILE_MARK = re.compile(r"^-- sql/functions/(\S+)\.sql$", re.MULTILINE)
_MIGRATION = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class MigrationFilesError(Exception):
    """The migration files are not what the function files and RELEASED say they must be."""


@dataclass(frozen=True)
class Released:
    revision: str
    sha256: str
    version: str


def migration_paths(sql: Path = SQL) -> list[Path]:
    paths = sorted(p for p in (sql / "migrations").glob("*.sql") if _MIGRATION.match(p.name))
    return paths


def released(sql: Path = SQL) -> list[Released]:
    """The entries of ``sql/migrations/RELEASED`` (``revision sha256 version`` per line)."""
    path = sql / "migrations" / "RELEASED"
    entries = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            revision, digest, version = line.split()
            entries.append(Released(revision, digest, version))
    return entries


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def split(text: str, name: str) -> tuple[str, dict[str, str], str]:
    """(text before the section, {function: text} of the section, text after it)."""
    head, sep, rest = text.partition(BEGIN)
    if not sep or END not in rest:
        raise MigrationFilesError(f"{name}: no '{BEGIN}' ... '{END}' section")
    _, _, rest = rest.partition("\n")  # the rest of the BEGIN line
    body, _, tail = rest.partition(END)
    body = body.replace("SET check_function_bodies = false;", "")
    body = body.replace("RESET check_function_bodies;", "")
    functions: dict[str, str] = {}
    marks = list(_FILE_MARK.finditer(body))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(body)
        functions[mark[1]] = body[mark.end() : end].strip()
    return head, functions, tail


def render(head: str, functions: dict[str, str], tail: str) -> str:
    body = "".join(
        f"\n-- sql/functions/{name}.sql\n{functions[name]}\n" for name in sorted(functions)
    )
    return (
        f"{head}{BEGIN_LINE}\nSET check_function_bodies = false;\n{body}\n"
        f"RESET check_function_bodies;\n{END}{tail}"
    )


def function_files(sql: Path = SQL) -> dict[str, str]:
    return {p.stem: p.read_text().strip() for p in sorted((sql / "functions").glob("*.sql"))}


def defined_before(paths: list[Path]) -> dict[str, str]:
    """Each function's text as the given migrations leave it (the last definition wins)."""
    state: dict[str, str] = {}
    for path in paths:
        state.update(split(path.read_text(), path.name)[1])
    return state


def changed_functions(paths: list[Path], files: dict[str, str]) -> dict[str, str]:
    """The function files whose text differs from their definition in ``paths`` (or is new)."""
    before = defined_before(paths)
    return {name: text for name, text in files.items() if before.get(name) != text}


def check_released(sql: Path = SQL) -> list[str]:
    problems = []
    paths = {_MIGRATION.match(p.name)[1]: p for p in migration_paths(sql)}  # type: ignore[index]
    for entry in released(sql):
        path = paths.get(entry.revision)
        if path is None:
            problems.append(f"released migration {entry.revision} has no file")
        elif sha256(path) != entry.sha256:
            problems.append(
                f"{path.name} was released in {entry.version} and must never change "
                f"(sha256 {sha256(path)[:12]}..., RELEASED says {entry.sha256[:12]}...): "
                "put the change in a new migration"
            )
    return problems


def expected_newest(sql: Path = SQL) -> tuple[Path, str] | None:
    """The newest migration as the generator would write it; None when it is released and no
    function changed since (nothing to write)."""
    paths = migration_paths(sql)
    newest = paths[-1]
    revisions = {entry.revision for entry in released(sql)}
    files = function_files(sql)
    newest_released = newest.name[:4] in revisions
    if newest_released:
        changed = changed_functions(paths, files)
        if changed:
            raise MigrationFilesError(
                "function files changed since the released migration "
                f"{newest.name}: {', '.join(sorted(changed))}; start a new migration with "
                "`python scripts/new_migration.py new SLUG`"
            )
        return None
    text = newest.read_text()
    head, _, tail = split(text, newest.name)
    changed = changed_functions(paths[:-1], files)
    dropped = sorted(set(defined_before(paths[:-1])) - set(files))
    missing = [
        name
        for name in dropped
        if not re.search(rf"DROP FUNCTION (IF EXISTS )?pgq\.{re.escape(name)}\(", head + tail)
    ]
    if missing:
        raise MigrationFilesError(
            f"{newest.name}: functions {', '.join(missing)} have no file any more; drop them in "
            "the hand-written part (DROP FUNCTION pgq.name(argument types))"
        )
    return newest, render(head, changed, tail)


def check(sql: Path = SQL) -> list[str]:
    """Every way the migration files disagree with the function files and RELEASED."""
    problems = check_released(sql)
    try:
        expected = expected_newest(sql)
    except MigrationFilesError as err:
        return [*problems, str(err)]
    if expected is not None and expected[0].read_text() != expected[1]:
        problems.append(
            f"{expected[0].name}: its functions section is not what the function files say; "
            "run `python scripts/new_migration.py`"
        )
    return problems


def write(sql: Path = SQL) -> str:
    expected = expected_newest(sql)
    if expected is None:
        return "nothing to write: no function changed since the newest (released) migration"
    path, text = expected
    if path.read_text() == text:
        return f"{path.name} is up to date"
    path.write_text(text)
    return f"wrote {path.name}"


def new(slug: str, sql: Path = SQL) -> str:
    if not re.fullmatch(r"[a-z0-9_]+", slug):
        raise MigrationFilesError(f"slug {slug!r}: use lower-case letters, digits and _")
    paths = migration_paths(sql)
    newest = paths[-1]
    if newest.name[:4] not in {entry.revision for entry in released(sql)}:
        raise MigrationFilesError(
            f"{newest.name} is not released yet: put the change there (run "
            "`python scripts/new_migration.py` to regenerate its functions section)"
        )
    number = f"{int(newest.name[:4]) + 1:04d}"
    path = newest.parent / f"{number}_{slug}.sql"
    head = (
        f"-- pgq-thin migration {number}: (say what it changes and why).\n"
        "-- Hand-written DDL before the functions section (tables, types, indexes, dropped or\n"
        "-- re-signed functions), grants and triggers after it. Not released yet: see RELEASED.\n\n"
    )
    tail = "\n\nREVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgq FROM PUBLIC;\n"
    path.write_text(render(head, changed_functions(paths, function_files(sql)), tail))
    return f"wrote {path.name}"


def release(version: str, sql: Path = SQL) -> str:
    problems = check(sql)
    if problems:
        raise MigrationFilesError("; ".join(problems))
    newest = migration_paths(sql)[-1]
    revision = newest.name[:4]
    if revision in {entry.revision for entry in released(sql)}:
        raise MigrationFilesError(f"{newest.name} is released already")
    with (sql / "migrations" / "RELEASED").open("a") as out:
        out.write(f"{revision} {sha256(newest)} {version}\n")
    return f"released {newest.name} in {version}"


def main(argv: list[str]) -> int:
    try:
        if argv == ["--check"]:
            problems = check()
            for problem in problems:
                print(problem, file=sys.stderr)
            return 1 if problems else 0
        if not argv:
            print(write())
        elif argv[0] == "new" and len(argv) == 2:
            print(new(argv[1]))
        elif argv[0] == "release" and len(argv) == 2:
            print(release(argv[1]))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except MigrationFilesError as err:
        print(err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
