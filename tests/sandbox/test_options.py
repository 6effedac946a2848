"""Each backend's options as a type: the names it takes, each value's check, conversions."""

from __future__ import annotations

import dataclasses

import pytest

from sandbox.options import (
    DockerOptions,
    FakeOptions,
    LocalOptions,
    Problem,
    RayOptions,
)
from sandbox.values import host_cpus


def test_each_class_names_its_options_and_those_flow_yaml_may_set() -> None:
    assert FakeOptions.names() == ()
    assert LocalOptions.names() == (
        *("stream_limit", "display_limit", "grace", "start_timeout", "warm", "spares"),
    )
    assert DockerOptions.names() == (
        *LocalOptions.names(),
        *("image", "memory", "tmp_size", "disk", "cpus", "pids", "labels"),
    )
    assert RayOptions.names() == (
        *DockerOptions.names(),
        *("address", "resources", "node_root", "place_timeout", "spread"),
    )
    assert RayOptions.names(flow=True) == (*DockerOptions.names(), "resources")
    assert RayOptions.takes("spread") and not RayOptions.takes("spread", flow=True)
    assert RayOptions.takes("node_root") and not RayOptions.takes("node_root", flow=True)
    assert RayOptions.takes("address") and not RayOptions.takes("address", flow=True)


def test_options_are_typed_and_frozen() -> None:
    options = DockerOptions(memory="1g", cpus=0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.memory = "2g"  # type: ignore[misc]
    with pytest.raises(TypeError, match="memroy"):
        DockerOptions(memroy="1g")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional"):
        DockerOptions("1g")  # type: ignore[misc]


def test_each_value_is_checked_by_its_option() -> None:
    assert DockerOptions.check("memory", "1.5g") == []
    assert DockerOptions.check("pids", 0) == [
        Problem("pids", "must be between 32 and 65536, got 0")
    ]
    assert DockerOptions.check("cpus", host_cpus() + 1)[0].message.endswith(
        f"(this machine's cores), got {host_cpus() + 1}"
    )
    assert RayOptions.check("cpus", host_cpus() + 1) == []  # a node may be bigger
    assert DockerOptions.check("warm", "no") == [
        Problem("warm", "expected true or false, got string 'no'")
    ]
    assert LocalOptions.check("grace", 0) == [Problem("grace", "must be a positive number, got 0")]
    assert LocalOptions.check("grace", 601) == [
        Problem("grace", "must be at most 600 seconds, got 601")
    ]
    assert DockerOptions.check("labels", {"team": "data", "v": 2, "x": [1]}) == [
        Problem("labels.x", "expected a string, got a list")
    ]
    assert RayOptions.check("resources", {"gpu": 1, "big": 0}) == [
        Problem("resources.big", "expected a positive number, got integer 0")
    ]
    assert DockerOptions.check("image", "") == [
        Problem("image", "expected an image tag such as praxis-sandbox:<tag>, got string ''")
    ]


def test_values_are_kept_as_given() -> None:
    """An option built from a mapping holds what was given (``cpus: 1`` stays 1): the
    sandbox converts, and what flow.yaml said stays what it said."""
    options = DockerOptions.build({"cpus": 1, "memory": 2 << 30, "labels": {"v": 2}})
    assert options.cpus == 1 and isinstance(options.cpus, int)
    assert options.memory == 2 << 30 and options.labels == {"v": 2}


def test_options_convert_to_another_backends_keeping_those_both_take() -> None:
    docker = DockerOptions(memory="1g", grace=2.0, spares=1)
    assert docker.to(LocalOptions) == LocalOptions(grace=2.0, spares=1)
    assert docker.to(FakeOptions) == FakeOptions()
    ray = RayOptions(memory="4g", cpus=2, address="auto", resources={"big": 1}, image="x")
    assert ray.docker() == DockerOptions(memory="4g", cpus=2, image="x")
