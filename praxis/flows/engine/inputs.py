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
    nothing ran since) is not settled twice."""
    settled, ws.settled = ws.settled, None
    if settled is not None and settled[0] == phase.id:
        return settled[1]
    if base is not None:
        ws.restore(base)
    gather(run, phase, ws)
    return ws.snapshot(settled=True)


def gather(run: RunHandle, phase: Phase, ws: snapshot.Workspace) -> None:
    """Step 2: upload every working input (replacing what the workspace holds), unless the
    workspace holds it already (an earlier phase's output where that phase left it)."""
    t0 = run.clock()
    for name in phase.working:
        if run.flow.producer(name) is None:  # a flow file: by descriptor, no link followed
            sha, size = ws.store.add_flow_file(run.flow.root, name)
        else:
            sha, size = ws.store.add_file(source_of(run, name))
        if not ws.holds(name, sha):
            ws.place(name, sha, size)
    run.emit(InputsUploaded(phase=phase.id, files=list(phase.working), seconds=run.clock() - t0))


def source_of(run: RunHandle, name: str) -> Path:
    """Where a working/reference input lives on the host: an earlier output, or a flow file."""
    if run.flow.producer(name) is not None:
        return confined(run.paths.output, name)
    return confined(run.flow.root, name)
