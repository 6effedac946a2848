"""The flow's content store, shared by its runs (DESIGN.md §3, §5).

```
<flow>/.praxis/objects/<sha256>     every file a run recorded, read-only, written once
<flow>/.praxis/store.lock           shared while a run adds or claims objects; exclusive for gc
<flow>/runs/<run-id>/refs           the objects the run holds: one sha256 a line, append-only
```

A run holds an object once its ``refs`` names it. It names it before it relies on it:
``RunStore`` appends the reference under the store's shared lock, in the same hold that makes
sure the object is there, and ``sweep`` (gc) lists the objects and reads every run's
references under the exclusive lock. So an object is removed only when no run, not even
one advancing now, holds it. A run folder from before the flow had a store keeps its own
``objects/``: it is read as it is (``RunPaths.object``) and moved into the store once, by
``praxis upgrade`` (upgrade.py).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sandbox import Sandbox

from .layout import RunPaths, runs_dir, store_dir
from .snapshot import Store

REFS = "refs"


@contextmanager
def store_lock(flow_root: Path, *, exclusive: bool = False) -> Iterator[None]:
    """The store's lock: shared by runs adding objects, exclusive while gc sweeps."""
    folder = store_dir(flow_root)
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "store.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # lets go of the lock


class RunStore(Store):
    """The flow's store as one run sees it: every object it adds or claims is named in the
    run's ``refs`` before it is used."""

    def __init__(self, paths: RunPaths) -> None:
        super().__init__(paths.objects)
        self.paths = paths
        self.flow_root = paths.root.parent.parent
        self._held: set[str] = set(read_refs(paths.root))

    def add_fd(self, fd: int, src: str, *, fresh: bool = False) -> tuple[str, int]:
        """Every host file the run keeps comes here (``add_file``, ``add_flow_file``)."""
        with store_lock(self.flow_root):
            sha, size = super().add_fd(fd, src, fresh=fresh)
            self._hold([sha])
        return sha, size

    def add_from(self, sandbox: Sandbox, name: str) -> tuple[str, int]:
        with store_lock(self.flow_root):
            sha, size = super().add_from(sandbox, name)
            self._hold([sha])
        return sha, size

    def add_bytes(self, data: bytes) -> str:
        """Keep ``data`` as an object; its sha256."""
        tmp = self.paths.root / f".object-{os.getpid()}"  # not in .incoming: gc takes that
        tmp.write_bytes(data)
        try:
            sha, _ = self.add_file(tmp)
        finally:
            tmp.unlink(missing_ok=True)
        return sha

    def claim(self, shas: Iterable[str]) -> bool:
        """Hold objects another run recorded; False (holding them changes nothing) when one
        of them is gone."""
        wanted = sorted(set(shas))
        with store_lock(self.flow_root):
            self._hold(wanted)
            return all(self.has(sha) for sha in wanted)

    def _hold(self, shas: Iterable[str]) -> None:
        new = [sha for sha in shas if sha not in self._held]
        if not new:
            return
        fd = os.open(self.paths.root / REFS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, "".join(f"{sha}\n" for sha in new).encode())
        finally:
            os.close(fd)
        self._held.update(new)


def read_refs(run_root: Path) -> list[str]:
    try:
        text = (run_root / REFS).read_text()
    except FileNotFoundError:
        return []
    return [line for line in text.split("\n") if len(line) == 64]


@dataclass(frozen=True)
class Swept:
    objects: int  # removed
    bytes: int  # their size
    kept: int  # objects some run holds


def sweep(flow_root: Path) -> Swept:
    """Remove every object no run holds (and what writers that died left half-made)."""
    objects = store_dir(flow_root) / "objects"
    doomed: list[Path] = []
    with store_lock(flow_root, exclusive=True):
        try:
            names = [e.name for e in os.scandir(objects) if len(e.name) == 64]
        except FileNotFoundError:
            return Swept(0, 0, 0)
        held = holders(flow_root)
        trash = store_dir(flow_root) / f".trash-{os.getpid()}"
        trash.mkdir(exist_ok=True)
        for name in names:
            if name not in held:
                os.rename(objects / name, trash / name)
                doomed.append(trash / name)
        incoming = objects / ".incoming"
        if incoming.is_dir():  # nobody adds while gc holds the lock: these are a dead writer's
            os.rename(incoming, trash / ".incoming")
    size = sum(p.stat().st_size for p in doomed)
    shutil.rmtree(trash, ignore_errors=True)
    return Swept(len(doomed), size, len(names) - len(doomed))


def holders(flow_root: Path) -> set[str]:
    """Every object some run holds: the runs listed, and those being created or deleted."""
    held: set[str] = set()
    try:
        entries = list(os.scandir(runs_dir(flow_root)))
    except FileNotFoundError:
        return held
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            held.update(read_refs(Path(entry.path)))
    return held
