"""The ``agent`` phase kind (``praxis.flows.definition.kinds.PhaseKind``), declared as an entry
point of ``praxis.phase_kinds`` in pyproject.toml: it reads an agent phase's own keys of
flow.yaml into its spec (``AgentSpec``) and runs the phase as one model turn (``turn``).

This module is light: checking a flow.yaml loads it; the model stack (``turn``: langchain-core)
is imported when an attempt runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from praxis.phases.kinds import Executed, entry_file

from .spec import DEFAULT_LIMITS, AgentSpec

if TYPE_CHECKING:
    from praxis.flows.definition.kinds import Reader


@dataclass(frozen=True)
class AgentKind(Executed):
    """A phase that is one turn of a model writing and running Python (``prompt:``)."""

    reusable: bool = False  # what a model does is not the same twice
    reads_reference: bool = True

    def fit(self, raw: dict[str, Any], loc: str, reader: Reader) -> AgentSpec | None:
        if "script" in raw:
            reader.error(
                f"{loc}.script",
                "agent phases take no 'script' (list prepared scripts under scripts:)",
            )
            del raw["script"]
        self.screen(raw, loc, reader)
        if "prompt" not in raw:
            reader.error(loc, "missing required key 'prompt' (the prompt file of an agent)")
        prompt = entry_file(reader, raw["prompt"], f"{loc}.prompt") if "prompt" in raw else None
        scripts = _prepared(reader, raw.get("scripts", []), f"{loc}.scripts")
        queries = _prepared(reader, raw.get("queries", []), f"{loc}.queries")
        limits = _limits(reader, raw.get("limits", {}), f"{loc}.limits")
        return AgentSpec(prompt, scripts, queries, limits) if prompt is not None else None


def _prepared(reader: Reader, value: Any, loc: str) -> tuple[str, ...]:
    """Prepared scripts or queries: flow files, each named by its stem (so stems are unique)."""
    located = reader.names(value, loc)
    for at, name in located:
        reader.flow_file(name, at)
    stems = [Path(name).stem for _, name in located]
    for i, stem in enumerate(stems):
        if stem in stems[:i]:
            reader.error(
                f"{loc}[{i}]",
                f"another entry is also named {stem!r} (names are file stems and must be unique)",
            )
    return tuple(name for _, name in located)


def _limits(reader: Reader, value: Any, loc: str) -> dict[str, int]:
    limits = dict(DEFAULT_LIMITS)
    for key, limit in (reader.mapping(value, loc, tuple(DEFAULT_LIMITS)) or {}).items():
        if reader.positive(limit, f"{loc}.{key}", whole=True) is not None:
            limits[key] = limit
    return limits


agent = AgentKind("praxis.agent.turn", "agent")
