"""What the CLI needs from the terminal it runs in: a closed pipe that ends quietly, the
name to print commands with, FLOW found the way git finds a repository, and text from a
phase made safe to print (``escape``).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from .argv import as_typed, program_argv
from .command_line import typed
from .errors import UsageError

DEFINITION = "flow.yaml"


class NotAFlow(UsageError):
    """Raised for a FLOW argument that is neither a flow folder nor its flow.yaml."""

    def next(self, flow: str) -> str:
        return typed("check", "FLOW")


class NoFlowHere(NotAFlow):
    """Raised for a folder that holds no flow.yaml, with none above it; ``below`` are the flow
    folders found under it (as shown), nearest first."""

    def __init__(self, arg: str, below: list[str]) -> None:
        if below:
            more = f" and {len(below) - 3} more" if len(below) > 3 else ""
            found = f"; flows below it: {', '.join(below[:3])}{more}"
        else:
            found = "; no flow below it either (README: Your first flow)"
        super().__init__(f"{arg} is not a flow: it holds no flow.yaml{found}")
        self.arg = arg
        self.below = below

    def next(self, flow: str) -> str:
        if self.below:
            return typed("status", self.below[0])
        return typed("check", "FLOW")


# -- a closed pipe ---------------------------------------------------------------------------


class DroppingStream:
    """A text stream that drops its output once the reader went away (EPIPE), so
    ``praxis status | head -1`` ends quietly and a run writing to a closed pipe goes on."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.closed_pipe = False

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        """From now on, nothing reaches the pipe, not even the interpreter's last flush."""
        self.closed_pipe = True
        try:
            fd = self._stream.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # not a file (a test's capture): dropping the text is enough

    def isatty(self) -> bool:
        return not self.closed_pipe and self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def quiet_pipes() -> Iterator[None]:
    """stdout and stderr that drop output to a closed pipe instead of raising."""
    saved = sys.stdout, sys.stderr
    sys.stdout = DroppingStream(saved[0])
    sys.stderr = DroppingStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


# -- the program's name ----------------------------------------------------------------------


def program(argv0: str | None = None, on_path: str | None = None) -> str:
    """How to invoke this praxis from the current folder: ``praxis`` when that name on PATH is
    this program, else the path it was invoked by (``.venv/bin/praxis``)."""
    return shlex.join(program_argv(argv0, on_path))


def command(text: str) -> str:
    """A printed ``praxis ...`` command, with the name this praxis is reachable by."""
    name = program()
    if name != "praxis" and text.startswith("praxis "):
        return name + text[len("praxis") :]
    return text


def commands_in(text: str) -> str:
    """``text`` with each command it quotes (`praxis ...`, in backticks) written with the name
    this praxis is reachable by, as ``command`` writes a printed one."""
    name = program()
    if name == "praxis":
        return text
    return text.replace("`praxis ", f"`{name} ").replace("`sudo praxis ", f"`sudo {name} ")


# -- FLOW -------------------------------------------------------------------------------------


def find_flow(arg: str) -> str:
    """The flow FLOW names: a folder holding flow.yaml, the flow.yaml itself, or (like git)
    the nearest folder above FLOW that holds one. A path to another file is refused."""
    path = Path(arg)
    if path.is_file() or (path.exists() and not path.is_dir()):
        if path.name == DEFINITION:
            return arg
        raise NotAFlow(
            f"{arg} is not a flow: FLOW is a flow's folder (the one holding flow.yaml) "
            "or its flow.yaml"
        )
    if not path.is_dir() or (path / DEFINITION).is_file():
        return arg  # a missing path is reported by the contract
    for parent in path.resolve().parents:
        if (parent / DEFINITION).is_file():
            return as_typed(parent) if parent != Path.cwd() else "."

    from .overview import flows_below  # dataclasses and inspect: only on this error's way

    raise NoFlowHere(arg, [as_typed(found) for found in flows_below(path)])


# -- signals that cancel a run ---------------------------------------------------------------

_received: list[str] = []


def _interrupt(signum: int, frame: Any) -> None:
    _received.append(signal.Signals(signum).name)
    raise KeyboardInterrupt


@contextmanager
def cancel_on_signals() -> Iterator[None]:
    """While a run advances, SIGTERM and SIGHUP stop it as Ctrl-C does (KeyboardInterrupt):
    the runner records a cancel and removes the sandbox on its way out."""

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def quiet_after_interrupt() -> None:
    """Once an interrupted command has said so, what the interrupt cut off half-made in the
    libraries it was in (an event loop stopped inside its constructor, a coroutine never
    awaited) is torn down quietly: logged at debug level, never a traceback on the terminal
    (a traceback there means a bug of praxis)."""
    sys.unraisablehook = _log_unraisable
    warnings.filterwarnings(
        "ignore", message=r"coroutine .* was never awaited", category=RuntimeWarning
    )


def _log_unraisable(unraisable: Any) -> None:
    import logging  # here alone: a quick command does not load the logging package

    logging.getLogger("praxis").debug(
        "after the interrupt, ignored: %s in %r",
        getattr(unraisable.exc_type, "__name__", unraisable.exc_type),
        unraisable.object,
        exc_info=(unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback),
    )


def received_signal() -> str:
    """What stopped the run: 'SIGTERM', 'SIGHUP', or 'Ctrl-C'."""
    return _received[-1] if _received else "Ctrl-C"


def escape(text: str) -> str:
    """``text`` safe for a terminal: C0/C1 control characters (but newline and tab) shown as
    ``^X`` / ``\\xNN``."""
    return _CONTROL.sub(_show_control, text)


def _show_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    return f"\\x{code:02x}"


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
