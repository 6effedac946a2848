"""Load flow.yaml into a Flow, reporting every problem in it with its location.

``load`` never raises for a bad definition: it collects all problems (YAML text, schema,
paths, references) in a Report. Each renders as one line: ``flow.yaml: phases[1].outputs[0]:
...`` for a value, ``flow.yaml:12: duplicate key 'outputs'`` when the YAML text is at fault.
``require`` raises FlowInvalid instead. Nothing is written; besides flow.yaml, the files the
flow names are only stat'ed, except a notebook phase's .ipynb, read by ``notebook_check``.
"""

from __future__ import annotations

import difflib  # only for a missing file: `praxis check` of a good flow skips it
import itertools
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox.errors import SandboxError
from sandbox.files import open_below

from ...sources import source
from ..model import check_spec
from ..model.flow import REVIEW_MODES, Flow, Phase, SandboxSettings
from ..model.forms import FormField
from ..model.retry_policy import RetryPolicy
from . import (
    approvers,
    foreach,
    form_spec,
    kinds,
    profile,
    retry_spec,
    safe_yaml,
    sandbox_config,
    unattended,
)
from . import notify_spec as notify_of
from . import publish_spec as publish_of
from . import reuse_spec as reuse_of
from .problems import FlowInvalid as FlowInvalid
from .problems import Problem as Problem
from .problems import Report as Report
from .yaml_values import ValueReader, describe, mib, show

MAX_DEFINITION_BYTES = 1 << 20  # flow.yaml itself, refused before parsing
FLOW_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
PHASE_ID = re.compile(r"[a-z0-9_-]+")
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
TOP_KEYS = (
    *("flow", "description", "sandbox", "model", "database", "params", "notify"),
    *("schedule", "trigger", "phases", "publish"),
)
PHASE_KEYS = (  # the keys every kind takes; a kind reads the others into its spec (kinds.py)
    *("id", "kind", "inputs", "outputs", "may_be_empty", "review", "timeout", "description"),
    *("checks", "reuse", "retries", "foreach", "parallel"),
)
REVIEW_KEYS = ("required", "delegatable", "form", "approvers", *unattended.DEADLINE_KEYS)
INPUT_KEYS = ("working", "reference")


def load(path: str | os.PathLike[str]) -> tuple[Flow | None, Report]:
    """Read and check a flow folder (or its flow.yaml). The Flow is None when there are errors."""
    report = Report()
    definition = _definition(Path(path), report)
    if definition is None:
        return None, report
    data, readable = _read_yaml(definition, report)
    if not readable:
        return None, report

    def add(location: str, message: str, severity: str) -> None:
        report.problems.append(Problem(location, message, severity))

    flow = _Builder(definition.parent.resolve(), add).build(data)
    return (flow if report.ok else None), report


def check(path: str | os.PathLike[str]) -> Report:
    return load(path)[1]


def require(path: str | os.PathLike[str]) -> Flow:
    """The Flow at ``path``, or FlowInvalid carrying the report."""
    flow, report = load(path)
    if flow is None:
        raise FlowInvalid(report)
    return flow


# -- the file -------------------------------------------------------------------------------


def _definition(path: Path, report: Report) -> Path | None:
    """The flow.yaml to read, after checking it is a regular file under the size limit."""
    definition = path / "flow.yaml" if path.is_dir() else path
    problem, shown = None, definition.name
    try:
        st = definition.lstat()  # flow.yaml is read without following a link (flow_files)
    except OSError as exc:
        problem, shown = (
            f"cannot be read ({exc.strerror}); give a flow folder or its flow.yaml",
            str(definition),
        )
    else:
        if stat.S_ISLNK(st.st_mode):
            problem = "is a symbolic link: a flow's files are read without following links"
        elif not stat.S_ISREG(st.st_mode):
            problem = "is not a regular file"
        elif st.st_size > MAX_DEFINITION_BYTES:
            problem = f"is {mib(st.st_size)}, over the 1 MiB limit for a flow definition"
    if problem is None:
        return definition
    report.problems.append(Problem("", problem, file=shown))
    return None


def _read_yaml(definition: Path, report: Report) -> tuple[Any, bool]:
    """The document in ``definition``, and whether it could be parsed at all."""
    doc = safe_yaml.read(definition, max_bytes=MAX_DEFINITION_BYTES)
    for p in doc.problems:
        report.problems.append(Problem("", p.message, line=p.line, column=p.column))
    return doc.data, doc.readable


# -- the definition ---------------------------------------------------------------------------


@dataclass
class _Draft:
    """A phase as read, with the locations the cross-phase checks report against."""

    loc: str
    id: str | None = None
    phase: Phase | None = None
    inputs: list[tuple[str, str]] = field(default_factory=list)  # (location, name)
    outputs: list[tuple[str, str]] = field(default_factory=list)
    fanned: bool = False  # a fan-out: its outputs are per partition


class _Builder(ValueReader):
    """Reads the parsed document into a Flow, reporting each problem it meets and going on."""

    def build(self, data: Any) -> Flow | None:
        if data is None:
            self.error("", "is empty: a flow needs at least a phases: list")
            return None
        top = self.mapping(data, "", TOP_KEYS)
        if top is None:
            return None
        name = self.flow_name(top)
        description = self.string(top.get("description", ""), "description")
        sandbox = self.sandbox(top.get("sandbox", {}))
        model = self.string(top["model"], "model") if "model" in top else None
        database = self.database(top["database"]) if "database" in top else None
        params = self.params(top.get("params", {}))
        notify = notify_of.validate(self, top["notify"]) if "notify" in top else {}
        schedule, trigger = unattended.read(self, top, params)
        if "phases" not in top:
            self.error("", "missing required key 'phases' (the list of phases)")
        phases = self.phases(top["phases"]) if "phases" in top else ()
        publish = publish_of.read(self, top["publish"], phases) if "publish" in top else ()
        if self.errors or name is None:
            return None
        return Flow(
            name=name, root=self.root, phases=phases, description=description or "",
            sandbox=sandbox, model=model, database=database, params=params, notify=notify,
            publish=publish,
            schedule=schedule, trigger=trigger,
        )  # fmt: skip

    # -- the parts of a flow ------------------------------------------------------------------

    def flow_name(self, top: dict[str, Any]) -> str | None:
        if "flow" in top:
            return self.ident(top["flow"], "flow", FLOW_NAME, "flow name")
        default = self.root.name.lower()
        if FLOW_NAME.fullmatch(default):
            return default
        self.error(
            "",
            f"no flow: name, and the folder name {show(self.root.name)} is not one; "
            f"add flow: <name> matching {FLOW_NAME.pattern}",
        )
        return None

    def sandbox(self, value: Any) -> SandboxSettings:
        return sandbox_config.read(self, value)

    def params(self, value: Any) -> dict[str, Any]:
        """Run parameters: names to scalar defaults (their types type `-p name=value`)."""
        raw = self.mapping(value, "params", None)
        found: dict[str, Any] = {}
        for key, default in (raw or {}).items():
            loc = f"params.{key}"
            if not isinstance(key, str) or not PARAM_NAME.fullmatch(key):
                self.error(loc, f"is not a parameter name ({PARAM_NAME.pattern})")
            elif default is not None and not isinstance(default, str | int | float | bool):
                self.error(loc, f"must be a string, number or true/false, not {describe(default)}")
            else:
                found[key] = default
        return found

    def database(self, value: Any) -> str | None:
        """A connection of the person's profile by name, or a database file of the flow."""
        s = self.string(value, "database")
        if s is None:
            return None
        where = profile.shown_path(profile.path_of())
        try:
            named = source.parse(s, where)
        except source.BadSource as exc:
            self.error("database", str(exc))
            return None
        # a connection's name is checked against the profile by host_resources, at check
        # and run alike: reading the flow needs no profile
        problem = None
        if named.connection is None and named.path not in (None, source.MEMORY):
            problem = _file_problem(self.root, named.path or "")
        if problem:
            self.error("database", problem)  # a database may be larger than other flow files
        return s

    def phases(self, value: Any) -> tuple[Phase, ...]:
        if not isinstance(value, list):
            self.error("phases", f"expected a list of phases, got {describe(value)}")
            return ()
        if not value:
            self.error("phases", "is empty: a flow needs at least one phase")
        drafts = [
            self.phase(item, loc) for item, loc in zip(value, _phase_locs(value), strict=True)
        ]
        self.check_ids(drafts)
        self.check_outputs(drafts)
        self.check_inputs(drafts)
        return tuple(d.phase for d in drafts if d.phase is not None)

    def phase(self, value: Any, loc: str) -> _Draft:
        draft = _Draft(loc)
        raw = self.mapping(value, loc, None)  # a key is known once the phase's kind is
        if raw is None:
            return draft
        for key in ("id", "kind"):
            if key not in raw:
                self.error(loc, f"missing required key {key!r}")
        if "id" in raw:
            draft.id = self.ident(raw["id"], f"{loc}.id", PHASE_ID, "phase id")
        kind = None
        if "kind" in raw:
            kind = self.choice(raw["kind"], f"{loc}.kind", kinds.names(), "phase kind")
        own = {key: raw.pop(key) for key in list(raw) if key not in PHASE_KEYS}
        spec = kinds.get(kind).fit(own, loc, self) if kind is not None else None
        working, reference = self.inputs(raw, loc, kind, draft)
        draft.outputs = self.names(raw.get("outputs", []), f"{loc}.outputs")
        outputs = tuple(name for _, name in draft.outputs)
        may_be_empty = self.may_be_empty(raw, loc, outputs)
        review, delegatable = self.review(raw.get("review", "none"), f"{loc}.review")
        deadline, escalate = unattended.deadline(self, raw.get("review"), f"{loc}.review", review)
        declared = check_spec.validate(self, raw.get("checks", {}), f"{loc}.checks", outputs)
        timeout = (
            sandbox_config.timeout(raw["timeout"], f"{loc}.timeout", self)
            if "timeout" in raw
            else None
        )
        description = self.string(raw.get("description", ""), f"{loc}.description")
        reuse, fresh = reuse_of.read(self, raw, loc, kind)
        retries, form = self.unattended(raw, loc, kind, review)
        fanout = foreach.read(raw, loc, self)
        if draft.id is not None and kind is not None:
            draft.phase = Phase(
                id=draft.id, kind=kind, spec=spec, working=working, reference=reference,
                outputs=outputs, may_be_empty=may_be_empty, review=review or "none",
                timeout=timeout, description=description or "", delegatable=delegatable,
                checks=declared, reuse=reuse, fresh=fresh, retries=retries, form=form,
                deadline=deadline, escalate=escalate, fanout=fanout,
                approvers=approvers.read(self, raw.get("review"), loc),
            )  # fmt: skip
            draft.fanned = fanout is not None
        return draft

    def unknown_key(self, loc: str, key: str, own: tuple[str, ...]) -> None:
        self.unknown(loc, key, (*PHASE_KEYS, *own))

    def unattended(
        self, raw: dict[str, Any], loc: str, kind: str | None, review: str | None
    ) -> tuple[RetryPolicy | None, tuple[FormField, ...]]:
        """The phase's ``retries:`` (retry_spec.py) and its Gate's ``form:`` (form_spec.py)."""
        retries = None
        if "retries" in raw and kind is not None:
            safe = kinds.get(kind).reusable  # re-runs from its pre-state alone
            retries = retry_spec.read(self, raw["retries"], f"{loc}.retries", safe=safe)
        gate = raw.get("review")
        if not (isinstance(gate, dict) and "form" in gate):
            return retries, ()
        if review != "required":
            self.error(f"{loc}.review.form", "a form needs a Gate: add required: true")
            return retries, ()
        return retries, form_spec.read(self, gate["form"], f"{loc}.review.form")

    def review(self, value: Any, loc: str) -> tuple[str | None, bool]:
        """``none``, ``required``, or ``{required: true, delegatable: true}``."""
        if isinstance(value, dict):
            raw = self.mapping(value, loc, REVIEW_KEYS) or {}
            flags = {k: raw.get(k, False) for k in ("required", "delegatable")}
            for key, flag in flags.items():
                if not isinstance(flag, bool):
                    self.error(f"{loc}.{key}", f"expected true or false, got {describe(flag)}")
            if flags["delegatable"] is True and flags["required"] is not True:
                self.error(loc, "delegatable: true needs required: true (a Gate to delegate)")
            mode = "required" if flags["required"] is True else "none"
            return mode, flags["delegatable"] is True
        return self._review_mode(value, loc), False

    def _review_mode(self, value: Any, loc: str) -> str | None:
        if isinstance(value, bool):  # YAML reads yes/no/on/off as booleans
            self.error(
                loc,
                f"{str(value).lower()} (yes/no) is not a review; write review: required "
                "(a Gate after this phase) or review: none",
            )
            return None
        return self.choice(value, loc, REVIEW_MODES, "review")

    def inputs(
        self, raw: dict[str, Any], loc: str, kind: str | None, draft: _Draft
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        spec = self.mapping(raw.get("inputs", {}), f"{loc}.inputs", INPUT_KEYS) or {}
        working = self.names(spec.get("working", []), f"{loc}.inputs.working")
        reference = self.names(spec.get("reference", []), f"{loc}.inputs.reference")
        if reference and kind is not None and not kinds.get(kind).reads_reference:
            self.warn(
                f"{loc}.inputs.reference",
                f"only agents read reference inputs; this "
                f"{kind} phase ignores them (list them under working:)",
            )
        draft.inputs = working + reference
        return tuple(n for _, n in working), tuple(n for _, n in reference)

    def may_be_empty(
        self, raw: dict[str, Any], loc: str, outputs: tuple[str, ...]
    ) -> tuple[str, ...]:
        located = self.names(raw.get("may_be_empty", []), f"{loc}.may_be_empty")
        for at, name in located:
            if name not in outputs:
                self.error(at, f"{show(name)} is not an output of this phase")
        return tuple(name for _, name in located)

    # -- across phases ------------------------------------------------------------------------

    def check_ids(self, drafts: list[_Draft]) -> None:
        first: dict[str, str] = {}
        for d in drafts:
            if d.id is not None and d.id in first:
                self.error(f"{d.loc}.id", f"duplicate phase id {show(d.id)} (also {first[d.id]})")
            elif d.id is not None:
                first[d.id] = d.loc

    def check_outputs(self, drafts: list[_Draft]) -> None:
        owner: dict[str, _Draft] = {}
        for d in drafts:
            mine: set[str] = set()
            for at, name in d.outputs:
                if name in mine:
                    self.error(at, f"{show(name)} is listed twice")
                elif name in owner:
                    self.error(
                        at,
                        f"{show(name)} is already an output of {_phase(owner[name])} "
                        "(output names are unique across phases)",
                    )
                else:
                    owner[name] = d
                mine.add(name)

    def check_inputs(self, drafts: list[_Draft]) -> None:
        producer: dict[str, int] = {}
        for i, d in enumerate(drafts):
            for _, name in d.outputs:
                producer.setdefault(name, i)
        for i, d in enumerate(drafts):
            for at, name in d.inputs:
                j = producer.get(name)
                if os.path.lexists(self.root / name):
                    # a file of the flow (a later output may replace it): data, streamed
                    self.flow_file(name, at, streamed=True)
                elif j is None:
                    earlier = [n for n, k in producer.items() if k < i]
                    self.error(
                        at,
                        f"{show(name)} is neither a file of the flow nor an output "
                        f"of an earlier phase{_near(name, self.root, earlier)}",
                    )
                elif j == i:
                    self.error(
                        at,
                        f"{show(name)} is an output of this same phase: a phase "
                        "cannot read its own output (a cycle)",
                    )
                elif drafts[j].fanned:
                    self.error(at, foreach.not_an_input(name, _phase(drafts[j])))
                elif j > i:
                    self.error(
                        at,
                        f"{show(name)} is a forward reference to an output of the "
                        f"later {_phase(drafts[j])}",
                    )


# -- wording --------------------------------------------------------------------------------


def _file_problem(root: Path, name: str) -> str | None:
    """Why database file ``name`` cannot be read below the flow folder (no link followed)."""
    try:
        with open_below(root, name):
            return None
    except SandboxError as exc:
        reason = getattr(exc, "reason", str(exc))
        where = " in the flow folder" if reason == "does not exist" else ""
        return f"{name!r} {reason}{where} (a database file is read inside the flow folder only)"


def _phase(draft: _Draft) -> str:
    return f"phase {draft.id!r}" if draft.id else draft.loc


def _phase_locs(items: list[Any]) -> list[str]:
    """``phases[clean]`` for a phase with a valid, unique id; ``phases[2]`` otherwise."""
    ids = [item.get("id") if isinstance(item, dict) else None for item in items]
    locs = []
    for i, pid in enumerate(ids):
        named = isinstance(pid, str) and PHASE_ID.fullmatch(pid) and ids.count(pid) == 1
        locs.append(f"phases[{pid}]" if named else f"phases[{i}]")
    return locs


def _near(name: str, root: Path, outputs: list[str]) -> str:
    """``; did you mean 'data/sales.csv'?`` from earlier outputs and files beside the name."""
    candidates = list(outputs)
    folder = root / os.path.dirname(name)
    try:
        if folder.resolve().is_relative_to(root.resolve()) and folder.is_dir():
            with os.scandir(folder) as entries:
                for entry in itertools.islice(entries, 1000):
                    rel = os.path.relpath(entry.path, root)
                    if entry.is_file(follow_symlinks=False) and not rel.startswith("runs"):
                        candidates.append(rel)
    except OSError:
        pass

    close = difflib.get_close_matches(name, candidates, n=1)
    return f"; did you mean {show(close[0])}?" if close else ""
