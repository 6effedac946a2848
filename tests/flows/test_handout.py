"""A phase's kernel handed out (params and note set) while the runner prepares the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from praxis.flows.engine.context import PhaseError
from praxis.flows.engine.handout import Handout
from sandbox import ExecResult, Kernel, SandboxUnavailable
from sandbox.fake import FakeSandbox


class Threaded(FakeSandbox):
    """The fake, handing its kernels out on the handout's thread (as docker and local do)."""

    kernel_in_thread = True


class Failing(Threaded):
    def kernel(self) -> Kernel:
        raise SandboxUnavailable("no kernel server")


@pytest.mark.parametrize("backend", [FakeSandbox, Threaded])
def test_the_kernel_has_params_and_note_before_the_phase_runs(
    backend: type[FakeSandbox], tmp_path: Path
) -> None:
    box = backend(workspace=tmp_path / "ws", name="r")
    box.open()
    handout = Handout(box, {"region": "north", "n": 3}, "look again", timeout=30)
    kernel = handout.kernel()
    result = kernel.execute("print(params['region'], params['n'] + 1, note)", timeout=30)
    assert result.stdout == "north 4 look again\n"
    handout.close()
    assert kernel.closed  # type: ignore[attr-defined]


def test_what_handing_out_raised_is_raised_by_kernel(tmp_path: Path) -> None:
    box = Failing(workspace=tmp_path / "ws", name="r")
    box.open()
    handout = Handout(box, {}, None, timeout=30)
    with pytest.raises(SandboxUnavailable, match="no kernel server"):
        handout.kernel()
    handout.close()  # nothing to shut down


def test_a_kernel_that_cannot_take_its_params_fails_the_phase(tmp_path: Path) -> None:
    def refuse(code: str, workspace: Path) -> ExecResult:
        return ExecResult(status="error", ename="MemoryError", evalue="the kernel refused")

    box = Threaded(workspace=tmp_path / "ws", name="r", handler=refuse)
    box.open()
    handout = Handout(box, {}, None, timeout=30)
    with pytest.raises(PhaseError, match="could not set params and note.*the kernel refused"):
        handout.kernel()
    handout.close()


def test_close_shuts_down_a_kernel_nobody_took(tmp_path: Path) -> None:
    box = Threaded(workspace=tmp_path / "ws", name="r")
    box.open()
    handout = Handout(box, {}, None, timeout=30)
    handout.close()  # e.g. preparing the workspace failed
    assert box.kernels_started == 1
    assert handout._kernel is not None and handout._kernel.closed  # type: ignore[attr-defined]
