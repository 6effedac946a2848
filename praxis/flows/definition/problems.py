"""What ``praxis check`` finds wrong in a flow: each Problem with its location, the Report of
all of them, and FlowInvalid, raised by ``contract.require`` when there are errors."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...command_line import typed
from ...errors import UsageError


@dataclass(frozen=True)
class Problem:
    """One problem: ``location`` is a key path (``phases[1].outputs``, empty for the whole
    file); ``line``/``column`` (1-based) are set when the YAML text itself is at fault."""

    location: str
    message: str
    severity: str = "error"  # error | warning
    file: str = "flow.yaml"
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column is not None else "")
        parts = [where, self.location, "" if self.severity == "error" else self.severity]
        return ": ".join([p for p in parts if p] + [self.message])


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]

    def __str__(self) -> str:
        return "\n".join(self.lines())


class FlowInvalid(UsageError):
    """Raised by ``require`` when the definition has errors; ``report`` holds all of them."""

    def __init__(self, report: Report) -> None:
        errors = report.errors
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"{errors[0]}{more}" if errors else "invalid flow definition")
        self.report = report

    def next(self, flow: str) -> str:
        return typed("check", flow)
