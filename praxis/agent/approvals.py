"""Approving code an agent wants to run that is not a prepared script.

An approver is ``(phase_id, code) -> bool`` (``praxis.flows.engine.context.Approver``). Two are
provided: ``ApprovalQueue``, an in-memory queue of pending requests that a terminal prompt or
the reviewer web UI serves (``pending()`` / ``answer(id, yes)``), and ``terminal_approver()``,
which shows the code and asks y/N when stdin is a terminal. Requests live in memory only: a
restart loses them, and the runner fails the phase ("approval lost in restart").

``ask`` is what the agent's tools call: it records the question and answer as events and
tells the runner the phase is waiting (``ctx.waiting``) while a person decides.
"""

from __future__ import annotations

import hashlib
import itertools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from praxis.errors import Refused
from praxis.flows.engine.context import PhaseContext
from praxis.flows.model.events import ApprovalAnswered, ApprovalAsked
from praxis.llm.given import Approver, ModelGiven

NOBODY = (
    "refused: nobody can approve new code in this run (no terminal, no reviewer UI). "
    "Use run_prepared / extract_prepared, or ask the user to run praxis from a terminal."
)
DENIED = "refused: the reviewer did not approve this code. Do not retry it unchanged."


class ApprovalRefused(Refused):
    """Raised by ``ApprovalQueue.answer`` for an unknown, already answered or closed request."""

    def __init__(self, request_id: str, reason: str) -> None:
        super().__init__(f"approval {request_id}: {reason}")
        self.request_id = request_id
        self.reason = reason


@dataclass
class ApprovalRequest:
    id: str
    phase: str
    code: str
    asked_at: float = field(default_factory=time.time)
    approved: bool | None = None  # None while pending

    @property
    def pending(self) -> bool:
        return self.approved is None


class ApprovalQueue:
    """Pending approval requests, answered from another thread (a terminal or a web handler).

    ``queue`` itself is an Approver: calling it adds a request and blocks until ``answer``
    (or ``close``, which says no to everything pending). With ``timeout`` set, a request that
    nobody answers in time is answered no.
    """

    def __init__(self, *, timeout: float | None = None) -> None:
        self.timeout = timeout
        self._requests: dict[str, ApprovalRequest] = {}
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._closed = False
        self.listeners: list[Callable[[ApprovalRequest], None]] = []

    def __call__(self, phase: str, code: str) -> bool:
        request = self.ask(phase, code)
        return self.wait(request.id, timeout=self.timeout)

    def ask(self, phase: str, code: str) -> ApprovalRequest:
        with self._cond:
            request = ApprovalRequest(id=f"a{next(self._ids)}", phase=phase, code=code)
            if self._closed:
                request.approved = False
            self._requests[request.id] = request
            self._cond.notify_all()
        for listener in self.listeners:
            listener(request)
        return request

    def pending(self) -> list[ApprovalRequest]:
        with self._cond:
            return [r for r in self._requests.values() if r.pending]

    def get(self, request_id: str) -> ApprovalRequest:
        with self._cond:
            try:
                return self._requests[request_id]
            except KeyError:
                raise ApprovalRefused(request_id, "no such request") from None

    def answer(self, request_id: str, approve: bool) -> None:
        """Answer a pending request; a late or duplicate answer is refused, changing nothing."""
        with self._cond:
            request = self._requests.get(request_id)
            if request is None:
                raise ApprovalRefused(request_id, "no such request (lost in a restart?)")
            if not request.pending:
                raise ApprovalRefused(request_id, "already answered")
            request.approved = bool(approve)
            self._cond.notify_all()

    def wait(self, request_id: str, timeout: float | None = None) -> bool:
        """Block until the request is answered; no answer within ``timeout`` means no."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            request = self._requests[request_id]
            while request.pending:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    request.approved = False
                    break
                self._cond.wait(remaining)
            return bool(request.approved)

    def close(self) -> None:
        """Say no to every pending request and to any asked later."""
        with self._cond:
            self._closed = True
            for request in self._requests.values():
                if request.pending:
                    request.approved = False
            self._cond.notify_all()


def terminal_approver(
    stdin: TextIO | None = None, stdout: TextIO | None = None, *, tty: bool | None = None
) -> Approver | None:
    """An approver that shows the code and asks y/N, or None when stdin is not a terminal."""
    inp = stdin if stdin is not None else sys.stdin
    out = stdout if stdout is not None else sys.stderr
    interactive = tty if tty is not None else (inp is not None and inp.isatty())
    if not interactive:
        return None
    lock = threading.Lock()

    def approve(phase: str, code: str) -> bool:
        with lock:
            numbered = "\n".join(f"{i:4d} | {line}" for i, line in enumerate(code.splitlines(), 1))
            out.write(f"\n--- phase {phase} wants to run code that is not prepared ---\n")
            out.write(numbered + "\n")
            out.write("Run it? [y/N] ")
            out.flush()
            reply = inp.readline()
            return reply.strip().lower() in ("y", "yes")

    return approve


def ask(ctx: PhaseContext, tool: str, code: str) -> tuple[bool, str]:
    """Ask the approver the run was given (``praxis.llm.given``) whether ``code`` may run:
    (approved, message for the model)."""
    phase = ctx.phase.id
    digest = hashlib.sha256(code.encode("utf-8")).hexdigest()
    approver = ctx.given.approver if isinstance(ctx.given, ModelGiven) else None
    if approver is None:
        ctx.emit(
            ApprovalAnswered(phase=phase, tool=tool, sha256=digest, approved=False, by="nobody")
        )
        return False, NOBODY
    ctx.emit(ApprovalAsked(phase=phase, tool=tool, code=code, sha256=digest))
    ctx.on_message(f"{phase}: waiting for approval of {tool} code")
    ctx.waiting("approval")
    try:
        approved = bool(approver(phase, code))
    finally:
        ctx.waiting(None)
    ctx.emit(ApprovalAnswered(phase=phase, tool=tool, sha256=digest, approved=approved))
    if not approved:
        return False, DENIED
    return True, "approved"
