"""A hostile Ray head (RELIABILITY.md 50): a Ray client server on loopback, built on Ray's own
generated gRPC stubs, that lets a client connect and then answers everything it can with a
pickle whose ``__reduce__`` runs code. The runner's bridge unpickles it confined: nothing
reaches this machine's files, and the open fails with RayUnavailable naming the address."""

from __future__ import annotations

import base64
import pickle
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import pytest

from sandbox import SandboxUnavailable, open_sandbox

pytestmark = [pytest.mark.ray, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


class Payload:
    """Unpickled, it runs ``code``."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (exec, (self.code,))


PAYLOAD = """
import os
os.makedirs({folder!r}, exist_ok=True)
with open(os.path.join({folder!r}, "pwned"), "w") as fh:
    fh.write("ran as uid %d" % os.getuid())
"""


class Head:
    """The head's client server: a connection that looks healthy, then pickles."""

    def __init__(self, payload: bytes) -> None:
        # the ray extra's, imported once the ray marker's policy let the test run: missing,
        # it skips with the reason, and fails under PRAXIS_REQUIRE_RAY=1 (tests/conftest.py)
        import grpc
        from ray.core.generated import ray_client_pb2 as pb
        from ray.core.generated import ray_client_pb2_grpc as pbg

        self.pb, self.payload, self.seen = pb, payload, []
        head = self

        class Driver(pbg.RayletDriverServicer):  # type: ignore[misc]
            def ClusterInfo(self, request: Any, context: Any) -> Any:
                head.seen.append(f"ClusterInfo {request.type}")
                kinds = pb.ClusterInfoType
                if request.type == kinds.NODES:
                    nodes = [{"Alive": True, "NodeID": "n1", "Resources": {
                        "praxis-docker": 1.0, "CPU": 64.0, "memory": float(1 << 40)}}]  # fmt: skip
                    return pb.ClusterInfoResponse(json=_json(nodes))
                if request.type == kinds.DASHBOARD_URL:
                    return pb.ClusterInfoResponse(json=_json({"dashboard_url": ""}))
                return pb.ClusterInfoResponse(json="true")  # PING, IS_INITIALIZED

        def refuse(name: str) -> Any:
            def answer(self: Any, request: Any, context: Any) -> Any:
                head.seen.append(name)  # an application error, as Ray's server pickles it
                context.abort(grpc.StatusCode.ABORTED, base64.b64encode(payload).decode())

            return answer

        for name in ("GetObject", "KVGet", "KVPut", "KVDel", "KVExists", "KVList", "PutObject",
                     "Schedule", "WaitObject", "ListNamedActors", "PinRuntimeEnvURI"):  # fmt: skip
            setattr(Driver, name, refuse(name))

        class Data(pbg.RayletDataStreamerServicer):  # type: ignore[misc]
            def Datapath(self, requests: Iterator[Any], context: Any) -> Iterator[Any]:
                for req in requests:
                    kind = req.WhichOneof("type")
                    head.seen.append(f"data {kind}")
                    reply = head.answer(kind)
                    if reply is not None:
                        yield pb.DataResponse(req_id=req.req_id, **reply)

        class Logs(pbg.RayletLogStreamerServicer):  # type: ignore[misc]
            def Logstream(self, requests: Iterator[Any], context: Any) -> Iterator[Any]:
                for _ in requests:
                    pass
                return iter(())

        self.server = grpc.server(futures.ThreadPoolExecutor(8))
        pbg.add_RayletDriverServicer_to_server(Driver(), self.server)
        pbg.add_RayletDataStreamerServicer_to_server(Data(), self.server)
        pbg.add_RayletLogStreamerServicer_to_server(Logs(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def answer(self, kind: str) -> dict[str, Any] | None:
        pb, payload = self.pb, self.payload
        if kind == "init":
            return {"init": pb.InitResponse(ok=True)}
        if kind == "connection_info":
            import ray

            python = ".".join(map(str, sys.version_info[:3]))
            return {"connection_info": pb.ConnectionInfoResponse(
                num_clients=1, ray_version=ray.__version__, ray_commit=ray.__commit__,
                python_version=python)}  # fmt: skip
        if kind == "prep_runtime_env":
            return {"prep_runtime_env": pb.PrepRuntimeEnvResponse()}
        if kind == "get":
            return {"get": pb.GetResponse(valid=False, error=payload)}
        if kind == "task":
            return {"task_ticket": pb.ClientTaskTicket(valid=False, error=payload)}
        if kind == "list_named_actors":
            return {"list_named_actors": pb.ClientListNamedActorsResponse(actors_json="[]")}
        return None  # acknowledge, release: nothing is owed


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[Head]:
    code = PAYLOAD.format(folder=str(tmp_path / "host"))
    head = Head(pickle.dumps(Payload(code)))
    yield head
    head.server.stop(0)


def test_an_unconfined_ray_client_runs_the_hostile_heads_pickle(
    hostile: Head, tmp_path: Path
) -> None:
    """The control: the head is hostile enough, as any client of it (the runner before)."""
    import subprocess

    code = (
        "import ray, sys\n"
        "try:\n    ray.init(sys.argv[1])\n    ray.nodes()\n"
        "except BaseException as exc:\n    print(type(exc).__name__)\n"
    )
    address = f"ray://127.0.0.1:{hostile.port}"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code, address], env=env, timeout=120, check=False,
                   capture_output=True)  # fmt: skip
    assert (tmp_path / "host" / "pwned").read_text() == "ran as uid 0", hostile.seen


def test_a_hostile_heads_pickle_runs_nothing_on_the_host(hostile: Head, tmp_path: Path) -> None:
    address = f"ray://127.0.0.1:{hostile.port}"
    sb = open_sandbox(
        {"backend": "ray", "address": address, "place_timeout": 30},
        workspace=tmp_path / "ws",
        name="hostile-head",
    )
    with pytest.raises(SandboxUnavailable) as err:
        sb.open()
    assert address in str(err.value), str(err.value)
    assert any(
        s.startswith(("data get", "data task", "GetObject", "Schedule", "KV")) for s in hostile.seen
    ), hostile.seen  # fmt: skip  (a pickle was sent)
    assert not (tmp_path / "host").exists()
