"""The sandbox exception tree. Nothing outside ``sandbox/`` sees docker or zmq errors. Each
class lives in the module that raises it (right: relative to ``sandbox``); the branches live
here. tests/test_errors.py holds that every class the sandbox raises or defines is drawn here.

SandboxError                 the base of every error the sandbox raises            (here)
├── SandboxUnavailable       the backend cannot be reached or started (no daemon)  (here)
│   ├── UnknownBackend       no backend of that name                               backends
│   ├── DockerMissing        the daemon has no such container, exec or image       (here)
│   ├── DockerConflict       the daemon refused a change already under way (409)   (here)
│   ├── ZygoteGone           the zygote does not answer: it ended, or never began  forkserver
│   ├── PackagesUnavailable  pip cannot fetch a flow's package                     image.layer
│   └── RayUnavailable       the Ray cluster, or the node it chose, cannot run it  ray_cluster
│       └── Lost             the actor or its node is gone                         ray_bridge
├── BadOption                an option the backend does not take, or a bad value   (here)
├── PathRefused              a workspace name escapes, or names a non-regular file (here)
├── KernelDied               the kernel ended while running code (exit, memory)    (here)
├── ExecTimeout              code ran past its timeout; interrupted, then killed   (here)
├── OutputTooLarge           a file or message is over the configured size limit   (here)
└── WalkRefused              a folder of the workspace cannot be read whole: never (here)
                             skipped (cannot be opened, too deep, too many entries)

Caught where raised, never seen outside the sandbox (the module turns each into one of the
above, or into a recorded failure):
Malformed                    a Ray reply not of the shape its request returns      ray_replies
FrameError                   a frame too large, cut short, or not a JSON object    ray_wire
SweepFailed                  a step of the zygote's sweep cannot finish            zygote_sweep
"""

from __future__ import annotations


class SandboxError(Exception):
    """Base class of every error the sandbox raises."""


class SandboxUnavailable(SandboxError):
    """Raised by ``open``/``kernel`` when the backend cannot be reached or started."""


class DockerMissing(SandboxUnavailable):
    """Raised by ``daemon.docker_errors`` for the daemon's 404: the container, exec or image
    named is not there (it ended and was removed, or never existed)."""


class DockerConflict(SandboxUnavailable):
    """Raised by ``daemon.docker_errors`` for the daemon's 409: a change of a container
    already under way (its removal), which a caller that only wants it gone may ignore."""


class BadOption(SandboxError, ValueError):
    """Raised when a backend's options are built from a mapping that sets an option the
    backend does not take, or a value it cannot use; ``problems`` names each."""

    def __init__(self, backend: str, problems: list[str]) -> None:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{problems[0]}{more}" if problems else f"bad {backend} options")
        self.backend = backend
        self.problems = problems


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


class WalkRefused(SandboxError):
    """Raised by a walk of the workspace that cannot read a folder whole: it cannot open it
    (EMFILE, EACCES), or the folder is past a bound (depth, path length, entries). A walk
    never skips a folder: what it cannot read, it refuses, naming the folder."""

    def __init__(self, folder: str, reason: str) -> None:
        super().__init__(f"{shown(folder)}{': ' if folder else ' '}{reason}")
        self.folder = folder
        self.reason = reason


def shown(folder: str, keep: int = 60) -> str:
    """``folder`` for a one-line message: the workspace's root by name, a long path cut in
    the middle (with its depth)."""
    if not folder:
        return "the workspace"
    if len(folder) <= 2 * keep + 20:
        return f"folder {folder!r}"
    depth = folder.count("/") + 1
    return f"folder {folder[:keep]!r} … {folder[-keep:]!r} ({depth} levels deep)"
