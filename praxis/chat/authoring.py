"""The tools a model has while it writes a flow with a person (DESIGN.md §9).

``list_files()``, ``read_file(path)``, ``write_file(path, text)``, ``check()``,
``profile(path)``, ``run_python(code)`` and ``try_phase(phase)``. Each returns a short text
for the model, clipped at 4,000 characters as an agent phase's tools are. Refusals (a path
outside the folder, no approval, a limit) are answers to the model, not errors of the chat.

Nothing here runs a phase in the flow's own folder, writes a run folder or decides a Gate:
``try_phase`` works on a throwaway copy (``trial.py``), writes go through ``workfiles.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from praxis.agent.prompt import TABULAR, clip, profile
from praxis.agent.spec import DEFAULT_LIMITS
from praxis.agent.tools import args_problem, describe, tool_schema
from praxis.errors import Refused
from praxis.flows.definition import contract
from praxis.llm.given import Approver
from sandbox import SandboxError

from .trial import Scratch, try_phases
from .workfiles import WorkFiles, Write, path_problem

RESULT_CHARS = 4_000
READ_CHARS = 4_000
NOBODY = (
    "refused: nobody can approve new code here (no terminal to ask). Ask the person to run "
    "`praxis chat FLOW` in a terminal, or use try_phase to run the flow's own scripts."
)
WEB_NOBODY = (
    "refused: code that is not a prepared script needs a person's approval, which the web "
    "chat cannot ask for; use try_phase, or ask the person to use `praxis chat FLOW` in a "
    "terminal to approve run_python code."
)
DENIED = "refused: the person did not approve this code. Do not retry it unchanged."
APPROVAL_LABEL = "chat"


SCHEMAS = [
    tool_schema("list_files", "List the files of the flow folder with their sizes."),
    tool_schema(
        "read_file", "Read a text file of the flow folder.", path="path relative to the folder"
    ),
    tool_schema(
        "write_file",
        "Create or replace a file of the flow folder (flow.yaml, scripts, prompts). "
        "The person sees the diff and can undo it.",
        path="path relative to the flow folder",
        text="the file's full new text",
    ),
    tool_schema(
        "check", "Check flow.yaml against the contract; returns every problem with its place."
    ),
    tool_schema(
        "profile", "A pandas profile of a data file (.csv, .tsv, .parquet).", path="data file"
    ),
    tool_schema(
        "run_python",
        "Run Python in a scratch sandbox holding a copy of the flow's files (needs approval).",
        code="Python source",
    ),
    tool_schema(
        "try_phase",
        "Run one phase (and the phases before it) in a throwaway run; returns its outcome.",
        phase="the phase id",
    ),
]
TOOL_NAMES = [s["function"]["name"] for s in SCHEMAS]


@dataclass
class ToolResult:
    text: str  # what the model receives (clipped)
    status: str = "ok"  # ok | refused | error
    diff: str = ""  # a write's unified diff, shown to the person in full


@dataclass
class Authoring:
    """The tools of one chat session over flow folder ``root``."""

    root: Path
    session: str
    approver: Approver | None = None
    sandbox: Mapping[str, Any] | None = None  # laid over the flow's sandbox: section
    nobody: str = NOBODY  # what the model is told when no one can approve code
    max_runs: int = DEFAULT_LIMITS["run_python"]
    on_write: Callable[[Write], None] | None = None
    runs: int = 0
    files: WorkFiles = field(init=False)
    scratch: Scratch = field(init=False)

    def __post_init__(self) -> None:
        self.files = WorkFiles(self.root, self.session)
        name = f"chat-{self.session}-{uuid.uuid4().hex[:6]}"
        self.scratch = Scratch(self.root, name, self.sandbox)
        self.handlers: dict[str, Callable[..., ToolResult]] = {
            "list_files": self.list_files,
            "read_file": self.read_file,
            "write_file": self.write_file,
            "check": self.check,
            "profile": self.profile,
            "run_python": self.run_python,
            "try_phase": self.try_phase,
        }

    def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Run one tool call; the result's text is clipped for the model."""
        handler = self.handlers.get(tool)
        if handler is None:
            result = ToolResult(f"refused: unknown tool {tool!r}; tools: {', '.join(TOOL_NAMES)}")
            result.status = "refused"
        else:
            problem = args_problem(handler, args)
            if problem:
                result = ToolResult(problem, "refused")
            else:
                try:
                    result = handler(**args)
                except Refused as exc:  # a path the chat may not write, a local backend
                    result = ToolResult(f"refused: {exc}", "refused")
                except (SandboxError, OSError) as exc:
                    result = ToolResult(f"error: {type(exc).__name__}: {exc}", "error")
        result.text = clip(result.text, RESULT_CHARS)
        return result

    def close(self) -> None:
        self.scratch.close()

    # -- the tools -----------------------------------------------------------------------

    def list_files(self) -> ToolResult:
        rows = self.files.listing()
        if not rows:
            return ToolResult("the flow folder is empty")
        return ToolResult("\n".join(f"{path}  ({size:,} bytes)" for path, size in rows))

    def read_file(self, path: str) -> ToolResult:
        data = self.files.read(path)
        if data is None:
            return ToolResult(
                f"refused: {path} does not exist (list_files shows what does)", "refused"
            )
        if b"\x00" in data[:8192]:
            return ToolResult(
                f"{path} is a binary file ({len(data):,} bytes); use profile or run_python"
            )
        return ToolResult(clip(data.decode("utf-8", errors="replace"), READ_CHARS))

    def write_file(self, path: str, text: str) -> ToolResult:
        write = self.files.write(path, text.encode("utf-8"))
        if self.on_write is not None:
            self.on_write(write)
        verb = "created" if write.before is None else "wrote"
        return ToolResult(
            f"{verb} {path} ({len(write.after):,} bytes); the person sees this diff:\n{write.diff}",
            diff=write.diff,
        )

    def check(self) -> ToolResult:
        flow, report = contract.load(self.root)
        lines = report.lines()
        if flow is None:
            return ToolResult(f"{len(report.errors)} error(s):\n" + "\n".join(lines), "error")
        head = f"ok: flow {flow.name}, {len(flow.phases)} phase(s): " + ", ".join(
            f"{p.id} ({p.kind}{', Gate after it' if p.gated else ''})" for p in flow.phases
        )
        return ToolResult("\n".join([head, *lines]))

    def profile(self, path: str) -> ToolResult:
        problem = path_problem(path)
        if problem:
            return ToolResult(f"refused: {problem}", "refused")
        if not path.lower().endswith(TABULAR):
            return ToolResult(f"refused: profile reads {', '.join(TABULAR)} files", "refused")
        if self.files.size(path) is None:  # refuses links and non-files
            return ToolResult(f"refused: {path} does not exist", "refused")
        return ToolResult(f"`{path}`: {profile(self.root / path)}")

    def run_python(self, code: str) -> ToolResult:
        if self.runs >= self.max_runs:
            return ToolResult(
                f"refused: run_python limit reached ({self.max_runs} runs in this message); "
                "say what you found and let the person answer",
                "refused",
            )
        if self.approver is None:
            return ToolResult(self.nobody, "refused")
        if not self.approver(APPROVAL_LABEL, code):
            return ToolResult(DENIED, "refused")
        self.runs += 1
        box, kernel = self.scratch.kernel(self.files.listing())
        before = box.listing()
        result = kernel.execute(code, timeout=self.scratch.timeout)
        after = box.listing()
        written = sorted(n for n, st in after.items() if before.get(n) != st)
        text = describe(result, written) + "\n(scratch sandbox: files written there stay there)"
        return ToolResult(text, "ok" if result.ok else "error")

    def try_phase(self, phase: str) -> ToolResult:
        text = try_phases(self.root, phase, sandbox=self.sandbox, approver=self.approver)
        status = (
            "error"
            if ("failed" in text.split("\n", 1)[0] or text.startswith(("cannot", "refused")))
            else "ok"
        )
        return ToolResult(text, status)
