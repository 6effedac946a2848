"""Whether a flow's code may run on this host without isolation: only when the person says so.

A backend that is not ``isolated`` (``sandbox.backends``: local, fake) runs a flow's code as
the user running praxis, on this host. flow.yaml (or a chat model's edit of it) can ask for
one, but cannot grant it: the person does, with ``--allow-local`` on the command line
(``run``, ``advance``, ``approve``, ``reject``, ``rerun``, ``status``, ``serve``, ``chat``), or
by naming the backend in their own environment (``PRAXIS_SANDBOX=local``). Without that a
flow asking for one is refused (``LocalRefused``, exit 4), and ``auto`` never falls back to
local kernels: with no Docker daemon it is the docker backend's ``SandboxUnavailable`` (exit 5).

A program that embeds praxis grants it with ``allow_local()`` or passes the backend itself
(``praxis.advance(sandbox={"backend": "local"})``): the caller's choice, not the flow's.
"""

from __future__ import annotations

import os

from sandbox import backends
from sandbox.backends import AUTO, DOCKER

from ...command_line import FLAGS, typed
from ...errors import Refused
from ..model.flow import SandboxSettings

ENV = "PRAXIS_SANDBOX"
FLAG = FLAGS["allow_local"]

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
        return typed("advance", flow, allow_local=True)


def allow_local(granted: bool = True) -> bool:
    """The person's ``--allow-local`` for this process (the CLI sets it from its flag);
    returns what it was before."""
    global _granted
    before, _granted = _granted, granted
    return before


def person_backend() -> str | None:
    """The backend the person named in their environment (PRAXIS_SANDBOX), if any: the one
    place praxis reads it."""
    return os.environ.get(ENV) or None


def on_host(backend: str) -> bool:
    """Whether ``backend`` runs a flow's code on this host, unisolated (local, fake); a
    name no backend has runs nothing (opening it says so)."""
    if backend == AUTO:
        return False
    try:
        return not backends.get(backend).isolated
    except backends.UnknownBackend:
        return False


def local_allowed() -> bool:
    """Whether the person allowed code on this host: the flag, or PRAXIS_SANDBOX naming an
    unisolated backend in their environment."""
    named = person_backend()
    return _granted or (named is not None and on_host(named))


def backend_of(settings: SandboxSettings) -> str:
    """The backend ``settings`` ask for, PRAXIS_SANDBOX laid over ``auto``."""
    named = person_backend()
    return named if named and settings.backend == AUTO else settings.backend


def confine(settings: SandboxSettings, where: str = "flow.yaml") -> str:
    """The backend to open for ``settings``, as the person allowed it: LocalRefused for a
    backend on this host without the grant, and ``auto`` pinned to docker (no silent fall
    back to this host)."""
    backend = backend_of(settings)
    allowed = local_allowed()
    if on_host(backend) and not allowed:
        raise LocalRefused(backend, where)
    return DOCKER if backend == AUTO and not allowed else backend
