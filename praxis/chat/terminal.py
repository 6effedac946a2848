"""``praxis chat FLOW``: the conversation in a terminal, or one message with ``--message``.

Lines starting with ``/`` are commands for praxis, not the model: ``/undo`` (restore the file
the last write changed), ``/diff`` (this session's changes), ``/check`` (the contract report),
``/run`` (the whole flow in a throwaway run, to its first Gate), ``/quit``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from praxis.agent.approvals import terminal_approver
from praxis.argv import shown
from praxis.command_line import typed
from praxis.errors import PraxisError
from praxis.flows.definition import contract
from praxis.terminal import command as printed
from praxis.terminal import commands_in

from .chat import Chat, ChatEvent, open_chat, resolve_chat_model
from .trial import try_phases
from .workfiles import unified_diff

RESULT_LINES = 6
HELP = "commands: /undo /diff /check /run /quit (anything else goes to the model)"


def printer(out: TextIO) -> Callable[[ChatEvent], None]:
    def show(event: ChatEvent) -> None:
        if event.kind == "assistant":
            out.write(f"model: {event.text.strip()}\n")
        elif event.kind == "tool":
            out.write(f"  -> {event.text}\n")
        elif event.kind == "diff":
            out.write(_indent(event.text, "     ") + "\n")
        elif event.kind == "result" and event.tool in ("check", "try_phase"):
            out.write(_indent(event.text, "     ") + "\n")
        elif event.kind == "result" and event.tool != "write_file":
            lines = event.text.splitlines()
            shown = lines[:RESULT_LINES] + (
                [f"... ({len(lines) - RESULT_LINES} more lines)"]
                if len(lines) > RESULT_LINES
                else []
            )
            out.write(_indent("\n".join(shown), "     ") + "\n")
        elif event.kind == "limit":
            out.write(f"praxis: {event.text}\n")
        out.flush()

    return show


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.rstrip("\n").splitlines())


def main(
    flow: str,
    *,
    message: str | None = None,
    resume: bool = False,
    max_calls: int = 30,
    sandbox: dict[str, Any] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Run the chat; returns the exit code (0 also when the call limit ended a turn)."""
    out = stdout or sys.stdout
    root = Path(flow)
    if root.name == "flow.yaml" and root.is_file():
        root = root.parent
    if root.exists() and not root.is_dir():
        return _fail(f"Usage: {flow} is not a folder", "praxis chat FOLDER (a new one is created)")
    try:
        model = resolve_chat_model(root)
        chat = open_chat(
            root,
            model=model,
            resume=resume,
            approver=terminal_approver(stdin, sys.stderr),
            sandbox=sandbox,
            max_calls=max_calls,
            show=printer(out),
        )
    except PraxisError as exc:  # no model, an unreadable transcript, a folder off limits
        return _error(exc, flow)
    try:
        if message is not None:
            try:
                chat.send(message)
            except KeyboardInterrupt:
                chat.interrupted()
                out.write("\npraxis: stopped; the transcript keeps what happened\n")
                return 130
            resume_it = printed(typed("chat", flow, resume=True))
            out.write(
                f"praxis: transcript {shown(chat.transcript.path)}; go on with: {resume_it}\n"
            )
            return 0
        return repl(chat, flow, stdin or sys.stdin, out)
    except PraxisError as exc:  # the model cannot be called; the transcript keeps the turn
        return _error(exc, flow)
    finally:
        chat.close()


def repl(chat: Chat, flow: str, inp: TextIO, out: TextIO) -> int:
    history = _readline(chat, inp)
    resumed = f", resumed with {len(chat.messages)} messages" if chat.messages else ""
    out.write(f"praxis chat: {chat.root} (session {chat.session}{resumed})\n{HELP}\n")
    try:
        while True:
            line = _read(inp, out)
            if line is None or line.strip() in ("/quit", "/exit"):
                check_it = printed(typed("check", flow))
                out.write(f"praxis: bye. Check the flow with: {check_it}\n")
                return 0
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                command(chat, text, out)
            else:
                try:
                    chat.send(text)
                except KeyboardInterrupt:
                    chat.interrupted()
                    out.write("\npraxis: stopped this answer; write another message or /quit\n")
    finally:
        history()


def command(chat: Chat, text: str, out: TextIO) -> None:
    name = text.split()[0]
    if name == "/undo":
        write = chat.undo()
        if write is None:
            out.write("praxis: nothing to undo in this session\n")
        else:
            out.write(f"praxis: undid the last write of {write.path}\n")
            out.write(unified_diff(write.path, write.after, write.before))
    elif name == "/diff":
        out.write(chat.tools.files.session_diff())
    elif name == "/check":
        flow, report = contract.load(chat.root)
        out.write("".join(line + "\n" for line in report.lines()))
        out.write(
            f"{flow.name}: ok, {len(flow.phases)} phase(s)\n" if flow else "flow.yaml has errors\n"
        )
    elif name == "/run":
        out.write("praxis: running the flow in a throwaway copy (to its first Gate)...\n")
        out.write(
            try_phases(chat.root, None, sandbox=chat.tools.sandbox, approver=chat.tools.approver)
            + "\n"
        )
        out.write(f"praxis: for a real run: {typed('run', shown(chat.root))}\n")
    else:
        out.write(f"praxis: unknown command {name}; {HELP}\n")
    out.flush()


def _read(inp: TextIO, out: TextIO) -> str | None:
    if inp is sys.stdin and inp.isatty():
        try:
            return input("you> ")
        except EOFError:
            return None
    out.write("you> ")
    out.flush()
    line = inp.readline()
    return line if line else None


def _readline(chat: Chat, inp: TextIO) -> Callable[[], None]:
    """Load the chat's readline history (a terminal only); returns the function saving it."""
    if inp is not sys.stdin or not inp.isatty():
        return lambda: None
    try:
        import readline
    except ImportError:
        return lambda: None
    path = chat.tools.files.chat_dir() / "history"
    if path.is_symlink():
        return lambda: None
    try:
        readline.read_history_file(path)
    except OSError:
        pass

    def save() -> None:
        try:
            readline.set_history_length(1000)
            readline.write_history_file(path)
        except OSError:
            pass

    return save


def _error(exc: PraxisError, flow: str) -> int:
    return _fail(f"{type(exc).__name__}: {exc}", exc.next(flow), exc.exit_code)


def _fail(message: str, hint: str, code: int = 2) -> int:
    print(commands_in(message), file=sys.stderr)
    print(f"  next: {printed(hint)}", file=sys.stderr)
    return code
