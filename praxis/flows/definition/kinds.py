"""Phase kinds, as plug-ins: every kind is an entry point of the group ``praxis.phase_kinds``
(pyproject.toml declares ``script``, ``notebook`` and ``agent``, in ``praxis.phases.kinds``),
found the way the sandbox backends are (``sandbox.plugins``). Another distribution adds a
kind by declaring an entry point in the same group::

    [project.entry-points."praxis.phase_kinds"]
    sql = "mypkg.sql:kind"   # a PhaseKind

A kind reads its own keys of a phase in flow.yaml into its spec (``fit``: ``Phase.spec``),
names the flow files its code comes from (``files``: what a definition digest hashes) and runs
an attempt (``run``: step 4 of DESIGN.md §5, in the kernel the runner hands it; ``load``
imports what it needs ahead).
The flows never import a kind's module: the registry loads it by name, when a flow names it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from sandbox import plugins
from sandbox.values import nearest

from ...errors import UsageError

if TYPE_CHECKING:
    from ..engine.context import PhaseContext
    from ..model.flow import Flow, Phase

GROUP = "praxis.phase_kinds"


class Reader(Protocol):
    """How a kind reads its own keys of a phase in flow.yaml, reporting each problem at its
    location (contract's reader; ``yaml_values.ValueReader``)."""

    root: Path  # the flow folder: files named by values stay below it

    def error(self, loc: str, message: str) -> None: ...

    def warn(self, loc: str, message: str) -> None: ...

    def unknown_key(self, loc: str, key: str, own: tuple[str, ...]) -> None:
        """Report ``key`` of the phase at ``loc`` as unknown, naming the nearest key a phase
        of this kind takes (the keys every kind takes, and ``own``)."""

    def mapping(
        self, value: Any, loc: str, allowed: tuple[str, ...] | None
    ) -> dict[str, Any] | None: ...

    def name(self, value: Any, loc: str) -> str | None:
        """A file name (relative, no ``..``), or None after reporting why not."""

    def names(self, value: Any, loc: str) -> list[tuple[str, str]]:
        """A list of file names, each with its location."""

    def flow_file(self, name: str, loc: str, *, streamed: bool = False) -> None:
        """Report ``name`` unless it is a regular file below the flow folder, reached without
        a link and, unless ``streamed`` (a data input), not huge."""

    def positive(self, value: Any, loc: str, *, whole: bool = False) -> Any: ...


@runtime_checkable
class PhaseKind(Protocol):
    """A kind of phase: its own keys of flow.yaml read into its spec, its code's files, its
    run."""

    @property
    def reusable(self) -> bool:
        """Whether a done attempt may be restored instead of run again (an agent: never)."""

    @property
    def reads_reference(self) -> bool:
        """Whether its code reads ``inputs.reference`` (an agent's prompt does)."""

    def fit(self, raw: dict[str, Any], loc: str, reader: Reader) -> Any:
        """The phase's spec (``Phase.spec``: a frozen dataclass, hashed into the definition
        digest) read from ``raw``, the phase's keys that every kind does not take. Reports
        the keys this kind does not take either, and each problem in the ones it does; None
        when a problem leaves no spec to build."""

    def files(self, flow: Flow, phase: Phase) -> list[str]:
        """The flow files its code comes from (not working inputs: those are state)."""

    def load(self) -> None:
        """Import what ``run`` needs, ahead of it (a page warms a run's next advance)."""

    def run(self, ctx: PhaseContext) -> None:
        """Run one attempt: the phase's code in ``ctx.kernel``; raise PhaseError to fail it."""


class UnknownKind(UsageError):
    """Raised for a phase kind no entry point declares (flow.yaml's ``kind:``)."""

    def __init__(self, name: str) -> None:
        known = names()
        close = nearest(name, known)
        hint = f"did you mean {close!r}? " if close else ""
        super().__init__(f"unknown phase kind {name!r} ({hint}use one of: {', '.join(known)})")
        self.name = name


def names() -> tuple[str, ...]:
    """Every kind, by name, in the order the built-in ones are taught."""
    declared = _declared()
    first = [n for n in ("script", "notebook", "agent") if n in declared]
    return (*first, *sorted(set(declared) - set(first)))


def get(name: str) -> PhaseKind:
    """The kind called ``name``; UnknownKind when none is."""
    return _load(name)


@functools.cache
def _load(name: str) -> PhaseKind:
    found = plugins.find(
        _declared(),
        name,
        what="phase kind",
        fits=lambda it: isinstance(it, PhaseKind),
        shape="PhaseKind",
        unknown=UnknownKind,
        broken=UsageError,
    )
    return cast(PhaseKind, found)  # fits() checked it


@functools.cache
def _declared() -> dict[str, str]:
    return plugins.declared(GROUP)
