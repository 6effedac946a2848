"""The `praxis` command's edges: --version, a busy port, phase text escaped on the terminal,
near misses named. (Printed commands, closed pipes and FLOW: test_terminal.py.)"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from praxis.cli import main
from praxis.cli_parser import COMMANDS, parser

from .flows.helpers import one_script_flow, write_flow
from .labels import TEST_LABELS

CONTROL = ("\x1b", "\x07", "\r")
# an exception message and a CSV cell that try to retitle the terminal, set the clipboard
# (OSC 52) and overwrite the line with a fake success mark
HOSTILE = "\\x1b]0;pwned\\x07 \\x1b]52;c;cHduZWQ=\\x07 \\r✓ done"


def newest_run(flow: Path) -> Path:
    return sorted((flow / "runs").iterdir())[-1]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("praxis ")


# -- serve on a busy port --------------------------------------------------------------------


def test_serve_on_a_busy_port_is_one_line_and_exit_6(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = run_cli(capsys, "serve", "--root", str(tmp_path), "--port", str(port))
    assert code == 6
    assert out == ""
    assert err.splitlines() == [
        f"PortBusy: port {port} on 127.0.0.1 is in use by another program",
        f"  next: praxis serve --port {port + 1}",
    ]


# -- phase text on the terminal --------------------------------------------------------------

HOSTILE_FLOW = """
    flow: hostile
    sandbox: {sandbox}
    phases:
      - {{id: write, kind: script, script: write.py, outputs: [t.csv], review: required}}
      - {{id: boom, kind: script, script: boom.py, inputs: {{working: [t.csv]}}}}
"""
HOSTILE_FILES = {
    "write.py": f"""
        print("{HOSTILE}")
        with open("t.csv", "w") as fh:
            fh.write("id,note\\n1,{HOSTILE}\\n")
        with open("sc\\x1b[2Jratch.txt", "w") as fh:
            fh.write("x")
    """,
    "boom.py": f'raise RuntimeError("{HOSTILE}")\n',
}


def _assert_no_control(text: str) -> None:
    for byte in CONTROL:
        assert byte not in text, repr(text)


def _hostile_session(flow: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "run", str(flow))
    assert code == 0 and "waiting at the Gate after write" in out, err
    assert "^[]0;pwned^G" in out  # the Gate's table preview shows the cell, escaped
    _assert_no_control(out + err)
    code, out, err = run_cli(capsys, "status", str(flow), "--json")
    revision = str(__import__("json").loads(out)["revision"])
    code, out, err = run_cli(capsys, "approve", str(flow), "--expect-revision", revision)
    assert code == 1
    assert "PhaseFailed: boom: " in err and "^[]52;c;" in err
    _assert_no_control(out + err)
    for command in ("status", "log", "runs"):
        code, out, err = run_cli(capsys, command, str(flow))
        assert code == 0, err
        _assert_no_control(out + err)
    assert "^[]0;pwned" in run_cli(capsys, "status", str(flow))[1]


def test_phase_text_is_escaped_on_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], allow_local: None
) -> None:
    flow = write_flow(tmp_path / "f", HOSTILE_FLOW.format(sandbox="{backend: fake}"), HOSTILE_FILES)
    _hostile_session(flow, capsys)


@pytest.mark.docker
def test_phase_text_is_escaped_on_the_terminal_in_docker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_image: str
) -> None:
    labels = ", ".join(f'"{k}": "{v}"' for k, v in TEST_LABELS.items())
    sandbox = f"{{backend: docker, image: '{docker_image}', labels: {{{labels}}}, timeout: 120}}"
    flow = write_flow(tmp_path / "f", HOSTILE_FLOW.format(sandbox=sandbox), HOSTILE_FILES)
    _hostile_session(flow, capsys)


# -- what a failed output check says ----------------------------------------------------------


def test_a_missing_output_names_the_near_miss_and_header_only_names_may_be_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], allow_local: None
) -> None:
    flow = one_script_flow(tmp_path / "f", "open('b_typo.csv', 'w').write('id\\n1\\n')\n", "b.csv")
    code, _, err = run_cli(capsys, "run", str(flow))
    assert code == 1
    assert (
        "PhaseFailed: a: output b.csv was not written; it wrote 'b_typo.csv' "
        "(now in scratch/a/): a typo?"
    ) in err
    (flow / "s.py").write_text("open('b.csv', 'w').write('id\\n')\n")
    assert main(["rerun", str(flow), "--from", "a"]) == 0
    code, _, err = run_cli(capsys, "advance", str(flow))
    assert code == 1
    assert (
        "output b.csv has a header and no rows (list it under may_be_empty: in flow.yaml "
        "if a may write no rows)"
    ) in err


# -- praxis check ----------------------------------------------------------------------------


def test_check_names_phases_by_id_and_suggests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = write_flow(
        tmp_path / "f",
        """
        sandbox: {backend: docker, memroy: 1g, pids: 0, packages: ['scikit learn']}
        phases:
          - {id: clean, kind: script, script: s.py, outputs: [clean.csv], review: yes}
          - {id: flag, kind: script, script: s.py, inputs: {working: [clean.cvs]}}
        """,
        {"s.py": ""},
    )
    code, out, _ = run_cli(capsys, "check", str(flow))
    assert code == 2
    problems = out.splitlines()
    assert problems[:2] == [
        "flow.yaml: sandbox.memroy: unknown key for the docker backend (did you mean 'memory'?)",
        "flow.yaml: sandbox.pids: must be between 32 and 65536, got 0",
    ]
    assert problems[2].startswith(
        "flow.yaml: sandbox.packages[0]: 'scikit learn' is not a package requirement ("
    )
    assert problems[3:] == [
        "flow.yaml: phases[clean].review: true (yes/no) is not a review; write review: required "
        "(a Gate after this phase) or review: none",
        "flow.yaml: phases[flag].inputs.working[0]: 'clean.cvs' is neither a file of the flow "
        "nor an output of an earlier phase; did you mean 'clean.csv'?",
    ]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_parser_built_alone_is_the_one_built_with_all(command: str) -> None:
    """A command line builds only its command's parser: same options, defaults and help."""
    whole = parser()
    assert list(subcommands(whole)) == list(COMMANDS)
    alone = subcommands(parser(command))
    assert list(alone) == [command]
    assert alone[command].format_help() == subcommands(whole)[command].format_help()
    assert defaults(alone[command]) == defaults(subcommands(whole)[command])


def defaults(p: argparse.ArgumentParser) -> dict[str, object]:
    return {a.dest: a.default for a in p._actions} | dict(p._defaults)


def subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices)


def test_a_mistyped_command_is_told_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["stauts"])
    assert exit.value.code == 2
    assert "invalid choice: 'stauts' (choose from 'check', 'run'," in capsys.readouterr().err


CHECKED_FLOW = """
    flow: checked
    sandbox: {backend: fake}
    phases:
      - id: write
        kind: script
        script: write.py
        outputs: [t.csv]
        review: required
        checks:
          t.csv: {values: {action: [keep, drop]}}
"""


def test_the_gate_preview_shows_the_rows_a_check_flags_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], allow_local: None
) -> None:
    write = (
        'open("t.csv", "w").write("id,action\\n" + "".join(f"{n},keep\\n" for n in range(30)))\n'
    )
    flow = write_flow(tmp_path / "checked", CHECKED_FLOW, {"write.py": write})
    code, out, err = run_cli(capsys, "run", str(flow))
    assert code == 0 and "waiting at the Gate after write" in out, err
    assert "flags first" not in out  # as the phase wrote it, every check passes
    table = newest_run(flow) / "output" / "t.csv"
    table.write_text(table.read_text().replace("25,keep", "25,maybe"))  # a hand edit
    code, out, err = run_cli(capsys, "advance", str(flow))
    lines = out.splitlines()
    at = lines.index("    (rows a check flags first: 26)")
    assert lines[at - 1].split() == ["#", "id", "action"]
    assert lines[at + 1].split() == ["26", "25", "maybe"]  # data row 26 holds id 25
    assert lines[at + 2].split() == ["1", "0", "keep"]


HALF_MADE = """
import argparse, gc, sys
from praxis import cli

class HalfMade:  # what an interrupt leaves when it lands inside a library's constructor
    def __del__(self):
        raise AttributeError("'_UnixSelectorEventLoop' object has no attribute '_ssock'")

async def never_awaited():
    pass

def interrupted(args):
    global left, pending
    left, pending = HalfMade(), never_awaited()
    raise KeyboardInterrupt

cli._run = interrupted
code = cli._dispatch(argparse.Namespace(command="advance", flow=None))
del left, pending
gc.collect()
sys.exit(code)
"""


def test_an_interrupt_that_cut_a_library_short_prints_no_traceback() -> None:
    """SIGTERM or Ctrl-C may land inside a library (jupyter_client making an event loop): the
    half-made object's ``__del__`` and the coroutine left unawaited say nothing on the
    terminal; the command says it was cancelled and exits 130."""
    done = subprocess.run(
        [sys.executable, "-c", HALF_MADE], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 130, done.stderr
    assert "cancelled (Ctrl-C): the run is recorded as cancelled" in done.stderr
    assert "Traceback" not in done.stderr and "never awaited" not in done.stderr, done.stderr
