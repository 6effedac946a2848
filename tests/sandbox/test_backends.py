"""The backends as plug-ins: one entry-point group names them, each is loaded when named, and
another distribution adds one the same way."""

from __future__ import annotations

import importlib
import importlib.metadata
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import SandboxUnavailable, UnknownBackend, backends, open_sandbox, plugins
from sandbox.options import DockerOptions, FakeOptions, LocalOptions, RayOptions


def reread() -> None:
    """Forget the backends the registry found (it caches them): the next lookup reads the
    entry points again, after a distribution was put on the path in this process."""
    backends._declared.cache_clear()
    backends._load.cache_clear()


@pytest.fixture
def fresh() -> Iterator[None]:
    """The registry read again before and after the test (it caches what it found)."""
    reread()
    try:
        yield
    finally:
        reread()


def test_the_names_are_the_entry_points_of_the_group() -> None:
    declared = importlib.metadata.entry_points(group=backends.GROUP)
    assert backends.names() == ("auto", *sorted(ep.name for ep in declared))
    assert backends.names() == ("auto", "docker", "fake", "local", "ray")
    for ep in declared:
        assert backends.get(ep.name) is ep.load()  # what importlib.metadata finds, no other


def test_each_builtin_backend_has_its_options_class_and_says_if_it_isolates() -> None:
    expected = {
        "docker": DockerOptions,
        "local": LocalOptions,
        "fake": FakeOptions,
        "ray": RayOptions,
    }
    for name, cls in expected.items():
        backend = backends.get(name)
        assert isinstance(backend, backends.Backend) and backend.options is cls
        assert isinstance(backend, backends.Builtin)
        module, _, attr = backend.target.partition(":")
        sandbox_class = getattr(importlib.import_module(module), attr)
        assert sandbox_class.backend == name and sandbox_class.isolated == backend.isolated
    assert backends.options_for("auto") is DockerOptions
    assert backends.takers("memory") == ["docker", "ray"]
    assert backends.takers("grace") == ["docker", "local", "ray"]


def test_an_unknown_backend_names_the_choices() -> None:
    with pytest.raises(UnknownBackend, match=r"^unknown sandbox backend 'podman' \(choose auto, "):
        backends.get("podman")


def test_naming_a_backend_imports_neither_its_sdk_nor_its_sandbox() -> None:
    """Checking docker's and ray's options (``praxis check``) loads their Backend objects
    only: the docker SDK, ray and the sandbox classes load when a sandbox is made."""
    code = (
        "import sys\n"
        "from sandbox.factory import options_from\n"
        "options_from('docker', {'memory': '1g'}); options_from('ray', {'address': 'auto'})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('docker', 'ray', 'zmq',"
        " 'jupyter_client', 'tempfile') or m in ('sandbox.container', 'sandbox.ray',"
        " 'sandbox.local', 'importlib.metadata')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


PLUGIN = """
from dataclasses import dataclass
from pathlib import Path

from sandbox.fake import FakeSandbox
from sandbox.options import Options, option, whole


@dataclass(frozen=True, kw_only=True)
class ToyOptions(Options):
    knobs: int = option(1, whole(1, 3))


class ToyBackend:
    options = ToyOptions
    isolated = False

    def sandbox(self, options, *, workspace: Path, name: str) -> FakeSandbox:
        box = FakeSandbox(workspace=workspace, name=name)
        box.toy = options
        return box


backend = ToyBackend()
"""


def _distribution(site: Path, name: str, entry_points: str) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


def test_another_distribution_adds_a_backend_with_an_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None
) -> None:
    site = tmp_path / "site"
    (site / "toy_backend").mkdir(parents=True)
    (site / "toy_backend" / "__init__.py").write_text(PLUGIN)
    _distribution(
        site,
        "toy_backend",
        f"""
        [console_scripts]
        toy = toy_backend:main

        [{backends.GROUP}]
        toy = toy_backend:backend
        """,
    )
    monkeypatch.syspath_prepend(str(site))
    reread()
    assert backends.names() == ("auto", "docker", "fake", "local", "ray", "toy")
    box = open_sandbox({"backend": "toy", "knobs": 2}, workspace=tmp_path / "ws", name="t")
    assert box.toy.knobs == 2  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"^option 'knobs' of the toy backend: must be between"):
        open_sandbox({"backend": "toy", "knobs": 9}, workspace=tmp_path / "ws", name="t")
    with pytest.raises(ValueError, match="unknown option 'knob' for the toy backend; did you"):
        open_sandbox({"backend": "toy", "knob": 2}, workspace=tmp_path / "ws", name="t")


def test_a_plugin_that_cannot_be_loaded_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None
) -> None:
    site = tmp_path / "site"
    _distribution(site, "broken", f"[{backends.GROUP}]\nbroken = no_such_module:backend\n")
    monkeypatch.syspath_prepend(str(site))
    reread()
    assert "broken" in backends.names()
    with pytest.raises(SandboxUnavailable, match=r"backend 'broken' \(no_such_module:backend\)"):
        open_sandbox({"backend": "broken"}, workspace=tmp_path / "ws", name="b")
    assert backends.takers("memory") == ["docker", "ray"]  # the others still answer


def test_the_first_distribution_of_a_name_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None
) -> None:
    """As importlib.metadata has it: a stale copy of praxis later on sys.path is not read."""
    site = tmp_path / "site"
    _distribution(site, "praxis", f"[{backends.GROUP}]\nstale = no_such_module:backend\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    reread()
    assert "stale" not in backends.names()


def test_a_source_tree_not_installed_says_so(monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    """Without praxis's metadata no backend is registered: the error says to install it."""
    monkeypatch.setattr(plugins, "_distributions", list)
    reread()
    assert backends.names() == ("auto",)
    with pytest.raises(UnknownBackend, match=r"no sandbox backend is registered .* install"):
        backends.get("docker")
