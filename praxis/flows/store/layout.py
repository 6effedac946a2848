"""Every path of a Flow's run folder, and what a reviewer may write at a Gate.

```
<flow>/run.lock                      the Flow's lock (fcntl): a moment to create, delete, list runs
<flow>/.praxis/objects/<sha256>      the flow's content store, shared by its runs, read-only
<flow>/.praxis/reuse/<key>/...       done attempts by reuse key (reuse.py)
<flow>/runs/<run-id>/run.lock        the run's lock (fcntl): held while advancing, deciding it
                     run.json        RunState
                     events.jsonl    typed events
                     output/<name>   declared outputs
                     scratch/<phase>/...
                     records/<phase>.ipynb
                     output/<phase>/<partition>/<name>, records/<phase>/<partition>.ipynb,
                     attempts/<phase>/partitions/<partition>/<n>/   a fan-out's partition
                     partitions/<phase>/<partition>/workspace/     its own workspace
                     attempts/<phase>/<n>/{output,scratch,record.ipynb}
                     workspace/      the sandbox's workspace (bind-mounted)
                     refs            the objects of the store the run holds (store.py)
                     origin          empty; its identity tells a run made here (reuse.py)
                     objects/<sha256>            a run from before the flow's store: its own
                     snapshots/<phase>/<n>.json  the workspace before attempt n (.post.json: after)
                     cancel          present when a cancel was requested during a phase
                     .collecting/    a collected file on its way into output/ or scratch/
<flow>/runs/.new-<run-id>/           a run being created (renamed into place when complete)
<flow>/runs/.trash-<run-id>-<n>/     a run being deleted (renamed out of place first)
```

A run appears in ``runs/`` complete (run.json written, its lock taken) and leaves it at once:
a reader that lists runs without the Flow's lock never sees half of one.
"""

from __future__ import annotations

import calendar
import json
import os
import secrets  # a new run only: the commands that read runs never need it
import time
from dataclasses import dataclass
from pathlib import Path

from sandbox.errors import PathRefused
from sandbox.files import confined

from ...errors import Refused
from ..model.flow import Flow
from ..model.state import RunState


class NotWritable(Refused):
    """Raised when a reviewer tries to write a file the Gate does not open for writing."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


def new_run_id(now: float | None = None, after: str | None = None) -> str:
    """An id that sorts after ``after`` (the newest run's): 20261130-052501-3fa9. Ids sort by
    creation, so a clock that went back (or two runs in one second) never reorders runs."""

    when = now if now is not None else time.time()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(when))
    candidate = f"{stamp}-{secrets.token_hex(2)}"
    if after is None or candidate > after:
        return candidate
    last_stamp, _, last_suffix = after.rpartition("-")
    try:
        bumped = int(last_suffix, 16) + 1 + secrets.randbelow(255)
    except ValueError:
        bumped = 0x10000
    if bumped <= 0xFFFF and last_stamp:
        return f"{last_stamp}-{bumped:04x}"
    later = time.strftime("%Y%m%d-%H%M%S", time.gmtime(max(when, _epoch(last_stamp)) + 1))
    return f"{later}-{secrets.token_hex(2)}"


def _epoch(stamp: str) -> float:
    try:
        return calendar.timegm(time.strptime(stamp, "%Y%m%d-%H%M%S"))
    except ValueError:
        return time.time()


def runs_dir(flow_root: Path) -> Path:
    return flow_root / "runs"


def store_dir(flow_root: Path) -> Path:
    """``<flow>/.praxis``: the flow's content store and its reuse index."""
    return flow_root / ".praxis"


def lock_path(flow_root: Path) -> Path:
    return flow_root / "run.lock"


def list_run_ids(flow_root: Path) -> list[str]:
    """Run ids, oldest first (ids sort by time); runs being created or deleted are hidden."""
    try:
        with os.scandir(runs_dir(flow_root)) as entries:
            names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []
    return sorted(n for n in names if not n.startswith("."))


def newest(flow_root: Path) -> str | None:
    """The run created last (ids sort by creation)."""
    ids = list_run_ids(flow_root)
    return ids[-1] if ids else None


def list_by_creation(flow_root: Path) -> list[str]:
    """Run ids, oldest first: ids sort by creation (``new_run_id``)."""
    return list_run_ids(flow_root)


def unlist_run(paths: RunPaths) -> Path:
    """Take a run out of ``runs/`` at once (renamed to a hidden folder beside it, unmounting a
    workspace quota mount a dead runner left first); the folder to remove."""
    from sandbox.workspace import unmount  # the workspace module only for a run removed

    unmount(paths.workspace)

    trash = paths.root.parent / f".trash-{paths.id}-{secrets.token_hex(4)}"
    os.rename(paths.root, trash)
    return trash


def leftovers(flow_root: Path) -> list[Path]:
    """Folders that a process which died while creating or deleting a run left in ``runs/``
    (removable only while holding the Flow's lock, so that no creator is still at work)."""
    try:
        with os.scandir(runs_dir(flow_root)) as entries:
            return [
                Path(e.path)
                for e in entries
                if e.name.startswith((".new-", ".trash-")) and e.is_dir(follow_symlinks=False)
            ]
    except FileNotFoundError:
        return []


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


@dataclass(frozen=True)
class RunPaths:
    """Every path of a run folder: nothing else in praxis joins a name to a run's root."""

    root: Path  # runs/<run-id>

    # The folders of a run a reviewer reads (the web serves and lists them); the live
    # workspace and its disk image are not among them.
    READ = ("output", "scratch", "records", "attempts", "edits")
    # praxis's own account of the run, beside them (never written by a sandbox)
    ACCOUNT = ("events.jsonl", "run.json")

    @property
    def id(self) -> str:
        return self.root.name

    @property
    def state(self) -> Path:
        return self.root / "run.json"

    @property
    def lock(self) -> Path:
        """The run's lock (fcntl; a run made before runs had their own gets it at first use)."""
        return self.root / "run.lock"

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def trace(self) -> Path:
        return self.root / "trace.jsonl"

    @property
    def checked(self) -> Path:
        """The Gate's check results by the version of the file they ran on (engine/checked)."""
        return self.root / "checked.json"

    @property
    def hashes(self) -> Path:
        """The sha256 of the run's files by their identity (device, inode, size, mtime,
        ctime), so that an unchanged file is not read again (definition/digest)."""
        return self.root / "hashes.json"

    @property
    def watchdog(self) -> Path:
        """What the sandbox's watchdog ended when the process that advanced the run died
        without closing it (``sandbox/watchdog.py``); gone once a command recorded it."""
        return self.root / "watchdog.json"

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
    def flow_root(self) -> Path:
        return self.root.parent.parent

    @property
    def objects(self) -> Path:
        """The flow's content store (shared by its runs)."""
        return store_dir(self.flow_root) / "objects"

    @property
    def legacy_objects(self) -> Path:
        """The run's own store, in a run made before the flow had one (until migrated)."""
        return self.root / "objects"

    def object(self, sha: str) -> Path:
        """Where object ``sha`` is: in the flow's store, or in the run's own older one."""
        path = self.objects / sha
        if path.is_file() or not self.legacy_objects.is_dir():
            return path
        return self.legacy_objects / sha

    @property
    def origin(self) -> Path:
        """An empty file made once, never written: its inode and ctime tell a run made here
        from a copy of one (``engine/reuse.py``)."""
        return self.root / "origin"

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

    # A fan-out's partition (engine/fanout.py): its outputs, record, earlier attempts, and
    # its own workspace (not among the folders a reviewer reads).
    def partition_output(self, phase: str, partition: str) -> Path:
        return self.output / phase / partition

    def partition_record(self, phase: str, partition: str) -> Path:
        return self.records / phase / f"{partition}.ipynb"

    def partition_attempt(self, phase: str, partition: str, attempt: int) -> Path:
        return self.attempts / phase / "partitions" / partition / str(attempt)

    def partition_folder(self, phase: str, partition: str) -> Path:
        """runs/<run>/partitions/<phase>/<partition>: its workspace, its staged files."""
        return self.root / "partitions" / phase / partition

    def attempt(self, phase: str, n: int) -> Path:
        return self.attempts / phase / str(n)

    def archived(self, phase: str, n: int) -> Path:
        """The outputs of attempt ``n`` of ``phase``, once a later attempt ran."""
        return self.attempt(phase, n) / "output"

    def archived_scratch(self, phase: str, n: int) -> Path:
        return self.attempt(phase, n) / "scratch"

    def archived_record(self, phase: str, n: int) -> Path:
        return self.attempt(phase, n) / "record.ipynb"

    def edits(self, phase: str, attempt: int) -> Path:
        """The reviewers' edits of an attempt's outputs (``edits.py``)."""
        return self.root / "edits" / phase / f"{attempt}.json"

    def kept(self, phase: str, attempt: int) -> Path:
        """The phase's own versions of the outputs a reviewer edited (the web keeps them)."""
        return self.root / "edits" / phase / str(attempt)

    def live(self, phase: str) -> Path:
        """What ``phase`` prints as it runs."""
        return self.root / "live" / f"{phase}.log"

    def make(self) -> None:
        for d in (self.root, self.output, self.scratch, self.records, self.workspace):
            d.mkdir(parents=True, exist_ok=True)


def run_paths(flow_root: Path, run_id: str) -> RunPaths:
    return RunPaths(runs_dir(flow_root) / run_id)


def writable_names(flow: Flow, state: RunState) -> list[str]:
    """The outputs a reviewer may edit now: those of the phase the Gate follows, else none
    (nor those of a fan-out: its partitions' outputs are reviewed, not edited)."""
    if state.waiting != "gate" or state.gate is None or flow.phase(state.gate).fanout:
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
