"""A Flow definition as loaded from flow.yaml. Plain data; ``contract.load`` builds it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sandbox.backends import AUTO, options_for
from sandbox.options import Options

from .fanout import FanOut
from .forms import FormField
from .retry_policy import RetryPolicy

REVIEW_MODES = ("none", "required")
DEFAULT_TIMEOUT = 600  # seconds a phase's code may run, unless flow.yaml says

S = TypeVar("S")


@dataclass(frozen=True)
class Phase:
    """One phase of a flow: the keys every kind takes, and ``spec``, the keys its kind takes
    as that kind read them (a frozen dataclass its ``fit`` built: a script phase's file, an
    agent's prompt, prepared scripts and limits, a plug-in's own). The flows never look
    inside ``spec``; a kind's executor reads it with ``spec_as``."""

    id: str
    kind: (
        str  # a phase kind (praxis.flows.definition.kinds): script | notebook | agent | a plug-in's
    )
    spec: Any = None  # the kind's own keys (None: a kind that takes none)
    working: tuple[str, ...] = ()  # flow files or earlier outputs, uploaded to the workspace
    reference: tuple[str, ...] = ()  # flow files or earlier outputs, read into an agent's prompt
    outputs: tuple[str, ...] = ()
    may_be_empty: tuple[str, ...] = ()
    review: str = "none"
    timeout: float | None = None  # overrides sandbox.timeout for this phase
    description: str = ""
    delegatable: bool = False  # an agent may decide its Gate, under a person's grant
    approvers: tuple[str, ...] = ()  # roles of the people who may decide its Gate (any: ())
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)  # output -> checks
    reuse: str = "auto"  # auto | never: "never" for code that reads the clock or randomness
    fresh: float | None = None  # reuse: {within: ...}: seconds a done attempt may stand for it
    retries: RetryPolicy | None = None  # a failed attempt tried again (retry_policy.py)
    form: tuple[FormField, ...] = ()  # the fields a reviewer fills in at its Gate (forms.py)
    deadline: float | None = None  # seconds a Gate may wait before ``escalate`` is told
    escalate: tuple[str, ...] = ()  # notify targets of the person's profile, by name
    fanout: FanOut | None = None  # foreach: one sandbox per partition (model/fanout.py)

    @property
    def gated(self) -> bool:
        return self.review == "required"

    def spec_as(self, cls: type[S]) -> S:
        """``spec``, which its kind's executor knows to be a ``cls``."""
        if not isinstance(self.spec, cls):
            raise TypeError(
                f"phase {self.id!r} ({self.kind}) has a {type(self.spec).__name__} spec, "
                f"not a {cls.__name__}"
            )
        return self.spec


@dataclass(frozen=True)
class Publish:
    """flow.yaml's ``publish:``: an output written to a table once a person approved the run's
    last Gate, through a connection of the profile marked ``write: true`` (DESIGN.md §18)."""

    output: str
    connection: str  # a connection of the person's profile, by name
    table: str  # [schema.]table
    mode: str = "replace"  # replace | upsert
    key: tuple[str, ...] = ()  # upsert: the columns a row is found by

    @property
    def shown(self) -> str:
        how = f"upsert by {', '.join(self.key)}" if self.mode == "upsert" else self.mode
        return f"{self.output} -> {self.connection}: {self.table} ({how})"


@dataclass(frozen=True)
class Schedule:
    """flow.yaml's ``schedule:``: a cron expression, its timezone, what to do with missed
    ticks (``latest``: start the newest only; ``all``: each, capped; ``none``: skip them)."""

    cron: str
    timezone: str = "UTC"
    catchup: str = "latest"


@dataclass(frozen=True)
class Trigger:
    """flow.yaml's ``trigger:``: files of the flow (a folder and a pattern of names in it)
    that start a run each once they stopped changing for ``settle`` seconds."""

    files: str
    settle: float = 30.0


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
    cluster: str | None = None  # backend ray: a cluster of the person's profile, by name
    written: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Flow:
    name: str
    root: Path  # the folder holding flow.yaml
    phases: tuple[Phase, ...]
    description: str = ""
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    model: str | None = None
    database: str | None = (
        None  # a connection of the person's profile, or a database file of the flow
    )
    params: dict[str, Any] = field(default_factory=dict)  # run parameters and their defaults
    notify: dict[str, Any] = field(default_factory=dict)  # {to, when}: profile targets (notify.py)
    schedule: Schedule | None = None  # runs on a calendar (praxis serve, praxis schedule)
    trigger: Trigger | None = None  # a run per new or changed file
    publish: tuple[Publish, ...] = ()  # approved outputs written to tables (publish_spec.py)

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
