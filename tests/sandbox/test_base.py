"""The contract's three parts: the core of DESIGN.md §2, and the two extensions the flows
runner needs (Sweeps, WorkspaceEdits), each with its hooks' defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.base import (
    ExecResult,
    FileStat,
    Kernel,
    OutputCallback,
    Sandbox,
    SandboxCore,
    Sweeps,
    WorkspaceEdits,
)
from sandbox.container import DockerSandbox
from sandbox.fake import FakeSandbox
from sandbox.local import LocalSandbox
from sandbox.ray import RaySandbox

DESIGN = {"open", "upload", "listing", "fetch", "kernel", "close"}


class Echo(Kernel):
    """Returns the code it is given as its stdout."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def execute(
        self,
        code: str,
        *,
        timeout: float,
        on_output: OutputCallback | None = None,
        store_history: bool = False,
        stop_on_error: bool = True,
    ) -> ExecResult:
        self.ran.append(code)
        return ExecResult(status="ok", stdout=code)

    def interrupt(self) -> None:
        pass

    def shutdown(self) -> None:
        self.closed = True


class CoreOnly(SandboxCore):
    """A backend of the six methods alone: files in a dict, an echoing kernel."""

    backend = "core-only"

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.kernels: list[Echo] = []
        self.opened = False

    def open(self) -> None:
        self.opened = True

    def upload(self, src: Path, name: str) -> None:
        self.files[name] = src.read_bytes()

    def listing(self) -> dict[str, FileStat]:
        return {name: FileStat(size=len(data), mtime_ns=0) for name, data in self.files.items()}

    def fetch(self, name: str, dest: Path) -> str | None:
        dest.write_bytes(self.files[name])
        return None

    def kernel(self) -> Kernel:
        self.kernels.append(Echo())
        return self.kernels[-1]

    def close(self) -> None:
        self.opened = False


class Edits(CoreOnly, WorkspaceEdits):
    """The core and the workspace edits, relying on the edits' defaults for the looks."""

    def remove(self, name: str) -> None:
        self.files.pop(name, None)

    def make_folder(self, name: str) -> None:
        raise AssertionError("not called here")

    def remove_folder(self, name: str) -> None:
        raise AssertionError("not called here")

    def clear(self) -> None:
        self.files.clear()


def test_the_core_is_the_six_methods_of_design_section_2() -> None:
    assert SandboxCore.__abstractmethods__ == DESIGN


def test_each_extension_names_what_it_adds_and_the_runners_sandbox_is_all_three() -> None:
    assert Sweeps.__abstractmethods__ == {"quiesce"}
    assert WorkspaceEdits.__abstractmethods__ == {
        "listing", "remove", "make_folder", "remove_folder", "clear"
    }  # fmt: skip
    assert Sandbox.__abstractmethods__ == DESIGN | {
        "quiesce", "remove", "make_folder", "remove_folder", "clear"
    }  # fmt: skip
    for backend in (DockerSandbox, LocalSandbox, FakeSandbox, RaySandbox):
        assert issubclass(backend, Sandbox) and not backend.__abstractmethods__, backend


def test_a_backend_of_the_core_alone_runs_code_with_the_hooks_defaults(tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_bytes(b"a,b\n")
    with CoreOnly() as box:
        assert box.opened
        box.upload(src, "data/in.csv")
        assert box.listing() == {"data/in.csv": FileStat(size=4, mtime_ns=0)}
        kernel, result = box.kernel_running("print(1)", timeout=5)
        assert result.stdout == "print(1)" and box.kernels == [kernel]
        assert kernel.ran == ["print(1)"]  # type: ignore[attr-defined]
        assert box.usable()
        assert box.describe() == {"backend": "core-only", "isolated": True}
    assert not box.opened
    assert not isinstance(box, Sandbox)  # the runner never gets one: it needs the extensions


def test_the_workspace_edits_defaults_look_through_the_listing(tmp_path: Path) -> None:
    src = tmp_path / "x"
    src.write_bytes(b"x")
    box = Edits()
    for name in ("a/b/c.txt", "a/d.txt", "top.txt"):
        box.upload(src, name)
    assert box.folders() == {"a", "a/b"}
    assert box.strays() == set()
    assert box.survey() == (box.listing(), {"a", "a/b"}, set())
    box.remove("a/b/c.txt")
    assert box.folders() == {"a"}


def test_a_backend_missing_an_extension_cannot_be_made() -> None:
    class NoSweep(Edits, Sandbox):
        pass

    with pytest.raises(TypeError, match="quiesce"):
        NoSweep()  # type: ignore[abstract]
