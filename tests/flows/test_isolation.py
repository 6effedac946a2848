"""Which backend a flow opens, as the person allowed it: PRAXIS_SANDBOX read in one place, a
backend that is not isolated refused without the grant, auto pinned to docker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from praxis.flows.definition import isolation
from praxis.flows.definition.isolation import LocalRefused
from praxis.flows.model.flow import SandboxSettings


@pytest.fixture
def nobody_granted(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(isolation.ENV, raising=False)
    before = isolation.allow_local(False)
    try:
        yield
    finally:
        isolation.allow_local(before)


def test_the_registry_says_which_backends_run_code_on_this_host() -> None:
    assert [b for b in ("auto", "docker", "local", "fake", "ray") if isolation.on_host(b)] == [
        "local",
        "fake",
    ]
    assert not isolation.on_host("podman")  # runs nothing: opening it says so


def test_auto_is_pinned_to_docker_and_local_is_refused(nobody_granted: None) -> None:
    assert isolation.confine(SandboxSettings()) == "docker"
    assert isolation.confine(SandboxSettings(backend="ray")) == "ray"
    with pytest.raises(LocalRefused, match="asks for the fake backend"):
        isolation.confine(SandboxSettings(backend="fake"))


def test_the_persons_flag_or_environment_grants_it(
    nobody_granted: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolation.allow_local(True)
    assert isolation.confine(SandboxSettings()) == "auto"  # docker, else local kernels
    assert isolation.confine(SandboxSettings(backend="local")) == "local"
    isolation.allow_local(False)
    monkeypatch.setenv(isolation.ENV, "local")
    assert isolation.person_backend() == "local" and isolation.local_allowed()
    assert isolation.confine(SandboxSettings()) == "local"  # laid over auto
    assert isolation.confine(SandboxSettings(backend="docker")) == "docker"  # never over a choice
    monkeypatch.setenv(isolation.ENV, "")
    assert isolation.person_backend() is None and not isolation.local_allowed()
    monkeypatch.setenv(isolation.ENV, "docker")
    assert not isolation.local_allowed()
