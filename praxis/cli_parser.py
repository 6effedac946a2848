"""The `praxis` command line's parser: every command, its arguments and their help
(``praxis.cli`` runs what it parses). Built one command at a time: a command line builds only
its own command's parser. docs/reference/cli.md is written from it; the commands and options
docs/reference/commands.md names are checked against it (tests/test_docs_commands.py).
"""

from __future__ import annotations

import argparse
from typing import Any

# The commands that may run a flow's code: they take --allow-local (isolation.py).
ALLOW_LOCAL = (
    *("run", "advance", "approve", "reject", "rerun", "status", "chat", "serve", "schedule"),
)
LOCAL_HELP = "let a flow asking for backend: local run its code on this host, unisolated"

# The commands a trace records (those on one run); `--trace` or PRAXIS_TRACE=1 turns it on.
TRACED = (
    *("run", "begin", "advance", "status", "approve", "reject", "manage", "accept"),
    *("rerun", "cancel", "log", "read", "publish"),
)

COMMANDS = (
    *("check", "run", "begin", "advance", "status", "runs", "schedule", "gc", "upgrade"),
    *("approve", "reject", "manage", "audit", "accept", "read", "rerun", "cancel", "publish"),
    *("log", "replay", "diff", "params", "chat", "sandbox", "users", "agents", "serve", "mcp"),
)


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line. Given ``command`` (a command line's first argument), only that
    command's own parser is built: building all of them costs every command ~6 ms."""
    p = argparse.ArgumentParser(prog="praxis", description="Run data flows in sandboxed kernels.")
    p.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    made: dict[str, argparse.ArgumentParser] = {}

    def add(
        name: str,
        help: str,
        *,
        run: bool = True,
        revision: bool = False,
    ) -> None:
        if command is not None and name != command:
            return
        c = sub.add_parser(name, help=help)
        c.add_argument(
            "flow",
            metavar="FLOW",
            nargs="?",
            default=".",
            help="a flow folder or its flow.yaml (default: the flow holding the current folder)",
        )
        if run:
            c.add_argument("--run", help="a run id (default: the newest run)")
        if name in TRACED:
            c.add_argument(
                "--trace",
                action="store_true",
                help="record the command and the route after it in the run's trace.jsonl "
                "(also: PRAXIS_TRACE=1)",
            )
        if revision:
            c.add_argument(
                "--expect-revision",
                type=int,
                metavar="N",
                help="refuse if the run changed since revision N",
            )
        made[name] = c

    def option(names: tuple[str, ...], *flags: str, **how: Any) -> None:
        """An option of the commands ``names`` (of those being built)."""
        for name in names:
            if name in made:
                made[name].add_argument(*flags, **how)

    add("check", "check a flow definition; exit 2 on errors", run=False)
    add("run", "begin a run and advance it", run=False)
    add("begin", "a new run paused at phase 1; prints its id", run=False)
    add("advance", "run until a Gate, a failure, the end", revision=True)
    add("status", "state and the exact next command")
    option(("status",), "--json", action="store_true")
    add("runs", "list runs, newest first (or delete some)", run=False)
    option(("runs",), "--delete", action="append", default=[], metavar="ID", help="delete a run")
    option(("runs",), "--keep", type=int, metavar="N", help="delete all but the newest N runs")
    add("schedule", "start the runs a schedule, trigger or deadline has due now", run=False)
    option(("schedule",), "--once", action="store_true", help="look once (from a system cron)")
    option(
        ("schedule",),
        "--no-advance",
        action="store_true",
        help="leave the started runs paused at their first phase",
    )
    add("gc", "remove the stored files that no run of the flow holds", run=False)
    add("upgrade", "move runs made before the flow's store into it (once)", run=False)
    add("approve", "approve the Gate and continue", revision=True)
    add("reject", "reopen a phase with a note, and continue", revision=True)
    option(("reject",), "--reopen", required=True, metavar="PHASE")
    option(("reject",), "--note", required=True, metavar="TEXT")
    option(
        ("approve", "reject"),
        "--gate",
        metavar="PHASE",
        help="the Gate you decide (the phase it follows)",
    )
    option(
        ("approve", "reject"),
        "--attempt",
        type=int,
        metavar="N",
        help="the attempt of the Gate's phase you reviewed (needed once it ran again)",
    )
    option(
        ("approve",),
        "--set",
        dest="values",
        action="append",
        metavar="FIELD=VALUE",
        help="a value of the Gate's form (flow.yaml review: {form:}); repeatable",
    )
    add("manage", "grant an agent the delegatable Gates of a run (or the flow) for a while")
    option(
        ("manage",), "--agent", required=True, metavar="NAME", help="the agent (praxis agents add)"
    )
    option(
        ("manage",),
        "--for",
        dest="duration",
        default="2h",
        metavar="DURATION",
        help="how long the grant lasts: 30m, 2h, 1d (default 2h, at most 30d)",
    )
    option(("manage",), "--off", action="store_true", help="revoke the agent's live grants")
    add("audit", "every decision, grant and refusal on the flow's runs: who, when", run=False)
    add("accept", "accept an output changed outside praxis", revision=True)
    option(("accept",), "--output", required=True, metavar="NAME")
    add("read", "print a run's file and record a receipt of reading it")
    option(("read",), "path", metavar="FILE", help="a file of the run (as route.read names it)")
    option(("read",), "--json", action="store_true", help="the text, sha256 and receipt as JSON")
    option(
        ("approve", "reject", "manage", "accept", "read"),
        "--as",
        dest="actor",
        choices=["person", "agent"],
        help="act as an agent (narrows who you are; never raises an agent to a person)",
    )
    add("rerun", "re-run from a phase (later phases become stale)", revision=True)
    option(("rerun",), "--from", dest="from_phase", required=True, metavar="PHASE")
    option(("rerun",), "--no-reuse", action="store_true", help="run every later phase again")
    option(("rerun",), "--partition", metavar="NAME", help="of a fan-out: only this partition")
    for flag, choice, words in (
        ("--keep-edits", "keep", "re-apply them to the new output by row key"),
        ("--discard-edits", "discard", "drop them (outputs back as their phases wrote them)"),
    ):
        option(
            ("rerun", "reject"),
            flag,
            dest="edits",
            action="store_const",
            const=choice,
            help=f"outputs edited at a Gate that this replaces: {words}",
        )
    option(
        ("approve", "reject"),
        "--receipt",
        dest="receipts",
        action="append",
        metavar="ID",
        help="the receipt `praxis read` gave for a file of route.read (an agent must, for each)",
    )
    add("cancel", "cancel a run", revision=True)
    add("publish", "write a done run's approved outputs to their tables (flow.yaml publish:)")
    add("log", "the run's events")
    option(("log",), "--follow", action="store_true", help="and what running phases print")
    add("replay", "the run's trace, per fact change; recomputes every route")
    add("diff", "what changed from run A to run B: parameters, phases, output rows", run=False)
    option(("diff",), "before", metavar="RUN_A", help="the earlier run's id")
    option(("diff",), "after", metavar="RUN_B", help="the later run's id")
    option(("diff",), "--json", action="store_true")
    add("params", "a notebook's parameters, their defaults and types", run=False)
    option(("params",), "--phase", metavar="ID", help="only this notebook phase")
    option(
        ("run", "advance", "schedule"),
        "--quiet",
        action="store_true",
        help="hide what phases print",
    )
    option(
        ("run",),
        "--partitions",
        metavar="A..B",
        help="a backfill: only these partitions of each fan-out (A..B, or A,B,C)",
    )
    option(
        ("run", "advance", "schedule"),
        "--no-reuse",
        action="store_true",
        help="run every phase, even one a done attempt of this or another run stands for",
    )
    option(
        ("run", "begin", "rerun"),
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a run parameter (flow.yaml params:), typed by its default",
    )

    add("chat", "write or change a flow with a model (FLOW may be new)", run=False)
    option(("chat",), "--message", metavar="TEXT", help="send one message, print the answer, exit")
    option(("chat",), "--resume", action="store_true", help="continue the newest transcript")
    option(
        ("chat",), "--max-calls", type=int, default=30, metavar="N", help="model calls per message"
    )
    option(
        ALLOW_LOCAL,
        "--allow-local",
        action="store_true",
        help=LOCAL_HELP,
    )

    if command in (None, "sandbox"):
        sb = sub.add_parser(
            "sandbox", help="build the sandbox image, show status, prune containers"
        )
        sb.add_argument("action", choices=["build", "status", "prune"])
        sb.add_argument(
            "flow",
            metavar="FLOW",
            nargs="?",
            help="build: also the image with this flow's packages",
        )
        sb.add_argument(
            "--label",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="prune: only containers carrying this label (repeatable)",
        )
    if command in (None, "users"):
        us = sub.add_parser("users", help="the people who decide Gates: add, list, remove")
        us.add_argument("action", choices=["add", "list", "remove", "password", "token"])
        us.add_argument("name", metavar="NAME", nargs="?")
        us.add_argument("--role", action="append", default=[], metavar="ROLE")
        us.set_defaults(flow=".")
    if command in (None, "agents"):
        ag = sub.add_parser("agents", help="agents and their tokens: add, list, revoke")
        ag.add_argument("action", choices=["add", "list", "revoke"])
        ag.add_argument("name", metavar="NAME", nargs="?")
        ag.set_defaults(flow=".")
    if command in (None, "serve"):
        sv = sub.add_parser("serve", help="the reviewer web UI over every flow below DIR")
        sv.add_argument("--root", default=".", metavar="DIR")
        sv.add_argument("--port", type=int, default=8765)
        sv.add_argument(
            "--max-runs",
            type=int,
            default=4,
            metavar="N",
            help="runs advanced at once (each in its own sandbox; more wait for a place)",
        )
        sv.add_argument("--allow-local", action="store_true", help=LOCAL_HELP)
        sv.add_argument(
            "--notify-command",
            metavar="COMMAND",
            help="run COMMAND (JSON on its stdin) when a run waits at a Gate, fails or is done "
            "(default: $PRAXIS_NOTIFY_COMMAND)",
        )
        sv.set_defaults(flow=".")
    if command in (None, "mcp"):
        mc = sub.add_parser("mcp", help="an MCP server over stdio for agents (flows below DIR)")
        mc.add_argument("--root", default=".", metavar="DIR")
        mc.set_defaults(flow=".")
    return p


class _Version(argparse.Action):
    """--version, looked up only when asked for (importlib.metadata costs every command
    25 ms otherwise)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"praxis {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("praxis")
    except PackageNotFoundError:
        return "(not installed)"
