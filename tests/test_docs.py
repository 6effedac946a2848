"""The docs: the site builds with --strict, its reference pages say what the code does, the
README stays short, and the commands the pages show in ```sh blocks run, verbatim.

How a page shows a command (docs/index.md, "How these pages show commands"): a ```sh block
holds commands a test runs as the page gives them (every page's ```sh blocks, in order, as
one script: ``page_script``, run by ``run_page`` in a folder holding a copy of the
repository's flows/, with praxis on PATH and a home folder of its own); ```console is a
session shown with its output, each praxis command of it parsed by the CLI's parser;
```text is output or a form to fill in.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from praxis.cli_parser import parser
from praxis.errors import EXIT
from praxis.flows.definition.contract import PHASE_KEYS, TOP_KEYS
from praxis.flows.model.events import CATALOGUE
from sandbox.options import RayOptions

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", flags=re.S | re.M)
CONSOLE_BLOCK = re.compile(r"^```console\n(.*?)^```$", flags=re.S | re.M)
# The pages whose ```sh blocks a test below runs.
RUN_BY_A_TEST = ("tutorial.md", "how-to/agents.md")


def page_script(page: str) -> str:
    """The ```sh blocks of a docs page, in order, as one script."""
    return "".join(SH_BLOCK.findall((DOCS / page).read_text(encoding="utf-8")))


def run_page(page: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """Run a page's script in a folder holding a copy of flows/, with a home of its own:
    its result, the folder and the home."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    skip = shutil.ignore_patterns("runs", "run.lock", ".praxis")
    shutil.copytree(REPO / "flows", work / "flows", ignore=skip)
    env = {
        **os.environ,
        "HOME": str(home),
        # the tutorial's `export PATH="$PWD/.venv/bin:$PATH"`, wherever this venv is
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    res = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", page_script(page)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-3000:])
    return res, work, home


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
    res, _, home = run_page("tutorial.md", tmp_path)
    first = home / "first"
    (run,) = (first / "runs").iterdir()
    state = json.loads((run / "run.json").read_text())
    assert state["status"] == "done"
    assert state["params"] == {"min_amount": 100}
    with (run / "output" / "by_region.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert rows == [{"region": "East", "amount": "200"}, {"region": "North", "amount": "120"}]
    assert "waiting at the Gate after clean" in res.stdout


@pytest.mark.docker
def test_the_agent_guide_runs_its_example_without_a_model(
    tmp_path: Path, docker_image: str
) -> None:
    res, work, _ = run_page("how-to/agents.md", tmp_path)
    (run,) = (work / "flows" / "agent-example" / "runs").iterdir()
    state = json.loads((run / "run.json").read_text())
    assert state["status"] == "paused"  # at the Gate after the agent's turn
    events = (run / "events.jsonl").read_text()
    assert '"kind": "model_called"' in events and '"kind": "tool_called"' in events
    assert "waiting at the Gate after summarise" in res.stdout


def _praxis_commands(line: str) -> list[list[str]]:
    """The praxis commands of a console line, each as its words after `praxis` (a command
    is the first word of a simple command, after its VAR=value assignments)."""
    found = []
    lexer = shlex.shlex(line.split("<<", 1)[0], posix=True, punctuation_chars=True)
    lexer.whitespace_split = True  # only blanks and ();<>|& part words
    words = list(lexer)
    starts = [0] + [i + 1 for i, w in enumerate(words) if w in ("&&", "||", ";", "|")]
    for start in starts:
        at = start
        while at < len(words) and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[at]):
            at += 1
        if at < len(words) and (words[at] == "praxis" or words[at].endswith("/bin/praxis")):
            end = next(
                (i for i in range(at, len(words)) if words[i] in ("&&", "||", ";", "|")), len(words)
            )
            found.append(words[at + 1 : end])
    return found


def test_every_praxis_command_a_console_block_shows_parses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = []
    for page in pages():
        for block in CONSOLE_BLOCK.findall(page.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():
                if line.startswith("$ "):
                    shown += [(page.name, words) for words in _praxis_commands(line[2:])]
    assert len(shown) >= 3
    for page, words in shown:
        try:
            parser(words[0]).parse_args(words)
        except SystemExit:
            pytest.fail(f"{page}: praxis {shlex.join(words)}: {capsys.readouterr().err}")


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
    before = os.environ.get("COLUMNS")
    page = _hook().cli_page()
    assert os.environ.get("COLUMNS") == before  # the width is the page's alone
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
    rows = {line.split("|")[1].strip(): line for line in page.splitlines() if line[:3] == "| `"}
    for option in RayOptions.names(flow=True):
        assert "ray" in rows[f"`{option}`"].split("|")[2], option
    assert "node_root" not in page  # the operator's, not flow.yaml's


def test_the_exit_codes_page_holds_every_code_and_the_tree() -> None:
    page = _hook().exit_codes_page()
    for name, code in EXIT.items():
        assert f"| {code} | `{name}` |" in page
    assert "| 1 | `failed` | a phase failed |" in page  # with what it means (praxis/cli.py)
    assert "├── Refused               4" in page


def test_the_exit_codes_page_holds_the_sandbox_s_tree_and_what_is_caught_inside() -> None:
    page = _hook().exit_codes_page()
    for name in ("SandboxError ", "│       └── Lost ", "WalkRefused "):  # the sandbox's tree
        assert name in page, name
    for name in ("\nVanished ", "\n_Spent ", "\nFrameError "):  # caught inside
        assert name in page, name


def test_the_events_page_holds_every_kind_with_its_fields() -> None:
    page = _hook().events_page()
    for cls in CATALOGUE:
        (row,) = [line for line in page.splitlines() if line.startswith(f"| `{cls.kind}` |")]
        assert "RunBegun(" not in row  # a class's own words, never the dataclass signature
    (begun,) = [line for line in page.splitlines() if line.startswith("| `run_begun` |")]
    assert "`run`, `flow`, `phases`" in begun and "A run was made" in begun
