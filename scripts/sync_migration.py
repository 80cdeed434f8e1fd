"""Copy sql/functions/*.sql into the functions section of an unreleased migration.

Usage: python scripts/sync_migration.py [sql/migrations/NNNN_slug.sql] [FUNCTION ...]

The functions section lies between the lines "-- BEGIN FUNCTIONS" and "-- END FUNCTIONS". Named
functions are added to the section; with no names, the functions the section already holds are
copied again from their files. A new migration names the functions it creates or changes.
Released migrations are never rewritten: run this only on migrations not yet released.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "-- BEGIN FUNCTIONS"
END = "-- END FUNCTIONS"


def main(argv: list[str]) -> int:
    migrations = sorted((ROOT / "sql" / "migrations").glob("[0-9][0-9][0-9][0-9]_*.sql"))
    target = Path(argv[0]).resolve() if argv else migrations[-1]
    text = target.read_text()
    held = re.findall(r"^-- sql/functions/(\S+)\.sql$", text, flags=re.MULTILINE)
    names = set(held) | set(argv[1:])
    files = [f for f in sorted((ROOT / "sql" / "functions").glob("*.sql")) if f.stem in names]
    missing = names - {f.stem for f in files}
    if missing:
        print(f"no such function file: {', '.join(sorted(missing))}", file=sys.stderr)
        return 2
    head, sep, rest = text.partition(BEGIN)
    if not sep or END not in rest:
        print(f"{target}: no '{BEGIN}' ... '{END}' section", file=sys.stderr)
        return 2
    marker_line, _, rest = rest.partition("\n")
    _, _, tail = rest.partition(END)
    body = "".join(f"\n-- sql/functions/{f.name}\n{f.read_text().strip()}\n" for f in files)
    target.write_text(f"{head}{BEGIN}{marker_line}\nSET check_function_bodies = false;\n{body}\n"
                      f"RESET check_function_bodies;\n{END}{tail}")
    print(f"{target.relative_to(ROOT)}: {len(files)} function files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
