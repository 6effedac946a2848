"""A fan-out phase (DESIGN.md §17): one sandbox per partition, ``parallel`` at once.

The phase loop calls ``run_fanout`` for a phase with ``foreach:``. It decides what each
partition of the run's selection (a backfill's ``only``, else all) needs: nothing (done, and
its reuse key is the one it would have now), its outputs restored from settled work of any
run of the flow with that key, or an attempt. Attempts run on a thread pool, each worker in
its own sandbox (``partition.work``); the workers tell this thread when they start and
return what they did, and only this thread changes the run (one writer of run.json and
events.jsonl). The phase is done when every partition is; a failed partition fails the
phase, naming it, while the others keep their results; ``praxis rerun FLOW --from PHASE
--partition NAME`` runs that one alone.

A later phase reads every partition's outputs in its workspace, a folder per partition:
``<phase>/<partition>/<output>`` (the fan-out's post-state is the workspace before it, with
those files added). The reuse index of partitions is ``<flow>/.praxis/partitions/<key>.json``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import queue
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from sandbox import Sandbox
from sandbox.files import confined, replace_file

from ...errors import Refused
from ..definition import digests as definition
from ..definition.foreach import NoFiles, files_of
from ..model.fanout import FanOut, select
from ..model.flow import Flow, Phase
from ..model.partition_moves import Partition
from ..model.state import STOPPED
from ..model.transitions import Fail, Finish, Start
from ..store import intact, snapshot
from ..store.handle import RunHandle
from ..store.layout import store_dir
from .inputs import base_state
from .options import DEFAULT, RunOptions
from .partition import Job, OpenBox, Outcome, Slots, work

OpenFor = Callable[[RunHandle], OpenBox]


def partitions_of(root: Path, fan: FanOut) -> list[tuple[str, str]]:
    """(name, value) of every partition: the values, or each file of the pattern (its
    value is its path in the flow; NoFiles when none is left)."""
    if fan.files is not None:
        return files_of(root, fan.files)
    return [(v, v) for v in fan.values]


def known_partition(flow: Flow, phase: Phase, name: str) -> None:
    """Refused unless ``name`` is a partition of the fan-out ``phase``."""
    if phase.fanout is None:
        raise Refused(f"{phase.id} is not a fan-out (no foreach:): re-run it without --partition")
    try:
        select([n for n, _ in partitions_of(flow.root, phase.fanout)], name)
    except (NoFiles, ValueError) as exc:
        raise Refused(f"{phase.id}: {exc}") from None


def check_selection(flow: Flow, spec: str) -> None:
    """Refused unless ``spec`` (``a..b`` or ``a,b``) selects partitions of every fan-out."""
    fanned = [p for p in flow.phases if p.fanout is not None]
    if not fanned:
        raise Refused(
            f"flow {flow.name} has no fan-out phase (foreach:): run it without --partitions"
        )
    for phase in fanned:
        assert phase.fanout is not None
        try:
            select([n for n, _ in partitions_of(flow.root, phase.fanout)], spec)
        except (NoFiles, ValueError) as exc:
            raise Refused(f"--partitions {spec}: {phase.id}: {exc}") from None


def run_fanout(
    run: RunHandle,
    phase: Phase,
    box: Sandbox | None,
    ws: snapshot.Workspace,
    open_box: OpenBox,
    options: RunOptions = DEFAULT,
) -> bool:
    """Run the fan-out ``phase``; True when every partition of the selection is done.
    ``box``: the run's sandbox when it is open, else None (``ws``'s is made, not opened:
    the phase runs no code in it and leaves its workspace folder as it is)."""
    fan = phase.fanout
    assert fan is not None
    info = ws.sandbox.describe()
    run.change(Start(phase=phase.id, pid=os.getpid(), backend=str(info.get("backend")),
                     isolated=bool(info.get("isolated"))))  # fmt: skip
    started = run.clock()
    for name, part in list(run.state.phase(phase.id).partitions.items()):
        if part.get("status") == "running":  # left so by a process that died: stopped
            run.change(Partition(phase=phase.id, partition=name, status="failed", error=STOPPED))
    try:
        found = partitions_of(run.flow.root, fan)
        names = [n for n, _ in found]
        parts = run.state.phase(phase.id).partitions
        forced = {n for n in names if parts.get(n, {}).get("force")}
        chosen = [n for n in names if n in set(select(names, run.state.only)) | forced]
    except (NoFiles, ValueError) as exc:
        return _failed(run, phase, started, f"{phase.id}: {exc}")
    values = dict(found)
    uploads = _inputs(run, phase, ws)
    jobs: list[Job] = []
    for name in chosen:
        params = {**run.state.params, fan.param: values[name]}
        files = dict(uploads)
        if fan.files is not None:
            files[values[name]] = _stored(ws, run.flow.root, values[name])
        key = _key(run, phase, params, files, ws)
        if _settled(run, phase, name, key, options.reuse, ws):
            continue
        attempt = int(run.state.phase(phase.id).partitions.get(name, {}).get("attempt", 0)) + 1
        jobs.append(_job(run, phase, name, attempt, params, files, key))
    failed = _run_jobs(run, phase, jobs, open_box, options, ws)
    if failed:
        first = run.state.phase(phase.id).partitions[failed[0]].get("error") or ""
        return _failed(
            run, phase, started,
            f"partition {', '.join(failed)} of {phase.id} failed: {first}; the others keep "
            "their results",
        )  # fmt: skip
    return _finish(run, phase, chosen, started, ws, box)


def _inputs(run: RunHandle, phase: Phase, ws: snapshot.Workspace) -> dict[str, Path]:
    """The phase's working inputs, each by its object in the store (hashed once, a flow file
    read by descriptor with no link followed)."""
    files: dict[str, Path] = {}
    for name in phase.working:
        if run.flow.producer(name) is None:
            files[name] = _stored(ws, run.flow.root, name)
        else:
            sha, _ = ws.store.add_file(confined(run.paths.output, name))
            files[name] = ws.store.path(sha)
    return files


def _stored(ws: snapshot.Workspace, root: Path, name: str) -> Path:
    sha, _ = ws.store.add_flow_file(root, name)
    return ws.store.path(sha)


def _key(
    run: RunHandle,
    phase: Phase,
    params: dict[str, Any],
    files: dict[str, Path],
    ws: snapshot.Workspace,
) -> str:
    """The partition's reuse key: its definition (the partition's value among the params,
    not the other partitions) and the content of what it is handed."""
    inputs = {name: path.name for name, path in sorted(files.items())}  # objects: their sha256
    alone = dataclasses.replace(phase, fanout=None)
    data = {"definition": definition.digest_of(run.flow, alone, params), "inputs": inputs}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _settled(
    run: RunHandle, phase: Phase, name: str, key: str, reuse: bool, ws: snapshot.Workspace
) -> bool:
    """Whether partition ``name`` needs no attempt: done with this key and its outputs as it
    left them (nothing recorded), or restored from settled work of the flow's runs."""
    part = run.state.phase(phase.id).partitions.get(name, {})
    if part.get("force"):
        return False
    folder = run.paths.partition_output(phase.id, name)
    if part.get("status") == "done" and part.get("key") == key:
        if all(intact.holds(folder / n, sha) for n, sha in part.get("hashes", {}).items()):
            return True
    if not reuse or phase.reuse == "never":
        return False
    entry = _index(run, key)
    if entry is None:
        return False
    outputs: dict[str, str] = entry.get("outputs", {})
    if set(outputs) != set(phase.outputs) or not all(
        intact.holds(ws.store.path(sha), sha) for sha in outputs.values()
    ):
        return False
    folder.mkdir(parents=True, exist_ok=True)
    for out, sha in outputs.items():
        dest = folder / out
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ws.store.path(sha), dest)
    run.change(Partition(phase=phase.id, partition=name, status="done", key=key,
                         hashes=dict(outputs), source=str(entry.get("source", ""))))  # fmt: skip
    return True


def _index(run: RunHandle, key: str) -> dict[str, Any] | None:
    try:
        data = json.loads(
            (store_dir(run.paths.flow_root) / "partitions" / f"{key}.json").read_bytes()
        )
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _remember(run: RunHandle, key: str, outputs: dict[str, str], source: str) -> None:
    folder = store_dir(run.paths.flow_root) / "partitions"
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"outputs": outputs, "source": source}, sort_keys=True)
    replace_file(folder / f"{key}.json", text.encode())


def _job(
    run: RunHandle,
    phase: Phase,
    name: str,
    attempt: int,
    params: dict[str, Any],
    files: dict[str, Path],
    key: str,
) -> Job:
    return Job(
        phase=phase, name=name, attempt=attempt, params=params,
        folder=run.paths.partition_folder(phase.id, name),
        output=run.paths.partition_output(phase.id, name), uploads=files,
        record=run.paths.partition_record(phase.id, name),
        archive=run.paths.partition_attempt(phase.id, name, attempt - 1),
        timeout=float(phase.timeout or run.flow.sandbox.timeout), run_id=run.id,
        run_dir=run.root, key=key,
    )  # fmt: skip


def _run_jobs(
    run: RunHandle,
    phase: Phase,
    jobs: list[Job],
    open_box: OpenBox,
    options: RunOptions,
    ws: snapshot.Workspace,
) -> list[str]:
    """Run ``jobs``, ``parallel`` at once; record each start and end as it comes (this
    thread only). The partitions that failed, in the flow's order."""
    fan = phase.fanout
    assert fan is not None
    starts: queue.SimpleQueue[tuple[str, str]] = queue.SimpleQueue()
    stop = threading.Event()  # the loop's: every partition's code is interrupted
    jobs = [
        dataclasses.replace(j, cancel=run.paths.cancel_request, stop=stop, turn=i)
        for i, j in enumerate(jobs)
    ]
    by_name = {j.name: j for j in jobs}

    def began(name: str, node: str) -> None:
        starts.put((name, node))

    def drain() -> None:
        while True:
            try:
                name, node = starts.get_nowait()
            except queue.Empty:
                return
            run.change(Partition(phase=phase.id, partition=name, status="running", node=node))

    # ``parallel`` partitions run at once; as many more open their sandboxes meanwhile, so
    # that a slot let go is taken by a partition whose container and kernels are up
    slots = Slots(fan.parallel)
    pool = ThreadPoolExecutor(max_workers=2 * fan.parallel, thread_name_prefix="partition")
    try:
        pending: set[Future[Outcome]] = {
            pool.submit(work, job, run.flow, open_box, began, options, slots) for job in jobs
        }
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            if run.paths.cancel_request.exists():  # `praxis cancel`: every partition stops
                pool.shutdown(wait=False, cancel_futures=True)
                stop.set()
                pending = {f for f in pending if not f.cancelled()}  # those never started
            drain()
            for future in done:
                _record(run, phase, by_name, future.result(), ws)
    except BaseException:  # Ctrl-C: nothing of the fan-out runs on once the loop leaves
        pool.shutdown(wait=False, cancel_futures=True)
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True)
    drain()
    parts = run.state.phase(phase.id).partitions
    return [j.name for j in jobs if parts.get(j.name, {}).get("status") == "failed"]


def _record(
    run: RunHandle,
    phase: Phase,
    jobs: dict[str, Job],
    out: Outcome,
    ws: snapshot.Workspace,
) -> None:
    job = jobs[out.name]
    if out.skipped:  # stopped while its sandbox opened: it never ran
        return
    if run.state.phase(phase.id).partitions.get(out.name, {}).get("status") != "running":
        run.change(Partition(phase=phase.id, partition=out.name, status="running", node=out.node))
    for event in out.events:
        run.emit(event)
    if not out.ok:
        error = STOPPED if run.paths.cancel_request.exists() else out.error
        run.change(Partition(phase=phase.id, partition=out.name, status="failed", error=error))
        return
    for name in out.hashes:
        ws.store.add_file(job.output / name)
    run.change(Partition(phase=phase.id, partition=out.name, status="done", key=job.key,
                         hashes=dict(out.hashes)))  # fmt: skip
    if phase.reuse != "never":
        source = f"{run.id}/{phase.id}/{out.name}/{job.attempt}"
        _remember(run, job.key, dict(out.hashes), source)


def _finish(
    run: RunHandle,
    phase: Phase,
    chosen: list[str],
    started: float,
    ws: snapshot.Workspace,
    box: Sandbox | None,
) -> bool:
    """Every partition of the selection is done: the workspace a later phase starts from is
    the one before this phase with a folder per partition added; the phase is done."""
    parts = run.state.phase(phase.id).partitions
    hashes: dict[str, str] = {}
    added: snapshot.Manifest = {}
    for name in chosen:
        for out, sha in parts[name].get("hashes", {}).items():
            rel = f"{phase.id}/{name}/{out}"
            hashes[rel] = sha
            added[rel] = snapshot.Item(sha, os.stat(ws.store.path(sha)).st_size)
    base = base_state(run, phase, ws) or {}
    post = {**base, **added}
    if box is not None:  # open: its workspace holds what the next phase starts from
        box.quiesce()
        ws.restore(post)
        post = ws.snapshot(settled=True)
    attempt = run.state.phase(phase.id).attempt
    ws.save(run.paths.snapshot(phase.id, attempt), base)
    ws.save(run.paths.snapshot(phase.id, attempt, "post"), post)
    keys = {n: str(parts[n].get("key", "")) for n in chosen}
    digests = {"pre": snapshot.digest(base), "partitions": _sha(keys)}
    digests |= definition.digests_of(run.flow, phase, run.state.params)
    run.change(Finish(phase=phase.id, hashes=hashes, digests=digests,
                      seconds=run.clock() - started))  # fmt: skip
    return True


def _sha(data: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _failed(run: RunHandle, phase: Phase, started: float, error: str) -> bool:
    run.change(Fail(phase=phase.id, error=error, seconds=run.clock() - started))
    return False
