"""README's "Your first flow": its commands, verbatim, in a fresh home folder, on docker."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SECTION = "## Your first flow"


def first_flow_commands() -> str:
    """The shell blocks of the README's first-flow section, in order, as one script."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    blocks = re.findall(r"^```sh\n(.*?)^```$", text[start:end], flags=re.S | re.M)
    assert len(blocks) >= 4, "the section lost its commands"
    return "".join(blocks)


def test_the_section_stays_short_and_complete() -> None:
    script = first_flow_commands()
    flow_yaml = script.split("cat > flow.yaml <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    assert len(flow_yaml.splitlines()) <= 20
    for kind in ("kind: script", "kind: notebook", "review: required"):
        assert kind in flow_yaml
    for verb in ("praxis run", "praxis approve", " -p "):
        assert verb in script


@pytest.mark.docker
def test_the_first_flow_runs_as_the_readme_says(tmp_path: Path, docker_image: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        # the README's `export PATH="$PWD/.venv/bin:$PATH"`, wherever this venv is
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    res = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", first_flow_commands()],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-3000:])
    first = home / "first"
    (run,) = (first / "runs").iterdir()
    state = json.loads((run / "run.json").read_text())
    assert state["status"] == "done"
    assert state["params"] == {"min_amount": 100}
    with (run / "output" / "by_region.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert rows == [{"region": "East", "amount": "200"}, {"region": "North", "amount": "120"}]
    assert "waiting at the Gate after clean" in res.stdout
