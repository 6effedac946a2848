"""Fixtures for agent-phase tests: a real local kernel, a hand-built PhaseContext, scripted models.

One local sandbox serves the whole session (its warm standby hands each test a fresh kernel);
each test starts from an emptied workspace.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from praxis.agent.scripted import ScriptedChatModel
from praxis.agent.spec import AgentSpec
from praxis.flows.engine.context import PhaseContext
from praxis.flows.model.events import Event
from praxis.flows.model.flow import Flow, Phase
from praxis.flows.store.record import Record
from praxis.llm.given import Approver, ModelGiven
from sandbox import Sandbox, open_sandbox


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"name": tool, "args": args}


def reply(*calls: dict[str, Any], text: str = "") -> dict[str, Any]:
    return {"text": text, "tool_calls": list(calls)}


@dataclass
class Harness:
    """A PhaseContext and what the executor left behind."""

    ctx: PhaseContext
    events: list[Event]
    waits: list[str | None] = field(default_factory=list)

    @property
    def workspace(self) -> Path:
        return Path(self.ctx.sandbox.workspace.root)  # type: ignore[attr-defined]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]

    @property
    def model(self) -> Any:
        """The scripted chat model the phase was given."""
        assert isinstance(self.ctx.given, ModelGiven)
        return self.ctx.given.model

    def tool_results(self) -> list[str]:
        model = self.model
        last = model.received[-1]
        return [m.content for m in last if m.type == "tool"]


@pytest.fixture(scope="session")
def local_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    sb = open_sandbox(
        {"backend": "local"}, workspace=tmp_path_factory.mktemp("agent") / "ws", name="agent-t"
    )
    sb.open()
    try:
        yield sb
    finally:
        sb.close()


@pytest.fixture
def flow_root(tmp_path: Path) -> Path:
    root = tmp_path / "flow"
    (root / "prompts").mkdir(parents=True)
    (root / "prompts" / "task.md").write_text("Produce the report.\n")
    return root


Make = Callable[..., Harness]


@pytest.fixture
def make(tmp_path: Path, flow_root: Path, local_sandbox: Sandbox) -> Iterator[Make]:
    """``make(replies, **phase_fields)``: a Harness whose model replays ``replies``."""
    ws = Path(local_sandbox.workspace.root)  # type: ignore[attr-defined]
    for child in ws.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    kernels = []

    def build(
        replies: list[Any],
        *,
        approver: Approver | None = None,
        note: str | None = None,
        database: str | None = None,
        root: Path = flow_root,
        before: tuple[Phase, ...] = (),
        **phase: Any,
    ) -> Harness:
        own = {k: phase.pop(k) for k in ("prompt", "scripts", "queries", "limits") if k in phase}
        own.setdefault("prompt", "prompts/task.md")
        spec = Phase(id="report", kind="agent", spec=AgentSpec(**own), **phase)
        flow = Flow(name="t", root=root, phases=(*before, spec), database=database)
        run_dir = tmp_path / "run"
        (run_dir / "output").mkdir(parents=True, exist_ok=True)
        for name in spec.working:  # what the runner's step 2 does
            base = run_dir / "output" if flow.producer(name) else root
            local_sandbox.upload(base / name, name)
        kernel = local_sandbox.kernel()
        kernels.append(kernel)
        events: list[Event] = []
        h = Harness(ctx=None, events=events)  # type: ignore[arg-type]
        h.ctx = PhaseContext(
            flow=flow,
            phase=spec,
            run_id="r1",
            attempt=1,
            run_dir=run_dir,
            sandbox=local_sandbox,
            kernel=kernel,
            timeout=60,
            emit=events.append,
            record=Record(),
            staging=run_dir / "staging",
            note=note,
            waiting=h.waits.append,
            given=ModelGiven(model=ScriptedChatModel(replies=replies), approver=approver),
        )
        return h

    yield build
    for kernel in kernels:
        kernel.shutdown()
