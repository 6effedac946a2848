"""The decisions on a run at its Gate and the verbs that change it there: approve, reject,
edit, accept, manage, read, rerun, cancel; each agent's decision through ``_authorize``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.files import fsync_folder, open_nofollow, replace_file

from ...argv import flow_text
from ...command_line import NOTE, Command
from ...errors import Refused
from ..model import decisions, forms
from ..model.events import DecisionRefused
from ..model.flow import Flow
from ..model.params import resolve as resolve_params
from ..model.state import RunState
from ..model.transitions import (
    Accept,
    Approve,
    Params,
    Reject,
    Rerun,
)
from ..store.handle import Clock, RunHandle, held
from ..store.layout import (
    writable,
)
from ..store.lock import Busy
from ..store.objects import RunStore
from ..store.upgrade import refuse_old
from . import acks as acks_of
from . import binding, carry, checks, collect, reconcile
from .discard import put_back

if TYPE_CHECKING:
    pass


from .lifecycle import (
    _change,
    _check_revision,
    _do_cancel,
    _person_only,
    _set_managed,
    check_definition,
    load_flow,
    recover,
)


class EditsAtRisk(Refused):
    """Raised for a re-run or reopen that would replace outputs edited at a Gate, without a
    choice (``--keep-edits`` or ``--discard-edits``), or with ``--keep-edits`` for an output
    whose edit cannot be re-applied; ``command`` is the one to try."""

    def __init__(self, message: str, command: str, edited: list[str]) -> None:
        super().__init__(message)
        self.command = command
        self.edited = edited

    def next(self, flow: str) -> str:
        return self.command


EDIT_CHOICES = ("keep", "discard")


def _choose_edits(
    run: RunHandle, phase: str, edits: str | None, command: Command
) -> tuple[str, list[str]]:
    """The choice for the Gate edits going back to ``phase`` may replace, and those outputs;
    EditsAtRisk when there are some and no choice (or one that cannot be kept)."""
    found = carry.at_risk(run.state, phase)
    if not found:
        return "", []
    names = [n for n, _ in found]
    listed = ", ".join(f"{n} (at the Gate after {p})" for n, p in found)
    if edits not in EDIT_CHOICES:
        raise EditsAtRisk(
            f"run {run.id}: going back to {phase} would replace {listed}, edited by a "
            "reviewer: choose --keep-edits (re-applied to the new output by row key) or "
            "--discard-edits (each put back as its phase wrote it; the edits stay in edits/)",
            replace(command, edits="keep").line(),
            names,
        )
    cannot = carry.keyless(run.flow, found) if edits == "keep" else []
    if cannot:
        raise EditsAtRisk(
            f"run {run.id}: --keep-edits cannot re-apply the edit of {', '.join(cannot)}: it "
            "is not a table with a row key (declare key: [columns] under its checks: in "
            "flow.yaml), or choose --discard-edits",
            replace(command, edits="discard").line(),
            names,
        )
    twice = carry.repeated_columns(run, found) if edits == "keep" else []
    if twice:
        raise EditsAtRisk(
            f"run {run.id}: --keep-edits cannot re-apply the edit of {carry.refusal(*twice[0])}",
            replace(command, edits="discard").line(),
            names,
        )
    return str(edits), names


def _command(run: RunHandle, verb: str, **params: Any) -> Command:
    """``verb`` on this run, bound to its revision, as a person types it."""
    rev = run.state.revision
    return Command(verb, flow_text(run.flow), run=run.id, expect_revision=rev, **params)


@contextmanager
def _opened(
    flow_ref: Flow | str | Path,
    run_id: str | None,
    expect_revision: int | None,
    clock: Clock,
    *,
    bound: tuple[str, str | None, int | None] | None = None,
) -> Iterator[RunHandle]:
    """The run, under its lock, reconciled with its files (hand edits recorded), after
    checking the revision the caller saw. ``bound`` (decision, gate, attempt): a decision
    must name the revision, the Gate or the attempt it was made on."""
    flow = load_flow(flow_ref)
    with held(flow, run_id, "changing") as lock:
        run = RunHandle.open(flow, lock.run, clock)
        refuse_old(run.paths)  # a run from before the flow's store: praxis upgrade, once
        run.catch_up()  # the events of a change a process that died did not append
        reconcile.reconcile(run)
        if bound is not None and expect_revision is None and bound[1:] == (None, None):
            binding.unbound(run, bound[0])
        _check_revision(run, expect_revision)
        yield run


def read(
    flow_ref: Flow | str | Path,
    path: str,
    run_id: str | None = None,
    *,
    actor: str | None = None,
    limit: int = acks_of.READ_BYTES,
    clock: Clock = time.time,
) -> acks_of.Read:
    """Read the run's file ``path`` (relative to the run's folder) and record a receipt of
    it for ``actor`` (``acks``); hand edits are recorded first, so the receipt is of the
    file as the run now has it."""
    who = decisions.actor_of(actor)
    with _opened(flow_ref, run_id, None, clock) as run:
        return acks_of.read(run, path, who, limit=limit)


def _authorize(
    run: RunHandle, actor: str, decision: str, gate: str, receipts: list[str] | None
) -> list[dict[str, str]]:
    """Refused (and recorded) when ``actor`` may not take ``decision`` at this Gate, or
    passes no receipt of a file to read as it is; the receipts it passed."""
    phase = run.flow.phase(gate)
    failing = checks.gate_failures(run, reconcile.phase_version(run, gate))

    why = decisions.refusal(
        actor,
        decision,
        phase,
        managed=run.state.managed,
        failing=len(failing),
        run=run.id,
        flow=flow_text(run.flow),
    )
    if why is None:
        try:
            return acks_of.verify(run, actor, receipts)
        except acks_of.NotAcknowledged as exc:
            run.emit(DecisionRefused(phase=gate, decision=decision, actor=actor, reason=str(exc)))
            raise
    if failing:
        why += ": " + checks.summary(failing)
    run.emit(DecisionRefused(phase=gate, decision=decision, actor=actor, reason=why))
    raise Refused(f"run {run.id}: {actor} may not {decision}: {why}", revision=run.state.revision)


def manage(
    flow_ref: Flow | str | Path,
    run_id: str | None = None,
    *,
    grant: bool = True,
    actor: str | None = None,
    expect_revision: int | None = None,
    clock: Clock = time.time,
) -> RunState:
    """A person lets an agent decide the run's delegatable Gates (``grant=False`` takes it
    back). Recorded as a ``managed_mode`` event; an agent may not grant it."""
    who = _person_only(actor, "grant or take back managed mode")
    with _opened(flow_ref, run_id, expect_revision, clock) as run:
        _set_managed(run, grant, who)
        return run.state


def accept(
    flow_ref: Flow | str | Path,
    name: str,
    run_id: str | None = None,
    *,
    actor: str | None = None,
    expect_revision: int | None = None,
    clock: Clock = time.time,
) -> RunState:
    """A person accepts output ``name``, changed outside praxis, as its phase's (recorded:
    ``output_accepted``, the new version kept in the content store)."""
    who = _person_only(actor, "accept an output changed outside praxis")
    with _opened(flow_ref, run_id, expect_revision, clock) as run:
        found = [c for c in reconcile.changed_outputs(run) if c.name == name]
        if not found:
            raise Refused(f"run {run.id}: output {name} is as its phase recorded it")
        c = found[0]
        if not c.now:
            raise Refused(f"run {run.id}: output {name} is missing: re-run {c.phase}")
        sha, _ = RunStore(run.paths).add_file(run.paths.out(name))
        return _change(run, Accept(phase=c.phase, output=name, sha256=sha, actor=who))


def approve(
    flow_ref: Flow | str | Path,
    run_id: str | None = None,
    *,
    expect_revision: int | None = None,
    gate: str | None = None,
    attempt: int | None = None,
    actor: str | None = None,
    receipts: list[str] | None = None,
    clock: Clock = time.time,
    values: Mapping[str, Any] | None = None,
) -> RunState:
    """Approve the Gate the run waits at; bound to ``expect_revision``, ``gate`` or
    ``attempt`` (else Unbound), refused for another Gate or attempt (``binding``). Hand edits
    are recorded first; an agent needs a delegatable Gate and managed mode, and passes a
    receipt of each file to read as it is (``receipts``); no one approves while a
    check fails, nor output a changed definition no longer makes. Does not advance.
    ``values``: the Gate's form answered (forms.answers: BadValue names the field at fault,
    nothing changed); recorded with this attempt's approval, params of the later phases."""
    who = decisions.actor_of(actor)
    bound = ("approve", gate, attempt)
    with _opened(flow_ref, run_id, expect_revision, clock, bound=bound) as run:
        at = binding.at_gate(
            run, "approve", gate=gate, attempt=attempt, expect_revision=expect_revision
        )
        check_definition(run)
        form = run.flow.phase(str(run.state.gate)).form
        answered = forms.answers(form, values or {}, str(run.state.gate))
        binding.refuse_changed(run, "approve", at)
        acked = _authorize(run, who, "approve", at, receipts)
        return _change(run, Approve(actor=who, acked=acked, values=answered))


def edit(
    flow_ref: Flow | str | Path,
    name: str,
    data: bytes | Path,
    run_id: str | None = None,
    *,
    expect_revision: int | None = None,
    by: str = "reviewer",
    actor: str | None = None,
    diff: dict[str, Any] | None = None,
    clock: Clock = time.time,
) -> RunState:
    """Replace a writable artifact at the Gate (atomically) and record the edit with its
    diff (edits/<phase>/<attempt>.json). ``data`` is the new bytes, or a file already
    written beside the artifact's folder (same file system) that is moved into its place;
    ``diff``, when the caller knows it (a cell save), is recorded instead of comparing the
    two versions again."""
    who = decisions.actor_of(actor)
    with _opened(flow_ref, run_id, expect_revision, clock) as run:
        path = writable(run.flow, run.state, run.paths, name)
        old = run.state.phase(str(run.state.gate)).hashes.get(name, "")
        _write_atomic(path, data)
        reconcile.record_edit(run, name, old, by=by, actor=who, diff=diff)
        return run.state


def _write_atomic(path: Path, data: bytes | Path) -> None:
    """Replace ``path`` atomically; the edited file keeps its mode (a new one gets 0644)."""
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    if isinstance(data, Path):
        fd = open_nofollow(data)
        try:
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(data, path)
        fsync_folder(path.parent)
        return
    replace_file(path, data, mode=mode)


def reject(
    flow_ref: Flow | str | Path,
    reopen: str,
    note: str,
    run_id: str | None = None,
    *,
    expect_revision: int | None = None,
    gate: str | None = None,
    attempt: int | None = None,
    actor: str | None = None,
    receipts: list[str] | None = None,
    edits: str | None = None,
    clock: Clock = time.time,
) -> RunState:
    """Reject at the Gate: ``reopen`` (the gated phase or an earlier) runs again with the note.
    Bound like ``approve``; an agent needs a delegatable Gate, managed mode, passing checks
    and receipts. ``edits`` (keep or discard) is needed when the reopen would
    replace outputs edited at a Gate (else EditsAtRisk)."""
    who = decisions.actor_of(actor)
    bound = ("reject", gate, attempt)
    with _opened(flow_ref, run_id, expect_revision, clock, bound=bound) as run:
        _known_phase(run.flow, reopen)
        at = binding.at_gate(
            run, "reject", gate=gate, attempt=attempt, expect_revision=expect_revision
        )
        acked = _authorize(run, who, "reject", at, receipts)
        command = _command(
            run, "reject", gate=at, attempt=run.state.phase(at).attempt, reopen=reopen, note=NOTE
        )
        choice, edited = _choose_edits(run, reopen, edits, command)
        back = put_back(run, Reject(phase=reopen)) if choice == "discard" else []
        _change(
            run,
            Reject(
                phase=reopen, note=note, edits=choice or None, put_back=back,
                actor=who, acked=acked, kept=_kept(run, reopen), edited=edited,
            ),
        )  # fmt: skip
        _archive(run, reopen)
        return run.state


def rerun(
    flow_ref: Flow | str | Path,
    from_phase: str,
    run_id: str | None = None,
    *,
    expect_revision: int | None = None,
    params: dict[str, str] | None = None,
    reuse: bool = True,
    edits: str | None = None,
    clock: Clock = time.time,
) -> RunState:
    """Go back to ``from_phase``: later done phases become stale (pending without ``reuse``:
    they run again whatever changed), the attempt is kept. ``params`` change the run's.
    ``edits`` (keep or discard) is needed when it would replace outputs edited at a Gate."""
    with _opened(flow_ref, run_id, expect_revision, clock) as run:
        recover(run)
        check_definition(run)
        _known_phase(run.flow, from_phase)
        command = _command(run, "rerun", from_phase=from_phase)
        choice, edited = _choose_edits(run, from_phase, edits, command)
        if params:
            base = {**run.flow.params, **run.state.params}
            _change(run, Params(params=resolve_params(base, params)))
        back = put_back(run, Rerun(phase=from_phase)) if choice == "discard" else []
        _change(
            run,
            Rerun(
                phase=from_phase, reuse=reuse, edits=choice or None, put_back=back,
                kept=_kept(run, from_phase), edited=edited,
            ),
        )  # fmt: skip
        _archive(run, from_phase)
        return run.state


def cancel(
    flow_ref: Flow | str | Path,
    run_id: str | None = None,
    *,
    expect_revision: int | None = None,
    clock: Clock = time.time,
) -> tuple[RunState, bool]:
    """Cancel the run; (state, True) if done now, (state, False) if the advancing process will."""
    try:
        with _opened(flow_ref, run_id, expect_revision, clock) as run:
            recover(run)
            _do_cancel(run)
            return run.state, True
    except Busy:
        run = RunHandle.open(load_flow(flow_ref), run_id, clock)
        run.paths.cancel_request.write_text(f"{os.getpid()}\n")
        return run.state, False


def _known_phase(flow: Flow, phase_id: str) -> None:
    if phase_id not in [p.id for p in flow.phases]:
        names = ", ".join(p.id for p in flow.phases)
        raise Refused(f"{flow.name} has no phase {phase_id!r} (phases: {names})")


def _kept(run: RunHandle, phase_id: str) -> list[str]:
    """The folder going back to ``phase_id`` keeps its last attempt's files in (``_archive``,
    just after the change: a crash between is made good by the phase's next start, which
    archives them there), if it has any."""
    p, paths = run.state.phase(phase_id), run.paths
    outputs = [paths.out(n) for n in run.flow.phase(phase_id).outputs]
    has_files = any(o.is_file() or o.is_symlink() for o in outputs) or any(
        f.exists() for f in (paths.scratch_of(phase_id), paths.record(phase_id))
    )
    if not p.attempt or not has_files:
        return []
    return [str(run.paths.attempt(phase_id, p.attempt).relative_to(run.root))]


def _archive(run: RunHandle, phase_id: str) -> None:
    p = run.state.phase(phase_id)
    if p.attempt:
        collect.archive_attempt(run.paths, run.flow.phase(phase_id), p.attempt)
