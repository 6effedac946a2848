"""``kind: script``: the phase's .py file runs as one cell in a fresh kernel.

Success is the kernel's word (its reply's status). ``sys.exit()`` / ``sys.exit(0)`` ends the
script cleanly; another exit code fails the phase, naming it.
"""

from __future__ import annotations

import re

from praxis.flows.definition import flow_files
from praxis.flows.engine.context import PhaseContext, PhaseError
from praxis.flows.model.events import CodeRan

from .kinds import ScriptSpec
from .notebook import clean_exit, error_text


def run(ctx: PhaseContext) -> None:
    script = ctx.phase.spec_as(ScriptSpec).script
    try:
        source = flow_files.text(ctx.flow.root, script)  # by descriptor, no link
    except flow_files.PathRefused as exc:
        raise PhaseError(f"{ctx.phase.id}: script {exc}; check flow.yaml") from exc
    ctx.on_message(f"running {script}")
    cell = ctx.record.code(source, source_file=script)  # recorded even if it hangs
    result = ctx.kernel.execute(source, timeout=ctx.timeout, on_output=ctx.live)
    ctx.record.outputs(cell, result)
    ctx.emit(CodeRan(phase=ctx.phase.id, label="script", status=result.status, seconds=result.wall))
    if not result.ok and not clean_exit(result):
        where = _line_of(result.traceback)
        raise PhaseError(f"{script}{where}: {error_text(result)}")


def _line_of(traceback: list[str]) -> str:
    """' line N' of the last frame in the executed cell, when the traceback shows it."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(traceback))
    found = re.findall(r"(?:Cell In\[\d+\], line |line )(\d+)", plain)
    return f" line {found[-1]}" if found else ""
