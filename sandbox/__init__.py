"""sandbox: Jupyter kernels in hardened containers, files in and out. Knows nothing of flows."""

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
