"""A normalized, OID-free snapshot of everything in schema pgq, for comparing installs.

Two databases with equal snapshots have the same functions (full definition, body, settings,
owner, privileges, comment), types, tables, columns, defaults, constraints, indexes,
triggers, views, sequences, policies, default privileges, the pgq roles, and the same number
of rows in each table. The lanes' cursor and turn sequences (``pgq.lane_cursor_<n>``,
``pgq.lane_turn_<n>``, one each per lane a queue has used: data, not schema) are left out.

The same queries also render :func:`readable`, the text committed as ``sql/schema.snapshot``:
one block per object, without function bodies (``sql/functions/`` holds them, and the suite
proves the installed bodies equal those files), identical on every supported PostgreSQL
version (see :data:`NORMALIZED`).
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgq_thin.migrate import ROLES


def _grants(acl: str, kind: str, owner: str) -> str:
    """SQL: the privileges ``acl`` (NULL: the default ACL of object ``kind``) gives to roles
    other than the owner, as 'role PRIVILEGE' text sorted; MAINTAIN (PostgreSQL 17+) left out."""
    return f"""(SELECT coalesce(string_agg(
                    CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END
                    || ' ' || a.privilege_type || CASE WHEN a.is_grantable THEN ' WITH GRANT'
                    ELSE '' END, ', '
                    ORDER BY CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                             ELSE pg_get_userbyid(a.grantee) END, a.privilege_type), '')
                  FROM aclexplode(coalesce({acl}, acldefault('{kind}', {owner}))) a
                 WHERE a.grantee <> {owner} AND a.privilege_type <> 'MAINTAIN')"""


# The roles of pgq-thin: those pgq_thin.migrate knows, and any role (but the installer) that is
# granted something in schema pgq.
_PGQ_ROLES = """
    SELECT r.oid FROM pg_roles r WHERE r.rolname = ANY(%(roles)s)
    UNION
    SELECT a.grantee FROM (
        SELECT (aclexplode(n.nspacl)).grantee, n.nspowner AS owner FROM pg_namespace n
         WHERE n.nspname = 'pgq' AND n.nspacl IS NOT NULL
        UNION ALL
        SELECT (aclexplode(p.proacl)).grantee, p.proowner FROM pg_proc p
         WHERE p.pronamespace = 'pgq'::regnamespace AND p.proacl IS NOT NULL
        UNION ALL
        SELECT (aclexplode(c.relacl)).grantee, c.relowner FROM pg_class c
         WHERE c.relnamespace = 'pgq'::regnamespace AND c.relname !~ '^lane_(cursor|turn)_[0-9]+$'
           AND c.relacl IS NOT NULL
        UNION ALL
        SELECT (aclexplode(t.typacl)).grantee, t.typowner FROM pg_type t
         WHERE t.typnamespace = 'pgq'::regnamespace AND t.typacl IS NOT NULL
    ) a WHERE a.grantee <> 0 AND a.grantee <> a.owner"""

QUERIES: dict[str, str] = {
    "schema": f"""
        SELECT n.nspname AS name, pg_get_userbyid(n.nspowner) AS owner, n.nspacl::text AS acl,
               obj_description(n.oid, 'pg_namespace') AS comment,
               {_grants("n.nspacl", "n", "n.nspowner")} AS grants
          FROM pg_namespace n WHERE n.nspname = 'pgq'""",
    "functions": f"""
        SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')'
                   AS identity,
               p.prokind AS kind, pg_get_userbyid(p.proowner) AS owner, p.proacl::text AS acl,
               obj_description(p.oid, 'pg_proc') AS comment, p.proconfig::text AS config,
               p.prosecdef AS security_definer, p.provolatile AS volatility,
               p.proparallel AS parallel, p.proisstrict AS strict, p.proleakproof AS leakproof,
               p.procost AS cost, p.prorows AS rows, pg_get_function_result(p.oid) AS result,
               p.prosrc AS body,
               CASE WHEN p.prokind <> 'a' THEN pg_get_functiondef(p.oid) END AS definition,
               p.proname AS name, pg_get_function_arguments(p.oid) AS arguments,
               l.lanname AS language, p.proretset AS returns_set, p.proconfig AS settings,
               {_grants("p.proacl", "f", "p.proowner")} AS grants
          FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
         WHERE p.pronamespace = 'pgq'::regnamespace""",
    "types": f"""
        SELECT t.typname AS name, t.typtype AS kind, pg_get_userbyid(t.typowner) AS owner,
               t.typacl::text AS acl, obj_description(t.oid, 'pg_type') AS comment,
               format_type(t.typbasetype, t.typtypmod) AS base_type,
               t.typnotnull AS not_null, t.typdefault AS default,
               (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
                  FROM pg_enum e WHERE e.enumtypid = t.oid) AS labels,
               coalesce((SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid), '')
                   AS relkind,
               t.typcategory = 'A' AND t.typelem <> 0 AS is_array,
               {_grants("t.typacl", "T", "t.typowner")} AS grants
          FROM pg_type t WHERE t.typnamespace = 'pgq'::regnamespace""",
    "relations": f"""
        SELECT c.relname AS name, c.relkind AS kind, c.relpersistence AS persistence,
               pg_get_userbyid(c.relowner) AS owner, c.relacl::text AS acl,
               c.reloptions::text AS options, obj_description(c.oid, 'pg_class') AS comment,
               c.relrowsecurity AS row_security, c.relforcerowsecurity AS force_row_security,
               c.relreplident AS replica_identity,
               CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END AS definition,
               c.reloptions AS option_list,
               {_grants("c.relacl", "r", "c.relowner")} AS grants,
               {_grants("c.relacl", "s", "c.relowner")} AS sequence_grants
          FROM pg_class c WHERE c.relnamespace = 'pgq'::regnamespace
           AND c.relname !~ '^lane_(cursor|turn)_[0-9]+$'""",
    "columns": """
        SELECT c.relname AS relation, a.attnum AS number, a.attname AS name,
               format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null,
               pg_get_expr(d.adbin, d.adrelid) AS default, a.attidentity AS identity,
               a.attgenerated AS generated, co.collname AS collation,
               col_description(c.oid, a.attnum) AS comment, a.attacl::text AS acl,
               a.attstorage AS storage
          FROM pg_attribute a
          JOIN pg_class c ON c.oid = a.attrelid
          LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
          LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 0
         WHERE c.relnamespace = 'pgq'::regnamespace AND c.relname !~ '^lane_(cursor|turn)_[0-9]+$'
           AND a.attnum > 0 AND NOT a.attisdropped""",
    # NOT NULL constraints (contype 'n', catalogued since PostgreSQL 18) are the columns'
    # not_null flags, listed with the columns.
    "constraints": """
        SELECT coalesce(c.conrelid::regclass::text, c.contypid::regtype::text) AS relation,
               c.conname AS name, c.contype AS kind, pg_get_constraintdef(c.oid) AS definition,
               obj_description(c.oid, 'pg_constraint') AS comment
          FROM pg_constraint c
         WHERE c.connamespace = 'pgq'::regnamespace AND c.contype <> 'n'""",
    "indexes": """
        SELECT i.tablename AS relation, i.indexname AS name, i.indexdef AS definition
          FROM pg_indexes i WHERE i.schemaname = 'pgq'""",
    "triggers": """
        SELECT t.tgrelid::regclass::text AS relation, t.tgname AS name,
               pg_get_triggerdef(t.oid) AS definition, t.tgenabled AS enabled,
               obj_description(t.oid, 'pg_trigger') AS comment
          FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE c.relnamespace = 'pgq'::regnamespace AND c.relname !~ '^lane_(cursor|turn)_[0-9]+$'
           AND NOT t.tgisinternal""",
    "sequences": """
        SELECT s.seqrelid::regclass::text AS name, format_type(s.seqtypid, NULL) AS type,
               s.seqstart AS start, s.seqincrement AS increment, s.seqmax AS max,
               s.seqmin AS min, s.seqcache AS cache, s.seqcycle AS cycle,
               (SELECT d.refobjid::regclass::text || '.' || a.attname FROM pg_depend d
                  JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                 WHERE d.classid = 'pg_class'::regclass AND d.objid = s.seqrelid
                   AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i'))
                   AS owned_by
          FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
         WHERE c.relnamespace = 'pgq'::regnamespace
           AND c.relname !~ '^lane_(cursor|turn)_[0-9]+$'""",
    "policies": """
        SELECT p.schemaname AS schema, p.tablename AS relation, p.policyname AS name,
               p.permissive, p.roles::text AS roles, p.cmd, p.qual, p.with_check
          FROM pg_policies p WHERE p.schemaname = 'pgq'""",
    "rules": """
        SELECT r.tablename AS relation, r.rulename AS name, r.definition FROM pg_rules r
         WHERE r.schemaname = 'pgq'""",
    "default_privileges": """
        SELECT pg_get_userbyid(d.defaclrole) AS role, d.defaclobjtype AS kind,
               d.defaclacl::text AS acl
          FROM pg_default_acl d WHERE d.defaclnamespace = 'pgq'::regnamespace""",
    "event_triggers": """
        SELECT e.evtname AS name, e.evtevent AS event, e.evtfoid::regproc::text AS function,
               e.evtenabled AS enabled, e.evttags::text AS tags
          FROM pg_event_trigger e""",
    "roles": f"""
        SELECT r.rolname AS name, r.rolsuper AS superuser, r.rolinherit AS inherit,
               r.rolcreaterole AS createrole, r.rolcreatedb AS createdb,
               r.rolcanlogin AS login, r.rolreplication AS replication,
               r.rolbypassrls AS bypassrls, r.rolconnlimit AS connection_limit
          FROM pg_roles r WHERE r.oid IN ({_PGQ_ROLES})""",
    "role_memberships": f"""
        SELECT m.roleid::regrole::text AS role, m.member::regrole::text AS member,
               m.admin_option
          FROM pg_auth_members m
         WHERE m.roleid IN ({_PGQ_ROLES}) AND m.member IN ({_PGQ_ROLES})""",
}

ROW_COUNTS = """
    SELECT c.oid::regclass::text FROM pg_class c
     WHERE c.relnamespace = 'pgq'::regnamespace AND c.relname !~ '^lane_(cursor|turn)_[0-9]+$'
       AND c.relkind IN ('r', 'p')"""


def rows(conn: psycopg.Connection[Any], section: str) -> list[dict[str, Any]]:
    """The rows of one section of :data:`QUERIES`, as dicts by column name."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(QUERIES[section], {"roles": list(ROLES)}).fetchall()  # type: ignore[arg-type]


def row_counts(conn: psycopg.Connection[Any]) -> dict[str, int]:
    counts = {}
    for (table,) in conn.execute(ROW_COUNTS).fetchall():
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        counts[str(table)] = int(row[0]) if row else -1
    return dict(sorted(counts.items()))


def snapshot(conn: psycopg.Connection[Any]) -> dict[str, list[str]]:
    """The snapshot of schema pgq as sorted text lines per catalog section."""
    result: dict[str, list[str]] = {}
    for name in QUERIES:
        lines = []
        for row in rows(conn, name):
            lines.append(" | ".join("∅" if v is None else str(v) for v in row.values()))
        result[name] = sorted(lines)
    result["row_counts"] = [f"{t} | {n}" for t, n in row_counts(conn).items()]
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


# --- the readable snapshot (sql/schema.snapshot) ------------------------------------------------

NORMALIZED = (
    "Normalized so that every supported PostgreSQL version gives the same text: the installing "
    "role is shown as 'installer'; grants are listed per role, the installer's own left out "
    "(PUBLIC is listed when it has any), MAINTAIN (PostgreSQL 17+) left out; NOT NULL shows "
    "on the column; a view that reads one table is shown without that table's alias before "
    "its column names (as PostgreSQL 16+ prints it)."
)

_VOLATILITY = {"i": "IMMUTABLE", "s": "STABLE", "v": "VOLATILE"}
_PARALLEL = {"s": "PARALLEL SAFE", "r": "PARALLEL RESTRICTED", "u": "PARALLEL UNSAFE"}
_RELKIND = {"r": "table", "p": "partitioned table", "v": "view", "m": "materialized view",
            "c": "type", "S": "sequence", "f": "foreign table"}  # fmt: skip
_CONTYPE = {"p": "primary key", "u": "unique", "f": "foreign key", "c": "check", "x": "exclude",
            "t": "trigger"}  # fmt: skip
# The one relation a simple view reads: ``FROM pgq.job_history h`` (alias optional).
_SINGLE_FROM = re.compile(r"\bFROM pgq\.(\w+)(?: (\w+))?\s*$", re.MULTILINE)


def _view_definition(text: str) -> list[str]:
    """The view's query; for a view over one table without joins or subqueries, column names
    unqualified (PostgreSQL 15 writes ``h.id`` where 16+ writes ``id``)."""
    text = text.strip().rstrip(";")
    single = _SINGLE_FROM.search(text)
    if single and "JOIN" not in text and text.count("SELECT") == 1 and text.count("FROM") == 1:
        qualifier = single[2] or single[1]
        text = re.sub(rf"(?<![\w.]){re.escape(qualifier)}\.(?=\w)", "", text)
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def readable(conn: psycopg.Connection[Any], header: str = "") -> str:
    """Schema pgq as reviewable text: one block per object, sorted, version-independent."""
    installer = str(conn.execute("SELECT current_user").fetchone()[0])  # type: ignore[index]

    def who(role: Any) -> str:
        return "installer" if role == installer else str(role)

    out: list[str] = [line.rstrip() for line in header.splitlines()]

    def block(title: str, items: list[tuple[str, Any]]) -> None:
        out.append("")
        out.append(title)
        for key, value in items:
            if value in (None, "", [], False):
                continue
            if isinstance(value, list):
                out.append(f"  {key}:")
                out.extend(f"    {v}" for v in value)
            else:
                out.append(f"  {key}: {value}")

    schema = rows(conn, "schema")
    for s in schema:
        block(
            f"schema {s['name']}",
            [("owner", who(s["owner"])), ("comment", s["comment"]), ("grants", s["grants"])],
        )

    for r in sorted(rows(conn, "roles"), key=lambda r: r["name"]):
        flags = [
            "LOGIN" if r["login"] else "NOLOGIN",
            "INHERIT" if r["inherit"] else "NOINHERIT",
            *(f for f in ("superuser", "createrole", "createdb", "replication", "bypassrls")
              if r[f]),
        ]  # fmt: skip
        members = [
            f"member of {m['role']}" + (" WITH ADMIN" if m["admin_option"] else "")
            for m in rows(conn, "role_memberships")
            if m["member"] == r["name"]
        ]
        block(f"role {r['name']}", [("attributes", " ".join(flags)), ("memberships", members)])

    columns: dict[str, list[str]] = defaultdict(list)
    for c in sorted(rows(conn, "columns"), key=lambda c: (c["relation"], c["number"])):
        text = f"{c['name']} {c['type']}"
        if c["collation"] and c["collation"] != "default":
            text += f" COLLATE {c['collation']}"
        if c["not_null"]:
            text += " NOT NULL"
        if c["default"] is not None:
            text += f" DEFAULT {c['default']}"
        if c["identity"]:
            text += f" IDENTITY {c['identity']}"
        if c["generated"]:
            text += f" GENERATED {c['generated']}"
        if c["acl"]:
            text += f" ACL {c['acl']}"
        if c["comment"]:
            text += f"  -- {c['comment']}"
        columns[c["relation"]].append(text)

    def by_relation(section: str, render: Any) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = defaultdict(list)
        for item in sorted(rows(conn, section), key=lambda i: (i["relation"], i["name"])):
            grouped[item["relation"].removeprefix("pgq.")].append(render(item))
        return grouped

    constraints = by_relation(
        "constraints",
        lambda c: (
            f"{c['name']} {_CONTYPE.get(c['kind'], c['kind'])}: {c['definition']}"
            + (f"  -- {c['comment']}" if c["comment"] else "")
        ),
    )
    indexes = by_relation("indexes", lambda i: i["definition"])
    triggers = by_relation(
        "triggers",
        lambda t: t["definition"] + ("" if t["enabled"] == "O" else f" (enabled {t['enabled']})"),
    )
    policies = by_relation("policies", lambda p: str({k: p[k] for k in sorted(p)}))
    rules = by_relation("rules", lambda r: r["definition"])
    sequences = {s["name"].removeprefix("pgq."): s for s in rows(conn, "sequences")}
    counts = {t.removeprefix("pgq."): n for t, n in row_counts(conn).items()}

    relations = sorted(rows(conn, "relations"), key=lambda r: (r["kind"], r["name"]))
    for rel in relations:
        name, kind = rel["name"], rel["kind"]
        if kind in ("i", "I"):
            continue  # listed with their table
        items: list[tuple[str, Any]] = [("owner", who(rel["owner"])), ("comment", rel["comment"])]
        if kind == "S":
            s = sequences[name]
            items.append(
                (
                    "sequence",
                    f"{s['type']} start {s['start']} increment {s['increment']} min {s['min']} "
                    f"max {s['max']} cache {s['cache']}" + (" CYCLE" if s["cycle"] else ""),
                )
            )
            items += [("owned by", s["owned_by"]), ("grants", rel["sequence_grants"])]
        else:
            items += [
                ("options", list(rel["option_list"] or [])),
                ("row level security", rel["row_security"]),
                ("forced row level security", rel["force_row_security"]),
                ("grants", rel["grants"] if kind != "c" else None),
                ("columns", columns.get(name, [])),
                ("constraints", constraints.get(name, [])),
                ("indexes", indexes.get(name, [])),
                ("triggers", triggers.get(name, [])),
                ("policies", policies.get(name, [])),
                ("rules", rules.get(name, [])),
            ]
            if kind in ("r", "p"):
                items.append(("rows after install", str(counts.get(name, 0))))
            if rel["definition"]:
                items.append(("definition", _view_definition(rel["definition"])))
        if kind == "c":
            type_row = next(t for t in rows(conn, "types") if t["name"] == name)
            items += [("grants", type_row["grants"]), ("comment", type_row["comment"])]
        block(f"{_RELKIND.get(kind, kind)} pgq.{name}", items)

    for t in sorted(rows(conn, "types"), key=lambda t: t["name"]):
        if t["is_array"] or t["relkind"]:
            continue  # array types and row types of relations come with them
        block(
            f"type pgq.{t['name']} ({t['kind']})",
            [
                ("owner", who(t["owner"])),
                ("base type", t["base_type"] if t["kind"] == "d" else None),
                ("labels", t["labels"]),
                ("not null", t["not_null"]),
                ("default", t["default"]),
                ("grants", t["grants"]),
                ("comment", t["comment"]),
            ],
        )

    for f in sorted(rows(conn, "functions"), key=lambda f: f["identity"]):
        properties = [
            {"f": "FUNCTION", "p": "PROCEDURE", "a": "AGGREGATE", "w": "WINDOW"}[f["kind"]],
            f"LANGUAGE {f['language']}",
            _VOLATILITY[f["volatility"]],
            "SECURITY DEFINER" if f["security_definer"] else "SECURITY INVOKER",
            _PARALLEL[f["parallel"]],
            *(["STRICT"] if f["strict"] else []),
            *(["LEAKPROOF"] if f["leakproof"] else []),
            f"COST {f['cost']:g}",
            *([f"ROWS {f['rows']:g}"] if f["returns_set"] else []),
        ]
        block(
            f"function pgq.{f['name']}({f['arguments']})",
            [
                ("returns", f["result"]),
                ("properties", " ".join(properties)),
                ("config", "; ".join(f["settings"] or [])),
                ("owner", who(f["owner"])),
                ("grants", f["grants"]),
                ("comment", f["comment"]),
            ],
        )

    for section in ("default_privileges", "event_triggers"):
        for item in rows(conn, section):
            block(section.replace("_", " "), [(k, str(v)) for k, v in item.items()])
    return "\n".join(out).strip("\n") + "\n"


# --- the SQL API manifest (sql/api.json) --------------------------------------------------------

# The public API: functions whose name does not start with "_", and the relations a pgq role may
# read (plus every view). For a function: its arguments (name, type, the default as PostgreSQL
# prints it, or null), its result columns (RETURNS TABLE / OUT columns, the columns of a row
# type, or one column named after the function for a scalar), the roles granted EXECUTE and
# its comment. The installing role's own privileges are left out, as in the snapshot.
_API_FUNCTIONS = """
    SELECT p.proname AS name, p.oid::regprocedure::text AS signature,
           pg_get_function_arguments(p.oid) AS arguments, pg_get_function_result(p.oid) AS result,
           p.proretset AS returns_set, obj_description(p.oid, 'pg_proc') AS comment,
           coalesce(p.proargnames, '{}') AS arg_names,
           coalesce(p.proargmodes::text[], array_fill('i'::text, ARRAY[p.pronargs])) AS arg_modes,
           (SELECT coalesce(array_agg(format_type(t, NULL) ORDER BY o), '{}')
              FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) WITH ORDINALITY
                   AS u(t, o)) AS arg_types,
           p.pronargdefaults AS defaults,
           CASE WHEN rt.typrelid <> 0 THEN format_type(p.prorettype, NULL) END AS row_type,
           format_type(p.prorettype, NULL) AS return_type,
           (SELECT coalesce(array_agg(pg_get_userbyid(a.grantee) ORDER BY
                   pg_get_userbyid(a.grantee)), '{}')
              FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
             WHERE a.grantee NOT IN (0, p.proowner) AND a.privilege_type = 'EXECUTE') AS roles,
           (SELECT bool_or(a.grantee = 0)
              FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a) AS public
      FROM pg_proc p JOIN pg_type rt ON rt.oid = p.prorettype
     WHERE p.pronamespace = 'pgq'::regnamespace AND p.proname !~ '^_' AND p.prokind = 'f'
     ORDER BY p.proname"""
_API_ROW_COLUMNS = """
    SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
           a.attnotnull AS not_null
      FROM pg_attribute a WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum"""
_API_RELATIONS = """
    SELECT c.relname AS name, CASE c.relkind WHEN 'v' THEN 'view' ELSE 'table' END AS kind,
           obj_description(c.oid, 'pg_class') AS comment,
           (SELECT coalesce(array_agg(DISTINCT pg_get_userbyid(a.grantee)), '{}')
              FROM aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a
             WHERE a.grantee NOT IN (0, c.relowner) AND a.privilege_type = 'SELECT') AS roles
      FROM pg_class c WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind IN ('v', 'r')
     ORDER BY c.relname"""


def _split_arguments(text: str) -> list[str]:
    """``pg_get_function_arguments`` text split at its top-level commas."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == "'":
            quoted = not quoted
        elif not quoted and ch in "([":
            depth += 1
        elif not quoted and ch in ")]":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return [*parts, tail] if tail else parts


def api_manifest(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """The public SQL API of schema pgq as JSON data, in a deterministic order."""
    with conn.cursor(row_factory=dict_row) as cur:
        functions = cur.execute(_API_FUNCTIONS).fetchall()
        relations = cur.execute(_API_RELATIONS).fetchall()

        def row_columns(relation: str) -> list[dict[str, Any]]:
            return [
                {"name": c["name"], "type": c["type"], **({"not_null": True} if c["not_null"]
                                                          else {})}
                for c in cur.execute(_API_ROW_COLUMNS, (relation,)).fetchall()
            ]  # fmt: skip

        out_functions: dict[str, Any] = {}
        for f in functions:
            texts = iter(_split_arguments(f["arguments"]))
            arguments, columns = [], []
            for name, mode, type_ in zip(
                f["arg_names"] or [""] * len(f["arg_types"]),
                f["arg_modes"],
                f["arg_types"],
                strict=True,
            ):
                if mode in ("o", "t"):
                    columns.append({"name": name, "type": type_})
                    continue
                text = next(texts)
                default = text.split(" DEFAULT ", 1)[1] if " DEFAULT " in text else None
                arguments.append({"name": name, "type": type_, "default": default})
            if not columns and f["row_type"]:
                columns = row_columns(f["row_type"])
            out_functions[f["name"]] = {
                "signature": f["signature"],
                "arguments": arguments,
                "returns": f["result"],
                "returns_set": f["returns_set"],
                **({"row_type": f["row_type"]} if f["row_type"] else {}),
                "scalar": not columns,
                "columns": columns or [{"name": f["name"], "type": f["return_type"]}],
                "execute": list(f["roles"]) + (["PUBLIC"] if f["public"] else []),
                "comment": f["comment"],
            }
        out_relations = {
            r["name"]: {
                "kind": r["kind"],
                "columns": row_columns(f"pgq.{r['name']}"),
                "select": sorted(r["roles"]),
                "comment": r["comment"],
            }
            for r in relations
            if r["kind"] == "view" or r["roles"]
        }
    return {"functions": out_functions, "relations": out_relations}
