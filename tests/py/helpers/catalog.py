"""A normalized, OID-free snapshot of everything in schema pgq, for comparing installs.

Two databases with equal snapshots have the same functions (full definition, body, settings,
owner, privileges, comment), types, tables, columns, defaults, constraints, indexes,
triggers, views, sequences, policies, default privileges, the pgq roles, and the same number
of rows in each table.
"""

from __future__ import annotations

import difflib
from typing import Any

import psycopg

QUERIES: dict[str, str] = {
    "schema": """
        SELECT n.nspname, pg_get_userbyid(n.nspowner), n.nspacl::text,
               obj_description(n.oid, 'pg_namespace')
          FROM pg_namespace n WHERE n.nspname = 'pgq'""",
    "functions": """
        SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
               p.prokind, pg_get_userbyid(p.proowner), p.proacl::text,
               obj_description(p.oid, 'pg_proc'), p.proconfig::text, p.prosecdef,
               p.provolatile, p.proparallel, p.proisstrict, p.proleakproof, p.procost,
               p.prorows, pg_get_function_result(p.oid), p.prosrc,
               CASE WHEN p.prokind <> 'a' THEN pg_get_functiondef(p.oid) END
          FROM pg_proc p WHERE p.pronamespace = 'pgq'::regnamespace""",
    "types": """
        SELECT t.typname, t.typtype, pg_get_userbyid(t.typowner), t.typacl::text,
               obj_description(t.oid, 'pg_type'), format_type(t.typbasetype, t.typtypmod),
               t.typnotnull, t.typdefault,
               (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
                  FROM pg_enum e WHERE e.enumtypid = t.oid)
          FROM pg_type t WHERE t.typnamespace = 'pgq'::regnamespace""",
    "relations": """
        SELECT c.relname, c.relkind, c.relpersistence, pg_get_userbyid(c.relowner),
               c.relacl::text, c.reloptions::text, obj_description(c.oid, 'pg_class'),
               c.relrowsecurity, c.relforcerowsecurity, c.relreplident,
               CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END
          FROM pg_class c WHERE c.relnamespace = 'pgq'::regnamespace""",
    "columns": """
        SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),
               a.attnotnull, pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated,
               co.collname, col_description(c.oid, a.attnum), a.attacl::text, a.attstorage
          FROM pg_attribute a
          JOIN pg_class c ON c.oid = a.attrelid
          LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
          LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 0
         WHERE c.relnamespace = 'pgq'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped""",
    "constraints": """
        SELECT coalesce(c.conrelid::regclass::text, c.contypid::regtype::text), c.conname,
               c.contype, pg_get_constraintdef(c.oid), obj_description(c.oid, 'pg_constraint')
          FROM pg_constraint c WHERE c.connamespace = 'pgq'::regnamespace""",
    "indexes": """
        SELECT i.tablename, i.indexname, i.indexdef FROM pg_indexes i
         WHERE i.schemaname = 'pgq'""",
    "triggers": """
        SELECT t.tgrelid::regclass::text, t.tgname, pg_get_triggerdef(t.oid), t.tgenabled,
               obj_description(t.oid, 'pg_trigger')
          FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE c.relnamespace = 'pgq'::regnamespace AND NOT t.tgisinternal""",
    "sequences": """
        SELECT s.seqrelid::regclass::text, format_type(s.seqtypid, NULL), s.seqstart,
               s.seqincrement, s.seqmax, s.seqmin, s.seqcache, s.seqcycle,
               (SELECT d.refobjid::regclass::text || '.' || d.refobjsubid FROM pg_depend d
                 WHERE d.classid = 'pg_class'::regclass AND d.objid = s.seqrelid
                   AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i'))
          FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
         WHERE c.relnamespace = 'pgq'::regnamespace""",
    "policies": """
        SELECT p.schemaname, p.tablename, p.policyname, p.permissive, p.roles::text, p.cmd,
               p.qual, p.with_check
          FROM pg_policies p WHERE p.schemaname = 'pgq'""",
    "rules": """
        SELECT r.tablename, r.rulename, r.definition FROM pg_rules r
         WHERE r.schemaname = 'pgq'""",
    "default_privileges": """
        SELECT pg_get_userbyid(d.defaclrole), d.defaclobjtype, d.defaclacl::text
          FROM pg_default_acl d WHERE d.defaclnamespace = 'pgq'::regnamespace""",
    "event_triggers": """
        SELECT e.evtname, e.evtevent, e.evtfoid::regproc::text, e.evtenabled, e.evttags::text
          FROM pg_event_trigger e""",
    "roles": """
        SELECT r.rolname, r.rolsuper, r.rolinherit, r.rolcreaterole, r.rolcreatedb,
               r.rolcanlogin, r.rolreplication, r.rolbypassrls, r.rolconnlimit
          FROM pg_roles r WHERE r.rolname IN ('pgq_producer', 'pgq_worker')""",
    "role_memberships": """
        SELECT m.roleid::regrole::text, m.member::regrole::text, m.admin_option
          FROM pg_auth_members m
         WHERE m.roleid::regrole::text LIKE 'pgq\\_%' AND m.member::regrole::text LIKE 'pgq\\_%'""",
}

ROW_COUNTS = """
    SELECT c.oid::regclass::text FROM pg_class c
     WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind IN ('r', 'p')"""


def snapshot(conn: psycopg.Connection[Any]) -> dict[str, list[str]]:
    """The snapshot of schema pgq as sorted text lines per catalog section."""
    result: dict[str, list[str]] = {}
    for name, query in QUERIES.items():
        rows = conn.execute(query).fetchall()
        result[name] = sorted(" | ".join("∅" if v is None else str(v) for v in row) for row in rows)
    tables = [row[0] for row in conn.execute(ROW_COUNTS).fetchall()]
    counts = []
    for table in sorted(tables):
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        counts.append(f"{table} | {row[0] if row else '?'}")
    result["row_counts"] = counts
    return result


def snapshot_of(dsn: str) -> dict[str, list[str]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return snapshot(conn)


def diff(left: dict[str, list[str]], right: dict[str, list[str]], names: tuple[str, str]) -> str:
    """A readable unified diff of two snapshots ('' when equal)."""
    out: list[str] = []
    for section in sorted(set(left) | set(right)):
        a, b = left.get(section, []), right.get(section, [])
        if a != b:
            out += difflib.unified_diff(
                a, b, f"{names[0]}:{section}", f"{names[1]}:{section}", lineterm="", n=1
            )
    return "\n".join(out)
