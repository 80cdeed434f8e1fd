"""Write migrations from the function files: the one way SQL changes reach an install.

Functions are edited only in ``sql/functions/<name>.sql``. A migration is
``sql/migrations/NNNN_slug.sql``: hand-written parts (tables, types, indexes, drops, triggers,
data moves, grants) around generated sections that re-create every function whose file changed
since the migrations before it. ``sql/migrations/RELEASED`` lists the released migrations with
their SHA-256: a released file never changes again.

Usage (from the repository root):

    python scripts/new_migration.py                # regenerate the functions sections and the
                                                   # contents of the newest migration (it must
                                                   # be unreleased)
    python scripts/new_migration.py new SLUG       # start migration NNNN_SLUG.sql (the newest
                                                   # one must be released)
    python scripts/new_migration.py --check        # exit 1 if anything above would change a
                                                   # file, or a released file was edited
    python scripts/new_migration.py release VER    # record the newest migration as released in
                                                   # package version VER

A generated section lies between a line ``-- BEGIN FUNCTIONS`` and a line ``-- END FUNCTIONS``.
One section has no list: it holds every changed function not named elsewhere. A section whose
BEGIN line names functions (``-- BEGIN FUNCTIONS _slot _valid_name (...)``) holds exactly those:
put it before hand-written DDL that needs them (a column default, a CHECK constraint), so that
the DDL can read top-down before the long main section. Each name must be a function this
migration re-creates.

A migration may open with a table of contents between ``-- CONTENTS`` and ``-- END CONTENTS``:
the generator writes it from the hand-written headings (lines ``-- ## Title``) and the generated
sections, with their line numbers.

A function file deleted since an earlier migration must be dropped by a hand-written part of
the newest migration (``DROP FUNCTION pgq.name(...)``); a changed signature needs the old one
dropped there too (the suite fails on overloaded names).
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SQL = ROOT / "sql"
BEGIN = "-- BEGIN FUNCTIONS"
END = "-- END FUNCTIONS"
NOTE = "(written by scripts/new_migration.py from sql/functions/; do not edit here)"
BEGIN_LINE = f"{BEGIN} {NOTE}"
CONTENTS = "-- CONTENTS"
END_CONTENTS = "-- END CONTENTS"
HEADING = "-- ## "
_BEGIN = re.compile(r"^-- BEGIN FUNCTIONS(?P<names>(?: [a-z_][a-z0-9_]*)*)(?: \(.*\))?$", re.M)
_END = re.compile(r"^-- END FUNCTIONS$", re.M)
_CONTENTS = re.compile(r"^-- CONTENTS\b.*\n(?:.*\n)*?-- END CONTENTS$", re.M)
_FILE_MARK = re.compile(r"^-- sql/functions/(\S+)\.sql$", re.MULTILINE)
_MIGRATION = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class MigrationFilesError(Exception):
    """The migration files are not what the function files and RELEASED say they must be."""


@dataclass(frozen=True)
class Released:
    revision: str
    sha256: str
    version: str


@dataclass
class Section:
    """One generated section: ``names`` lists what it holds (empty: every changed function not
    listed by another section of the migration)."""

    names: tuple[str, ...] = ()
    functions: dict[str, str] = field(default_factory=dict)


Part = str | Section


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


def parse(text: str, name: str) -> list[Part]:
    """The migration as hand-written text and generated sections, alternating (text first and
    last)."""
    parts: list[Part] = []
    rest = text
    while True:
        begin = _BEGIN.search(rest)
        if begin is None:
            break
        end = _END.search(rest, begin.end())
        if end is None or (_BEGIN.search(rest, begin.end()) or end).start() < end.start():
            raise MigrationFilesError(f"{name}: '{BEGIN}' without its '{END}'")
        body = rest[begin.end() : end.start()]
        body = body.replace("SET check_function_bodies = false;", "")
        body = body.replace("RESET check_function_bodies;", "")
        functions: dict[str, str] = {}
        marks = list(_FILE_MARK.finditer(body))
        for i, mark in enumerate(marks):
            stop = marks[i + 1].start() if i + 1 < len(marks) else len(body)
            functions[mark[1]] = body[mark.end() : stop].strip()
        parts += [rest[: begin.start()], Section(tuple(begin["names"].split()), functions)]
        rest = rest[end.end() :]
    parts.append(rest)
    sections = [p for p in parts if isinstance(p, Section)]
    if not sections:
        raise MigrationFilesError(f"{name}: no '{BEGIN}' ... '{END}' section")
    if sum(1 for s in sections if not s.names) != 1:
        raise MigrationFilesError(
            f"{name}: exactly one '{BEGIN}' section must name no functions (it holds the rest)"
        )
    listed = [n for s in sections for n in s.names]
    twice = sorted({n for n in listed if listed.count(n) > 1})
    if twice:
        raise MigrationFilesError(f"{name}: functions {', '.join(twice)} listed by two sections")
    return parts


def functions_of(parts: list[Part]) -> dict[str, str]:
    """Every function the generated sections define."""
    return {k: v for p in parts if isinstance(p, Section) for k, v in p.functions.items()}


def hand_written(parts: list[Part]) -> str:
    return "".join(p for p in parts if isinstance(p, str))


def split(text: str, name: str) -> tuple[str, dict[str, str], str]:
    """(hand-written text before the main section, {function: text} of all sections,
    hand-written text after the main section)."""
    parts = parse(text, name)
    main = next(i for i, p in enumerate(parts) if isinstance(p, Section) and not p.names)
    before = "".join(p if isinstance(p, str) else _section(p) for p in parts[:main])
    after = "".join(p if isinstance(p, str) else _section(p) for p in parts[main + 1 :])
    return before, functions_of(parts), after


def _section(section: Section) -> str:
    body = "".join(
        f"\n-- sql/functions/{name}.sql\n{section.functions[name]}\n"
        for name in sorted(section.functions)
    )
    names = "".join(f" {n}" for n in section.names)
    return (
        f"{BEGIN}{names} {NOTE}\nSET check_function_bodies = false;\n{body}\n"
        f"RESET check_function_bodies;\n{END}"
    )


def _contents(parts: list[Part], text: str) -> str:
    """``text`` (the rendered parts) with its contents block written from the headings."""
    block = _CONTENTS.search(text)
    if block is None:
        return text
    entries: list[tuple[str, str]] = []  # (the line to find, the title)
    for part in parts:
        if isinstance(part, Section):
            what = (
                ", ".join(f"pgq.{n}" for n in part.names) + " (needed by the DDL below)"
                if part.names
                else f"the other {len(part.functions)} functions this migration re-creates"
            )
            entries.append((_section(part).split("\n", 1)[0], f"Functions: {what} (generated)"))
        else:
            for line in part.splitlines():
                if line.startswith(HEADING):
                    entries.append((line, line[len(HEADING) :].strip()))

    def block_text(numbers: list[int]) -> str:
        lines = [
            f"{CONTENTS} (line numbers; written by scripts/new_migration.py from the "
            f"'{HEADING.strip()}' headings)"
        ]
        lines += [f"--   {n:>5}  {title}" for n, (_, title) in zip(numbers, entries, strict=True)]
        return "\n".join([*lines, END_CONTENTS])

    draft = text[: block.start()] + block_text([0] * len(entries)) + text[block.end() :]
    numbers, lines, start = [], draft.split("\n"), 0
    for line, _ in entries:
        start = lines.index(line, start)
        numbers.append(start + 1)
    return text[: block.start()] + block_text(numbers) + text[block.end() :]


def render(parts: list[Part]) -> str:
    text = "".join(p if isinstance(p, str) else _section(p) for p in parts)
    return _contents(parts, text)


def function_files(sql: Path = SQL) -> dict[str, str]:
    return {p.stem: p.read_text().strip() for p in sorted((sql / "functions").glob("*.sql"))}


def defined_before(paths: list[Path]) -> dict[str, str]:
    """Each function's text as the given migrations leave it (the last definition wins)."""
    state: dict[str, str] = {}
    for path in paths:
        state.update(functions_of(parse(path.read_text(), path.name)))
    return state


def changed_functions(paths: list[Path], files: dict[str, str]) -> dict[str, str]:
    """The function files whose text differs from their definition in ``paths`` (or is new)."""
    before = defined_before(paths)
    return {name: text for name, text in files.items() if before.get(name) != text}


def fill(parts: list[Part], changed: dict[str, str], name: str) -> list[Part]:
    """The parts with their sections holding ``changed``: each listed function in its section,
    the rest in the section without a list."""
    listed = {n for p in parts if isinstance(p, Section) for n in p.names}
    unknown = sorted(listed - set(changed))
    if unknown:
        raise MigrationFilesError(
            f"{name}: a section lists {', '.join(unknown)}, which this migration does not "
            "re-create (no such file, or unchanged since the migrations before): take it out "
            "of the list"
        )
    return [
        Section(
            p.names,
            {n: t for n, t in changed.items() if (n in p.names if p.names else n not in listed)},
        )
        if isinstance(p, Section)
        else p
        for p in parts
    ]


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
    parts = parse(newest.read_text(), newest.name)
    changed = changed_functions(paths[:-1], files)
    dropped = sorted(set(defined_before(paths[:-1])) - set(files))
    text = hand_written(parts)
    missing = [
        name
        for name in dropped
        if not re.search(rf"DROP FUNCTION (IF EXISTS )?pgq\.{re.escape(name)}\(", text)
    ]
    if missing:
        raise MigrationFilesError(
            f"{newest.name}: functions {', '.join(missing)} have no file any more; drop them in "
            "a hand-written part (DROP FUNCTION pgq.name(argument types))"
        )
    return newest, render(fill(parts, changed, newest.name))


def check(sql: Path = SQL) -> list[str]:
    """Every way the migration files disagree with the function files and RELEASED."""
    problems = check_released(sql)
    try:
        expected = expected_newest(sql)
    except MigrationFilesError as err:
        return [*problems, str(err)]
    if expected is not None and expected[0].read_text() != expected[1]:
        problems.append(
            f"{expected[0].name}: its functions sections or contents are not what the function "
            "files and headings say; run `python scripts/new_migration.py`"
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
        f"-- pgq-thin migration {number}: (say what it changes and why). Not released yet: see\n"
        "-- RELEASED. Reads top-down: hand-written DDL (tables, types, indexes, dropped or\n"
        "-- re-signed functions), then the generated functions, then triggers, data moves that\n"
        "-- need the new functions, and grants. DDL that needs a new function (a column default,\n"
        "-- a CHECK) goes after an earlier section that names it: `-- BEGIN FUNCTIONS name ...`\n"
        "-- (sql/migrations/README.md).\n\n"
        f"{CONTENTS}\n{END_CONTENTS}\n\n{HEADING}Schema\n\n"
    )
    tail = f"\n\n{HEADING}Grants\n\nREVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgq FROM PUBLIC;\n"
    parts: list[Part] = [head, Section(), tail]
    path.write_text(render(fill(parts, changed_functions(paths, function_files(sql)), path.name)))
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
