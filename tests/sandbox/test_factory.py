"""open_sandbox: a backend chosen by name gets the rest of the config; auto falls back once."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sandbox import BadOption, FakeOptions, LocalOptions, SandboxUnavailable, open_sandbox
from sandbox.fake import FakeSandbox
from sandbox.local import LocalSandbox
from sandbox.values import host_memory, size


@contextmanager
def unreachable_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """DOCKER_HOST names no daemon. The docker SDK leaks the unix socket of a failed connect
    (docker/transport/unixconn.py); it is collected here, quietly, so it cannot fail a
    later test."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            yield
        finally:
            gc.collect()


def test_open_sandbox_builds_the_backend_with_its_options(tmp_path: Path) -> None:
    sb = open_sandbox({"backend": "fake"}, workspace=tmp_path / "ws", name="r")
    assert isinstance(sb, FakeSandbox)
    assert sb.options == FakeOptions() and sb.describe() == {
        "backend": "fake",
        "isolated": False,
    }
    sb = open_sandbox({"backend": "local", "grace": 1.0}, workspace=tmp_path / "ws", name="r")
    assert isinstance(sb, LocalSandbox)
    assert sb.options == LocalOptions(grace=1.0) and sb.grace == 1.0


def test_an_option_the_backend_does_not_take_is_refused_naming_the_nearest(
    tmp_path: Path,
) -> None:
    with pytest.raises(BadOption) as info:
        open_sandbox({"backend": "docker", "memroy": "1g"}, workspace=tmp_path, name="r")
    assert (
        str(info.value) == "unknown option 'memroy' for the docker backend; did you mean 'memory'?"
    )
    assert info.value.backend == "docker"
    with pytest.raises(
        BadOption, match=r"^unknown option 'zz' for the fake backend \(it takes: none\)$"
    ):
        open_sandbox({"backend": "fake", "zz": 1}, workspace=tmp_path, name="r")
    with pytest.raises(BadOption) as info:
        open_sandbox({"backend": "local", "memory": "1g"}, workspace=tmp_path, name="r")
    assert str(info.value) == (
        "the local backend does not take option 'memory' (docker and ray take it)"
    )
    assert not (tmp_path / "ws").exists()


def test_a_value_of_the_wrong_type_or_out_of_bounds_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadOption) as info:
        open_sandbox(
            {"backend": "docker", "memory": "0", "pids": "many", "warm": "yes"},
            workspace=tmp_path,
            name="r",
        )
    assert info.value.problems == [
        f"option 'memory' of the docker backend: must be between 64m and {size(host_memory())} "
        "(this machine's RAM), got '0'",
        "option 'pids' of the docker backend: expected a whole number, got string 'many'",
        "option 'warm' of the docker backend: expected true or false, got string 'yes'",
    ]
    with pytest.raises(BadOption, match="option 'resources.gpu' of the ray backend: expected a "):
        open_sandbox({"backend": "ray", "resources": {"gpu": -1}}, workspace=tmp_path, name="r")


def test_unknown_backend_is_refused_with_the_choices(tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailable, match="choose auto, docker, fake, local"):
        open_sandbox({"backend": "podman"}, workspace=tmp_path, name="r")


def test_auto_falls_back_to_local_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said: list[str] = []
    with unreachable_docker(tmp_path, monkeypatch):
        sb = open_sandbox({"memory": "1g"}, workspace=tmp_path / "ws", name="x", warn=said.append)
    assert isinstance(sb, LocalSandbox)
    assert len(said) == 1 and "WITHOUT isolation" in said[0]


def test_explicit_docker_never_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    with unreachable_docker(tmp_path, monkeypatch):
        sb = open_sandbox(
            {"backend": "docker"}, workspace=tmp_path / "ws", name="x", warn=said.append
        )
        assert sb.backend == "docker" and said == []
        try:
            with pytest.raises(SandboxUnavailable):
                sb.open()
        finally:
            sb.close()
    assert said == []
