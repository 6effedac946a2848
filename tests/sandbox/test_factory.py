"""open_sandbox: a backend chosen by name gets the rest of the config; auto falls back once."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sandbox import SandboxUnavailable, open_sandbox
from sandbox.fake import FakeSandbox
from sandbox.local import LocalSandbox


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


def test_open_sandbox_builds_the_fake_with_its_options(tmp_path: Path) -> None:
    sb = open_sandbox({"backend": "fake", "memory": "1g"}, workspace=tmp_path / "ws", name="r")
    assert isinstance(sb, FakeSandbox)
    assert sb.options == {"memory": "1g"} and sb.describe() == {
        "backend": "fake",
        "isolated": False,
    }


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
