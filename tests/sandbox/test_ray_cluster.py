"""Reaching a Ray cluster: the address from the environment first, a malformed or silent
address refused in seconds with the next step, resources shown as a person reads them."""

from __future__ import annotations

import socket
import sys
import threading
import time

import pytest

from sandbox import ray_cluster
from sandbox.ray_cluster import RESOURCE, RayUnavailable, _reachable, resolve_address, show


def test_the_environment_wins_over_the_flow_and_auto_is_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PRAXIS_RAY_ADDRESS", raising=False)
    assert resolve_address(None) == "auto"
    assert resolve_address("ray://head:10001") == "ray://head:10001"
    monkeypatch.setenv("PRAXIS_RAY_ADDRESS", "10.0.0.5:6379")
    assert resolve_address("ray://head:10001") == "10.0.0.5:6379"


@pytest.mark.parametrize("address", ["ray://head", "head", "ray://:10001", "::::"])
def test_an_address_without_host_and_port_is_refused(address: str) -> None:
    with pytest.raises(RayUnavailable, match="is not ray://host:port, host:port or auto"):
        _reachable(address)


def test_an_address_where_nothing_listens_names_the_next_step() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(RayUnavailable) as caught:
        _reachable(f"ray://127.0.0.1:{port}")
    message = str(caught.value)
    assert message.startswith(f"no Ray cluster answers at ray://127.0.0.1:{port} (")
    assert "`ray start --head`" in message and "PRAXIS_RAY_ADDRESS" in message
    _reachable("auto")  # auto is Ray's own search: nothing to check here


def test_resources_are_shown_sorted_memory_in_gib_and_the_marker_left_out() -> None:
    demand = {"memory": 3 * (1 << 30), "CPU": 2.0, RESOURCE: 1.0, "gpu-node": 0.5}
    assert show(demand) == "CPU 2, gpu-node 0.5, memory 3g"
    assert show({}) == ""


class FlakyRay:
    """ray's init as a Ray client proxy answers it: the per-client server fails to start
    ``failures`` times, then the connection works."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.inits = 0
        self.shutdowns = 0

    def init(self, **kw: object) -> None:
        self.inits += 1
        if self.inits <= self.failures:
            raise ConnectionAbortedError("Initialization failure from server: Starting Ray ...")

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_a_client_server_that_failed_to_start_is_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ray_cluster.time, "sleep", lambda s: None)
    ray = FlakyRay(failures=2)
    ray_cluster._init(ray, "ray://127.0.0.1:10001")
    assert (ray.inits, ray.shutdowns) == (3, 2)


def test_a_client_server_that_never_starts_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ray_cluster.time, "sleep", lambda s: None)
    ray = FlakyRay(failures=5)
    with pytest.raises(ConnectionAbortedError):
        ray_cluster._init(ray, "ray://127.0.0.1:10001")
    assert ray.inits == 3


class SlowRay:
    """A Ray whose ``init`` takes a moment and, like Ray's, refuses a second one."""

    def __init__(self) -> None:
        self.inits = 0
        self.up = False

    def is_initialized(self) -> bool:
        return self.up

    def init(self, **kw: object) -> None:
        self.inits += 1
        if self.up:
            raise RuntimeError("Maybe you called ray.init twice by accident?")
        time.sleep(0.2)
        self.up = True


def test_sandboxes_opened_at_once_on_threads_join_the_cluster_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ray = SlowRay()
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setattr(ray_cluster, "_connected", [])
    monkeypatch.setattr(ray_cluster, "_token_auth", lambda: True)
    errors: list[BaseException] = []

    def join() -> None:
        try:
            ray_cluster.connect("auto")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=join) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and ray.inits == 1
