"""The ray backend: the docker backend on a node of a Ray cluster (DESIGN.md §10).

``RaySandbox`` runs on the controller (where the runner is). ``open`` connects to the
cluster, checks that some node could ever hold the sandbox, then asks Ray for one actor
(``sandbox/ray_node.py``) with the flow's cpus and memory and the ``praxis-docker`` resource
(plus any ``resources`` the flow names). The actor holds an ordinary ``DockerSandbox`` on its
node: container, hardening and ipc transport do not change, the container has no network.
Every method of the ABCs is forwarded to the actor. praxis does not schedule: Ray does.

Files: up to ``SMALL`` bytes go in one actor call (through Ray's object store); larger files
move in ``CHUNK`` pieces by offset, a few calls in flight, staged in a node-local file. That
needs nothing beyond the Ray connection the runner already has (no shared filesystem or
bucket and its credentials on every node), and keeps the controller's memory bounded.

Errors: an unreachable cluster is ``RayUnavailable`` (a ``SandboxUnavailable``) naming the
address; a node that cannot run the sandbox (no Docker, no image) says which node and the
fix; a request no node could ever hold fails at once; a lost node fails the phase, naming
the node.
``ray`` is imported only in ``sandbox/ray*.py``, and only when a sandbox opens.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import socket
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from .base import ExecResult, FileStat, Kernel, OutputCallback, Sandbox
from .errors import ExecTimeout, KernelDied, SandboxError, SandboxUnavailable
from .files import replace_file
from .options import RayOptions
from .paths import check_name
from .ray_cluster import (
    NAMESPACE,
    RESOURCE,
    RayUnavailable,
    check_capacity,
    connect,
    resolve_address,
    show,
)
from .ray_node import NodeSandbox, Reply, decode
from .values import disk_bytes

log = logging.getLogger("sandbox")

SLOT = 0.01  # of RESOURCE per sandbox: the node's cpus and memory are the real limit
CONCURRENCY = 4  # actor threads: interrupt and output polls while execute blocks
SMALL = 64 << 20  # bytes moved in one actor call
CHUNK = 8 << 20  # bytes per call above SMALL
IN_FLIGHT = 4  # chunk calls outstanding at once
POLL = 0.2  # seconds between output polls while code runs
CALL_TIMEOUT = 300.0  # seconds for one file or bookkeeping call
MARGIN = 60.0  # seconds past an execute's own timeout before the controller gives up


@dataclass(frozen=True)
class NodeWorkspace:
    """Where the workspace is: a folder on the node ``node`` (this machine only in tests)."""

    node: str
    root: Path


@functools.cache
def _actor_class() -> Any:
    import ray

    return ray.remote(NodeSandbox)


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
        self.actor: Any = None
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
        if self.actor is not None:
            return
        connect(self.address)
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        demand = self.demand()
        check_capacity(demand, self.address)
        actor_name = f"sandbox-{self.key}"
        self._remove_leftover(actor_name)
        options: dict[str, Any] = {
            "num_cpus": demand.pop("CPU"),
            "memory": demand.pop("memory"),
            "resources": demand,
            "max_concurrency": CONCURRENCY,
            "name": actor_name,
            "namespace": NAMESPACE,
            "max_restarts": 0,
        }
        if self.node is not None:  # a re-open goes back to the node that holds the workspace
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(self.node, soft=True)
        actor = (
            _actor_class()
            .options(**options)
            .remote(self.name, self.key, self.node_root, self.options.docker())
        )
        try:
            info = decode(ray.get(actor.open.remote(), timeout=self.place_timeout))
        except ray.exceptions.GetTimeoutError:
            ray.kill(actor)
            raise RayUnavailable(
                f"no node of the Ray cluster at {self.address} had room for this sandbox "
                f"({show(self.demand())}) within {self.place_timeout:g} s: the cluster is "
                "busy; try again later"
            ) from None
        except SandboxError as exc:
            ray.kill(actor)
            if type(exc) is SandboxUnavailable:  # the node's words: no Docker, no image
                raise RayUnavailable(str(exc)) from None
            raise
        except ray.exceptions.RayError as exc:
            ray.kill(actor)
            raise RayUnavailable(f"the sandbox actor did not start: {exc}") from exc
        self.actor = actor
        self.node = info["node"]
        self.info = info
        self.workspace = NodeWorkspace(self.node, Path(info["workspace"]))

    def _remove_leftover(self, actor_name: str) -> None:
        """Close and kill the actor a controller of this run left when it died."""
        import ray

        try:
            old = ray.get_actor(actor_name, namespace=NAMESPACE)
        except ValueError:
            return
        log.warning("removing the sandbox actor a runner that died left: %s", actor_name)
        try:
            ray.get(old.close.remote(), timeout=CALL_TIMEOUT)
        except Exception:
            log.debug("closing a leftover actor", exc_info=True)
        ray.kill(old)
        for _ in range(100):  # its name is free once Ray has seen it die
            try:
                ray.get_actor(actor_name, namespace=NAMESPACE)
            except ValueError:
                return
            time.sleep(0.1)

    def close(self) -> None:
        actor, self.actor = self.actor, None
        if actor is None:
            return
        import ray

        try:
            decode(ray.get(actor.close.remote(), timeout=CALL_TIMEOUT))
        except Exception as exc:  # a lost node has nothing left to close
            log.warning("closing the sandbox on Ray node %s: %s", self.node, exc)
        finally:
            ray.kill(actor)

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

    def call(self, method: str, *args: Any, timeout: float = CALL_TIMEOUT) -> Any:
        return self.result(getattr(self._actor(), method).remote(*args), timeout=timeout)

    def result(
        self, ref: Any, *, timeout: float | None = CALL_TIMEOUT, died: type = RayUnavailable
    ) -> Any:
        import ray

        try:
            reply: Reply = ray.get(ref, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise RayUnavailable(
                f"the sandbox on Ray node {self.node} did not answer within {timeout:g} s"
            ) from None
        except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError) as exc:
            raise died(self.lost(exc)) from exc
        except ray.exceptions.RayError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            raise RayUnavailable(f"Ray at {self.address}: {first}") from exc
        try:
            return decode(reply)
        except SandboxUnavailable as exc:
            if type(exc) is SandboxUnavailable:  # the node's words: no Docker, no image
                raise RayUnavailable(str(exc)) from None
            raise

    def lost(self, exc: BaseException) -> str:
        """Why the actor is gone: its node was lost, or the actor alone died."""
        import ray

        try:
            alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        except Exception:
            alive = set()
        if self.node not in alive or "node has died" in str(exc).lower():
            return f"the Ray node {self.node} running this sandbox was lost"
        return f"the sandbox actor on Ray node {self.node} died"

    def _actor(self) -> Any:
        if self.actor is None:
            raise RayUnavailable("the ray sandbox is not open")
        return self.actor

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
                self.call("upload_bytes", name, fh.read(SMALL + 1))
                return
            token = self.call("begin_upload")
            try:
                self._send(fh, token)
                self.call("end_upload", token, name, size)
            except BaseException:
                self._drop(token)
                raise

    def _send(self, fh: Any, token: str) -> None:
        import ray

        pending: list[Any] = []
        offset = 0
        while chunk := fh.read(CHUNK):
            pending.append(self._actor().write_at.remote(token, offset, chunk))
            offset += len(chunk)
            if len(pending) >= IN_FLIGHT:
                done, pending = ray.wait(pending, num_returns=1)
                self.result(done[0])
        for ref in pending:
            self.result(ref)

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
        refs = [self._actor().read_at.remote(token, o, CHUNK) for o in offsets[:IN_FLIGHT]]
        for i in range(len(offsets)):
            out.write(self.result(refs[i]))
            nxt = i + IN_FLIGHT
            if nxt < len(offsets):
                refs.append(self._actor().read_at.remote(token, offsets[nxt], CHUNK))
            refs[i] = None

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
        import ray

        sb = self.sandbox
        if self._closed:
            raise KernelDied("the kernel was shut down")
        flags = {"store_history": store_history, "stop_on_error": stop_on_error}
        ref = sb._actor().execute.remote(self.key, code, timeout, on_output is not None, flags)
        deadline = time.monotonic() + timeout + sb.grace + MARGIN
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.shutdown()
                raise ExecTimeout(timeout)
            ready, _ = ray.wait([ref], timeout=min(POLL, left) if on_output else left)
            if on_output is not None:
                self._relay(on_output)
            if ready:
                break
        result: ExecResult = sb.result(ref, timeout=None, died=KernelDied)
        if on_output is not None:
            self._relay(on_output)
        return result

    def _relay(self, on_output: OutputCallback) -> None:
        sb = self.sandbox
        ref = sb._actor().take_output.remote(self.key)
        for name, text in sb.result(ref, died=KernelDied):
            on_output(name, text)

    def interrupt(self) -> None:
        if not self._closed and self.sandbox.actor is not None:
            self.sandbox.actor.interrupt.remote(self.key)  # returns at once

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.sandbox.call("shutdown_kernel", self.key)
        except SandboxError:
            log.debug("shutting down kernel %s", self.key, exc_info=True)
