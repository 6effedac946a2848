"""sandbox: Jupyter kernels in hardened containers, files in and out. Knows nothing of flows.

The package's names load on first use (PEP 562): a program that needs only ``sandbox.errors`` or
``sandbox.files`` does not import the backends, their options and the kernel's contract with them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .backends import Backend, UnknownBackend
    from .base import (
        ExecResult,
        FileStat,
        Kernel,
        Sandbox,
        SandboxCore,
        Sweeps,
        WorkspaceEdits,
        close_thread_loop,
    )
    from .errors import (
        BadOption,
        DockerConflict,
        DockerMissing,
        ExecTimeout,
        KernelDied,
        OutputTooLarge,
        PathRefused,
        SandboxError,
        SandboxUnavailable,
        WalkRefused,
    )
    from .factory import open_backend, open_sandbox
    from .options import DockerOptions, FakeOptions, LocalOptions, Options, RayOptions

_HOME = {
    "Backend": ".backends",
    "BadOption": ".errors",
    "DockerConflict": ".errors",
    "DockerMissing": ".errors",
    "DockerOptions": ".options",
    "ExecResult": ".base",
    "ExecTimeout": ".errors",
    "FakeOptions": ".options",
    "FileStat": ".base",
    "Kernel": ".base",
    "KernelDied": ".errors",
    "LocalOptions": ".options",
    "Options": ".options",
    "OutputTooLarge": ".errors",
    "PathRefused": ".errors",
    "RayOptions": ".options",
    "Sandbox": ".base",
    "SandboxCore": ".base",
    "SandboxError": ".errors",
    "SandboxUnavailable": ".errors",
    "Sweeps": ".base",
    "UnknownBackend": ".backends",
    "WalkRefused": ".errors",
    "WorkspaceEdits": ".base",
    "close_thread_loop": ".base",
    "open_backend": ".factory",
    "open_sandbox": ".factory",
}

__all__ = [
    "Backend",
    "BadOption",
    "DockerConflict",
    "DockerMissing",
    "DockerOptions",
    "ExecResult",
    "ExecTimeout",
    "FileStat",
    "Kernel",
    "KernelDied",
    "FakeOptions",
    "LocalOptions",
    "Options",
    "RayOptions",
    "UnknownBackend",
    "OutputTooLarge",
    "WalkRefused",
    "PathRefused",
    "Sandbox",
    "SandboxCore",
    "Sweeps",
    "WorkspaceEdits",
    "SandboxError",
    "SandboxUnavailable",
    "close_thread_loop",
    "open_backend",
    "open_sandbox",
]


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'sandbox' has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value  # found once: the next access does not come here
    return value
