"""The docs: the site builds with --strict, its reference pages say what the code does, the
README stays short, and the commands the pages show in ```sh blocks run, verbatim.

How a page shows a command (docs/index.md, "How these pages show commands"): a ```sh block
holds commands a test runs as the page gives them (every page's ```sh blocks, in order, as
one script: ``page_script``); ```console is a session shown with its output; ```text is
output or a form to fill in.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from praxis.cli import parser
from praxis.errors import EXIT
from praxis.flows.definition.contract import PHASE_KEYS, TOP_KEYS
from praxis.flows.model.events import CATALOGUE
from sandbox.options import RayOptions

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", flags=re.S | re.M)
# The pages whose ```sh blocks a test below runs.
RUN_BY_A_TEST = ("tutorial.md",)


def page_script(page: str) -> str:
    """The ```sh blocks of a docs page, in order, as one script."""
    return "".join(SH_BLOCK.findall((DOCS / page).read_text(encoding="utf-8")))


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)


def test_every_page_with_commands_to_run_has_a_test_that_runs_them() -> None:
    with_commands = [p.relative_to(DOCS).as_posix() for p in pages()]
    with_commands = [page for page in with_commands if page_script(page)]
    assert sorted(with_commands) == sorted(RUN_BY_A_TEST)


def test_the_tutorial_stays_short_and_complete() -> None:
    script = page_script("tutorial.md")
    assert len(SH_BLOCK.findall((DOCS / "tutorial.md").read_text())) >= 4, "it lost its commands"
    flow_yaml = script.split("cat > flow.yaml <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    assert len(flow_yaml.splitlines()) <= 20
    for kind in ("kind: script", "kind: notebook", "review: required"):
        assert kind in flow_yaml
    for verb in ("praxis run", "praxis approve", " -p "):
        assert verb in script


@pytest.mark.docker
def test_the_tutorial_runs_as_the_page_says(tmp_path: Path, docker_image: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        # the page's `export PATH="$PWD/.venv/bin:$PATH"`, wherever this venv is
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    res = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", page_script("tutorial.md")],
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


def test_the_readme_is_the_two_commands_what_praxis_is_one_example_and_links() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    first = SH_BLOCK.search(text)
    assert first is not None and first.group(1).startswith("make run ")
    assert "make test " in first.group(1)
    for heading in ("## What praxis is", "## One example", "## Documentation"):
        assert heading in text
    for link in re.findall(r"\]\((docs/[^)#]+)\)", text):
        assert (REPO / link).is_file(), link


def test_the_site_builds_with_strict(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    for page in ("tutorial", "reference/cli", "reference/flow-yaml", "reference/events"):
        assert (tmp_path / "s" / page / "index.html").is_file(), page


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "hooks/reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_page_holds_every_command_and_option() -> None:
    page = _hook().cli_page()
    top = parser()
    (commands,) = [a for a in top._actions if a.dest == "command"]
    assert commands.choices
    for name, sub in commands.choices.items():
        assert f"## praxis {name}\n" in page
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in page, (name, flag)


def test_the_flow_yaml_page_holds_every_key_and_every_option_a_flow_may_set() -> None:
    page = _hook().flow_yaml_page()
    for key in (*TOP_KEYS, *PHASE_KEYS, "prompt", "allow_errors", "backend"):
        assert f"`{key}`" in page, key
    for option in RayOptions.names(flow=True):
        assert f"| `ray` | `{option}` |" in page, option
    assert "node_root" not in page  # the operator's, not flow.yaml's


def test_the_exit_codes_page_holds_every_code_and_the_tree() -> None:
    page = _hook().exit_codes_page()
    for name, code in EXIT.items():
        assert f"| {code} | `{name}` |" in page
    assert "├── Refused               4" in page


def test_the_events_page_holds_every_kind_with_its_fields() -> None:
    page = _hook().events_page()
    for cls in CATALOGUE:
        (row,) = [line for line in page.splitlines() if line.startswith(f"| `{cls.kind}` |")]
        assert "RunBegun(" not in row  # a class's own words, never the dataclass signature
    (begun,) = [line for line in page.splitlines() if line.startswith("| `run_begun` |")]
    assert "`run`, `flow`, `phases`" in begun and "A run was made" in begun
