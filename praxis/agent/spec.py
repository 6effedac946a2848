"""What an agent phase's own keys of flow.yaml say (``prompt``, ``scripts``, ``queries``,
``limits``): the spec its kind (``praxis.phases.kinds.agent``) builds and the turn reads."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_LIMITS = {"model_calls": 20, "run_python": 8}


@dataclass(frozen=True)
class AgentSpec:
    prompt: str  # the prompt file, relative to the flow folder
    scripts: tuple[str, ...] = ()  # prepared scripts the model may run by name
    queries: tuple[str, ...] = ()  # prepared queries it may extract by name
    limits: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_LIMITS))

    def files(self) -> list[str]:
        """The flow files the turn's instructions come from."""
        return [self.prompt, *self.scripts, *self.queries]

    def limit(self, key: str) -> int:
        return int(self.limits.get(key, DEFAULT_LIMITS[key]))
