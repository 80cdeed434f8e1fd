"""Install what the test suite needs, only what is missing: the one set-up of `make test` and CI.

The suite runs everything it has: pgTAP files for both servers, PgBouncer, tmux (``pgq-thin
top`` in a real terminal), Node.js and npm (the example workers in ``examples/``), headless
Chromium and ChromeDriver (browser tests). This
script checks each of them and, as root on a machine with ``apt-get``, installs the missing
ones from Debian's packages (one ``apt-get update``, then one quiet ``apt-get install``), then
runs ``npm ci`` in every ``examples/*`` folder with a ``package.json`` whose ``node_modules`` is
out of date. Nothing is printed when nothing is missing.

``npm ci`` installs exactly the committed ``package-lock.json``, and only packages of the npm
registry with an integrity hash (a lock file naming a git, file or other URL source is refused).
Whether ``node_modules`` is up to date is decided offline (a stamp with the lock file's hash, or
npm's own record of what it installed), so a machine that has it needs no network; ``npm ci``
runs with ``--prefer-offline`` (npm's cache first).

Where it cannot install (not root, no ``apt-get``), it prints ONE line naming what to install
and exits 1, unless ``PGQ_ALLOW_SKIP=1`` is set: then the line is a warning and the tests that
need a missing tool skip (without it, the suite turns such skips into failures).

Usage (stdlib only; from the repository root):

    python3 scripts/provision.py                   # check, install what is missing
    python3 scripts/provision.py --dry-run         # say what it would do, change nothing
    python3 scripts/provision.py --server-major 15 # also the PostgreSQL 15 server (CI)

``PGQ_TEST_DSN``, when set, names the server the suite will use: pgTAP must be installable for
its major version. Options for testing this script without touching the machine:
``--assume-missing NAME,NAME`` (or ``all``) treats those requirements as missing,
``--assume-not-root`` and ``--assume-no-apt`` pretend the install cannot happen.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PG_MAJOR = 15  # Debian 12's PostgreSQL, used when no system PostgreSQL is installed
STAMP = ".pgq-thin-npm-ci"  # in node_modules: the sha256 of the package-lock.json installed
NPM_REGISTRY = "https://registry.npmjs.org/"


@dataclass(frozen=True)
class Requirement:
    """One thing the suite needs: how to tell it is there, which Debian package brings it."""

    name: str
    why: str
    present: Callable[[], bool]
    package: str


def _has_command(*names: str) -> Callable[[], bool]:
    def check() -> bool:
        return all(
            shutil.which(n) or any(os.access(f"{d}/{n}", os.X_OK) for d in ("/usr/sbin", "/sbin"))
            for n in names
        )

    return check


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def system_pg_majors() -> list[int]:
    """Major versions of the PostgreSQL servers installed from packages (newest first)."""
    majors = []
    for path in glob.glob("/usr/lib/postgresql/*/bin/postgres"):
        part = Path(path).parts[-3]
        if part.isdigit():
            majors.append(int(part))
    return sorted(majors, reverse=True)


def pgtap_installed(major: int | None = None) -> bool:
    """pgTAP's extension files for ``major`` (any major when None) are on this machine."""
    pattern = f"/usr/share/postgresql/{major if major else '*'}/extension/pgtap.control"
    return bool(glob.glob(pattern))


def _ask(dsn: str, query: str) -> str | None:
    """One value from the server at ``dsn`` through psql (None when psql cannot tell)."""
    psql = shutil.which("psql")
    if psql is None:
        return None
    try:
        result = subprocess.run(
            [psql, "-X", "-A", "-t", "-d", dsn, "-c", query],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def dsn_server_major(dsn: str) -> int | None:
    """The major version of the server at ``dsn`` (None when psql cannot tell)."""
    out = _ask(dsn, "SHOW server_version_num")
    return int(out) // 10000 if out and out.isdigit() else None


def dsn_has_pgtap(dsn: str) -> bool:
    """The server at ``dsn`` offers the pgtap extension (wherever it runs)."""
    query = "SELECT count(*) FROM pg_available_extensions WHERE name = 'pgtap'"
    return _ask(dsn, query) == "1"


def requirements(dsn: str | None, server_major: int | None) -> list[Requirement]:
    """Everything the suite needs on this machine, in install order."""
    reqs: list[Requirement] = []
    majors = system_pg_majors()
    if server_major is not None:
        reqs.append(
            Requirement(
                f"postgresql-{server_major}",
                "the PostgreSQL server CI tests against",
                lambda: os.path.exists(f"/usr/lib/postgresql/{server_major}/bin/postgres"),
                f"postgresql-{server_major}",
            )
        )
        majors = sorted({*majors, server_major}, reverse=True)
    if dsn:
        reqs.append(
            Requirement(
                "psql",
                "the client of PGQ_TEST_DSN's server",
                _has_command("psql"),
                "postgresql-client",
            )
        )
        major = dsn_server_major(dsn) or server_major or (majors[0] if majors else None)
        if major is not None:
            reqs.append(
                Requirement(
                    f"pgtap-{major}",
                    f"pgTAP for the PostgreSQL {major} at PGQ_TEST_DSN",
                    lambda: pgtap_installed(major) or dsn_has_pgtap(dsn),
                    f"postgresql-{major}-pgtap",
                )
            )
    # The embedded server gets pgTAP's (pure SQL) files copied from any system install.
    embedded_major = majors[0] if majors else DEFAULT_PG_MAJOR
    if not any(r.name.startswith("pgtap") for r in reqs):
        reqs.append(
            Requirement(
                f"pgtap-{embedded_major}",
                "pgTAP files, copied into the embedded PostgreSQL",
                pgtap_installed,
                f"postgresql-{embedded_major}-pgtap",
            )
        )
    reqs += [
        Requirement("pgbouncer", "the PgBouncer tests", _has_command("pgbouncer"), "pgbouncer"),
        Requirement(
            "postgres-user",
            "the system user that runs PgBouncer and throw-away servers as root",
            lambda: os.geteuid() != 0 or _has_user("postgres"),
            "postgresql-common",
        ),
        Requirement("tmux", "the terminal tests of pgq-thin top", _has_command("tmux"), "tmux"),
        Requirement("node", "the Node.js example workers", _has_command("node"), "nodejs"),
        Requirement("npm", "installing the Node.js examples", _has_command("npm"), "npm"),
        Requirement("chromium", "the browser tests", _has_command("chromium"), "chromium"),
        Requirement(
            "chromedriver", "the browser tests", _has_command("chromedriver"), "chromium-driver"
        ),
    ]
    return reqs


def npm_folders(root: Path) -> list[Path]:
    """``examples/*`` folders with a ``package.json``."""
    return sorted(p.parent for p in (root / "examples").glob("*/package.json"))


def npm_up_to_date(folder: Path) -> bool:
    """``node_modules`` holds what the lock file names: our stamp says so, or npm's own record
    of ``node_modules`` (a ``npm ci`` run by hand) equals the lock file. Checked offline."""
    lock = folder / "package-lock.json"
    modules = folder / "node_modules"
    if not lock.exists() or not modules.is_dir():
        return False
    stamp = modules / STAMP
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text().strip() == digest:
        return True
    installed = _installed_packages(modules)
    return installed is not None and installed == _locked_packages(lock)


def _locked_packages(lock: Path) -> dict[str, Any]:
    try:
        packages = json.loads(lock.read_text()).get("packages")
    except (OSError, ValueError, AttributeError):
        return {}
    return {k: v for k, v in packages.items() if k} if isinstance(packages, dict) else {}


def _installed_packages(modules: Path) -> dict[str, Any] | None:
    """npm's record of what it installed (``node_modules/.package-lock.json``), when every
    package it names is there."""
    installed = _locked_packages(modules / ".package-lock.json")
    if not installed or not all((modules.parent / n / "package.json").exists() for n in installed):
        return None
    return installed


def npm_foreign_sources(folder: Path) -> list[str]:
    """Packages of the lock file that would not come from the npm registry with a checked
    integrity: a git, file or other URL source, a link, a missing integrity hash."""
    foreign = []
    for name, entry in _locked_packages(folder / "package-lock.json").items():
        resolved = entry.get("resolved")
        from_registry = resolved is None or str(resolved).startswith(NPM_REGISTRY)
        if entry.get("link") or not from_registry or not entry.get("integrity"):
            foreign.append(name.removeprefix("node_modules/"))
    return foreign


@dataclass
class Plan:
    missing: list[Requirement]
    npm: list[Path]  # folders that need `npm ci`
    can_install: bool
    why_not: str  # when not can_install

    def commands(self) -> list[list[str]]:
        packages = list(dict.fromkeys(r.package for r in self.missing))
        if not packages:
            return []
        return [
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", *packages],
        ]

    def refusal(self) -> str:
        """The one line printed when the missing packages cannot be installed here."""
        names = ", ".join(f"{r.name} ({r.why})" for r in self.missing)
        packages = " ".join(dict.fromkeys(r.package for r in self.missing))
        return (
            f"pgq-thin tests need {names}: {self.why_not}; install the Debian packages "
            f"`{packages}` (apt-get install {packages}, as root), or set PGQ_ALLOW_SKIP=1 to "
            "skip the tests that need them"
        )


def make_plan(
    reqs: Sequence[Requirement],
    root: Path,
    *,
    assume_missing: set[str] | None = None,
    is_root: bool | None = None,
    has_apt: bool | None = None,
) -> Plan:
    assume = assume_missing or set()
    missing = [r for r in reqs if "all" in assume or r.name in assume or not r.present()]
    folders = [f for f in npm_folders(root) if "npm-ci" in assume or not npm_up_to_date(f)]
    is_root = os.geteuid() == 0 if is_root is None else is_root
    has_apt = shutil.which("apt-get") is not None if has_apt is None else has_apt
    why_not = ""
    if not has_apt:
        why_not = "this machine has no apt-get"
    elif not is_root:
        why_not = "not root, so they cannot be installed here"
    return Plan(missing, folders, can_install=not why_not, why_not=why_not)


def _run_quietly(command: list[str], log: Path, cwd: Path | None = None) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    if result.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-25:])
        raise SystemExit(
            f"{tail}\nprovision: `{' '.join(command)}` failed with exit code "
            f"{result.returncode} (full log: {log})"
        )


def apply(plan: Plan, root: Path, dry_run: bool, allow_skip: bool) -> int:
    out = sys.stdout
    if plan.missing and not plan.can_install:
        print(plan.refusal(), file=sys.stderr)
        if not allow_skip:
            return 1
    lock_wait = ["-o", "DPkg::Lock::Timeout=600"]
    if plan.missing and plan.can_install:
        commands = [[c[0], *lock_wait, *c[1:]] for c in plan.commands()]
        if dry_run:
            for command in commands:
                print("would run:", " ".join(command), file=out)
        else:
            packages = " ".join(dict.fromkeys(r.package for r in plan.missing))
            print(f"provision: installing {packages} (apt-get, as root) ...", file=out, flush=True)
            started = time.monotonic()
            log = Path(tempfile.mkstemp(prefix="pgq-provision-", suffix=".log")[1])
            for command in commands:
                _run_quietly(command, log)
            still = [r.name for r in plan.missing if not r.present()]
            if still:
                print(f"provision: installed, but still missing: {', '.join(still)}", file=out)
                return 1
            print(f"provision: done in {time.monotonic() - started:.0f} s", file=out)
    for folder in plan.npm:
        where = folder.relative_to(root)
        if not (folder / "package-lock.json").exists():
            print(
                f"provision: {where} has a package.json but no package-lock.json: run "
                "`npm install` there and commit the lock file",
                file=sys.stderr,
            )
            return 1
        foreign = npm_foreign_sources(folder)
        if foreign:
            print(
                f"provision: {where}/package-lock.json takes {', '.join(foreign)} from outside "
                f"the npm registry ({NPM_REGISTRY}, with an integrity hash): fix the lock file",
                file=sys.stderr,
            )
            return 1
        # --prefer-offline: what npm's cache holds is not fetched again
        command = ["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]
        if dry_run:
            print(f"would run: {' '.join(command)} (in {where})", file=out)
            continue
        if shutil.which("npm") is None:
            if allow_skip:
                continue
            print(f"provision: npm is missing, cannot set up {where}", file=sys.stderr)
            return 1
        print(f"provision: npm ci in {where} ...", file=out, flush=True)
        log = Path(tempfile.mkstemp(prefix="pgq-provision-npm-", suffix=".log")[1])
        _run_quietly(command, log, cwd=folder)
        digest = hashlib.sha256((folder / "package-lock.json").read_bytes()).hexdigest()
        (folder / "node_modules" / STAMP).write_text(digest + "\n")
    if dry_run and not plan.missing and not plan.npm:
        print("nothing to install", file=out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="say what would be done")
    parser.add_argument("--server-major", type=int, help="also install this PostgreSQL server")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--assume-missing", default="", help=argparse.SUPPRESS)
    parser.add_argument("--assume-not-root", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--assume-no-apt", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--list", action="store_true", help="list the requirements and exit")
    args = parser.parse_args(argv)
    reqs = requirements(os.environ.get("PGQ_TEST_DSN") or None, args.server_major)
    if args.list:
        for r in reqs:
            state = "present" if r.present() else "MISSING"
            print(f"{r.name:<14} {state:<8} {r.package:<22} {r.why}")
        return 0
    plan = make_plan(
        reqs,
        args.root,
        assume_missing={n.strip() for n in args.assume_missing.split(",") if n.strip()},
        is_root=False if args.assume_not_root else None,
        has_apt=False if args.assume_no_apt else None,
    )
    allow_skip = os.environ.get("PGQ_ALLOW_SKIP", "") not in ("", "0")
    return apply(plan, args.root, args.dry_run, allow_skip)


if __name__ == "__main__":
    sys.exit(main())
