"""The sandbox exception tree. Nothing outside ``sandbox/`` sees docker or zmq errors.

SandboxError
├── SandboxUnavailable      the backend cannot be reached or started (no daemon, no image)
├── PathRefused             a workspace name escapes, or names a non-regular file
├── KernelDied              the kernel process ended while running code (cause: exit, out of memory)
├── ExecTimeout             code ran past its timeout; it was interrupted, then killed
└── OutputTooLarge          a file or message is over the configured size limit
"""

from __future__ import annotations


class SandboxError(Exception):
    """Base class of every error the sandbox raises."""


class SandboxUnavailable(SandboxError):
    """Raised by ``open``/``kernel`` when the backend cannot be reached or started."""


class PathRefused(SandboxError):
    """Raised when a workspace name is unsafe or names something other than a regular file."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name!r}: {reason}")
        self.name = name
        self.reason = reason


class KernelDied(SandboxError):
    """Raised by ``execute`` when the kernel process ends while running code."""

    def __init__(self, cause: str) -> None:
        super().__init__(f"kernel died: {cause}")
        self.cause = cause


class ExecTimeout(SandboxError):
    """Raised by ``execute`` when code ran past its timeout (interrupted, then killed)."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"timed out after {timeout:g} s")
        self.timeout = timeout


class OutputTooLarge(SandboxError):
    """Raised when a file or a single message is over the configured size limit."""

    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(f"{what} is {size} bytes, over the limit of {limit}")
        self.what = what
        self.size = size
        self.limit = limit
