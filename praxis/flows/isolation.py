"""Whether a flow's code may run on this host without isolation: only when the person says so.

The ``local`` and ``fake`` backends run a flow's code as the user running praxis, on this
host. flow.yaml (or a chat model's edit of it) can ask for them, but cannot grant them:
the person does, with ``--allow-local`` on the command line (``run``, ``advance``,
``approve``, ``reject``, ``rerun``, ``status``, ``serve``, ``chat``), or by naming the
backend in their own environment (``PRAXIS_SANDBOX=local``). Without that a flow asking for
one is refused (``LocalRefused``, exit 4), and ``auto`` never falls back to local kernels:
with no Docker daemon it is the docker backend's ``SandboxUnavailable`` (exit 5).

A program that embeds praxis grants it with ``allow_local()`` or passes the backend itself
(``praxis.advance(sandbox={"backend": "local"})``): the caller's choice, not the flow's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import Refused

ENV = "PRAXIS_SANDBOX"
FLAG = "--allow-local"
UNISOLATED = ("local", "fake")  # backends that run the flow's code on this host

_granted = False


class LocalRefused(Refused):
    """Raised when a flow's code would run on this host and the person did not allow it."""

    def __init__(self, backend: str, where: str) -> None:
        super().__init__(
            f"{where} asks for the {backend} backend, which runs the flow's code on this host "
            f"without isolation; pass {FLAG} if you trust it, or set sandbox.backend to docker"
        )
        self.backend = backend
        self.where = where

    def next(self, flow: str) -> str:
        return f"praxis advance {flow} {FLAG}"


def allow_local(granted: bool = True) -> bool:
    """The person's ``--allow-local`` for this process (the CLI sets it from its flag);
    returns what it was before."""
    global _granted
    before, _granted = _granted, granted
    return before


def local_allowed() -> bool:
    """Whether the person allowed code on this host: the flag, or PRAXIS_SANDBOX naming an
    unisolated backend in their environment."""
    return _granted or os.environ.get(ENV, "") in UNISOLATED


def backend_of(config: Mapping[str, Any]) -> str:
    """The backend ``config`` asks for, PRAXIS_SANDBOX laid over ``auto``."""
    backend = str(config.get("backend", "auto"))
    override = os.environ.get(ENV)
    return override if override and backend == "auto" else backend


def confine(config: Mapping[str, Any], where: str = "flow.yaml") -> dict[str, Any]:
    """``config`` with its backend resolved as the person allowed: LocalRefused for local or
    fake without the grant, and ``auto`` pinned to docker (no silent fall back to this host)."""
    out = dict(config)
    backend = backend_of(config)
    allowed = local_allowed()
    if backend in UNISOLATED and not allowed:
        raise LocalRefused(backend, where)
    out["backend"] = "docker" if backend == "auto" and not allowed else backend
    return out
