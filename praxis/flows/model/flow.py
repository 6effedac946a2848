"""A Flow definition as loaded from flow.yaml. Plain data; ``contract.load`` builds it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox.backends import AUTO, options_for
from sandbox.options import Options

REVIEW_MODES = ("none", "required")
DEFAULT_LIMITS = {"model_calls": 20, "run_python": 8}
DEFAULT_TIMEOUT = 600  # seconds a phase's code may run, unless flow.yaml says


@dataclass(frozen=True)
class Phase:
    id: str
    kind: (
        str  # a phase kind (praxis.flows.definition.kinds): script | notebook | agent | a plug-in's
    )
    script: str | None = None  # script/notebook: path relative to the flow folder
    prompt: str | None = None  # agent: path relative to the flow folder
    scripts: tuple[str, ...] = ()  # agent: prepared scripts
    queries: tuple[str, ...] = ()  # agent: prepared queries
    working: tuple[str, ...] = ()  # flow files or earlier outputs, uploaded to the workspace
    reference: tuple[str, ...] = ()  # flow files or earlier outputs, read into an agent's prompt
    outputs: tuple[str, ...] = ()
    may_be_empty: tuple[str, ...] = ()
    review: str = "none"
    limits: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    timeout: float | None = None  # overrides sandbox.timeout for this phase
    description: str = ""
    delegatable: bool = False  # an agent may decide its Gate in managed mode
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)  # output -> checks
    allow_errors: bool = False  # notebook: run past a failing cell (nbclient's allow_errors)
    reuse: str = "auto"  # auto | never: "never" for code that reads the clock or randomness

    @property
    def gated(self) -> bool:
        return self.review == "required"


@dataclass(frozen=True)
class SandboxSettings:
    """flow.yaml's ``sandbox:``: the flow's own settings, and its backend's options as their
    own type (``sandbox.options``; ``auto`` takes docker's). ``sandbox_config`` builds it.

    ``written`` is the section as flow.yaml wrote it: what the reuse key holds (so settled work
    is found again whatever the types), and what a caller's override is laid over. Everything
    else reads the typed fields."""

    backend: str = AUTO
    options: Options = field(default_factory=lambda: options_for(AUTO)())
    timeout: float = DEFAULT_TIMEOUT  # seconds per phase
    packages: tuple[str, ...] = ()  # requirements beyond the image (requirements.txt adds)
    collect: int | None = None  # bytes of new files one phase may leave (None: 1 GiB)
    written: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Flow:
    name: str
    root: Path  # the folder holding flow.yaml
    phases: tuple[Phase, ...]
    description: str = ""
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    model: str | None = None
    database: str | None = None  # agent extracts: a SQLite file of the flow, or a SQLAlchemy URL
    params: dict[str, Any] = field(default_factory=dict)  # run parameters and their defaults
    notify: dict[str, Any] = field(default_factory=dict)  # {webhook, when}: who is told (notify.py)

    def phase(self, phase_id: str) -> Phase:
        for p in self.phases:
            if p.id == phase_id:
                return p
        raise KeyError(phase_id)

    def index(self, phase_id: str) -> int:
        for i, p in enumerate(self.phases):
            if p.id == phase_id:
                return i
        raise KeyError(phase_id)

    def producer(self, output: str) -> Phase | None:
        """The phase that declares ``output``, if any."""
        for p in self.phases:
            if output in p.outputs:
                return p
        return None

    @property
    def definition(self) -> Path:
        return self.root / "flow.yaml"
