"""Parse the TAP that pgTAP prints through ``psql -X -q -t -A``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PLAN = re.compile(r"^1\.\.(\d+)(?:\s*#.*)?$")
_TEST = re.compile(r"^(not )?ok\b\s*(\d+)?\s*(.*)$")
_DIRECTIVE = re.compile(r"#\s*(TODO|SKIP)\b", re.IGNORECASE)


@dataclass
class TapResult:
    planned: int | None = None
    plans: int = 0
    passed: list[int] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    bailed_out: str | None = None
    diagnostics: list[str] = field(default_factory=list)

    @property
    def ran(self) -> int:
        return len(self.numbers)

    def problems(self) -> list[str]:
        """Why this run is a failure; empty when it passed."""
        problems: list[str] = []
        if self.bailed_out is not None:
            problems.append(f"bailed out: {self.bailed_out}")
        if self.plans == 0:
            problems.append("no plan line (1..N): did the file call plan() or no_plan()?")
        elif self.plans > 1:
            problems.append(f"{self.plans} plan lines")
        elif self.planned != self.ran:
            problems.append(f"planned {self.planned} tests but ran {self.ran}")
        if self.numbers != list(range(1, len(self.numbers) + 1)):
            problems.append(f"test numbers out of sequence: {self.numbers}")
        problems += [f"failed: {line}" for line in self.failed]
        return problems


def parse(output: str) -> TapResult:
    result = TapResult()
    for raw in output.splitlines():
        line = raw.strip()
        if not line:
            continue
        if match := _PLAN.match(line):
            result.plans += 1
            result.planned = int(match[1])
        elif match := _TEST.match(line):
            number = int(match[2]) if match[2] else len(result.numbers) + 1
            result.numbers.append(number)
            directive = _DIRECTIVE.search(match[3] or "")
            if match[1] and not (directive and directive[1].upper() == "TODO"):
                result.failed.append(line)
            else:
                result.passed.append(number)
        elif line.startswith("Bail out!"):
            result.bailed_out = line[len("Bail out!") :].strip()
        elif line.startswith("#"):
            result.diagnostics.append(line)
    return result
