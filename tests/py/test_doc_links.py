"""Links in the Markdown pages resolve the way GitHub renders them.

- Every relative link ``[text](path#anchor)`` in README.md and docs/**/*.md (outside fenced code)
  names a file that exists and, for a ``.md`` target, a heading of that page, with GitHub's
  anchors: lower case, punctuation dropped, spaces to hyphens, and ``-1``, ``-2``... for a
  repeated heading.
- No page has two headings with one anchor (a link to the second would need a suffix that any
  reordering breaks).
- Every benchmark script docs/performance.md and docs/performance-history.md name exists
  (the storage prototypes are in the repository history only, and the pages say so).

No database is needed.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.*?) *#*$", re.MULTILINE)


def github_slug(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> list[str]:
    """The page's heading anchors in order, repeated ones suffixed as GitHub does."""
    seen: Counter[str] = Counter()
    result = []
    for heading in HEADING.findall(FENCE.sub("", page.read_text())):
        slug = github_slug(heading)
        result.append(f"{slug}-{seen[slug]}" if seen[slug] else slug)
        seen[slug] += 1
    return result


def test_github_slugs() -> None:
    assert github_slug("Fixed costs per call (instructions per job)") == (
        "fixed-costs-per-call-instructions-per-job"
    )
    assert github_slug("The truncation's pause") == "the-truncations-pause"
    assert github_slug("With compaction every 5 s (the worker's default since `c2f96b1`)") == (
        "with-compaction-every-5-s-the-workers-default-since-c2f96b1"
    )
    assert github_slug('(c) "keyset": keyset claims') == "c-keyset-keyset-claims"


def test_every_relative_link_resolves() -> None:
    problems = []
    cache: dict[Path, set[str]] = {}
    for page in PAGES:
        for target in LINK.findall(FENCE.sub("", page.read_text())):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto:
            file_part, _, anchor = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            where = page.relative_to(REPO)
            if not linked.exists():
                problems.append(f"{where}: {target}: no such file")
            elif anchor and linked.suffix == ".md":
                if linked not in cache:
                    cache[linked] = set(anchors(linked))
                if anchor not in cache[linked]:
                    problems.append(f"{where}: {target}: no such heading")
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_no_page_repeats_an_anchor() -> None:
    repeated = {}
    for page in PAGES:
        counts = Counter(github_slug(h) for h in HEADING.findall(FENCE.sub("", page.read_text())))
        if twice := sorted(slug for slug, n in counts.items() if n > 1):
            repeated[str(page.relative_to(REPO))] = twice
    assert not repeated, f"headings with the same anchor (rename one): {repeated}"


def test_benchmark_scripts_named_by_the_performance_pages_exist() -> None:
    missing = set()
    for name in ("performance.md", "performance-history.md"):
        text = (REPO / "docs" / name).read_text()
        for script in re.findall(r"\bbenchmarks/[\w/]+\.(?:py|sh)\b", text):
            if not script.startswith("benchmarks/prototypes/") and not (REPO / script).exists():
                missing.add(f"{name}: {script}")
        for module in re.findall(r"python -m (benchmarks(?:\.\w+)+)", text):
            if not (REPO / (module.replace(".", "/") + ".py")).exists():
                missing.add(f"{name}: {module}")
    assert not missing, f"benchmarks named in the performance pages that do not exist: {missing}"
