"""One phase (its steps on the fake sandbox): a failure names its cause, a stale phase whose
inputs are unchanged is reused, inputs come from earlier outputs or the flow's files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.engine import inputs, runner
from praxis.flows.engine import phase as phase_step
from praxis.flows.store import snapshot
from praxis.flows.store.event_log import EventLog
from praxis.flows.store.handle import RunHandle
from sandbox import Kernel, KernelDied, PathRefused, SandboxUnavailable
from sandbox.fake import FakeSandbox

from .helpers import Fakes, one_script_flow, three_phase_flow, write_flow


def kinds(run: RunHandle) -> list[str]:
    return [e.kind for e in EventLog(run.paths.events).read()]


def test_script_error_names_the_script_and_the_exception(tmp_path) -> None:
    flow = one_script_flow(tmp_path / "f", "x = 1\nraise ValueError('bad input')\n")
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.status == "failed"
    assert state.phase("a").error.startswith("s.py")
    assert "ValueError: bad input" in state.phase("a").error


def test_kernel_death_fails_the_phase(tmp_path) -> None:
    def die(code, workspace):
        raise KernelDied("out of memory")

    flow = one_script_flow(tmp_path / "f", "pass")
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes(handler=die)))
    assert state.phase("a").error == "KernelDied: kernel died: out of memory"


def test_a_rerun_whose_output_is_unchanged_reuses_the_later_phases(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    runner.approve(flow, run.id, expect_revision=state.revision)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    runner.rerun(flow, "load", run.id)
    fakes = Fakes()
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=fakes))
    assert state.waiting == "gate"  # review was reused; its Gate still asks the reviewer
    assert [p.attempt for p in state.phases] == [2, 1, 1]
    assert state.phase("review").reused and state.phase("review").status == "done"
    assert len(fakes.executed) == 1 and "phase_reused" in kinds(run)


TWO = """
    sandbox: {backend: fake%s}
    phases:
      - {id: a, kind: script, script: a.py, outputs: [x.txt]}
      - {id: b, kind: script, script: b.py, inputs: {working: [x.txt, data/in.csv]},
         outputs: [y.txt]}
"""


def test_an_input_is_an_earlier_output_or_a_flow_file_never_a_link(tmp_path: Path) -> None:
    root = write_flow(tmp_path / "f", TWO % "", {"a.py": "", "b.py": "", "data/in.csv": "x\n"})
    run = runner.begin(root)
    with pytest.raises(PathRefused, match="does not exist"):  # not produced yet
        inputs.source_of(run, "x.txt")
    run.paths.out("x.txt").write_text("x")
    assert inputs.source_of(run, "x.txt") == run.paths.output / "x.txt"
    assert inputs.source_of(run, "data/in.csv") == root / "data" / "in.csv"
    (tmp_path / "secret.csv").write_text("host")
    os.symlink(tmp_path / "secret.csv", root / "data" / "link.csv")
    with pytest.raises(PathRefused, match="is a symbolic link"):
        inputs.source_of(run, "data/link.csv")


def test_the_collect_limit_is_flow_yamls_else_one_gib(tmp_path: Path) -> None:
    files = {"a.py": "", "b.py": "", "data/in.csv": "x\n"}
    default = runner.begin(write_flow(tmp_path / "f", TWO % "", files))
    assert phase_step.collect_limit(default) == snapshot.MAX_BYTES == 1 << 30
    small = runner.begin(write_flow(tmp_path / "g", TWO % ", collect: 2m", files))
    assert phase_step.collect_limit(small) == 2 << 20


class Unstoppable(FakeSandbox):
    """The fake, handing kernels out on a thread, whose processes cannot be stopped."""

    kernel_in_thread = True

    def quiesce(self) -> None:
        raise SandboxUnavailable("the kernel server is gone")


class NoKernel(FakeSandbox):
    """The fake, handing kernels out on a thread, where no kernel can start."""

    kernel_in_thread = True

    def kernel(self) -> Kernel:
        raise SandboxUnavailable("no kernel server")


@pytest.mark.parametrize("box", [Unstoppable, NoKernel])
def test_a_sandbox_that_fails_before_the_code_runs_fails_the_attempt_on_record(
    tmp_path: Path, box: type[FakeSandbox]
) -> None:
    flow = one_script_flow(tmp_path / "f", "pass")
    run = runner.begin(flow)

    def make(flow: object, run: RunHandle) -> FakeSandbox:
        return box(workspace=run.paths.workspace, name=run.id)

    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=make))
    assert state.status == "failed"
    assert state.phase("a").status == "failed" and state.phase("a").attempt == 1
    assert "SandboxUnavailable" in str(state.phase("a").error)
    assert kinds(run)[-1] == "phase_failed" and "phase_started" in kinds(run)
    assert RunHandle.open(runner.load_flow(flow), run.id).state.phase("a").status == "failed"


class Sealing(FakeSandbox):
    """The fake as an isolated backend: quiesce makes every workspace file read-only."""

    isolated = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.uploads: list[str] = []

    def upload(self, src: Path, name: str) -> None:
        self.uploads.append(name)
        super().upload(src, name)

    def quiesce(self) -> None:
        self.workspace.seal()


@pytest.mark.parametrize(("isolated", "uploads"), [(True, ["data/in.csv"]), (False, None)])
def test_an_input_the_workspace_holds_already_is_not_uploaded_again_where_sealed(
    tmp_path: Path, isolated: bool, uploads: list[str] | None
) -> None:
    files = {
        "a.py": "open('x.txt', 'w').write('from a')",
        "b.py": "open('y.txt', 'w').write(open('x.txt').read() + open('data/in.csv').read())",
        "data/in.csv": "x\n",
    }
    root = write_flow(tmp_path / "f", TWO % "", files)
    run = runner.begin(root)
    made: list[Sealing] = []

    def make(flow: object, run: RunHandle) -> Sealing:
        made.append(Sealing(workspace=run.paths.workspace, name=run.id))
        made[-1].isolated = isolated
        return made[-1]

    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=make))
    assert state.status == "done"
    assert run.paths.out("y.txt").read_text() == "from ax\n"
    expected = uploads if uploads is not None else ["x.txt", "data/in.csv"]
    assert sorted(made[0].uploads) == sorted(expected)  # a's x.txt stays where a left it, sealed
    runner.rerun(root, "b", run.id)  # a new process: the workspace is looked at afresh
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=make, reuse=False))
    assert state.status == "done" and state.phase("b").attempt == 2
    assert sorted(made[1].uploads) == sorted(expected)
    assert run.paths.out("y.txt").read_text() == "from ax\n"


class SweepFails(FakeSandbox):
    """A sandbox whose sweep after a kernel ran cannot stop what the phase started."""

    ran = False

    def kernel(self) -> Kernel:
        self.ran = True
        return super().kernel()

    def quiesce(self) -> None:
        if self.ran:
            raise SandboxUnavailable("the sandbox could not stop the phase's processes: 1 left")


@pytest.mark.parametrize("script", ["pass", "raise ValueError('bad input')"])
def test_a_sweep_that_fails_fails_the_phase_never_swallowed(tmp_path, script) -> None:
    flow = one_script_flow(tmp_path / "f", script)
    run = runner.begin(flow)

    def make(flow: Any, run: Any) -> SweepFails:
        return SweepFails(workspace=run.paths.workspace, name=run.id)

    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=make))
    assert state.phase("a").status == "failed"
    assert "could not stop the phase's processes: 1 left" in str(state.phase("a").error)
    if "raise" in script:  # the phase's own error comes first, the sweep's joins it
        assert str(state.phase("a").error).startswith("s.py")
