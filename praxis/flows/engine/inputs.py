"""What a phase starts from: the workspace the phase before it left (``base_state``), with
its working inputs uploaded (``gather``: step 2 of DESIGN.md §5), settled once (``settle``).
Used by the phase loop and by reuse, which checks what a phase would start from."""

from __future__ import annotations

from pathlib import Path

from sandbox import Sandbox
from sandbox.files import confined

from ..model.events import InputsUploaded
from ..model.flow import Phase
from ..store import snapshot
from ..store.handle import RunHandle


def base_state(
    run: RunHandle, phase: Phase, ws: snapshot.Workspace | None = None
) -> snapshot.Manifest | None:
    """The workspace a phase starts from: as the phase before it left it (empty for the
    first). None when that was not recorded (a run from before snapshots); ValueError when
    the record is damaged (the phase fails, saying so). ``ws`` gives the manifest it saved
    in this process, not read back."""
    index = run.flow.index(phase.id)
    if index == 0:
        return {}
    before = run.state.phase(run.flow.phases[index - 1].id)
    path = run.paths.snapshot(before.id, before.attempt, "post")
    return ws.load(path) if ws is not None else snapshot.load_manifest(path)


def settle(
    run: RunHandle,
    phase: Phase,
    sandbox: Sandbox,
    ws: snapshot.Workspace,
    base: snapshot.Manifest | None,
) -> snapshot.Manifest:
    """Restore ``base``, upload the inputs; the manifest. The caller has stopped every
    sandbox process (``quiesce``). A phase settled a moment ago (a reuse that did not apply;
    nothing ran since) is not settled twice. An input the restore would put back and the
    upload replace is restored as the input it is now: its earlier version is never read (a
    person may have changed the output it came from, and accepted it)."""
    settled, ws.settled = ws.settled, None
    if settled is not None and settled[0] == phase.id:
        return settled[1]
    t0 = run.clock()
    stored = store_inputs(run, phase, ws)
    if base is not None:
        now = {n: snapshot.Item(sha, size) for n, (sha, size) in stored.items()}
        ws.restore({**base, **now})
    gather(run, phase, ws, stored, since=t0)
    return ws.snapshot(settled=True)


def store_inputs(
    run: RunHandle, phase: Phase, ws: snapshot.Workspace
) -> dict[str, tuple[str, int]]:
    """Each working input added to the store (hashed on the way): name -> (sha256, size)."""
    found: dict[str, tuple[str, int]] = {}
    for name in phase.working:
        if run.flow.producer(name) is None:  # a flow file: by descriptor, no link followed
            found[name] = ws.store.add_flow_file(run.flow.root, name)
        else:
            found[name] = ws.store.add_file(source_of(run, name))
    return found


def gather(
    run: RunHandle,
    phase: Phase,
    ws: snapshot.Workspace,
    stored: dict[str, tuple[str, int]] | None = None,
    *,
    since: float | None = None,
) -> None:
    """Step 2: upload every working input (replacing what the workspace holds), unless the
    workspace holds it already (an earlier phase's output where that phase left it)."""
    t0 = run.clock() if since is None else since
    for name, (sha, size) in (store_inputs(run, phase, ws) if stored is None else stored).items():
        if not ws.holds(name, sha):
            ws.place(name, sha, size)
    run.emit(InputsUploaded(phase=phase.id, files=list(phase.working), seconds=run.clock() - t0))


def source_of(run: RunHandle, name: str) -> Path:
    """Where a working/reference input lives on the host: an earlier output, or a flow file."""
    if run.flow.producer(name) is not None:
        return confined(run.paths.output, name)
    return confined(run.flow.root, name)
