"""events.py (the catalogue) and store/event_log.py (the file): typed lines, a torn tail
dropped and cut, corruption in the middle reported; one catalogue of every kind, read in any
process; add-on kinds registered explicitly; the stamped lines of a change, and those of them
a log lacks."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any, ClassVar

import pytest

from praxis.flows.engine import runner
from praxis.flows.model import events as ev
from praxis.flows.store.event_log import EventLog, EventLogCorrupt

from .helpers import three_phase_flow


def test_events_round_trip_typed(tmp_path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    log.append(ev.RunBegun(run="r", flow="f", phases=["a"]))
    log.append(ev.PhaseFailed(phase="a", attempt=1, error="boom"))
    got = log.read()
    assert [type(e) for e in got] == [ev.RunBegun, ev.PhaseFailed]
    assert got[1].error == "boom" and got[1].kind == "phase_failed"


def test_torn_last_line_is_dropped_and_next_append_starts_clean(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append(ev.RunBegun(run="r", flow="f", phases=["a"]))
    with open(path, "ab") as fh:
        fh.write(b'{"kind": "phase_star')
    assert [e.kind for e in log.read()] == ["run_begun"]
    log.append(ev.PhaseStarted(phase="a", attempt=1))
    assert [e.kind for e in log.read()] == ["run_begun", "phase_started"]
    assert path.read_bytes().count(b"\n") == 2


def test_corruption_in_the_middle_is_reported_with_its_line(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append(ev.RunBegun(run="r", flow="f", phases=["a"]))
    with open(path, "ab") as fh:
        fh.write(b"garbage\n")
    log.append(ev.PhaseStarted(phase="a", attempt=1))
    with pytest.raises(EventLogCorrupt, match="line 2"):
        log.read()


def test_unknown_kinds_are_kept(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"kind": "from_the_future", "at": 1.0, "x": 1}\n')
    (got,) = EventLog(path).read()
    assert isinstance(got, ev.Unknown) and got.data["x"] == 1


def test_an_event_line_holds_its_fields_as_json_would_have_them(tmp_path) -> None:
    @dataclasses.dataclass(frozen=True)
    class Where:
        path: str

    scratch = [f"s{n}.txt" for n in range(5000)]
    log = EventLog(tmp_path / "events.jsonl")
    log.append(ev.FilesCollected(phase="p", outputs=["a.csv"], scratch=scratch, at=1.0))
    detail = {"path": Path("/x"), "where": Where("w"), "pair": (1, 2)}
    log.append(ev.SandboxOpened(backend="docker", isolated=True, detail=detail, at=2.0))
    first, second = (json.loads(line) for line in log.path.read_text().splitlines())
    assert first == {
        "kind": "files_collected",
        "at": 1.0,
        "phase": "p",
        "outputs": ["a.csv"],
        "scratch": scratch,
    }
    assert second["detail"] == {"path": "/x", "where": {"path": "w"}, "pair": [1, 2]}


# --- the catalogue ---------------------------------------------------------------------------

PRAXIS = Path(ev.__file__).resolve().parents[1]


def _event_classes_in_source() -> dict[str, str]:
    """Every class of praxis that derives from an Event class, by name: where it is."""
    found: dict[str, str] = {}
    bases = {"Event", *(cls.__name__ for cls in ev.CATALOGUE)}
    for path in sorted(PRAXIS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                getattr(b, "id", getattr(b, "attr", None)) in bases for b in node.bases
            ):
                found[node.name] = str(path.relative_to(PRAXIS.parent))
    return found


def test_the_catalogue_lists_every_event_class_of_praxis_once() -> None:
    listed = {cls.__name__ for cls in ev.CATALOGUE}
    assert set(_event_classes_in_source()) == listed
    assert all(getattr(ev, cls.__name__) is cls for cls in ev.CATALOGUE)  # each from events
    assert len(ev.KINDS) == len(ev.CATALOGUE)
    assert all(ev.KINDS[cls.kind] is cls for cls in ev.CATALOGUE)


def test_no_module_registers_a_kind_when_it_is_imported() -> None:
    for path in sorted(PRAXIS.rglob("*.py")):
        text = path.read_text()
        assert "@event\n" not in text and "import events  # noqa" not in text, path


@pytest.mark.parametrize("cls", ev.CATALOGUE, ids=lambda c: c.kind)
def test_each_kind_is_a_frozen_keyword_only_dataclass(cls: type[ev.Event]) -> None:
    params = getattr(cls, "__dataclass_params__")  # noqa: B009
    assert params.frozen and all(f.kw_only for f in dataclasses.fields(cls))
    assert ev.REV not in {f.name for f in dataclasses.fields(cls)}
    assert cls.kind != ev.Event.kind


def sample(cls: type[ev.Event]) -> ev.Event:
    """An event of ``cls`` with a value in every field, each as its type says."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {"at": 1_795_000_000.5}
    for f in dataclasses.fields(cls):
        if f.name != "at":
            values[f.name] = _value(f.name, hints[f.name])
    return cls(**values)


def _value(name: str, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if hint is str:
        return f"{name}-1"
    if hint is bool:
        return True
    if hint is int:
        return 7
    if hint is float:
        return 2.25
    if origin is list:
        (item,) = typing.get_args(hint)
        return [_value(name, item), _value(name + "2", item)]
    if origin is dict:
        return {"k": _value(name, typing.get_args(hint)[1])}
    if hint is Any:
        return {"nested": [1, "two"]}
    raise AssertionError(f"no sample value for {name}: {hint}")


KNOWN = [cls for cls in ev.CATALOGUE if cls is not ev.Unknown]

READ_IN_A_FRESH_PROCESS = """
import json, sys
import praxis
events = praxis.events(sys.argv[1])
print(json.dumps({
    "events": [[type(e).__module__, type(e).__name__, e.to_json()] for e in events],
    "agent_imported": "praxis.agent" in sys.modules,
}))
"""


def test_praxis_log_and_events_read_every_kind_in_a_fresh_process(tmp_path: Path) -> None:
    root = three_phase_flow(tmp_path)
    run = runner.begin(root)
    written = [sample(cls) for cls in KNOWN]
    for one in written:
        run.log.append(one)
    lines = run.paths.events.read_text().splitlines()[1:]  # after the run's run_begun
    assert [json.loads(x)["kind"] for x in lines] == [cls.kind for cls in KNOWN]

    log = subprocess.run(
        [sys.executable, "-m", "praxis", "log", str(root)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert log.returncode == 0, log.stderr
    printed = log.stdout.splitlines()[1:]
    assert [line.split()[1] for line in printed] == [cls.kind for cls in KNOWN]
    assert "unknown" not in log.stdout
    called = printed[[cls.kind for cls in KNOWN].index("model_called")]
    assert "phase=phase-1 call=7 tool_calls=['tool_calls-1', 'tool_calls2-1']" in called

    read = subprocess.run(
        [sys.executable, "-c", READ_IN_A_FRESH_PROCESS, str(root)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    report = json.loads(read.stdout)
    got = report["events"][1:]
    assert [(m, n) for m, n, _ in got] == [(c.__module__, c.__name__) for c in KNOWN]
    assert [line for _, _, line in got] == [one.to_json() for one in written]
    assert report["agent_imported"] is False  # no module had to be imported for its kinds


# --- kinds from outside praxis ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class Pinged(ev.Event):
    kind: ClassVar[str] = "test_pinged"
    host: str


def test_a_registered_add_on_kind_is_read_as_its_class(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    log.append(Pinged(host="h", at=1.0))
    assert ev.register(Pinged) is Pinged and ev.register(Pinged) is Pinged  # again: nothing
    assert log.read() == [Pinged(host="h", at=1.0)]


def test_a_kind_that_is_taken_or_not_an_event_is_refused() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Impostor(ev.Event):
        kind: ClassVar[str] = "phase_done"

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Stamped(ev.Event):
        kind: ClassVar[str] = "test_stamped"
        rev: int

    taken = "'phase_done' is taken by praxis.flows.model.run_events.PhaseDone"
    with pytest.raises(ev.KindTaken, match=taken):
        ev.register(Impostor)
    with pytest.raises(TypeError, match="field 'rev'"):
        ev.register(Stamped)
    with pytest.raises(TypeError, match="not an Event"):
        ev.register(dict)  # type: ignore[type-var]
    assert ev.kind_of("phase_done") is ev.PhaseDone and ev.kind_of("test_stamped") is None


ADD_ON = """
from dataclasses import dataclass
from typing import ClassVar

from praxis.flows.model.events import Event


@dataclass(frozen=True, kw_only=True)
class Deployed(Event):
    kind: ClassVar[str] = "deployed"
    target: str
"""


def test_an_add_on_kind_named_by_an_entry_point_is_read_in_a_fresh_process(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    (site / "addon_events.py").parent.mkdir()
    (site / "addon_events.py").write_text(ADD_ON)
    info = site / "addon_events-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: addon-events\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[praxis.events]\ndeployed = addon_events:Deployed\n")
    path = tmp_path / "events.jsonl"
    path.write_text(
        '{"kind": "deployed", "at": 1.0, "target": "prod"}\n{"kind": "nobody", "at": 2.0}\n'
    )
    script = (
        "import sys, pathlib; from praxis.flows.store.event_log import EventLog; "
        "log = EventLog(pathlib.Path(sys.argv[1])); "
        "print([(type(e).__name__, e.to_json()) for e in log.read()])"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "'Deployed'" in done.stdout and '"target": "prod"' in done.stdout
    assert "'Unknown'" in done.stdout  # a kind nobody names stays Unknown, kept whole


# --- a change's lines ------------------------------------------------------------------------


def test_the_lines_of_a_change_the_log_lacks(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    change = [
        ev.RunStateChanged(status="running", revision=4, at=1.0).stamped(4),
        ev.PhaseStarted(phase="a", attempt=1, at=1.0).stamped(4),
    ]
    assert log.lacking(4, change) == change  # no log yet
    log.append_lines([ev.PhaseStarted(phase="a", attempt=1, at=0.5).stamped(3)])
    log.append(ev.CodeRan(phase="a", label="x", status="ok", seconds=1.0))
    assert log.lacking(4, change) == change
    log.append_lines(change[:1])
    log.append(ev.CodeRan(phase="a", label='"rev": 9', status="ok", seconds=1.0))
    assert log.lacking(4, change) == change[1:]
    log.append_lines(change[1:])
    assert log.lacking(4, change) == [] and log.lacking(3, change) == []  # ahead: nothing
    assert log.lacking(4, []) == []
    first = json.loads(log.path.read_text().splitlines()[0])
    assert list(first)[:2] == ["kind", "rev"]
    assert [type(e) for e in log.read()][-2:] == [ev.CodeRan, ev.PhaseStarted]


def test_a_stamped_line_read_back_from_run_json_keeps_its_stamp_first(tmp_path: Path) -> None:
    line = ev.PhaseDone(phase="a", attempt=1, seconds=1.0, hashes={"b": "2", "a": "1"}).stamped(5)
    resorted = json.loads(json.dumps(line, sort_keys=True))  # as run.json holds it
    log = EventLog(tmp_path / "events.jsonl")
    log.append_lines([resorted])
    assert log.lacking(5, [line]) == []
    assert log.read() == [
        ev.PhaseDone(phase="a", attempt=1, seconds=1.0, hashes=line["hashes"], at=line["at"])
    ]
