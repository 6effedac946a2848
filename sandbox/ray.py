"""The ray backend: the docker backend on a node of a Ray cluster (DESIGN.md §10).

``RaySandbox`` runs on the controller (where the runner is), but this process never joins
the cluster: Ray deserializes what a cluster sends with pickle, and a hostile head could
answer with code. ``open`` starts the Ray bridge (``sandbox/ray_bridge.py``) confined by
bubblewrap (``sandbox/ray_confine.py``) and speaks to it (``sandbox/ray_channel.py``) in
bounded frames of JSON and raw bytes (``sandbox/ray_wire.py``); every reply is checked as
data of the shape its method returns (``sandbox/ray_replies.py``). The bridge joins the
cluster, checks that some node could ever hold the sandbox, then asks Ray for one actor
(``sandbox/ray_node.py``) with the flow's cpus and memory and the ``praxis-docker``
resource (plus any ``resources`` the caller names). The actor holds an ordinary
``DockerSandbox`` on its node: container, hardening and ipc transport do not change, the
container has no network. praxis does not schedule: Ray does.

Files move in ``CHUNK`` pieces by offset, a few calls in flight, staged in a node-local
file: nothing beyond the Ray connection (no shared filesystem or bucket and its credentials
on every node), and the controller's memory stays bounded.

Errors: an unreachable cluster is ``RayUnavailable`` (a ``SandboxUnavailable``) naming the
address; a node that cannot run the sandbox (no Docker, no image) says which node and the
fix; a request no node could ever hold fails at once; a lost node fails the phase, naming
the node; a bridge that breaks the format or ends is ``RayUnavailable`` naming the address.
``ray`` is imported only in the bridge and on the nodes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import socket
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from . import ray_wire
from .base import ExecResult, FileStat, Kernel, OutputCallback, Sandbox
from .errors import ExecTimeout, KernelDied, SandboxError, SandboxUnavailable
from .files import replace_file
from .options import RayOptions
from .paths import check_name
from .ray_channel import Bridge, Reply
from .ray_cluster import RESOURCE, RayUnavailable, resolve_address
from .ray_node import ERRORS
from .ray_replies import Malformed, shaped, text, with_blob
from .values import disk_bytes

log = logging.getLogger("sandbox")

SLOT = 0.01  # of RESOURCE per sandbox: the node's cpus and memory are the real limit
CHUNK = ray_wire.MAX_BLOB  # bytes per file call
SMALL = CHUNK  # a file up to this size moves in one call
IN_FLIGHT = 4  # chunk calls outstanding at once
POLL = 0.2  # seconds between output polls while code runs
CALL_TIMEOUT = 300.0  # seconds for one file or bookkeeping call
MARGIN = 60.0  # seconds past an execute's own timeout before the controller gives up


@dataclass(frozen=True)
class NodeWorkspace:
    """Where the workspace is: a folder on the node ``node`` (this machine only in tests)."""

    node: str
    root: Path


def _node_key(workspace: Path) -> str:
    """The same run on the same controller gets the same node folder and actor name."""
    where = f"{socket.gethostname()}:{Path(workspace).resolve()}"
    return hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()[:12]


class RaySandbox(Sandbox):
    """One run's sandbox as a Ray actor on some node of the cluster."""

    backend = "ray"
    isolated = True

    def __init__(self, *, workspace: Path, name: str, options: RayOptions | None = None) -> None:
        o = self.options = options or RayOptions()
        self.name = name
        self.address = resolve_address(o.address)
        self.resources = {str(k): float(v) for k, v in o.resources.items()}
        self.memory = str(o.memory)
        self.cpus = float(o.cpus)
        self.node_root = o.node_root
        self.place_timeout = float(o.place_timeout)
        self.grace = float(o.grace)
        self.key = _node_key(workspace)
        self.bridge: Bridge | None = None
        self.node: str | None = None  # the node id the actor runs on (kept for re-opens)
        self.info: dict[str, Any] = {}
        self.workspace: NodeWorkspace | None = None

    # -- placement -------------------------------------------------------------------------

    def demand(self) -> dict[str, float]:
        return {
            "CPU": self.cpus,
            "memory": float(disk_bytes(self.memory)),
            RESOURCE: SLOT,
            **self.resources,
        }

    def open(self) -> None:
        if self.bridge is not None:
            return
        bridge = Bridge(self.address)
        request = {
            "op": "open",
            "address": self.address,
            "name": self.name,
            "key": self.key,
            "node_root": self.node_root,
            "demand": self.demand(),
            "place_timeout": self.place_timeout,
            "node": self.node,
            "spread": bool(self.options.spread),
        }
        self.bridge = bridge  # answer() reads it
        try:
            blob = pickle.dumps(self.options.docker())  # to the bridge: it unpickles ours
            info = self.answer(bridge.request(request, blob), self.place_timeout + CALL_TIMEOUT)
            self.info = self.shape(info, "open")
        except BaseException:
            self.bridge = None
            bridge.close()
            raise
        self.node = self.info["node"]
        self.workspace = NodeWorkspace(self.node or "", Path(self.info["workspace"]))

    def close(self) -> None:
        bridge, self.bridge = self.bridge, None
        if bridge is None:
            return
        try:
            self.answer(bridge.request({"op": "close"}), CALL_TIMEOUT + MARGIN)
        except SandboxError as exc:  # a lost node has nothing left to close
            log.warning("closing the sandbox on Ray node %s: %s", self.node, exc)
        finally:
            bridge.close()

    def describe(self) -> dict[str, Any]:
        keep = ("image", "container", "memory", "cpus", "pids", "disk", "host")
        return {
            **super().describe(),
            "address": self.address,
            "node": self.node,
            **{k: self.info[k] for k in keep if k in self.info},
            "resources": dict(self.resources),
        }

    # -- calls -----------------------------------------------------------------------------

    def call(
        self, method: str, *args: Any, timeout: float = CALL_TIMEOUT, died: type = RayUnavailable
    ) -> Any:
        return self.result(self.send(method, *args, timeout=timeout), method, timeout, died=died)

    def send(self, method: str, *args: Any, timeout: float | None = CALL_TIMEOUT) -> Reply:
        """Ask the actor to run ``method``; a bytes argument travels as the frame's raw part."""
        blob = b""
        listed: list[Any] = []
        for arg in args:
            if isinstance(arg, bytes):
                blob, arg = arg, {"$blob": 0}
            listed.append(arg)
        message = {"op": "call", "method": method, "args": listed, "timeout": timeout}
        return self._bridge().request(message, blob)

    def result(
        self,
        future: Reply,
        method: str,
        timeout: float | None = CALL_TIMEOUT,
        *,
        died: type = RayUnavailable,
    ) -> Any:
        """The value of the actor's reply to ``method``, checked to be of its shape."""
        wait = None if timeout is None else timeout + MARGIN
        reply = self.answer(future, wait, died=died)
        if not isinstance(reply, list) or not reply:
            raise self.malformed(method)
        if reply[0] == "ok" and len(reply) == 2:
            return self.shape(reply[1], method)
        if reply[0] == "err" and len(reply) == 3 and isinstance(reply[2], list):
            raise self.error(reply[1], reply[2])
        raise self.malformed(method)

    def answer(
        self,
        future: Reply,
        timeout: float | None,
        *,
        died: type = RayUnavailable,
    ) -> Any:
        """The bridge's answer to one request: its value, or the error it names."""
        try:
            message, blob = future.result(timeout=timeout)
        except FutureTimeout:
            raise RayUnavailable(
                f"the sandbox on Ray node {self.node} did not answer within {timeout:g} s"
            ) from None
        if "ok" in message:
            return with_blob(message["ok"], blob)
        err = message.get("err")
        if not (isinstance(err, list) and len(err) == 2 and isinstance(err[0], str)):
            raise self.malformed("a request")
        kind, said = err[0], text(err[1])
        if kind == "lost":
            raise died(said)
        if kind == "sandbox":
            raise SandboxError(said)
        raise RayUnavailable(said)

    def error(self, kind: Any, args: list[Any]) -> SandboxError:
        """The sandbox error the node raised, rebuilt from data."""
        if not isinstance(kind, str) or kind not in ERRORS:
            return self.malformed("an error")
        plain = [text(a) if isinstance(a, str) else a for a in args]
        if not all(a is None or isinstance(a, (str, int, float)) for a in plain):
            return self.malformed("an error")
        try:
            exc = ERRORS[kind](*plain)
        except Exception:
            return self.malformed("an error")
        if type(exc) is SandboxUnavailable:  # the node's words: no Docker, no image
            return RayUnavailable(str(exc))
        return exc

    def malformed(self, what: str) -> RayUnavailable:
        return RayUnavailable(
            f"the Ray bridge for the cluster at {self.address} answered {what} with "
            "data of the wrong shape"
        )

    def shape(self, value: Any, method: str) -> Any:
        """``value`` as ``method`` returns it; RayUnavailable when it is not of that shape."""
        try:
            return shaped(value, method)
        except (Malformed, TypeError, ValueError, KeyError):
            raise self.malformed(method) from None

    def _bridge(self) -> Bridge:
        if self.bridge is None:
            raise RayUnavailable("the ray sandbox is not open")
        return self.bridge

    # -- Sandbox ---------------------------------------------------------------------------

    def listing(self) -> dict[str, FileStat]:
        found: dict[str, FileStat] = self.call("listing")
        return found

    def remove(self, name: str) -> None:
        self.call("remove", check_name(name))

    def folders(self) -> set[str]:
        found: set[str] = self.call("folders")
        return found

    def make_folder(self, name: str) -> None:
        self.call("make_folder", check_name(name))

    def remove_folder(self, name: str) -> None:
        self.call("remove_folder", check_name(name))

    def clear(self) -> None:
        self.call("clear")

    def quiesce(self) -> None:
        self.call("quiesce")

    def kernel(self) -> Kernel:
        return RayKernel(self, self.call("kernel", timeout=self.place_timeout))

    def upload(self, src: Path, name: str) -> None:
        check_name(name)
        with open(src, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size <= SMALL:
                self.call("upload_bytes", name, fh.read(SMALL))
                return
            token = self.call("begin_upload")
            try:
                self._send(fh, token)
                self.call("end_upload", token, name, size)
            except BaseException:
                self._drop(token)
                raise

    def _send(self, fh: Any, token: str) -> None:
        pending: list[Reply] = []
        offset = 0
        while chunk := fh.read(CHUNK):
            pending.append(self.send("write_at", token, offset, chunk))
            offset += len(chunk)
            if len(pending) >= IN_FLIGHT:
                self.result(pending.pop(0), "write_at")
        for future in pending:
            self.result(future, "write_at")

    def fetch(self, name: str, dest: Path) -> None:
        token, size, data = self.call("stage_fetch", name, SMALL)
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            if data is not None:
                replace_file(dest, data, durable=False)
            else:
                receive = partial(self._receive, token, size)
                replace_file(dest, receive, durable=False)
        finally:
            if data is None:
                self._drop(token)

    def _receive(self, token: str, size: int, out: Any) -> None:
        offsets = list(range(0, size, CHUNK))
        futures: list[Any] = [self.send("read_at", token, o, CHUNK) for o in offsets[:IN_FLIGHT]]
        for i, offset in enumerate(offsets):
            piece: bytes = self.result(futures[i], "read_at")
            if len(piece) != min(CHUNK, size - offset):
                raise RayUnavailable(f"the Ray node {self.node} sent a piece of the wrong size")
            out.write(piece)
            nxt = i + IN_FLIGHT
            if nxt < len(offsets):
                futures.append(self.send("read_at", token, offsets[nxt], CHUNK))
            futures[i] = None

    def _drop(self, token: str) -> None:
        try:
            self.call("drop", token)
        except SandboxError:
            log.debug("dropping a staged file", exc_info=True)


class RayKernel(Kernel):
    """A kernel in the actor's DockerSandbox, known by its key there."""

    def __init__(self, sandbox: RaySandbox, key: str) -> None:
        self.sandbox = sandbox
        self.key = key
        self._closed = False

    def execute(
        self,
        code: str,
        *,
        timeout: float,
        on_output: OutputCallback | None = None,
        store_history: bool = False,
        stop_on_error: bool = True,
    ) -> ExecResult:
        sb = self.sandbox
        if self._closed:
            raise KernelDied("the kernel was shut down")
        flags = {"store_history": store_history, "stop_on_error": stop_on_error}
        future = sb.send("execute", self.key, code, timeout, on_output is not None, flags,
                         timeout=None)  # fmt: skip
        deadline = time.monotonic() + timeout + sb.grace + MARGIN
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.shutdown()
                raise ExecTimeout(timeout)
            try:
                future.exception(timeout=min(POLL, left) if on_output else left)
                ready = True
            except FutureTimeout:
                ready = False
            if on_output is not None:
                self._relay(on_output)
            if ready:
                break
        result: ExecResult = sb.result(future, "execute", None, died=KernelDied)
        if on_output is not None:
            self._relay(on_output)
        return result

    def _relay(self, on_output: OutputCallback) -> None:
        for name, piece in self.sandbox.call("take_output", self.key, died=KernelDied):
            on_output(name, piece)

    def interrupt(self) -> None:
        bridge = self.sandbox.bridge
        if not self._closed and bridge is not None:
            bridge.cast({"op": "cast", "method": "interrupt", "args": [self.key]})

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.sandbox.call("shutdown_kernel", self.key)
        except SandboxError:
            log.debug("shutting down kernel %s", self.key, exc_info=True)
