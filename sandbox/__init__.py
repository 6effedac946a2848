"""sandbox: Jupyter kernels in hardened containers, files in and out. Knows nothing of flows."""

from .base import ExecResult, FileStat, Kernel, Sandbox, close_thread_loop
from .errors import (
    ExecTimeout,
    KernelDied,
    OutputTooLarge,
    PathRefused,
    SandboxError,
    SandboxUnavailable,
    WalkRefused,
)
from .factory import open_sandbox

__all__ = [
    "ExecResult",
    "ExecTimeout",
    "FileStat",
    "Kernel",
    "KernelDied",
    "OutputTooLarge",
    "WalkRefused",
    "PathRefused",
    "Sandbox",
    "SandboxError",
    "SandboxUnavailable",
    "close_thread_loop",
    "open_sandbox",
]
