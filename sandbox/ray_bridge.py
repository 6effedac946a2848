"""The Ray bridge: the one process that holds a ray sandbox's Ray connection.

Ray deserializes what a cluster sends with pickle (actor replies, errors, ``ray://`` client
answers), so a hostile head can answer with code. The runner therefore never imports ray:
it starts this module as a child, confined (``sandbox/ray_confine.py``: its own pid and
mount namespaces with no capability, none of the person's files), and speaks to it in the
frames of ``sandbox/ray_wire.py`` (JSON and raw bytes, bounded). What a pickle does here
stays here; what this process answers is checked as data by ``sandbox/ray.py``.

Requests on stdin: ``open`` (join the cluster, place the actor, open its sandbox), ``call``
(one method of the actor, its reply), ``cast`` (a method whose reply nobody waits for) and
``close``. Each is answered on stdout by id, in the order they finish, so an execute and the
output polls beside it go on at once.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import pickle
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

from . import ray_wire
from .errors import SandboxError, SandboxUnavailable
from .ray_cluster import NAMESPACE, RayUnavailable, check_capacity, connect, show
from .ray_node import NodeSandbox, decode

log = logging.getLogger("sandbox")

CONCURRENCY = 4  # actor threads: interrupt and output polls while execute blocks
WORKERS = 16  # requests this bridge serves at once
CALL_TIMEOUT = 300.0


def plain(value: Any, blobs: list[bytes]) -> Any:
    """``value`` as JSON data: dataclasses as their fields, tuples and sets as lists, and
    bytes moved to ``blobs`` (a frame carries one) with ``{"$blob": n}`` in their place."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        blobs.append(value)
        return {"$blob": len(blobs) - 1}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name), blobs) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v, blobs) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return [plain(v, blobs) for v in items]
    raise TypeError(f"a reply holds a {type(value).__name__}")


@functools.cache
def _actor_class() -> Any:
    import ray

    return ray.remote(NodeSandbox)


class Bridge:
    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.writing = threading.Lock()
        self.actor: Any = None
        self.address = ""
        self.node: str | None = None

    def send(self, message: dict[str, Any], blob: bytes = b"") -> None:
        with self.writing:
            ray_wire.write(self.out, message, blob)

    def serve(self, stream: IO[bytes]) -> None:
        with ThreadPoolExecutor(WORKERS, thread_name_prefix="bridge") as pool:
            while (frame := ray_wire.read(stream)) is not None:
                message, blob = frame
                pool.submit(self.answer, message, blob)

    def answer(self, message: dict[str, Any], blob: bytes) -> None:
        rid = message.get("id")
        try:
            value = self.handle(message, blob)
        except SandboxError as exc:
            kind = "unavailable" if isinstance(exc, SandboxUnavailable) else "sandbox"
            kind = "lost" if isinstance(exc, Lost) else kind
            self.send({"id": rid, "err": [kind, str(exc)]})
            return
        except Exception as exc:  # a bug here must still answer, or the runner waits
            log.exception("ray bridge: %s failed", message.get("op"))
            said = f"Ray at {self.address} failed ({type(exc).__name__}: {exc})"
            self.send({"id": rid, "err": ["unavailable", said]})
            return
        if rid is None:
            return
        blobs: list[bytes] = []
        try:
            self.send({"id": rid, "ok": plain(value, blobs)}, blobs[0] if blobs else b"")
        except (TypeError, ValueError, ray_wire.FrameError) as exc:  # no frame was written
            said = f"the Ray bridge cannot send the reply to {message.get('method')}: {exc}"
            self.send({"id": rid, "err": ["unavailable", said]})

    def handle(self, message: dict[str, Any], blob: bytes) -> Any:
        op = message.get("op")
        if op == "open":
            return self.open(message, blob)
        if op == "close":
            return self.close()
        if op in ("call", "cast"):
            args = [blob if a == {"$blob": 0} else a for a in message.get("args", [])]
            ref = getattr(self._actor(), str(message["method"])).remote(*args)
            if op == "cast":
                return None
            return self.result(ref, message.get("timeout", CALL_TIMEOUT))
        raise SandboxError(f"the Ray bridge has no request {op!r}")

    # -- the actor -------------------------------------------------------------------------

    def open(self, message: dict[str, Any], blob: bytes) -> Any:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.address = str(message["address"])
        docker = pickle.loads(blob)  # the runner's own options: this pipe comes from it
        connect(self.address)
        demand = {str(k): float(v) for k, v in message["demand"].items()}
        check_capacity(demand, self.address)
        actor_name = f"sandbox-{message['key']}"
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
        if message.get("node"):  # a re-open goes back to the node that holds the workspace
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                str(message["node"]), soft=True
            )
        elif message.get("spread"):  # one of many opened together: over the nodes
            options["scheduling_strategy"] = "SPREAD"
        timeout = float(message["place_timeout"])
        actor = (
            _actor_class()
            .options(**options)
            .remote(message["name"], message["key"], message["node_root"], docker)
        )
        try:
            info = decode(ray.get(actor.open.remote(), timeout=timeout))
        except ray.exceptions.GetTimeoutError:
            ray.kill(actor)
            raise RayUnavailable(
                f"no node of the Ray cluster at {self.address} had room for this sandbox "
                f"({show(message['demand'])}) within {timeout:g} s: the cluster is busy; "
                "try again later"
            ) from None
        except SandboxError as exc:
            ray.kill(actor)
            if type(exc) is SandboxUnavailable:  # the node's words: no Docker, no image
                raise RayUnavailable(str(exc)) from None
            raise
        except ray.exceptions.RayError as exc:
            ray.kill(actor)
            raise RayUnavailable(
                f"the sandbox actor did not start on the Ray cluster at {self.address}: {exc}"
            ) from exc
        self.actor = actor
        self.node = info["node"]
        return info

    def _remove_leftover(self, actor_name: str) -> None:
        """Close and kill the actor a runner of this run left when it died."""
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

    def result(self, ref: Any, timeout: float | None) -> Any:
        import ray

        try:
            reply = ray.get(ref, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise RayUnavailable(
                f"the sandbox on Ray node {self.node} did not answer within {timeout:g} s"
            ) from None
        except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError) as exc:
            raise Lost(self.lost(exc)) from exc
        except ray.exceptions.RayError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            raise RayUnavailable(f"Ray at {self.address}: {first}") from exc
        return reply  # ("ok", value) or ("err", kind, args): the runner decodes it

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


class Lost(RayUnavailable):
    """The actor or its node is gone (the runner raises KernelDied for an execute)."""


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    bridge = Bridge(sys.stdout.buffer)
    try:
        bridge.serve(sys.stdin.buffer)
    finally:
        bridge.close()


if __name__ == "__main__":
    main()
