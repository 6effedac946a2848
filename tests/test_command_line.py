"""One builder of command lines (issue 41, part 3): a ``Command`` is rendered as argv, as the
line a person types and as the MCP tool call, from the same typed parameters; the CLI's parser
reads back every rendering; the route's commands and MCP's calls are the same commands; no
other module builds one (``tests/lint_command_lines.py``, run by ``make lint``)."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import pytest

from praxis import command_line
from praxis.cli_parser import parser
from praxis.command_line import NOTE, Command, typed
from praxis.flows.report.route import Facts, route

from .lint_command_lines import problems, problems_in

APPROVE = Command(
    "approve", "f", run="R", gate="b", attempt=2, expect_revision=7, actor="agent",
    receipts=("r1", "r2"), program=("/v/bin/praxis",),
)  # fmt: skip


def test_a_command_is_one_argv_and_one_tool_call() -> None:
    assert APPROVE.argv() == [
        "/v/bin/praxis", "approve", "f", "--run", "R", "--gate", "b", "--attempt", "2",
        "--expect-revision", "7", "--as", "agent", "--receipt", "r1", "--receipt", "r2",
    ]  # fmt: skip
    assert APPROVE.tool_call() == {
        "tool": "approve",
        "arguments": {"flow": "f", "run": "R", "gate": "b", "attempt": 2, "expect_revision": 7,
                      "receipts": ["r1", "r2"]},
    }  # fmt: skip
    read = Command("read", "f", path="runs/R/output/b.csv", run="R", actor="agent")
    assert read.argv() == ["praxis", "read", "f", "runs/R/output/b.csv", "--run", "R",
                           "--as", "agent"]  # fmt: skip
    assert read.tool_call() == {
        "tool": "read_file", "arguments": {"flow": "f", "path": "runs/R/output/b.csv", "run": "R"}
    }  # fmt: skip
    advance = Command("advance", "f", run="R", expect_revision=4)
    assert advance.tool_call() == {
        "tool": "advance", "arguments": {"flow": "f", "run": "R", "expect_revision": 4}
    }  # fmt: skip
    keep = Command("rerun", "f", run="R", from_phase="c", edits="keep", expect_revision=3)
    assert keep.argv()[1:] == ["rerun", "f", "--run", "R", "--from", "c", "--keep-edits",
                               "--expect-revision", "3"]  # fmt: skip
    wanted = {"flow": "f", "run": "R", "from_phase": "c", "edits": "keep", "expect_revision": 3}
    assert keep.tool_call() == {"tool": "rerun", "arguments": wanted}
    # a person's commands are no tool of the agent's server
    assert Command("accept", "f", output="x").tool_call() is None
    assert Command("run", "f").tool_call() is None
    with pytest.raises(ValueError, match="keep or discard"):
        Command("rerun", "f", edits="--keep-edits")


def test_the_typed_line_quotes_each_word_for_the_shell_and_a_note_always() -> None:
    reject = Command(
        "reject", "my flows/demo", run="R", gate="b", attempt=1, reopen="b", note=NOTE,
        expect_revision=5,
    )  # fmt: skip
    assert reject.line() == (
        "praxis reject 'my flows/demo' --run R --gate b --attempt 1 --reopen b --note '...' "
        "--expect-revision 5"
    )
    said = dataclasses.replace(reject, note="it's $HOME; rm -rf /")
    assert shlex.split(said.line()) == said.argv()  # what the shell reads is the argv
    assert typed("status", "x;y") == "praxis status 'x;y'"
    assert typed("sandbox build", ".") == "praxis sandbox build ."
    assert typed("serve", port=8766) == "praxis serve --port 8766"


@pytest.mark.parametrize(
    "command",
    [
        Command("advance", "f", run="R", expect_revision=3, allow_local=True),
        Command(
            "approve",
            "f",
            run="R",
            gate="b",
            attempt=2,
            expect_revision=7,
            actor="agent",
            receipts=("r1", "r2"),
        ),  # fmt: skip
        Command(
            "reject",
            "f",
            run="R",
            gate="b",
            attempt=1,
            reopen="a",
            note="why",
            edits="discard",
            expect_revision=4,
            actor="person",
        ),  # fmt: skip
        Command("rerun", "f", run="R", from_phase="c", edits="keep", expect_revision=3),
        Command("accept", "f", run="R", output="x.csv", expect_revision=9),
        Command("read", "f", path="runs/R/output/b.csv", run="R", actor="agent"),
        Command("cancel", "f", run="R", expect_revision=2),
        Command("log", "f", run="R", follow=True),
        Command("status", "f", run="R", json=True),
        Command("chat", "f", resume=True),
    ],
    ids=lambda c: c.verb,
)
def test_the_cli_parser_reads_back_every_command_the_builder_writes(command: Command) -> None:
    args = parser().parse_args(command.argv()[1:])
    assert args.command == command.verb and args.flow == command.flow
    for name in ("path", *command_line.OPTIONS, *command_line.FLAGS):
        value = getattr(command, name)
        if value is None or value in ((), False):
            continue
        got = getattr(args, name)
        assert (tuple(got) if name == "receipts" else got) == value, name


def test_the_routes_commands_and_mcps_calls_are_the_same_commands() -> None:
    at_gate = Facts(
        flow="flows/f", run="R", status="paused", revision=7, cursor_phase="c", gate="b",
        delegatable=True, managed=True, read=(("runs/R/output/b.csv", "s"),), attempt=2,
        receipts=(("runs/R/output/b.csv", "r1"),), phases=("a", "b", "c"),
        program=("python", "-m", "praxis"),
    )  # fmt: skip
    r = route(at_gate)
    assert r.to_dict()["commands"] == r.commands == [c.argv() for c in r.steps]
    assert [c.tool_call() for c in r.steps] == [
        {"tool": "approve", "arguments": {"flow": "flows/f", "run": "R", "gate": "b",
                                          "attempt": 2, "expect_revision": 7,
                                          "receipts": ["r1"]}},
        {"tool": "reject", "arguments": {"flow": "flows/f", "run": "R", "gate": "b",
                                         "attempt": 2, "reopen": "b", "note": NOTE,
                                         "expect_revision": 7, "receipts": ["r1"]}},
    ]  # fmt: skip


def test_no_module_of_praxis_builds_a_command_line_but_the_builder() -> None:
    assert problems(Path(command_line.__file__).parent) == []


def test_the_check_finds_a_command_line_built_by_hand() -> None:
    by_hand = (
        'argv = ["praxis", "advance", flow, "--expect-revision", str(rev)]\n'
        'line = f"praxis rerun {flow} --run {run} --from {phase}"\n'
        'hint = f"then: praxis sandbox build {flow}"\n'
    )
    found = problems_in(by_hand, "praxis/flows/engine/x.py")
    assert sorted(p.split(": ", 1)[0] for p in found) == [
        "praxis/flows/engine/x.py:1",
        "praxis/flows/engine/x.py:2",
        "praxis/flows/engine/x.py:3",
    ]
    prose = '"""praxis rerun --from PHASE re-runs."""\nwhy = f"see: praxis status, {n} fail"\n'
    assert problems_in(prose, "praxis/x.py") == []
    assert problems_in('p.add_argument("--expect-revision")\n', "praxis/cli_parser.py") == []


def test_every_tool_call_the_builder_makes_names_the_tools_own_arguments() -> None:
    import inspect

    from praxis.mcp_server import Tools

    made = [
        Command("advance", "f", run="R", expect_revision=3),
        APPROVE,
        Command(
            "reject",
            "f",
            run="R",
            gate="b",
            attempt=1,
            reopen="a",
            note="why",
            edits="keep",
            expect_revision=4,
            receipts=("r",),
        ),  # fmt: skip
        Command("rerun", "f", run="R", from_phase="c", edits="discard", expect_revision=3),
        Command("read", "f", path="x.csv", run="R", actor="agent"),
        Command("cancel", "f", run="R", expect_revision=2),
        Command("log", "f", run="R", follow=True),
        Command("status", "f", run="R", json=True),
    ]
    assert {c.verb for c in made} == set(command_line.TOOLS)
    for command in made:
        call = command.tool_call()
        assert call is not None
        accepted = inspect.signature(getattr(Tools, call["tool"])).parameters
        assert set(call["arguments"]) <= set(accepted), call
