"""The five tools an agent phase may call, and the bookkeeping that keeps them honest.

Every tool returns a short text for the model (long outputs are clipped, and say so). Files
that code or an extract wrote are recorded (a diff of the workspace listing around the call);
``write_output`` refuses those names, so a model can never replace data with a transcription.
Refusals (a limit, no approval, a bad name) are answers to the model, not failures of the
phase; a sandbox error (timeout, a dead kernel) fails the phase.
"""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from praxis.flows.engine.context import PhaseContext
from praxis.flows.model.events import CodeRan, ToolCalled
from praxis.sources import sink
from sandbox import ExecResult
from sandbox.paths import name_problem

from . import approvals
from .extract import ExtractError, data_of, extract_to_workspace
from .prompt import clip, limit
from .spec import AgentSpec

RESULT_CHARS = 4_000
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def tool_schema(tool: str, description: str, **params: str) -> dict[str, Any]:
    """An OpenAI-style function schema whose parameters are all required strings."""
    props = {p: {"type": "string", "description": d} for p, d in params.items()}
    return {
        "type": "function",
        "function": {
            "name": tool,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": list(params)},
        },
    }


SCHEMAS = [
    tool_schema("run_python", "Run Python code in the phase's kernel.", code="Python source"),
    tool_schema("run_prepared", "Run a prepared script by name.", name="the script's name"),
    tool_schema(
        "extract",
        "Run a SQL query on the phase's data (see the task); save the result as a file.",
        query="SQL SELECT statement",
        name="workspace file name: .csv, .tsv or .parquet",
    ),
    tool_schema(
        "extract_prepared",
        "Run a prepared SQL query by name; save the result as a file.",
        query_name="the prepared query's name",
        name="workspace file name: .csv, .tsv or .parquet",
    ),
    tool_schema(
        "write_output",
        "Write a declared text output (e.g. a report).",
        name="declared output name",
        text="the file's full text",
    ),
]


class Toolbox:
    """The tools of one agent turn, bound to its PhaseContext."""

    def __init__(self, ctx: PhaseContext) -> None:
        self.ctx = ctx
        self.phase = ctx.phase.id
        spec = ctx.phase.spec_as(AgentSpec)
        self.scripts = {Path(p).stem: p for p in spec.scripts}
        self.queries = {Path(p).stem: p for p in spec.queries}
        self.max_runs = limit(ctx, "run_python")
        self.runs = 0
        self.written: set[str] = set()  # workspace files written by code or an extract
        self.handlers: dict[str, Callable[..., tuple[str, str]]] = {
            "run_python": self.run_python,
            "run_prepared": self.run_prepared,
            "extract": self.extract,
            "extract_prepared": self.extract_prepared,
            "write_output": self.write_output,
        }

    def call(self, tool: str, args: dict[str, Any]) -> str:
        """Run one tool call and return the (clipped) text the model receives."""
        start = time.monotonic()
        before = set(self.written)
        handler = self.handlers.get(tool)
        if handler is None:
            status, text = (
                "refused",
                f"refused: unknown tool {tool!r}; tools: {', '.join(self.handlers)}",
            )
        else:
            problem = args_problem(handler, args)
            if problem:
                status, text = "refused", problem
            else:
                status, text = handler(**args)
        text = clip(text, RESULT_CHARS)
        self.ctx.emit(
            ToolCalled(
                phase=self.phase,
                tool=tool,
                args={k: clip(str(v), 200) for k, v in args.items()},
                status=status,
                detail=clip(text, 300) if status != "ok" else "",
                files=sorted(self.written - before),
                seconds=round(time.monotonic() - start, 3),
            )
        )
        return text

    # -- the tools -------------------------------------------------------------------------

    def run_python(self, code: str) -> tuple[str, str]:
        if self.runs >= self.max_runs:
            self.ctx.record.markdown(f"**run_python refused** (limit {self.max_runs} reached)")
            return "refused", (
                f"refused: run_python limit reached ({self.max_runs} runs, "
                f"limits.run_python in flow.yaml). Finish with what you have."
            )
        prepared = self._prepared_name(code)
        if prepared is None:
            approved, message = approvals.ask(self.ctx, "run_python", code)
            if not approved:
                self.ctx.record.markdown(
                    f"**run_python refused** ({message})\n\n```python\n{code}\n```"
                )
                return "refused", message
        self.runs += 1
        return self._execute(code, "run_python" if prepared is None else f"prepared {prepared}")

    def run_prepared(self, name: str) -> tuple[str, str]:
        if name not in self.scripts:
            return (
                "refused",
                f"refused: no prepared script {name!r}; prepared: {_names(self.scripts)}",
            )
        return self._execute(self._text(self.scripts[name]), f"prepared {name}")

    def extract(self, query: str, name: str) -> tuple[str, str]:
        problem = self._target_problem(name)
        if problem:
            return "refused", problem
        approved, message = approvals.ask(self.ctx, "extract", query)
        if not approved:
            self.ctx.record.markdown(f"**extract refused** ({message})\n\n```sql\n{query}\n```")
            return "refused", message
        return self._extract(query, name, "extract")

    def extract_prepared(self, query_name: str, name: str) -> tuple[str, str]:
        if query_name not in self.queries:
            return (
                "refused",
                f"refused: no prepared query {query_name!r}; prepared: {_names(self.queries)}",
            )
        problem = self._target_problem(name)
        if problem:
            return "refused", problem
        return self._extract(self._text(self.queries[query_name]), name, f"query {query_name}")

    def write_output(self, name: str, text: str) -> tuple[str, str]:
        problem = name_problem(name)
        if problem:
            return "refused", f"refused: output name {name!r} {problem}"
        if name not in self.ctx.phase.outputs:
            declared = ", ".join(self.ctx.phase.outputs) or "none"
            return "refused", f"refused: {name!r} is not a declared output (declared: {declared})"
        if name in self.written:
            return "refused", (
                f"refused: {name} was written by code or an extract; its data stands as written"
            )
        dest = self.ctx.staging / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        self.ctx.record.markdown(f"**write_output** `{name}` ({len(text):,} characters)")
        return "ok", f"wrote {name} ({len(text):,} characters)"

    # -- helpers -------------------------------------------------------------------------

    def _execute(self, code: str, label: str) -> tuple[str, str]:
        before = self.ctx.sandbox.listing()
        result = self.ctx.kernel.execute(code, timeout=self.ctx.timeout, on_output=self.ctx.live)
        files = self._note_written(before)
        self.ctx.record.code(code, result, tool=label)
        self.ctx.emit(
            CodeRan(phase=self.phase, label=label, status=result.status, seconds=result.wall)
        )
        return ("ok" if result.ok else "error"), describe(result, files)

    def _extract(self, query: str, name: str, label: str) -> tuple[str, str]:
        self.ctx.record.markdown(f"**{label}** → `{name}`\n\n```sql\n{query.strip()}\n```")
        before = self.ctx.sandbox.listing()
        try:
            done = extract_to_workspace(data_of(self.ctx), query, self.ctx.sandbox.upload, name)
        except ExtractError as exc:
            self.ctx.record.markdown(f"**{label} failed**: {exc}")
            return "error", f"error: {exc}"
        self._note_written(before)
        self.written.add(name)
        return "ok", done.summary()

    def _note_written(self, before: dict[str, Any]) -> list[str]:
        after = self.ctx.sandbox.listing()
        files = sorted(n for n, st in after.items() if before.get(n) != st)
        self.written.update(files)
        return files

    def _target_problem(self, name: str) -> str | None:
        problem = name_problem(name)
        if problem:
            return f"refused: file name {name!r} {problem}"
        problem = sink.format_problem(name)
        return f"refused: {problem}" if problem else None

    def _prepared_name(self, code: str) -> str | None:
        for stem, rel in self.scripts.items():
            if self._text(rel).strip() == code.strip():
                return stem
        return None

    def _text(self, rel: str) -> str:
        return (self.ctx.flow.root / rel).read_text(encoding="utf-8")


def describe(result: ExecResult, files: list[str]) -> str:
    """What the model learns of one execution: status, streams, result, error, files."""
    parts = [f"status: {result.status}"]
    if result.stdout:
        parts.append("stdout:\n" + clip(result.stdout, RESULT_CHARS // 2))
    if result.stderr:
        parts.append("stderr:\n" + clip(result.stderr, RESULT_CHARS // 4))
    if result.result and "text/plain" in result.result:
        parts.append("result:\n" + clip(str(result.result["text/plain"]), RESULT_CHARS // 4))
    if result.display:
        kinds = sorted({k for bundle in result.display for k in bundle})
        parts.append(f"displayed: {len(result.display)} item(s) ({', '.join(kinds)})")
    if not result.ok:
        trace = ANSI.sub("", "\n".join(result.traceback[-3:]))
        parts.append(f"error: {result.ename}: {result.evalue}\n{clip(trace, RESULT_CHARS // 4)}")
    if result.truncated:
        parts.append("(the kernel's output was over its cap and was truncated)")
    parts.append("files written: " + (", ".join(files) if files else "none"))
    return "\n".join(parts)


def _names(table: dict[str, str]) -> str:
    return ", ".join(sorted(table)) or "none"


def args_problem(handler: Callable[..., Any], args: dict[str, Any]) -> str | None:
    """Why a model's ``args`` do not fit ``handler`` (every parameter a string), or None."""
    expected = list(inspect.signature(handler).parameters)
    missing = [p for p in expected if p not in args]
    extra = [a for a in args if a not in expected]
    wrong = [p for p in expected if p in args and not isinstance(args[p], str)]
    if missing or extra or wrong:
        return (
            f"refused: bad arguments (expected {', '.join(expected) or 'none'} as strings; "
            f"missing {missing or 'none'}, unexpected {extra or 'none'}, "
            f"not text {wrong or 'none'})"
        )
    return None
