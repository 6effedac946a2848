"""Reaching a Ray cluster: the address from the environment first, a malformed or silent
address refused in seconds with the next step, resources shown as a person reads them."""

from __future__ import annotations

import socket

import pytest

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
