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

Entry points are read from the distributions' metadata on ``sys.path`` directly, as
importlib.metadata finds them (the first distribution of a name wins), without importing it:
importlib.metadata and what it imports cost the quick commands (``praxis check``, ``status``)
more than the rest of their start-up.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .errors import SandboxUnavailable
from .options import DockerOptions, FakeOptions, LocalOptions, Options, RayOptions

if TYPE_CHECKING:
    from .base import Sandbox

GROUP = "praxis.sandbox_backends"
AUTO = "auto"  # docker when a daemon answers, else local: not a backend of its own
DOCKER = "docker"  # what auto prefers, and what builds a flow's package image on this host
LOCAL = "local"  # what auto falls back to
MAX_METADATA = 1 << 20  # bytes of one distribution's entry_points.txt read


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


def reload() -> None:
    """Forget the backends found so far: the next lookup reads the entry points again (after
    a distribution was installed into this process)."""
    _declared.cache_clear()
    _load.cache_clear()


@functools.cache
def _load(name: str) -> Backend:
    target = _declared().get(name)
    if target is None:
        raise UnknownBackend(name)
    module, _, attr = target.partition(":")
    try:
        found: object = importlib.import_module(module.strip())
        for part in attr.strip().split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise SandboxUnavailable(
            f"the sandbox backend {name!r} ({target}) cannot be loaded: {exc}"
        ) from exc
    if not isinstance(found, Backend) or not issubclass(found.options, Options):
        raise SandboxUnavailable(
            f"the sandbox backend {name!r} ({target}) is not a Backend "
            "(options: an Options class, isolated, sandbox())"
        )
    return found


@functools.cache
def _declared() -> dict[str, str]:
    """Backend name -> ``module:attr``, from every distribution's entry points."""
    found: dict[str, str] = {}
    for folder in _distributions():
        for name, target in _entry_points(folder, GROUP):
            found.setdefault(name, target)
    return found


def _distributions() -> list[Path]:
    """The metadata folder of each distribution on ``sys.path``, the first of each name."""
    seen: set[str] = set()
    found = []
    for entry in sys.path:
        folder = Path(entry or ".")
        try:
            listing = sorted(os.listdir(folder))
        except OSError:
            continue
        for item in listing:
            if not item.endswith((".dist-info", ".egg-info")):
                continue
            dist = re.sub(r"[-_.]+", "_", item.rsplit(".", 1)[0].split("-")[0]).lower()
            if dist not in seen:
                seen.add(dist)
                found.append(folder / item)
    return found


def _entry_points(folder: Path, group: str) -> list[tuple[str, str]]:
    """The ``(name, target)`` entry points of ``group`` in ``folder/entry_points.txt``."""
    try:
        with open(folder / "entry_points.txt", "rb") as f:
            text = f.read(MAX_METADATA).decode("utf-8", "replace")
    except OSError:
        return []
    found, inside = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
        elif inside and "=" in line:
            name, _, target = line.partition("=")
            found.append((name.strip(), target.strip()))
    return found
