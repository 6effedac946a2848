"""Settled work reused across the runs of a flow (DESIGN.md §5, §11).

A done attempt of a script or notebook phase is filed under its reuse key:

```
<flow>/.praxis/reuse/<key>/<run-id>.<attempt>.json
    {run, phase, attempt, post, record, outputs: {name: sha256}, scratch: {path: sha256}}
```

``post`` (the workspace as the phase left it, a manifest) and ``record`` (its notebook
record) are objects of the flow's store, like every file they name. The key is the sha256
of three things, each known before the phase runs:

* the phase's definition digest (``definition.py``): its flow.yaml entry (``reuse`` aside),
  the files of its code (script or notebook), the run's parameters;
* its pre-state digest (``snapshot.digest``): the path and sha256 of every file and folder of
  the workspace once its inputs are uploaded;
* the flow's ``sandbox`` settings but ``timeout`` and ``labels`` (backend, image, packages,
  memory, cpus, ...).

Not in it: the run's id, the attempt, the clock, anything the code reads from outside the
workspace. A phase whose code reads the clock or randomness says ``reuse: never``.

A phase about to run whose key names a done attempt of a run still listed is not run: the
run claims the attempt's objects (``RunStore.claim``), and its outputs, scratch, record and
the workspace it left are restored; the phase's new attempt says where it came from.

Only runs made here are reused: an entry carries its run's ``origin`` (``origin``), which a
run folder and index that came with a flow folder from elsewhere cannot match. Every object
a restore uses is hashed first (``intact``): one that does not hold what its name says fails
the phase, naming it, before the phase's code could see it (outputs, scratch and record are
checked before any of them is filed).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
from pathlib import Path
from typing import Any

from sandbox import Sandbox
from sandbox.files import READ_FLAGS, replace_file

from ..definition import digests as definition
from ..definition import kinds
from ..model.flow import Phase, SandboxSettings
from ..model.forms import params_for
from ..model.transitions import Reuse
from ..store import intact, snapshot
from ..store.handle import RunHandle
from ..store.layout import list_run_ids, run_paths, store_dir
from ..store.objects import RunStore
from . import collect
from .inputs import base_state, settle, source_of

log = logging.getLogger("praxis")
SHA = re.compile(r"[0-9a-f]{64}")
UNKEYED = ("timeout", "labels")  # sandbox settings that never change what code computes


def index_dir(flow_root: Path) -> Path:
    return store_dir(flow_root) / "reuse"


def applies(phase: Phase) -> bool:
    """Whether a phase may be restored from a done attempt at all."""
    return kinds.get(phase.kind).reusable and phase.reuse != "never"


def from_other_runs(run: RunHandle, phase: Phase) -> bool:
    """Whether the phase may be restored from another run's attempt now: it has not run in
    this run yet, or it is stale; never once a person asked for it to run again (re-run
    from it, reopened at a Gate, ``rerun --no-reuse``)."""
    p = run.state.phase(phase.id)
    fresh = p.status == "pending" and p.attempt == 0
    return applies(phase) and not p.no_reuse and (fresh or p.status == "stale")


def key(run: RunHandle, phase: Phase, pre_digest: str) -> str:
    data: dict[str, Any] = {
        "definition": definition.digest_of(run.flow, phase, params_for(run.state, phase.id)),
        "pre": pre_digest,
        "sandbox": sandbox_part(run.flow.sandbox),
    }
    if phase.fresh is not None:  # reuse: {within: ...}; absent otherwise, so keys stay
        data["within"] = phase.fresh
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def since(run: RunHandle, phase: Phase) -> float | None:
    """The oldest a done attempt may be to stand for ``phase`` (``reuse: {within: ...}``)."""
    return None if phase.fresh is None else run.clock() - phase.fresh


def sandbox_part(settings: SandboxSettings) -> dict[str, Any]:
    """The sandbox settings a key holds: flow.yaml's section as written (values as YAML gave
    them, keys of another backend too) with its backend, but ``UNKEYED``. Built from what was
    written, not from the types, so a key stays what it was for every flow written before."""
    written = {k: v for k, v in settings.written.items() if k not in UNKEYED}
    return {**written, "backend": settings.backend}


def remember(
    run: RunHandle,
    phase: Phase,
    store: RunStore,
    pre: snapshot.Manifest,
    post: snapshot.Manifest,
    outputs: dict[str, str],
) -> None:
    """File the phase's attempt, just done, under its key (never fails the phase)."""
    if not applies(phase):
        return
    try:
        attempt = run.state.phase(phase.id).attempt
        _file(run, phase, store, attempt, pre, post, outputs)
    except (OSError, ValueError):
        log.warning("phase %s: its attempt could not be filed for reuse", phase.id, exc_info=True)


def _file(
    run: RunHandle,
    phase: Phase,
    store: RunStore,
    attempt: int,
    pre: snapshot.Manifest,
    post: snapshot.Manifest,
    outputs: dict[str, str],
) -> None:
    plain = {n: snapshot.Item(i.sha256, i.size) for n, i in post.items()}  # no identities
    entry = {
        "run": run.id,
        "phase": phase.id,
        "attempt": attempt,
        "post": store.add_bytes(snapshot.manifest_text(plain).encode()),
        "record": store.add_file(run.paths.record(phase.id))[0],
        "outputs": dict(outputs),
        "scratch": {
            n: i.sha256
            for n, i in post.items()
            if n not in outputs
            and not snapshot.is_folder(n)
            and (n not in pre or pre[n].sha256 != i.sha256)
        },
    }
    entry["origin"] = origin(run.paths.origin, make=True)
    entry["at"] = run.clock()  # when it was done: ``reuse: {within: ...}`` reads it
    folder = index_dir(run.flow.root) / key(run, phase, snapshot.digest(pre))
    folder.mkdir(parents=True, exist_ok=True)
    data = json.dumps(entry, indent=1, sort_keys=True).encode() + b"\n"
    replace_file(folder / f"{run.id}.{attempt}.json", data, durable=False)


def origin(marker: Path, *, make: bool = False) -> str | None:
    """What only this filesystem can say of a run made here: the inode and ctime of its
    ``origin`` file, made empty when the run files its first attempt and never written.
    A copy of the run (a folder sent, unpacked, cloned) has new ones, which nobody can
    choose; None when there is no such file (or it is not a plain file)."""
    flags = READ_FLAGS | (os.O_CREAT if make else 0)
    try:
        fd = os.open(marker, flags, 0o444)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return f"{st.st_ino}:{st.st_ctime_ns}" if stat.S_ISREG(st.st_mode) else None


def candidates(flow_root: Path, reuse_key: str, since: float | None = None) -> list[dict[str, Any]]:
    """The done attempts filed under ``reuse_key`` whose run is still listed and was made
    here (and, with ``since``, filed at or after it), newest first. An entry names its run's
    ``origin``: entries and runs that came with a flow folder from elsewhere name one this
    filesystem never gave them, and are passed over (their phase runs)."""
    folder = index_dir(flow_root) / reuse_key
    try:
        names = sorted(os.listdir(folder), reverse=True)
    except FileNotFoundError:
        return []
    listed = set(list_run_ids(flow_root))
    found = []
    for name in names:
        run_id = name.split(".")[0]
        if run_id not in listed:
            continue
        try:
            entry = json.loads((folder / name).read_bytes())
        except (OSError, ValueError):
            continue
        here = origin(run_paths(flow_root, run_id).origin)
        if not isinstance(entry, dict) or entry.get("run") != run_id:
            continue
        if here is None or entry.get("origin") != here:
            log.info("reuse entry %s/%s was not made by a run of this folder", reuse_key, name)
            continue
        if since is not None and not float(entry.get("at") or 0) >= since:
            continue  # older than the phase's reuse: {within: ...}
        found.append(entry)
    return found


def try_other_runs(
    run: RunHandle, phase: Phase, sandbox: Sandbox, ws: snapshot.Workspace, store: RunStore
) -> bool:
    """Restore the phase from a done attempt with its key, if any run has one; the workspace
    is settled for the phase (its pre-state) when it is not (``ws.settled``)."""
    try:
        sandbox.quiesce()
        pre = settle(run, phase, sandbox, ws, base_state(run, phase, ws))
    except Exception:  # whatever failed here fails the phase for real when it runs
        log.debug("phase %s cannot be reused", phase.id, exc_info=True)
        return False
    ws.settled = (phase.id, pre)  # if it runs after all, it starts from this
    for entry in candidates(
        run.flow.root, key(run, phase, snapshot.digest(pre)), since(run, phase)
    ):
        try:
            if _adopt(run, phase, ws, store, pre, entry):
                return True
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("phase %s: not restored from run %s", phase.id, entry.get("run"))
            if ws.settled is None:  # the workspace moved: the phase settles it again
                return False
    return False


def ahead(run: RunHandle, store: RunStore) -> int:
    """Restore, without a sandbox, each next phase that a done attempt of a run stands for
    (stopping before a Gate's phase, a cancel, or a phase that must run); how many. The
    pre-state is the one the sandbox's workspace would hold: the previous phase's recorded
    post-state with the phase's inputs placed (``planned``). The workspace itself is left as
    it is: the next phase that runs restores its own pre-state first."""
    if not index_dir(run.flow.root).is_dir():
        return 0
    done = 0
    while not run.paths.cancel_request.exists():
        nxt = run.state.next_phase
        if nxt is None:
            break
        phase = run.flow.phase(nxt.id)
        # a Gate's phase, and a stale one (its own last attempt may stand), go the usual way
        if phase.gated or nxt.status == "stale" or not from_other_runs(run, phase):
            break
        try:
            pre = planned(run, phase, store)
            found = pre is not None and any(
                _adopt(run, phase, None, store, pre, entry)
                for entry in candidates(
                    run.flow.root, key(run, phase, snapshot.digest(pre)), since(run, phase)
                )
            )
        except (OSError, ValueError, KeyError, TypeError, intact.ObjectTampered):
            # a tampered object: the phase goes the usual way, which fails naming it
            log.debug("phase %s cannot be restored ahead", phase.id, exc_info=True)
            found = False
        if not found:
            break
        done += 1
    return done


def planned(run: RunHandle, phase: Phase, store: RunStore) -> snapshot.Manifest | None:
    """The pre-state ``settle`` would make, from the records alone: the phase before's
    post-state, each working input placed at its name (and the folders above it)."""
    base = base_state(run, phase)
    if base is None:
        return None
    pre = {n: snapshot.Item(i.sha256, i.size) for n, i in base.items()}
    for name in phase.working:
        sha, size = store.add_file(source_of(run, name))
        pre[name] = snapshot.Item(sha, size)
        parts = name.split("/")[:-1]
        for n in range(len(parts)):
            pre["/".join(parts[: n + 1]) + "/"] = snapshot.Item(snapshot.FOLDER, 0)
    return pre


def _adopt(
    run: RunHandle,
    phase: Phase,
    ws: snapshot.Workspace | None,
    store: RunStore,
    pre: snapshot.Manifest,
    entry: dict[str, Any],
) -> bool:
    post_sha, record_sha = str(entry["post"]), str(entry["record"])
    if not all(SHA.fullmatch(s) for s in (post_sha, record_sha)):
        return False
    if not store.claim([post_sha, record_sha]):
        return False
    source = f"{entry['run']}/{entry['attempt']}"
    shown = f"the workspace {phase.id} left in run {source}"
    post = snapshot.parse_manifest(intact.read(store.path(post_sha), post_sha, shown))
    outputs: dict[str, str] = dict(entry["outputs"])
    scratch: dict[str, str] = dict(entry["scratch"])
    if sorted(outputs) != sorted(phase.outputs):
        return False
    files = [i.sha256 for n, i in post.items() if not snapshot.is_folder(n)]
    shas = [*files, *outputs.values(), *scratch.values()]
    if not all(isinstance(s, str) and SHA.fullmatch(s) for s in shas) or not store.claim(shas):
        return False
    # what is copied into the run is checked before anything of the run changes; the
    # workspace's files are checked as they are placed
    record = f"records/{phase.id}.ipynb of run {source}"
    for name, sha in [*scratch.items(), *outputs.items(), (record, record_sha)]:
        intact.check(store.path(sha), sha, name)
    if ws is not None:
        ws.settled = None
        ws.restore(post)
        post = ws.snapshot(settled=True)  # as this workspace holds it (every file known)
    state = run.state.phase(phase.id)
    if state.attempt:
        collect.archive_attempt(run.paths, phase, state.attempt)
    attempt = state.attempt + 1
    declared = set(phase.outputs)
    for name, sha in {**scratch, **outputs}.items():
        collect._file(run.paths, phase, name, store, sha, declared)
    run.paths.records.mkdir(parents=True, exist_ok=True)
    copied = run.paths.records / f".{phase.id}.{os.getpid()}.restoring"
    copied.unlink(missing_ok=True)
    intact.copy(store.path(record_sha), record_sha, copied, record, mode=0o644)
    os.replace(copied, run.paths.record(phase.id))
    digests = {"pre": snapshot.digest(pre)}
    digests |= definition.digests_of(run.flow, phase, params_for(run.state, phase.id))
    save = ws.save if ws is not None else snapshot.save_manifest
    save(run.paths.snapshot(phase.id, attempt), pre, **digests)
    save(run.paths.snapshot(phase.id, attempt, "post"), post)
    run.change(Reuse(phase=phase.id, source=source, hashes=outputs, digests=digests))
    remember(run, phase, store, pre, post, outputs)
    return True


def prune(flow_root: Path, listed: list[str]) -> int:
    """Remove the index's entries of runs no longer listed; how many."""
    keep, removed = set(listed), 0
    root = index_dir(flow_root)
    try:
        folders = list(os.scandir(root))
    except FileNotFoundError:
        return 0
    for folder in folders:
        try:
            names = os.listdir(folder.path)
        except OSError:
            continue
        for name in names:
            if name.split(".")[0] not in keep:
                Path(folder.path, name).unlink(missing_ok=True)
                removed += 1
        try:
            os.rmdir(folder.path)  # only once empty
        except OSError:
            pass
    return removed
