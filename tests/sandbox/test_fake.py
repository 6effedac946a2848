"""The fake backend: in-process exec, scripted handlers, bookkeeping for runner tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox import ExecResult, ExecTimeout, KernelDied, SandboxUnavailable
from sandbox.fake import FakeSandbox


def test_exec_records_code_counts_kernels_and_restores_cwd(fake_sandbox: FakeSandbox) -> None:
    here = os.getcwd()
    kernel = fake_sandbox.kernel()
    first = kernel.execute("import os\nx = 2\nprint(os.getcwd())", timeout=1)
    second = kernel.execute("print(x * 21)", timeout=1)
    assert first.stdout == f"{fake_sandbox.workspace.root}\n" and second.stdout == "42\n"
    assert os.getcwd() == here
    assert fake_sandbox.executed == ["import os\nx = 2\nprint(os.getcwd())", "print(x * 21)"]
    assert fake_sandbox.kernels_started == 1
    fake_sandbox.kernel()
    assert fake_sandbox.kernels_started == 2


def test_a_code_error_is_a_structured_result_not_an_exception(fake_sandbox: FakeSandbox) -> None:
    result = fake_sandbox.kernel().execute(
        "print('before')\nraise ValueError('bad row 3')", timeout=1
    )
    assert (result.status, result.ename, result.evalue) == ("error", "ValueError", "bad row 3")
    assert result.stdout == "before\n"
    assert "ValueError: bad row 3" in "".join(result.traceback)
    assert [o["output_type"] for o in result.outputs] == ["stream", "error"]


def test_a_handler_scripts_results_and_failures(tmp_path: Path) -> None:
    def handler(code: str, workspace: Path) -> ExecResult:
        if code == "hang":
            raise ExecTimeout(5)
        if code == "die":
            raise KernelDied("out of memory")
        (workspace / "made.txt").write_text(code)
        return ExecResult(status="ok", stdout="scripted\n")

    sb = FakeSandbox(workspace=tmp_path / "ws", name="r", handler=handler)
    sb.open()
    kernel = sb.kernel()
    assert kernel.execute("write", timeout=1).stdout == "scripted\n"
    assert set(sb.listing()) == {"made.txt"}
    with pytest.raises(ExecTimeout):
        kernel.execute("hang", timeout=1)
    with pytest.raises(KernelDied, match="out of memory"):
        kernel.execute("die", timeout=1)
    assert sb.executed == ["write", "hang", "die"]


def test_a_shut_down_kernel_and_a_closed_sandbox_refuse_work(fake_sandbox: FakeSandbox) -> None:
    kernel = fake_sandbox.kernel()
    kernel.shutdown()
    kernel.shutdown()
    with pytest.raises(KernelDied):
        kernel.execute("1", timeout=1)
    fake_sandbox.close()
    with pytest.raises(SandboxUnavailable):
        fake_sandbox.kernel()
