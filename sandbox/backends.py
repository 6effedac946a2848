"""The sandbox backends, as plug-ins: every backend is an entry point of the group
``praxis.sandbox_backends`` (pyproject.toml declares the built-in ones), found the way
jupyter_client finds its kernel provisioners. The names are spelled there and nowhere else.

A ``Backend`` is light: its options' type, whether it isolates code from this host, and a
``sandbox`` method that imports the implementation (the docker SDK, ray) only when a sandbox
is made. Another distribution adds a backend by declaring an entry point in the same group::

    [project.entry-points."praxis.sandbox_backends"]
    podman = "mypkg.podman:backend"   # an object with options, isolated and sandbox()

``auto`` is not a backend: it is docker when a daemon answers, else local
(``sandbox.factory``), and takes docker's options.

Entry points are read by ``sandbox.plugins``, without importlib.metadata.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast, runtime_checkable

from . import plugins
from .errors import SandboxUnavailable
from .options import DockerOptions, FakeOptions, LocalOptions, Options, RayOptions
from .values import nearest

if TYPE_CHECKING:
    from .base import Sandbox

GROUP = "praxis.sandbox_backends"
AUTO = "auto"  # docker when a daemon answers, else local: not a backend of its own
DOCKER = "docker"  # what auto prefers, and what builds a flow's package image on this host
LOCAL = "local"  # what auto falls back to


@runtime_checkable
class Backend(Protocol):
    """A kind of sandbox: the type of its options, whether it keeps the code it runs away
    from this host, and how to make one (not yet open)."""

    @property
    def options(self) -> type[Options]: ...

    @property
    def isolated(self) -> bool: ...

    def sandbox(self, options: Options, *, workspace: Path, name: str) -> Sandbox: ...


class UnknownBackend(SandboxUnavailable):
    """Raised for a backend name no entry point declares."""

    def __init__(self, name: str) -> None:
        known = names()
        if len(known) > 1:
            why = f"unknown sandbox backend {name!r} (choose {', '.join(known)})"
        else:  # praxis's own are declared in its metadata: a source tree not installed has none
            why = (
                f"no sandbox backend is registered (entry points of {GROUP}), so none is "
                f"called {name!r}: install praxis (pip install -e .) where it runs"
            )
        super().__init__(why)
        self.name = name


@dataclass(frozen=True)
class Builtin:
    """A backend of this distribution: its sandbox class, ``module:Class``, is imported only
    when a sandbox is made."""

    options: type[Options]
    isolated: bool
    target: str

    def sandbox(self, options: Options, *, workspace: Path, name: str) -> Sandbox:
        if not isinstance(options, self.options):
            raise TypeError(f"{self.target} takes {self.options.__name__}, not {options!r}")
        module, _, cls = self.target.partition(":")
        made: Sandbox = getattr(importlib.import_module(module), cls)(
            workspace=workspace, name=name, options=options
        )
        return made


docker = Builtin(DockerOptions, isolated=True, target="sandbox.container:DockerSandbox")
local = Builtin(LocalOptions, isolated=False, target="sandbox.local:LocalSandbox")
fake = Builtin(FakeOptions, isolated=False, target="sandbox.fake:FakeSandbox")
ray = Builtin(RayOptions, isolated=True, target="sandbox.ray:RaySandbox")


# -- the registry ---------------------------------------------------------------------------


def names() -> tuple[str, ...]:
    """``auto`` and every backend, by name."""
    return (AUTO, *sorted(_declared()))


def get(name: str) -> Backend:
    """The backend called ``name``; UnknownBackend when none is."""
    return _load(name)


def options_for(name: str) -> type[Options]:
    """The options type of backend ``name`` (``auto``: docker's)."""
    return get(DOCKER if name == AUTO else name).options


def takers(option: str) -> list[str]:
    """The backends that take ``option``, by name."""
    found = []
    for name in names()[1:]:
        try:
            if get(name).options.takes(option):
                found.append(name)
        except (SandboxUnavailable, ImportError):  # a broken plug-in takes nothing
            continue
    return found


def unknown(backend: str, key: str) -> str:
    """Why ``backend`` refuses option ``key``: another backend's, or none's (and the nearest
    option it does take)."""
    others = [b for b in takers(key) if b != backend]
    if others:
        verb = "takes" if len(others) == 1 else "take"
        named = " and ".join(others)
        return f"the {backend} backend does not take option {key!r} ({named} {verb} it)"
    known = options_for(backend).names()
    close = nearest(key, known)
    if close:
        return f"unknown option {key!r} for the {backend} backend; did you mean {close!r}?"
    takes = ", ".join(known) or "none"
    return f"unknown option {key!r} for the {backend} backend (it takes: {takes})"


@functools.cache
def _load(name: str) -> Backend:
    found = plugins.find(
        _declared(),
        name,
        what="sandbox backend",
        fits=lambda it: isinstance(it, Backend) and issubclass(it.options, Options),
        shape="Backend (options: an Options class, isolated, sandbox())",
        unknown=UnknownBackend,
        broken=SandboxUnavailable,
    )
    return cast(Backend, found)  # fits() checked it


@functools.cache
def _declared() -> dict[str, str]:
    """Backend name -> ``module:attr``, from every distribution's entry points."""
    return plugins.declared(GROUP)
