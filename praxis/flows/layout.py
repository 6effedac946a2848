"""Every path of a Flow's run folder, and what a reviewer may write at a Gate.

```
<flow>/run.lock                      the Flow's lock (fcntl)
<flow>/runs/<run-id>/run.json        RunState
                     events.jsonl    typed events
                     output/<name>   declared outputs
                     scratch/<phase>/...
                     records/<phase>.ipynb
                     attempts/<phase>/<n>/{output,scratch,record.ipynb}
                     workspace/      the sandbox's workspace (bind-mounted)
                     objects/<sha256>            content store, read-only
                     snapshots/<phase>/<n>.json  the workspace before attempt n (.post.json: after)
                     cancel          present when a cancel was requested during a phase
```
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from sandbox.errors import PathRefused
from sandbox.paths import confined

from .atomic import write_atomic
from .model import Flow
from .state import RunState


class NotWritable(Exception):
    """Raised when a reviewer tries to write a file the Gate does not open for writing."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


def new_run_id(now: float | None = None) -> str:
    """Sorts by time: 20261130-052501-3fa9."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now if now is not None else time.time()))
    return f"{stamp}-{secrets.token_hex(2)}"


NEWEST = ".newest"


def runs_dir(flow_root: Path) -> Path:
    return flow_root / "runs"


def lock_path(flow_root: Path) -> Path:
    return flow_root / "run.lock"


def list_run_ids(flow_root: Path) -> list[str]:
    """Run ids, oldest first (ids sort by time)."""
    try:
        names = [e.name for e in os.scandir(runs_dir(flow_root)) if e.is_dir()]
    except FileNotFoundError:
        return []
    return sorted(n for n in names if not n.startswith("."))


def newest(flow_root: Path) -> str | None:
    """The run created last (``runs/.newest``, written at begin), else the last id by name."""
    try:
        name = (runs_dir(flow_root) / NEWEST).read_text(encoding="utf-8").strip()
    except OSError:
        name = ""
    if (
        name
        and not name.startswith(".")
        and "/" not in name
        and (runs_dir(flow_root) / name).is_dir()
    ):
        return name
    ids = list_run_ids(flow_root)
    return ids[-1] if ids else None


def newest_seq(flow_root: Path) -> int:
    """The creation number of the newest run (0 when there is none)."""
    name = newest(flow_root)
    if name is None:
        return 0
    try:
        seq = json.loads((runs_dir(flow_root) / name / "run.json").read_bytes()).get("seq", 0)
    except (OSError, ValueError, AttributeError):
        return len(list_run_ids(flow_root))
    return seq if isinstance(seq, int) else 0


def set_newest(flow_root: Path, run_id: str) -> None:
    write_atomic(runs_dir(flow_root) / NEWEST, f"{run_id}\n".encode())


@dataclass(frozen=True)
class RunPaths:
    root: Path  # runs/<run-id>

    @property
    def id(self) -> str:
        return self.root.name

    @property
    def state(self) -> Path:
        return self.root / "run.json"

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    @property
    def records(self) -> Path:
        return self.root / "records"

    @property
    def attempts(self) -> Path:
        return self.root / "attempts"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def objects(self) -> Path:
        return self.root / "objects"

    @property
    def snapshots(self) -> Path:
        return self.root / "snapshots"

    def snapshot(self, phase: str, attempt: int, which: str = "pre") -> Path:
        """snapshots/<phase>/<n>.json (before attempt n) or <n>.post.json (as it left it)."""
        suffix = ".post.json" if which == "post" else ".json"
        return self.snapshots / phase / f"{attempt}{suffix}"

    @property
    def staging(self) -> Path:
        return self.root / ".staging"

    @property
    def cancel_request(self) -> Path:
        return self.root / "cancel"

    def out(self, name: str) -> Path:
        return self.output / name

    def scratch_of(self, phase: str) -> Path:
        return self.scratch / phase

    def record(self, phase: str) -> Path:
        return self.records / f"{phase}.ipynb"

    def attempt(self, phase: str, n: int) -> Path:
        return self.attempts / phase / str(n)

    def make(self) -> None:
        for d in (self.root, self.output, self.scratch, self.records, self.workspace):
            d.mkdir(parents=True, exist_ok=True)


def run_paths(flow_root: Path, run_id: str) -> RunPaths:
    return RunPaths(runs_dir(flow_root) / run_id)


def writable_names(flow: Flow, state: RunState) -> list[str]:
    """The outputs a reviewer may edit now: those of the phase the Gate follows, else none."""
    if state.waiting != "gate" or state.gate is None:
        return []
    return list(flow.phase(state.gate).outputs)


def writable(flow: Flow, state: RunState, paths: RunPaths, name: str) -> Path:
    """The path of output ``name`` if a reviewer may write it now; else NotWritable."""
    if name not in writable_names(flow, state):
        if state.waiting != "gate":
            raise NotWritable(name, "the run is not waiting at a Gate")
        raise NotWritable(
            name, f"only the outputs of phase {state.gate!r} are writable at this Gate"
        )
    try:
        confined(paths.root, f"output/{name}")  # output/ itself must not lead elsewhere
        return confined(paths.output, name)
    except PathRefused as exc:
        raise NotWritable(name, exc.reason) from None
