"""Rows of results, the Markdown table, and the dated files in benchmarks/results/."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Row:
    """One measured figure; ``limit`` and ``better`` make a target ("<=" or ">=")."""

    section: str
    measure: str
    value: float
    unit: str  # "s", "ms", "x", "MiB"
    limit: float | None = None
    better: str = "<="
    note: str = ""

    @property
    def meets(self) -> bool | None:
        if self.limit is None or math.isnan(self.value):
            return None
        return self.value <= self.limit if self.better == "<=" else self.value >= self.limit

    def cells(self) -> list[str]:
        target = "" if self.limit is None else f"{self.better} {_fmt(self.limit, self.unit)}"
        meets = {None: "", True: "yes", False: "**no**"}[self.meets]
        return [self.section, self.measure, _fmt(self.value, self.unit), target, meets, self.note]


def _fmt(value: float, unit: str) -> str:
    if math.isnan(value):
        return "n/a"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "ms":
        return f"{value:.0f} ms"
    if unit == "MiB":
        return f"{value:.0f} MiB"
    return f"{value:.2f} s" if value < 100 else f"{value:.0f} s"


@dataclass
class Results:
    started: float = field(default_factory=time.time)
    repeats: int = 0
    rows: list[Row] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def add(self, *rows: Row) -> None:
        self.rows.extend(rows)


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem / 2**30, 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "docker": _docker_version(),
    }


def _docker_version() -> str:
    try:
        out = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "none"
    return out.stdout.strip() or "none"


def markdown(results: Results, command: str) -> str:
    m = machine()
    day = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(results.started))
    lines = [
        f"Measured {day} on {m['cpu'] or 'an unknown CPU'} ({m['cores']} cores, "
        f"{m['memory_gib']} GiB, {m['os']}, Python {m['python']}, Docker {m['docker']}), "
        f"median of {results.repeats} runs, with `{command}`.",
        "",
        "| Section | Measure | Result | Target | Meets | Notes |",
        "|---|---|---|---|---|---|",
    ]
    for row in sorted(results.rows, key=lambda r: r.section):  # stable: order kept within
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row.cells()) + " |")
    if results.skipped:
        lines += ["", "Not measured: " + "; ".join(results.skipped) + "."]
    return "\n".join(lines) + "\n"


def write(results: Results, command: str, folder: Path = RESULTS) -> tuple[Path, Path]:
    """<folder>/<date>.md and .json (benchmarks/results/ by default); returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d-%H%M", time.gmtime(results.started))
    if (folder / f"{stamp}.md").exists():  # two runs in one minute: keep both
        stamp = time.strftime("%Y-%m-%d-%H%M%S", time.gmtime(results.started))
    md = folder / f"{stamp}.md"
    md.write_text("# praxis benchmarks\n\n" + markdown(results, command), encoding="utf-8")
    data = {
        "date": stamp,
        "command": command,
        "machine": machine(),
        "repeats": results.repeats,
        "rows": [{**asdict(r), "meets": r.meets} for r in results.rows],
        "skipped": results.skipped,
        "details": results.details,
    }
    js = folder / f"{stamp}.json"
    text = json.dumps(_clean(data), indent=1, default=str, allow_nan=False)
    js.write_text(text + "\n", encoding="utf-8")
    return md, js


def _clean(value: Any) -> Any:
    """NaN (a figure that could not be computed) becomes null, so the file is valid JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value
