"""The documentation cannot drift silently from the installed schema and from itself.

- Every signature block in docs/sql-api.md (a fenced ``sql`` block ``pgq.name(...) RETURNS ...``)
  equals the installed function: PostgreSQL itself normalizes the documented text (a scratch
  function with that signature, rolled back) and the result is compared with
  ``pg_get_function_arguments`` / ``pg_get_function_result`` of the real one.
- Every public function (name not starting with ``_``) has such a block and a row in the
  privileges table, and no function name in schema pgq is overloaded.
- The columns documented for the type ``pgq.claimed_job`` are the type's columns.
- Links between the Markdown pages point at files and headings that exist, and no page names a
  migration file that does not exist.

The psql example ``docs/examples/lifecycle.sql`` is run against its committed output in
``test_golden.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers.server import REPO

SQL_API = REPO / "docs" / "sql-api.md"
FENCED_SQL = re.compile(r"^```sql\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Signature:
    name: str
    arguments: str
    result: str
    line: int

    @property
    def where(self) -> str:
        return f"docs/sql-api.md:{self.line}"


def documented_signatures(text: str) -> list[Signature]:
    """Every fenced sql block of the form ``pgq.name(arguments) RETURNS result``."""
    found = []
    for block in FENCED_SQL.finditer(text):
        body = block[1].strip()
        head = re.match(r"pgq\.(\w+)\s*\(", body)
        if head is None:
            continue
        depth, end = 1, head.end()
        while depth and end < len(body):
            depth += {"(": 1, ")": -1}.get(body[end], 0)
            end += 1
        rest = re.match(r"\s*RETURNS\s+(.*)$", body[end:], re.DOTALL | re.IGNORECASE)
        assert rest is not None, f"docs/sql-api.md: signature of pgq.{head[1]} has no RETURNS"
        line = text.count("\n", 0, block.start()) + 2
        found.append(Signature(head[1], body[head.end() : end - 1], rest[1].strip(), line))
    return found


def test_signature_parser_reads_nested_parentheses() -> None:
    text = (
        "x\n```sql\npgq.f(\n    a int DEFAULT (1 + 2),  -- note\n    b text\n) RETURNS "
        "TABLE (x int)\n```\n"
    )
    assert documented_signatures(text) == [
        Signature("f", "\n    a int DEFAULT (1 + 2),  -- note\n    b text\n", "TABLE (x int)", 3)
    ]


def _normalized(conn: psycopg.Connection[Any], sig: Signature) -> tuple[str, str]:
    """(arguments, result) of the documented signature as PostgreSQL prints them."""
    with conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL check_function_bodies = off")
        try:
            conn.execute(
                f"CREATE FUNCTION pg_temp.{sig.name}({sig.arguments}) RETURNS {sig.result} "
                "LANGUAGE sql AS 'SELECT 1'"
            )
        except psycopg.Error as err:
            pytest.fail(f"{sig.where}: pgq.{sig.name} is not a valid signature: {err}")
        row = conn.execute(
            "SELECT pg_get_function_arguments(p.oid), pg_get_function_result(p.oid)"
            "  FROM pg_proc p WHERE p.pronamespace = pg_my_temp_schema() AND p.proname = %s",
            (sig.name,),
        ).fetchone()
    assert row is not None
    return str(row[0]), str(row[1])


def _installed(conn: psycopg.Connection[Any]) -> dict[str, tuple[str, str]]:
    rows = conn.execute(
        "SELECT p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid)"
        "  FROM pg_proc p WHERE p.pronamespace = 'pgq'::regnamespace"
        "   AND p.proname NOT LIKE '\\_%'"
    ).fetchall()
    return {str(name): (str(args), str(result)) for name, args, result in rows}


def test_no_function_name_is_overloaded(pgq_conn: psycopg.Connection[Any]) -> None:
    rows = pgq_conn.execute(
        "SELECT p.proname, string_agg(pg_get_function_identity_arguments(p.oid), ' | ')"
        "  FROM pg_proc p WHERE p.pronamespace = 'pgq'::regnamespace"
        " GROUP BY p.proname HAVING count(*) > 1"
    ).fetchall()
    assert rows == [], (
        "overloaded functions in schema pgq (one name, one signature: drop the old one in the "
        f"migration, DROP FUNCTION pgq.name(old argument types)): {rows}"
    )


def test_every_documented_signature_matches_the_catalog(
    pgq_conn: psycopg.Connection[Any],
) -> None:
    installed = _installed(pgq_conn)
    problems = []
    for sig in documented_signatures(SQL_API.read_text()):
        if sig.name not in installed:
            problems.append(f"{sig.where}: pgq.{sig.name} is documented but not installed")
            continue
        doc_args, doc_result = _normalized(pgq_conn, sig)
        real_args, real_result = installed[sig.name]
        if doc_args != real_args:
            problems.append(
                f"{sig.where}: pgq.{sig.name} arguments\n    documented: {doc_args}\n"
                f"    installed:  {real_args}"
            )
        if doc_result != real_result:
            problems.append(
                f"{sig.where}: pgq.{sig.name} RETURNS\n    documented: {doc_result}\n"
                f"    installed:  {real_result}"
            )
    assert not problems, (
        "docs/sql-api.md disagrees with the installed functions (fix the signature block):\n"
        + "\n".join(problems)
    )


def test_every_public_function_has_one_signature_block(pgq_conn: psycopg.Connection[Any]) -> None:
    documented = [sig.name for sig in documented_signatures(SQL_API.read_text())]
    repeated = sorted({name for name in documented if documented.count(name) > 1})
    missing = sorted(set(_installed(pgq_conn)) - set(documented))
    assert not missing, (
        f"public functions without a signature block in docs/sql-api.md: {missing} (add a "
        "fenced sql block `pgq.name(arguments) RETURNS result` and describe it)"
    )
    assert not repeated, f"functions with more than one signature block: {repeated}"


def _privileges_table(text: str) -> str:
    section = text.split("## Privileges at a glance", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


def test_privileges_table_names_exactly_the_public_functions(
    pgq_conn: psycopg.Connection[Any],
) -> None:
    named = set(re.findall(r"`pgq\.(\w+)`", _privileges_table(SQL_API.read_text())))
    functions = set(_installed(pgq_conn))
    relations = {
        str(r[0])
        for r in pgq_conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'pgq'::regnamespace"
            " UNION SELECT typname FROM pg_type WHERE typnamespace = 'pgq'::regnamespace"
        ).fetchall()
    }
    assert not functions - named, (
        "public functions missing from the privileges table of docs/sql-api.md: "
        f"{sorted(functions - named)}"
    )
    assert not named - functions - relations, (
        "the privileges table of docs/sql-api.md names objects that do not exist: "
        f"{sorted(named - functions - relations)}"
    )


def _claimed_job_columns(text: str) -> list[tuple[str, str]]:
    section = text.split("### The type `pgq.claimed_job`", 1)[1].split("\n#", 1)[0]
    return re.findall(r"^\| `(\w+)` \| ([\w ]+?) \|", section, re.MULTILINE)


def test_claimed_job_columns_are_documented(pgq_conn: psycopg.Connection[Any]) -> None:
    documented = []
    for name, type_name in _claimed_job_columns(SQL_API.read_text()):
        row = pgq_conn.execute("SELECT %s::regtype::text", (type_name,)).fetchone()
        documented.append((name, str(row[0]) if row else type_name))
    installed = pgq_conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
        " WHERE a.attrelid = 'pgq.claimed_job'::regclass AND a.attnum > 0"
        "   AND NOT a.attisdropped ORDER BY a.attnum"
    ).fetchall()
    assert documented == [(str(n), str(t)) for n, t in installed], (
        "the table of pgq.claimed_job columns in docs/sql-api.md is not the type's columns "
        "(name and type, in order)"
    )


# --- links and file names -------------------------------------------------------------------

MARKDOWN = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    return {_slug(h) for h in re.findall(r"^#+ (.*)$", text, re.MULTILINE)}


def test_slugs_follow_github() -> None:
    assert _slug("Roles and login roles") == "roles-and-login-roles"
    assert _slug("The type `pgq.claimed_job`") == "the-type-pgqclaimed_job"
    assert _slug("Fail into retry: run_at moves") == "fail-into-retry-run_at-moves"


def test_links_between_pages_resolve() -> None:
    problems = []
    for page in MARKDOWN:
        text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL)
        for target in _LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # http:, mailto:
            file_part, _, anchor = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            where = page.relative_to(REPO)
            if not linked.exists():
                problems.append(f"{where}: link to {target}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                problems.append(f"{where}: link to {target}: no such heading")
    assert not problems, "broken links in the docs:\n" + "\n".join(problems)


def test_no_page_names_a_migration_that_does_not_exist() -> None:
    migrations = {p.name for p in (REPO / "sql" / "migrations").glob("*.sql")}
    stems = {name.removesuffix(".sql") for name in migrations}
    problems = []
    for page in [*MARKDOWN, REPO / "sql" / "migrations" / "README.md"]:
        for name in set(re.findall(r"\b\d{4}_[a-z][a-z0-9_]*\b", page.read_text())):
            if name not in stems:
                problems.append(f"{page.relative_to(REPO)}: {name}")
    assert not problems, (
        "pages naming migration files that do not exist (say 'the newest migration' or name "
        f"a real one): {problems}"
    )


# --- Lists in docs/architecture.md that mirror code -------------------------------------------

ARCHITECTURE = REPO / "docs" / "architecture.md"
SNAPSHOT = REPO / "sql" / "schema.snapshot"


def _code_block_after(text: str, marker: str) -> str:
    start = text.index(marker)
    return text[start : text.index("```", start + len(marker))]


def test_worker_module_map_lists_every_module() -> None:
    """The module map of ``pgq_thin/worker/`` names exactly the package's files."""
    block = _code_block_after(ARCHITECTURE.read_text(), "```\npgq_thin/worker/\n")
    listed = set(re.findall(r"^  (\w+\.py) ", block, re.MULTILINE))
    modules = {p.name for p in (REPO / "pgq_thin" / "worker").glob("*.py")}
    assert listed == modules, (
        f"docs/architecture.md worker map: missing {sorted(modules - listed)}, "
        f"not in the package {sorted(listed - modules)}"
    )


def _snapshot_indexes(table: str) -> set[str]:
    """The index names of ``table`` in sql/schema.snapshot (the fresh install's catalog)."""
    text = SNAPSHOT.read_text()
    section = re.search(
        rf"^(?:partitioned )?table pgq\.{table}\n(.*?)(?=^\S|\Z)", text, re.MULTILINE | re.DOTALL
    )
    assert section is not None, table
    return set(re.findall(r"CREATE (?:UNIQUE )?INDEX (\w+) ON", section[1]))


def test_storage_index_list_matches_the_schema() -> None:
    """The index block of "Storage" lists every index of the hot tables and the history."""
    block = _code_block_after(ARCHITECTURE.read_text(), "```\npgq.jobs  PARTITION BY LIST")
    listed = set(re.findall(r"^  (\w+_(?:idx|pkey))\b", block, re.MULTILINE))
    installed = set().union(
        *(_snapshot_indexes(t) for t in ("jobs", "lanes", "live_keys", "job_history"))
    )
    assert listed == installed


def test_force_generic_plan_list_names_every_such_function() -> None:
    text = ARCHITECTURE.read_text()
    section = text[text.index("## Execution settings of the hot functions") :]
    paragraph = section[: section.index("plan_cache_mode = force_generic_plan")]
    listed = set(re.findall(r"`(\w+)`", paragraph))
    generic = {
        p.stem
        for p in (REPO / "sql" / "functions").glob("*.sql")
        if re.search(r"^SET plan_cache_mode = force_generic_plan", p.read_text(), re.MULTILINE)
    }
    assert listed == generic


def test_every_function_file_opens_with_its_contract() -> None:
    """Each ``sql/functions/<name>.sql`` opens with ``-- pgq.<name>(`` and has Contract:,
    Locking: and Errors: blocks in its header comment."""
    problems = []
    for path in sorted((REPO / "sql" / "functions").glob("*.sql")):
        lines = path.read_text().splitlines()
        if not lines or not lines[0].startswith(f"-- pgq.{path.stem}("):
            problems.append(f"{path.name}: does not open with '-- pgq.{path.stem}('")
        header = []
        for line in lines:
            if not line.startswith("--"):
                break
            header.append(line)
        for block in ("Contract:", "Locking:", "Errors:"):
            if not any(line.startswith(f"-- {block}") for line in header):
                problems.append(f"{path.name}: no '-- {block}' block in its header")
    assert problems == []
