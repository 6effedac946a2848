"""The built-in phase kinds (``praxis.flows.definition.kinds.PhaseKind``), declared as entry
points of ``praxis.phase_kinds`` in pyproject.toml: ``script``, ``notebook`` and ``agent``.

This module is light: checking a flow.yaml loads it, so a kind's executor (``praxis.phases.
script``, ``notebook``, ``agent``: the kernel, nbformat, the model stack) is imported only when
an attempt runs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from praxis.flows.definition.yaml_values import show

if TYPE_CHECKING:
    from pathlib import Path

    from praxis.flows.definition.kinds import Reader
    from praxis.flows.engine.context import PhaseContext
    from praxis.flows.model.flow import Flow, Phase

AGENT_ONLY = ("prompt", "scripts", "queries", "limits")


def _files(flow: Flow, phase: Phase) -> list[str]:
    """The flow files a phase's code comes from (not its working inputs: those are state)."""
    names = [n for n in (phase.script, phase.prompt) if n]
    names += list(phase.scripts) + list(phase.queries)
    names += [n for n in phase.reference if flow.producer(n) is None]
    return names


@dataclass(frozen=True)
class _Executed:
    """What every built-in kind does the same way: its executor is the module ``module``
    (``run(ctx)``), imported when an attempt runs; its code's files are the phase's own."""

    module: str

    def files(self, flow: Flow, phase: Phase) -> list[str]:
        return _files(flow, phase)

    def load(self) -> None:
        importlib.import_module(self.module)

    def run(self, ctx: PhaseContext) -> None:
        importlib.import_module(self.module).run(ctx)


@dataclass(frozen=True)
class FileKind(_Executed):
    """A phase that runs one file of the flow: a script (.py) or a notebook (.ipynb)."""

    name: str
    suffix: str
    reusable: bool = True
    reads_reference: bool = False

    def fit(self, raw: dict[str, Any], loc: str, reader: Reader) -> None:
        for key in [k for k in AGENT_ONLY if k in raw]:
            reader.error(
                f"{loc}.{key}", f"only agent phases take {key!r} (this is a {self.name} phase)"
            )
            del raw[key]
        if "script" not in raw:
            reader.error(
                loc,
                f"missing required key 'script' (the {self.suffix} file a {self.name} phase runs)",
            )
        script = raw.get("script")
        if isinstance(script, str) and not script.endswith(self.suffix):
            reader.error(
                f"{loc}.script", f"{show(script)} must end in {self.suffix} for a {self.name} phase"
            )
            del raw["script"]

    def check(self, root: Path, script: str, loc: str, reader: Reader) -> None:
        if self.suffix == ".ipynb":
            from praxis.flows.definition import (
                notebook_check,  # reads the .ipynb: only a notebook needs it
            )

            if found := notebook_check.flow_problem(root, script):
                reader.error(f"{loc}.script", found)


@dataclass(frozen=True)
class AgentKind(_Executed):
    """A phase that is one turn of a model writing and running Python (``prompt:``)."""

    reusable: bool = False  # what a model does is not the same twice
    reads_reference: bool = True

    def fit(self, raw: dict[str, Any], loc: str, reader: Reader) -> None:
        if "script" in raw:
            reader.error(
                f"{loc}.script",
                "agent phases take no 'script' (list prepared scripts under scripts:)",
            )
            del raw["script"]
        if "prompt" not in raw:
            reader.error(loc, "missing required key 'prompt' (the prompt file of an agent)")

    def check(self, root: Path, script: str, loc: str, reader: Reader) -> None:
        return None


script = FileKind("praxis.phases.script", "script", ".py")
notebook = FileKind("praxis.phases.notebook", "notebook", ".ipynb")
agent = AgentKind("praxis.phases.agent")
