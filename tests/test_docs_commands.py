"""Every praxis command the README and the docs show is run by a test, or parsed by the CLI's
parser where it cannot run here, with the reason in ``NOT_RUN``.

- ```sh blocks: run verbatim by tests/test_docs.py (``RUN_BY_A_TEST``).
- The sales-report session (``SESSION``: the README's ```console block and the tutorial's
  two): run here, in a copy of flows/, each command as the page shows it, but for the run's
  id and revision, which are that run's own. What the page shows praxis print is, line by
  line, what it printed (times, ids, revisions and the bars of the timeline aside; the page
  may leave out lines, the phases' own prints among them). The commands praxis prints
  (``then approve:``, ``or reopen``, ``next:``) are those the page shows, and each is run:
  the approve and, on a second run, the reject.
- Every other ```console block that shows a praxis command is in ``NOT_RUN`` with why it
  cannot run here; each command it shows, typed (``$``) or printed, parses.
- The synopsis of reference/commands.md (a ```text block): each ``praxis NAME`` is a command
  and each option it names is one of that command's.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from praxis.cli_parser import COMMANDS, parser

from .test_docs import CONSOLE_BLOCK, DOCS, REPO, _praxis_commands, pages

# (page, index of the ```console block in it): the blocks of the one session a test runs.
SESSION = {("README.md", 0), ("docs/tutorial.md", 0), ("docs/tutorial.md", 1)}
AGENTS, CHAT, GATES = (f"docs/how-to/{page}.md" for page in ("agents", "chat", "gates"))
# (page, index of the ```console block in it): why its commands cannot run in a test here.
NOT_RUN = {
    (AGENTS, 0): "needs a PostgreSQL role and database made as the server's superuser, and a"
    " profile in ~/.config; tests/reliability/test_data_sources.py runs that flow against the"
    " suite's own server",
    (AGENTS, 1): "calls OpenAI: an API key and the network",
    (AGENTS, 2): "the trace of a run of a flow the page only names (flows/f);"
    " tests/flows/test_trace.py replays real traces",
    (CHAT, 0): "a conversation with a model (PRAXIS_MODEL); tests/chat/ runs the chat with the"
    " scripted model",
    (CHAT, 1): "a model's session; tests/chat/test_example_session.py runs the shipped one",
    (CHAT, 2): "resumes the model's session above",
    (GATES, 0): "a server that runs until Ctrl-C; tests/web/ serves the same app",
    (GATES, 1): "approves a run of a flow the page only names (weekly);"
    " tests/reliability/test_gate_forms.py approves a form with --set",
}
RUN_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{4}\b")
# A command praxis prints in a session: on a line of its own, or after ``next:`` and the like.
PRINTED = re.compile(rf"(?:^\s*|:\s)(praxis (?:{'|'.join(COMMANDS)})(?=\s|$).*)$")


def console_blocks() -> list[tuple[str, int, str]]:
    """(page, from the repository's root; index of the block in its page; its text, lines
    continued with a backslash joined) of every ```console block of the README and docs/."""
    found = []
    for page in [REPO / "README.md", *pages()]:
        for at, block in enumerate(CONSOLE_BLOCK.findall(page.read_text(encoding="utf-8"))):
            name = page.relative_to(REPO).as_posix()
            found.append((name, at, block.replace("\\\n", " ")))
    return found


def shown(block: str) -> list[list[str]]:
    """The praxis commands a console block shows, each as its words after ``praxis``: those
    typed (``$`` lines) and those praxis prints for the reader to type next."""
    found = []
    for line in block.splitlines():
        if line.startswith("$ "):
            found += _praxis_commands(line[2:])
        elif m := PRINTED.search(line):
            found.append(shlex.split(m.group(1))[1:])
    return found


def parses(words: list[str]) -> str | None:
    """None when the CLI's parser takes ``words``, else why not (its message is on stderr)."""
    try:
        parser(words[0]).parse_args(words)
    except SystemExit:
        return "refused by the parser"
    return None


def test_every_console_block_with_a_praxis_command_is_run_or_says_why_not() -> None:
    with_commands = {(page, at) for page, at, block in console_blocks() if shown(block)}
    assert with_commands == SESSION | set(NOT_RUN), "add the block to SESSION or NOT_RUN"


def test_every_praxis_command_a_page_shows_parses(capsys: pytest.CaptureFixture[str]) -> None:
    commands = [(page, words) for page, _, block in console_blocks() for words in shown(block)]
    assert len(commands) >= 15
    for page, words in commands:
        assert parses(words) is None, f"{page}: praxis {shlex.join(words)}: {capsys.readouterr()}"


def subparser(name: str) -> argparse.ArgumentParser:
    (commands,) = [a for a in parser(name)._actions if a.dest == "command"]
    assert isinstance(commands.choices, dict)
    found = commands.choices[name]
    assert isinstance(found, argparse.ArgumentParser)
    return found


def test_the_command_synopsis_names_only_commands_and_their_options() -> None:
    text = (DOCS / "reference" / "commands.md").read_text(encoding="utf-8")
    (synopsis,) = re.findall(r"^```text\n(praxis .*?)^```$", text, flags=re.S | re.M)
    named = set()
    for line in synopsis.splitlines():
        if not line.startswith("praxis "):
            continue
        name = line.split()[1]
        sub = parser() if name.startswith("-") else subparser(name)
        named |= set() if name.startswith("-") else {name}
        flags = {f for a in sub._actions for f in a.option_strings}
        for flag in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", line.split("  ")[0]):
            assert flag in flags, (name, flag)
    assert named == set(COMMANDS), "the synopsis lacks, or has too many, commands"


# --- the session, run -------------------------------------------------------------------


def normal(line: str) -> str:
    """A line of output as the page may show it: ids, times, revisions and bars aside."""
    line = RUN_ID.sub("RUN", line)
    line = re.sub(r"\d+(\.\d+)? (s|ms)\b", "T", line)
    line = re.sub(r"(revision|--expect-revision) \d+", r"\1 N", line)
    line = line.replace("█", "").replace(".venv/bin/praxis", "praxis")
    return " ".join(line.split())


def session_blocks(page: str) -> list[str]:
    return [block for name, at, block in console_blocks() if (name, at) in SESSION and name == page]


class Shell:
    """Runs commands as a reader would: in a copy of flows/, praxis on PATH, a home of its own."""

    def __init__(self, tmp: Path) -> None:
        self.work, home = tmp / "work", tmp / "home"
        home.mkdir(parents=True)
        skip = shutil.ignore_patterns("runs", "run.lock", ".praxis")
        shutil.copytree(REPO / "flows", self.work / "flows", ignore=skip)
        bin_dir = str(Path(sys.executable).parent)
        self.env = {
            **os.environ,
            "HOME": str(home),
            "PYTHONUNBUFFERED": "1",  # the page shows stdout and stderr as they came
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def __call__(self, words: list[str]) -> list[str]:
        res = subprocess.run(
            ["praxis", *words],
            cwd=self.work,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
        )
        assert res.returncode == 0, (words, res.stdout[-3000:])
        return res.stdout.splitlines()


def matches(page: str, block: str, printed: list[str]) -> None:
    """Each line the block shows after its command is a line printed, in the same order."""
    shown_lines = [normal(line) for line in block.splitlines()[1:] if line.strip()]
    got = iter([normal(line) for line in printed])
    for line in shown_lines:
        assert any(line == g for g in got), f"{page} shows {line!r}, not printed:\n" + "\n".join(
            printed
        )


def begun(printed: list[str]) -> str:
    """The id of the run a ``praxis run`` began (its first line: ``run ID of FLOW``)."""
    (run_id,) = [m.group(1) for line in printed if (m := re.fullmatch(r"run (\S+) of .*", line))]
    return run_id


def as_run(words: list[str], run_id: str, printed: list[str]) -> list[str]:
    """The page's command with the run's own id, and the revision praxis printed for it."""
    words = [RUN_ID.sub(run_id, w) for w in words]
    mine = [shlex.split(m.group(1))[1:] for line in printed if (m := PRINTED.search(line))]
    (same,) = [w for w in mine if w[0] == words[0]]
    if "--expect-revision" in words:
        at = words.index("--expect-revision") + 1
        words[at] = same[same.index("--expect-revision") + 1]
    assert words == same, f"the page shows {words}, praxis printed {same}"
    return words


@pytest.mark.docker
def test_the_sales_report_session_runs_as_the_pages_show_it(
    tmp_path: Path, docker_image: str
) -> None:
    for page in ("README.md", "docs/tutorial.md"):
        (run_block, *rest) = session_blocks(page)
        assert shown(run_block)[0] == ["run", "flows/sales-report"]
        sh = Shell(tmp_path / page.replace("/", "-"))
        printed = sh(["run", "flows/sales-report"])
        matches(page, run_block, printed)
        run_id = begun(printed)
        approve, reject = shown(run_block)[1:]
        done = sh(as_run(approve, run_id, printed))
        assert any("every phase done" in line for line in done)
        for status_block in rest:  # the tutorial's: status when done, and its next: log
            typed, logged = shown(status_block)
            assert typed == ["status", "flows/sales-report"]
            status = sh(typed)
            matches(page, status_block, status)
            log = sh(as_run(logged, run_id, status))
            assert any("run_state" in line and "status=done" in line for line in log)
        again = sh(["run", "flows/sales-report"])  # the other choice at the Gate: reject
        reopened = sh(as_run(reject, begun(again), again))
        assert any("waiting at the Gate after flag" in line for line in reopened)
