"""The privileges table of docs/sql-api.md ("Privileges at a glance") is the catalog, both ways.

Each row names objects of schema pgq and, per role, the one privilege it holds on every object
of the row (EXECUTE for functions, SELECT for views and tables, USAGE for types) or nothing. The
test reads the granted privileges from the catalog for each role and compares: a grant that the
table does not show, or a documented grant that is missing, fails. Every public function, view,
table and composite type of schema pgq must be in the table, and nothing may be granted to
PUBLIC.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from helpers.server import REPO

SQL_API = REPO / "docs" / "sql-api.md"
ROLES = ("pgq_producer", "pgq_worker", "pgq_reader", "pgq_admin")
# Every privilege a role could hold on each kind of object.
ALL_PRIVILEGES = {
    "function": ("EXECUTE",),
    "relation": ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"),
    "type": ("USAGE",),
}
CHECK = {
    "function": "has_function_privilege(%s, %s::oid, %s)",
    "relation": "has_table_privilege(%s, %s::oid, %s)",
    "type": "has_type_privilege(%s, %s::oid, %s)",
}
OBJECTS = """
SELECT 'function', p.proname, p.oid FROM pg_proc p
 WHERE p.pronamespace = 'pgq'::regnamespace AND p.proname NOT LIKE '\\_%' AND p.prokind = 'f'
UNION ALL
SELECT 'relation', c.relname, c.oid FROM pg_class c
 WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p')
UNION ALL
SELECT 'type', t.typname, t.oid FROM pg_type t JOIN pg_class c ON c.oid = t.typrelid
 WHERE t.typnamespace = 'pgq'::regnamespace AND c.relkind = 'c'
"""


def documented_rows() -> list[tuple[list[str], dict[str, str]]]:
    section = SQL_API.read_text().split("## Privileges at a glance", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip().strip("`") for cell in rows[0].strip("|").split("|")]
    assert header[1:] == list(ROLES), header
    result = []
    for line in rows[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        names = re.findall(r"`pgq\.(\w+)`", cells[0])
        assert names, f"a row of the privileges table names no object: {line}"
        result.append((names, dict(zip(ROLES, cells[1:], strict=True))))
    return result


def test_privileges_table_is_the_catalog(pgq_conn: psycopg.Connection[Any]) -> None:
    objects = {name: (kind, oid) for kind, name, oid in pgq_conn.execute(OBJECTS).fetchall()}
    rows = documented_rows()
    documented = [name for names, _ in rows for name in names]
    assert sorted(set(objects) - set(documented)) == [], "objects missing from the table"
    assert sorted(set(documented) - set(objects)) == [], "the table names unknown objects"
    assert len(documented) == len(set(documented)), "an object is in two rows"

    wrong = []
    for names, grants in rows:
        for name in names:
            kind, oid = objects[name]
            for role in ROLES:
                want = grants[role]
                assert want in ("", *ALL_PRIVILEGES[kind]), f"{name}: {role} cell {want!r}"
                held = {
                    priv
                    for priv in ALL_PRIVILEGES[kind]
                    if pgq_conn.execute(f"SELECT {CHECK[kind]}", (role, oid, priv)).fetchone()[0]
                }
                if held != ({want} if want else set()):
                    wrong.append(f"{name}: {role} holds {sorted(held)}, the table says {want!r}")
    assert wrong == []


def test_nothing_is_granted_to_public(pgq_conn: psycopg.Connection[Any]) -> None:
    granted = pgq_conn.execute(
        """
        SELECT c.relname FROM pg_class c, aclexplode(c.relacl) a
         WHERE c.relnamespace = 'pgq'::regnamespace AND a.grantee = 0
        UNION ALL
        SELECT p.proname FROM pg_proc p, aclexplode(p.proacl) a
         WHERE p.pronamespace = 'pgq'::regnamespace AND a.grantee = 0
        UNION ALL
        SELECT p.proname FROM pg_proc p
         WHERE p.pronamespace = 'pgq'::regnamespace AND p.proacl IS NULL
        """
    ).fetchall()
    assert granted == []
