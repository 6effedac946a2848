"""The node side of the ray backend: one Ray actor holding an ordinary ``DockerSandbox``.

The actor runs on the node Ray placed it on; its workspace is a node-local folder
(``$PRAXIS_RAY_WORKDIR``, default ``/var/tmp/praxis-ray``), so the container, its hardening and
the ipc transport are exactly the docker backend's. This module does not import ray: the
controller (``sandbox/ray.py``) wraps ``NodeSandbox`` with ``ray.remote``.

Every method returns ``("ok", value)`` or ``("err", kind, args)``: sandbox errors cross the
wire as data (``encode``/``decode``), since not every one of them survives pickling, and a
Ray error then always means the actor or its node is gone.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .base import ExecResult, Kernel
from .container import DockerSandbox
from .daemon import available as docker_available
from .daemon import connect, docker_errors
from .errors import (
    DockerMissing,
    ExecTimeout,
    KernelDied,
    OutputTooLarge,
    PathRefused,
    SandboxError,
    SandboxUnavailable,
    WalkRefused,
)
from .files import open_nofollow
from .image.build import image_tag
from .options import DockerOptions

log = logging.getLogger("sandbox")

WORKDIR = "/var/tmp/praxis-ray"  # node-local workspaces, unless $PRAXIS_RAY_WORKDIR says
OUTPUT_BACKLOG = 4096  # stream pieces kept for the controller's next poll (each within the cap)

# Outlives the actor: when Ray kills the actor's process without a word (its owner, the
# runner, died), this removes the container and unmounts the workspace quota. It forks away
# from its parent at once, as Ray ends a dying worker's children; the actor stops it by
# removing the MARK file (a clean close).
WATCHDOG = """
import os, subprocess, sys, time
if os.fork() > 0:
    os._exit(0)
pid, mark, container, workspace, mounted = int(sys.argv[1]), *sys.argv[2:6]
while os.path.exists(mark):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    except PermissionError:
        pass
    time.sleep(1)
else:
    sys.exit(0)
import docker
try:
    docker.from_env().containers.get(container).remove(force=True)
except Exception:
    pass
if mounted == "1":
    subprocess.run(["umount", "-l", workspace], capture_output=True)
os.unlink(mark)
"""

Reply = tuple[Any, ...]
T = TypeVar("T")


def encode(exc: BaseException) -> Reply:
    """A sandbox error as plain data: ``("err", class name, constructor args)``."""
    if isinstance(exc, PathRefused):
        return ("err", "PathRefused", (exc.name, exc.reason))
    if isinstance(exc, KernelDied):
        return ("err", "KernelDied", (exc.cause,))
    if isinstance(exc, ExecTimeout):
        return ("err", "ExecTimeout", (exc.timeout,))
    if isinstance(exc, OutputTooLarge):
        return ("err", "OutputTooLarge", (exc.what, exc.size, exc.limit))
    if isinstance(exc, WalkRefused):
        return ("err", "WalkRefused", (exc.folder, exc.reason))
    if isinstance(exc, SandboxUnavailable):
        return ("err", "SandboxUnavailable", (str(exc),))
    if isinstance(exc, SandboxError):
        return ("err", "SandboxError", (str(exc),))
    return ("err", "SandboxError", (f"{type(exc).__name__}: {exc}",))


ERRORS: dict[str, Callable[..., SandboxError]] = {
    "PathRefused": PathRefused,
    "KernelDied": KernelDied,
    "ExecTimeout": ExecTimeout,
    "OutputTooLarge": OutputTooLarge,
    "WalkRefused": WalkRefused,
    "SandboxUnavailable": SandboxUnavailable,
    "SandboxError": SandboxError,
}


def decode(reply: Reply) -> Any:
    """The value of an ``("ok", value)`` reply; raise the error of an ``("err", ...)`` one."""
    if reply[0] == "ok":
        return reply[1]
    raise ERRORS.get(reply[1], SandboxError)(*reply[2])


def boundary(method: Callable[..., T]) -> Callable[..., Reply]:
    @functools.wraps(method)
    def wrapped(self: NodeSandbox, *args: Any) -> Reply:
        try:
            return ("ok", method(self, *args))
        except Exception as exc:
            if not isinstance(exc, SandboxError):
                log.exception("ray sandbox actor: %s failed", method.__name__)
            return encode(exc)

    return wrapped


def node_folder(name: str, key: str, root: str | None = None) -> Path:
    """This sandbox's folder on the node: ``<root>/<name>-<key>`` (workspace and staging)."""
    base = Path(root or os.environ.get("PRAXIS_RAY_WORKDIR") or WORKDIR)
    safe = re.sub(r"[^a-zA-Z0-9_.-]+", "-", name).strip("-.")[:40] or "run"
    return base / f"{safe}-{key}"


def check_node(image: str | None) -> str:
    """The image tag to use; SandboxUnavailable naming this node when it cannot run it."""

    host = socket.gethostname()
    reason = docker_available()
    if reason is not None:
        raise SandboxUnavailable(
            f"no Docker daemon answers on Ray node {host} ({reason}): start Docker there, "
            "or start that node without the praxis-docker resource"
        )
    tag = image or image_tag()
    client = connect()
    try:
        with docker_errors(f"inspect image {tag} on Ray node {host}"):
            client.images.get(tag)
    except DockerMissing:
        raise SandboxUnavailable(
            f"the sandbox image {tag} is missing on Ray node {host}: run `praxis sandbox "
            f"build` there, or copy it: docker save {tag} | ssh {host} docker load"
        ) from None
    finally:
        client.close()
    return tag


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done


EXECUTE_FLAGS = ("store_history", "stop_on_error")


class NodeSandbox:
    """The actor: a DockerSandbox on this node, its kernels by key, files staged by token."""

    def __init__(self, name: str, key: str, root: str | None, options: DockerOptions) -> None:
        self.name = name
        self.folder = node_folder(name, key, root)
        self.staging = self.folder / "staging"
        self.options = options
        self.sandbox: Any = None
        self.watchdog: Path | None = None  # the mark that keeps the watchdog watching
        self.kernels: dict[str, Kernel] = {}
        self.output: dict[str, list[tuple[str, str]]] = {}
        self.files: dict[str, int] = {}  # staging token -> open descriptor
        self.count = 0
        self.lock = threading.Lock()

    # -- the sandbox -----------------------------------------------------------------------

    @boundary
    def open(self) -> dict[str, Any]:
        if self.sandbox is None:
            image = check_node(self.options.image)
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging.mkdir(mode=0o700)
            self.sandbox = DockerSandbox(
                workspace=self.folder / "workspace",
                name=self.name,
                options=dataclasses.replace(self.options, image=image),
            )
        self.sandbox.open()
        self._watch()
        import ray  # this runs in a Ray worker

        return {
            **self.sandbox.describe(),
            "node": ray.get_runtime_context().get_node_id(),
            "workspace": str(self.sandbox.workspace.root),
            "host": socket.gethostname(),
        }

    @boundary
    def close(self) -> None:
        for key in list(self.files):
            self._drop(key)
        if self.sandbox is not None:
            self.sandbox.close()
        self._unwatch()
        self.kernels.clear()
        shutil.rmtree(self.staging, ignore_errors=True)

    def _watch(self) -> None:
        self._unwatch()
        ws = self.sandbox.workspace
        self.watchdog = self.folder / f"watch-{uuid.uuid4().hex[:8]}"
        self.watchdog.touch(0o600)
        subprocess.run(
            [sys.executable, "-c", WATCHDOG, str(os.getpid()), str(self.watchdog),
             self.sandbox.container.id, str(ws.root), "1" if ws.mounted else "0"],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )  # fmt: skip

    def _unwatch(self) -> None:
        mark, self.watchdog = self.watchdog, None
        if mark is not None:
            mark.unlink(missing_ok=True)

    @boundary
    def listing(self) -> Any:
        return self.sandbox.listing()

    @boundary
    def remove(self, name: str) -> None:
        self.sandbox.remove(name)

    @boundary
    def folders(self) -> set[str]:
        found: set[str] = self.sandbox.folders()
        return found

    @boundary
    def make_folder(self, name: str) -> None:
        self.sandbox.make_folder(name)

    @boundary
    def remove_folder(self, name: str) -> None:
        self.sandbox.remove_folder(name)

    @boundary
    def clear(self) -> None:
        self.sandbox.clear()

    @boundary
    def quiesce(self) -> None:
        self.sandbox.quiesce()
        with self.lock:
            self.kernels.clear()
            self.output.clear()

    @boundary
    def describe(self) -> dict[str, Any]:
        return dict(self.sandbox.describe())

    # -- files: bytes in one call, or staged and moved in chunks ---------------------------

    @boundary
    def upload_bytes(self, name: str, data: bytes) -> None:
        token = self._new_file()
        try:
            _write_all(self.files[token], data, 0)
            self._place(token, name, len(data))
        finally:
            self._drop(token)

    @boundary
    def begin_upload(self) -> str:
        return self._new_file()

    @boundary
    def write_at(self, token: str, offset: int, data: bytes) -> None:
        _write_all(self.files[token], data, offset)  # chunks may arrive in any order

    @boundary
    def end_upload(self, token: str, name: str, size: int) -> None:
        try:
            self._place(token, name, size)
        finally:
            self._drop(token)

    @boundary
    def stage_fetch(self, name: str, small: int) -> tuple[str, int, bytes | None]:
        """Copy ``name`` out of the workspace into staging; its bytes at once when small."""
        token = uuid.uuid4().hex
        path = self.staging / token
        self.sandbox.fetch(name, path)
        fd = open_nofollow(path)
        path.unlink()
        self.files[token] = fd
        size = os.fstat(fd).st_size
        if size > small:
            return token, size, None
        try:
            return token, size, os.pread(fd, size, 0)
        finally:
            self._drop(token)

    @boundary
    def read_at(self, token: str, offset: int, length: int) -> bytes:
        return os.pread(self.files[token], length, offset)

    @boundary
    def drop(self, token: str) -> None:
        self._drop(token)

    def _new_file(self) -> str:
        token = uuid.uuid4().hex
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL
        self.files[token] = open_nofollow(self.staging / token, flags, 0o600)
        return token

    def _place(self, token: str, name: str, size: int) -> None:
        got = os.fstat(self.files[token]).st_size
        if got != size:
            raise SandboxError(f"upload of {name!r} arrived with {got} of {size} bytes")
        path = self.staging / token
        path.chmod(0o444)  # read-only to every kernel, like every uploaded file
        self.sandbox.upload(path, name)

    def _drop(self, token: str) -> None:
        fd = self.files.pop(token, None)
        if fd is not None:
            os.close(fd)
        (self.staging / token).unlink(missing_ok=True)

    # -- kernels ---------------------------------------------------------------------------

    @boundary
    def kernel(self) -> str:
        kernel = self.sandbox.kernel()
        with self.lock:
            self.count += 1
            key = f"k{self.count}"
            self.kernels[key] = kernel
            self.output[key] = []
        return key

    @boundary
    def execute(
        self,
        key: str,
        code: str,
        timeout: float,
        stream: bool,
        flags: dict[str, bool] | None = None,
    ) -> ExecResult:
        """``flags``: the execute's store_history and stop_on_error."""
        kernel = self._kernel(key)
        options = {k: bool(v) for k, v in (flags or {}).items() if k in EXECUTE_FLAGS}
        pieces = self.output.setdefault(key, [])

        def on_output(name: str, text: str) -> None:
            with self.lock:
                if len(pieces) < OUTPUT_BACKLOG:
                    pieces.append((name, text))

        result: ExecResult = kernel.execute(
            code, timeout=timeout, on_output=on_output if stream else None, **options
        )
        return result

    @boundary
    def take_output(self, key: str) -> list[tuple[str, str]]:
        with self.lock:
            pieces = self.output.get(key, [])
            taken, pieces[:] = list(pieces), []
        return taken

    @boundary
    def interrupt(self, key: str) -> None:
        self._kernel(key).interrupt()

    @boundary
    def shutdown_kernel(self, key: str) -> None:
        with self.lock:
            kernel = self.kernels.pop(key, None)
            self.output.pop(key, None)
        if kernel is not None:
            kernel.shutdown()

    def _kernel(self, key: str) -> Kernel:
        kernel = self.kernels.get(key)
        if kernel is None:
            raise KernelDied("the kernel was shut down")
        return kernel
