"""The test set-up (scripts/provision.py) and the rule that nothing is skipped silently.

The "missing" paths are exercised without removing anything from the machine: the script's
``--dry-run`` lists what it would install, and ``--assume-missing`` / ``--assume-not-root`` /
``--assume-no-apt`` pretend a tool is missing or the install impossible.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.server import REPO

SCRIPT = REPO / "scripts" / "provision.py"
LOCK_WAIT = "-o DPkg::Lock::Timeout=600"
NPM_CI = "npm ci --prefer-offline --no-audit --no-fund --loglevel=error"


def provision(
    *args: str, env: dict[str, str] | None = None, root: Path | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "PGQ_ALLOW_SKIP"}
    command = [sys.executable, str(SCRIPT), *args]
    if root is not None:
        command += ["--root", str(root)]
    return subprocess.run(
        command, capture_output=True, text=True, env={**base, **(env or {})}, timeout=120
    )


def test_this_machine_has_everything_the_suite_needs() -> None:
    """`make test` provisioned this machine: the dry run finds nothing left to do."""
    result = provision("--dry-run")
    if os.environ.get("PGQ_ALLOW_SKIP") and result.stdout != "nothing to install\n":
        pytest.skip(f"PGQ_ALLOW_SKIP is set and the set-up is incomplete: {result.stdout}")
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout == "nothing to install\n", result.stdout


def test_requirements_cover_every_tool_the_suite_uses() -> None:
    listing = provision("--list").stdout
    names = {line.split()[0] for line in listing.splitlines()}
    assert {"pgbouncer", "node", "npm", "chromium", "chromedriver"} <= names, listing
    assert any(name.startswith("pgtap-") for name in names), listing
    assert "MISSING" not in listing, listing


def test_missing_packages_are_installed_as_root_with_one_apt_get(tmp_path: Path) -> None:
    result = provision(
        "--dry-run", "--assume-missing", "pgbouncer,chromium,chromedriver", root=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"would run: apt-get {LOCK_WAIT} update -qq",
        f"would run: apt-get {LOCK_WAIT} install -y -qq pgbouncer chromium chromium-driver",
    ]


def test_everything_missing_names_every_package_once(tmp_path: Path) -> None:
    result = provision("--dry-run", "--assume-missing", "all", root=tmp_path)
    install = result.stdout.splitlines()[-1]
    packages = install.split("-qq ", 1)[1].split()
    assert len(packages) == len(set(packages))
    assert {"pgbouncer", "nodejs", "npm", "chromium", "chromium-driver"} <= set(packages)
    assert any(p.startswith("postgresql-") and p.endswith("-pgtap") for p in packages)


@pytest.mark.parametrize(
    ("pretend", "why"),
    [("--assume-not-root", "not root"), ("--assume-no-apt", "no apt-get")],
)
def test_without_root_or_apt_it_stops_with_one_line(pretend: str, why: str) -> None:
    result = provision("--assume-missing", "pgbouncer,chromium", pretend)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert why in lines[0]
    assert "apt-get install pgbouncer chromium" in lines[0]
    assert "PGQ_ALLOW_SKIP=1" in lines[0]


def test_allow_skip_turns_the_stop_into_a_warning() -> None:
    result = provision(
        "--assume-missing", "pgbouncer", "--assume-not-root", env={"PGQ_ALLOW_SKIP": "1"}
    )
    assert result.returncode == 0
    assert len(result.stderr.splitlines()) == 1 and "pgbouncer" in result.stderr


def test_node_examples_get_npm_ci_when_their_lock_file_changed(tmp_path: Path) -> None:
    folder = tmp_path / "examples" / "node"
    folder.mkdir(parents=True)
    (folder / "package.json").write_text('{"name": "x", "version": "1.0.0"}\n')
    missing_lock = provision("--dry-run", root=tmp_path)
    assert missing_lock.returncode == 1
    assert "no package-lock.json" in missing_lock.stderr
    (folder / "package-lock.json").write_text('{"lockfileVersion": 3}\n')
    planned = provision("--dry-run", root=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.splitlines() == [f"would run: {NPM_CI} (in examples/node)"]
    # After a successful `npm ci` the script leaves the lock file's hash in node_modules.
    import hashlib

    (folder / "node_modules").mkdir()
    digest = hashlib.sha256((folder / "package-lock.json").read_bytes()).hexdigest()
    (folder / "node_modules" / ".pgq-thin-npm-ci").write_text(digest + "\n")
    assert provision("--dry-run", root=tmp_path).stdout == "nothing to install\n"


def copy_node_example(root: Path) -> Path:
    """The committed examples/node package files (no node_modules) under ``root``."""
    folder = root / "examples" / "node"
    folder.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(REPO / "examples" / "node" / name, folder / name)
    return folder


def test_a_fresh_clone_gets_npm_ci_of_the_committed_lock_file(tmp_path: Path) -> None:
    """The committed lock file passes the source check: a fresh clone runs `npm ci` on it."""
    copy_node_example(tmp_path)
    result = provision("--dry-run", root=tmp_path)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout.splitlines() == [f"would run: {NPM_CI} (in examples/node)"]


def test_npm_ci_sets_up_the_node_example_of_a_fresh_clone(tmp_path: Path) -> None:
    """For real, in a copy without node_modules (npm's cache first, else the registry): the
    example's `pg` loads, the stamp is left, and the next run has nothing to do."""
    folder = copy_node_example(tmp_path)
    result = provision(root=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "provision: npm ci in examples/node ...\n", result.stdout
    loads = subprocess.run(
        ["node", "-e", "import('pg').then((m) => console.log(typeof m.default.Client))"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert loads.stdout == "function\n", loads.stderr
    assert (folder / "node_modules" / ".pgq-thin-npm-ci").exists()
    assert provision("--dry-run", root=tmp_path).stdout == "nothing to install\n"


def test_the_node_example_takes_every_package_from_the_npm_registry() -> None:
    lock = json.loads((REPO / "examples" / "node" / "package-lock.json").read_text())
    packages = {k: v for k, v in lock["packages"].items() if k}
    assert "node_modules/pg" in packages
    for name, entry in packages.items():
        assert entry["resolved"].startswith("https://registry.npmjs.org/"), (name, entry)
        assert entry["integrity"].startswith("sha512-"), (name, entry)


@pytest.mark.parametrize(
    "source",
    [
        "git+ssh://git@github.com/brianc/node-postgres.git#abc",
        "https://example.com/pg-8.0.0.tgz",
        "file:../pg",
        None,  # no integrity hash
    ],
)
def test_a_lock_file_with_a_package_from_elsewhere_is_refused(
    tmp_path: Path, source: str | None
) -> None:
    folder = copy_node_example(tmp_path)
    lock = json.loads((folder / "package-lock.json").read_text())
    entry = lock["packages"]["node_modules/pg"]
    if source is None:
        del entry["integrity"]
    else:
        entry["resolved"] = source
    (folder / "package-lock.json").write_text(json.dumps(lock))
    result = provision("--dry-run", root=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "takes pg from outside the npm registry" in result.stderr


def test_node_modules_installed_by_hand_is_up_to_date_offline(tmp_path: Path) -> None:
    """npm's own record of node_modules (written by `npm ci`) matching the lock file is enough:
    nothing runs, nothing is fetched. A package missing from node_modules is not."""
    folder = copy_node_example(tmp_path)
    lock = json.loads((folder / "package-lock.json").read_text())
    hidden = {k: v for k, v in lock["packages"].items() if k}
    (folder / "node_modules").mkdir()
    (folder / "node_modules" / ".package-lock.json").write_text(
        json.dumps({"name": lock["name"], "lockfileVersion": 3, "packages": hidden})
    )
    for name in hidden:
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "package.json").write_text("{}")
    assert provision("--dry-run", root=tmp_path).stdout == "nothing to install\n"
    (folder / "node_modules" / "pg" / "package.json").unlink()
    planned = provision("--dry-run", root=tmp_path).stdout
    assert planned == f"would run: {NPM_CI} (in examples/node)\n"


# --- no silent skips ----------------------------------------------------------------------------

SKIPPING = """
import pytest

def test_needs_a_tool():
    pytest.skip("frobnicator is not installed")

@pytest.fixture
def tool():
    pytest.skip("no tool for the fixture")

def test_fixture_skips(tool):
    pass

@pytest.mark.xfail(reason="known")
def test_expected_failure():
    assert False
"""


def run_inner_suite(tmp_path: Path, allow: bool) -> subprocess.CompletedProcess[str]:
    shutil.copyfile(REPO / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_inner.py").write_text(SKIPPING)
    env = {k: v for k, v in os.environ.items() if k != "PGQ_ALLOW_SKIP"}
    if allow:
        env["PGQ_ALLOW_SKIP"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


def test_a_skip_fails_the_run_unless_allowed(tmp_path: Path) -> None:
    result = run_inner_suite(tmp_path, allow=False)
    assert result.returncode == 1, result.stdout
    summary = result.stdout.strip().splitlines()[-1]
    assert "1 failed" in summary and "skipped" not in summary and "1 xfailed" in summary, summary
    assert "1 error" in summary, summary  # the fixture's skip fails its set-up
    assert "test skipped: frobnicator is not installed" in result.stdout
    assert "PGQ_ALLOW_SKIP=1" in result.stdout
    assert "make test" in result.stdout


def test_skips_are_skips_when_allowed(tmp_path: Path) -> None:
    result = run_inner_suite(tmp_path, allow=True)
    assert result.returncode == 0, result.stdout
    summary = result.stdout.strip().splitlines()[-1]
    assert "2 skipped" in summary and "1 xfailed" in summary, summary


# --- the provisioned tools start --------------------------------------------------------------


def test_headless_chromium_renders_a_page(tmp_path: Path) -> None:
    """What the browser tests need: Debian's Chromium headless (as root: without its sandbox,
    and without background networking, which this machine's closed network refuses)."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed")
    result = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path}",
            "--dump-dom",
            'data:text/html,<p id="x">pgq-thin &amp; chromium</p>',
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert '<p id="x">pgq-thin &amp; chromium</p>' in result.stdout, result.stderr[-2000:]
    driver = shutil.which("chromedriver")
    if driver is None:
        pytest.skip("chromedriver is not installed")
    version = subprocess.run([driver, "--version"], capture_output=True, text=True, timeout=60)
    assert version.stdout.startswith("ChromeDriver "), version.stdout + version.stderr


def test_node_and_npm_run() -> None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node or npm is not installed")
    out = subprocess.run(
        [node, "-e", "process.stdout.write(JSON.stringify({ok: 1 + 1}))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout == '{"ok":2}'
    assert subprocess.run([npm, "--version"], capture_output=True, timeout=60).returncode == 0
