"""The built-in phase kinds that run a file of the flow (``praxis.flows.definition.kinds.
PhaseKind``), declared as entry points of ``praxis.phase_kinds`` in pyproject.toml: ``script``
and ``notebook``, with the specs they read from their own keys of a phase in flow.yaml; and
what every built-in kind shares (``Executed``, ``entry_file``, the table of which kind takes
which key). The third, ``agent``, is ``praxis.agent.kind``.

This module is light: checking a flow.yaml loads it, so a kind's executor (``praxis.phases.
script``, ``notebook``: the kernel, nbformat) is imported only when an attempt runs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from praxis.flows.definition.yaml_values import describe, show

if TYPE_CHECKING:
    from praxis.flows.definition.kinds import Reader
    from praxis.flows.engine.context import PhaseContext
    from praxis.flows.model.flow import Flow, Phase

# The keys each built-in kind takes besides those every kind takes: a key one kind takes and
# another does not is named as that kind's when a phase of the other has it.
KEYS = {
    "script": ("script",),
    "notebook": ("script", "notebook"),
    "agent": ("prompt", "scripts", "queries", "limits"),
    "query": ("query", "database"),
}
OWNER = (
    {"notebook": "notebook"}
    | dict.fromkeys(KEYS["agent"], "agent")
    | dict.fromkeys(KEYS["query"], "query")
)
NOTEBOOK_KEYS = ("allow_errors",)


@dataclass(frozen=True)
class ScriptSpec:
    """A script phase's own key: the .py file it runs."""

    script: str  # relative to the flow folder

    def files(self) -> list[str]:
        return [self.script]


@dataclass(frozen=True)
class NotebookSpec:
    """A notebook phase's own keys: the .ipynb it runs, and ``notebook: {allow_errors: true}``
    (run past a failing cell, as nbclient's and papermill's ``allow_errors`` do)."""

    script: str  # relative to the flow folder
    allow_errors: bool = False

    def files(self) -> list[str]:
        return [self.script]


@dataclass(frozen=True)
class Executed:
    """What every built-in kind does the same way: its executor is the module ``module``
    (``run(ctx)``), imported when an attempt runs; it takes the keys ``KEYS[name]``; its
    code's files are its spec's, and the reference inputs that are flow files."""

    module: str
    name: str

    @property
    def keys(self) -> tuple[str, ...]:
        return KEYS[self.name]

    def files(self, flow: Flow, phase: Phase) -> list[str]:
        names = list(phase.spec.files()) if phase.spec is not None else []
        return names + [n for n in phase.reference if flow.producer(n) is None]

    def load(self) -> None:
        importlib.import_module(self.module)

    def run(self, ctx: PhaseContext) -> None:
        importlib.import_module(self.module).run(ctx)

    def screen(self, raw: dict[str, Any], loc: str, reader: Reader) -> None:
        """Report (and drop) the keys of ``raw`` this kind does not take."""
        for key in [k for k in raw if k not in self.keys]:
            del raw[key]
            if key in OWNER:
                reader.error(
                    f"{loc}.{key}",
                    f"only {OWNER[key]} phases take {key!r} (this is a {self.name} phase)",
                )
            else:
                reader.unknown_key(loc, key, self.keys)


@dataclass(frozen=True)
class FileKind(Executed):
    """A phase that runs one file of the flow (``script:``), ending in ``suffix``."""

    suffix: str = ".py"
    reusable: bool = True
    reads_reference: bool = False

    def script_of(self, raw: dict[str, Any], loc: str, reader: Reader) -> str | None:
        """The file the phase runs, once the keys it does not take are reported."""
        self.screen(raw, loc, reader)
        if "script" not in raw:
            reader.error(
                loc,
                f"missing required key 'script' (the {self.suffix} file a {self.name} phase runs)",
            )
            return None
        return entry_file(reader, raw["script"], f"{loc}.script", self.suffix, self.name)


@dataclass(frozen=True)
class ScriptKind(FileKind):
    """A phase that runs a .py file of the flow as one cell."""

    def fit(self, raw: dict[str, Any], loc: str, reader: Reader) -> ScriptSpec | None:
        script = self.script_of(raw, loc, reader)
        return ScriptSpec(script) if script is not None else None


@dataclass(frozen=True)
class NotebookKind(FileKind):
    """A phase that runs an .ipynb of the flow cell by cell; ``notebook: {allow_errors}``."""

    suffix: str = ".ipynb"

    def fit(self, raw: dict[str, Any], loc: str, reader: Reader) -> NotebookSpec | None:
        script = self.script_of(raw, loc, reader)
        if "script" not in raw:
            return None  # reported
        if script is not None:
            from praxis.flows.definition import (
                notebook_check,  # reads the .ipynb: only a notebook needs it
            )

            if found := notebook_check.flow_problem(reader.root, script):
                reader.error(f"{loc}.script", found)
        allow_errors = _notebook_options(reader, raw.get("notebook", {}), f"{loc}.notebook")
        return NotebookSpec(script, allow_errors) if script is not None else None


def entry_file(
    reader: Reader, value: Any, loc: str, suffix: str = "", kind: str = ""
) -> str | None:
    """The flow file a phase runs or reads its instructions from."""
    name = reader.name(value, loc)
    if name is None:
        return None
    if suffix and not name.endswith(suffix):
        reader.error(loc, f"{show(name)} must end in {suffix} for a {kind} phase")
        return None
    reader.flow_file(name, loc)
    return name


def _notebook_options(reader: Reader, value: Any, loc: str) -> bool:
    """``notebook: {allow_errors: true}``: a notebook phase runs past a failing cell."""
    spec = reader.mapping(value, loc, NOTEBOOK_KEYS) or {}
    flag = spec.get("allow_errors", False)
    if not isinstance(flag, bool):
        reader.error(f"{loc}.allow_errors", f"expected true or false, got {describe(flag)}")
        return False
    return flag


script = ScriptKind("praxis.phases.script", "script")
notebook = NotebookKind("praxis.phases.notebook", "notebook")
