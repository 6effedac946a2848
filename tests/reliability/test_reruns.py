"""docs/reliability.md items 27-30: re-runs start from the recorded state.

A re-run or reopen gives the outputs the first run gave; a re-run of a phase sees the
workspace as the phase first saw it; nothing recorded changes after it is written; a run
whose flow.yaml changed is refused and stays usable. Also: settled work is reused, a
second `praxis run` on a busy flow creates nothing, cancel and Ctrl-C end as cancelled.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from praxis.flows.engine import runner
from praxis.flows.model import state as st
from praxis.flows.model.flow import Flow

from ._flows import (
    docker_sandbox,
    event_kinds,
    one_line_error,
    only_run,
    praxis,
    praxis_here,
    state_of,
)
from ._flows import write_flow as _write_flow

FLOWS = Path(__file__).resolve().parents[2] / "flows"
EXAMPLES = sorted(p.name for p in FLOWS.iterdir() if (p / "flow.yaml").is_file())
SCRIPTED = {
    "PRAXIS_MODEL": "praxis.agent.scripted:ScriptedChatModel",
    "PRAXIS_MODEL_SCRIPT": str(FLOWS / "agent-example" / "scripted-turn.json"),
}


@dataclass(frozen=True)
class Backend:
    name: str
    line: str  # the flow.yaml `sandbox:` line


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker), "local", "fake"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Backend:
    """The same test on each backend: docker, local kernels, and the in-process fake (the
    latter two allowed by the person's environment, as with --allow-local)."""
    if request.param != "docker":
        monkeypatch.setenv("PRAXIS_SANDBOX", request.param)
    if request.param == "docker":
        image = request.getfixturevalue("docker_image")
        return Backend("docker", docker_sandbox(image, timeout=120))
    return Backend(request.param, f'sandbox: {{"backend": "{request.param}", "timeout": 120}}')


def write_flow(root: Path, backend: Backend, yaml_text: str, files: dict[str, str]) -> Path:
    """A flow whose ``sandbox:`` line is the backend's (``SANDBOX`` in ``yaml_text``)."""
    return _write_flow(root, yaml_text.replace("SANDBOX", backend.line), files)


def copy_example(name: str, dest: Path, backend: Backend) -> Path:
    root = dest / name
    shutil.copytree(FLOWS / name, root, ignore=shutil.ignore_patterns("runs", "run.lock"))
    text = (root / "flow.yaml").read_text()
    lines = [backend.line if ln.startswith("sandbox:") else ln for ln in text.splitlines()]
    (root / "flow.yaml").write_text("\n".join(lines) + "\n")
    return root


def to_end(flow: Flow, run_id: str) -> st.RunState:
    """Advance, approving every Gate, until the run is done."""
    state = runner.advance(flow, run_id)
    for _ in range(len(flow.phases) + 1):
        if state.waiting != "gate":
            break
        runner.approve(flow, run_id, expect_revision=state.revision)
        state = runner.advance(flow, run_id)
    assert state.status == "done", (state.status, state.error)
    return state


def to_gate(flow: Flow, run_id: str, gate: str) -> st.RunState:
    """Advance, approving the Gates before ``gate``, until the run waits at ``gate``."""
    state = runner.advance(flow, run_id)
    for _ in range(len(flow.phases) + 1):
        if state.waiting != "gate" or state.gate == gate:
            break
        runner.approve(flow, run_id, expect_revision=state.revision)
        state = runner.advance(flow, run_id)
    assert (state.waiting, state.gate) == ("gate", gate), (state.status, state.error)
    return state


def outputs(run: Path, skip: set[str]) -> dict[str, str]:
    """sha256 of every file in output/ (hidden temp files aside), but the names in ``skip``."""
    found = {}
    for path in sorted((run / "output").rglob("*")):
        name = path.relative_to(run / "output").as_posix()
        if path.is_file() and not path.name.startswith(".") and name not in skip:
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def kinds_count(run: Path, kind: str) -> int:
    return event_kinds(run).count(kind)


# --- item 27: every example, re-run and reopened from every phase ----------------------------


@pytest.mark.parametrize("name", EXAMPLES)
def test_item27_example_reruns_and_reopens_give_identical_outputs(
    name: str,
    backend: Backend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    for key, value in SCRIPTED.items():
        monkeypatch.setenv(key, value)
    if (FLOWS / name / "data" / "shop.sql").is_file():  # the example's PostgreSQL database
        server = request.getfixturevalue("postgres")
        server.create("shop", (FLOWS / name / "data" / "shop.sql").read_text())
        for key, value in server.profile(tmp_path, "shop").items():  # the profile's `shop`
            monkeypatch.setenv(key, value)
    flow = runner.load_flow(copy_example(name, tmp_path, backend))
    # an agent phase is never reused and may word its outputs differently on each attempt:
    # its outputs are checked for presence only, the others byte for byte
    agent = {o for p in flow.phases if p.kind == "agent" for o in p.outputs}
    run_id = runner.begin(flow).id
    run = flow.root / "runs" / run_id
    to_end(flow, run_id)
    fresh = outputs(run, agent)
    assert set(fresh) | agent == {o for p in flow.phases for o in p.outputs}

    def same_as_fresh(after: str) -> None:
        assert outputs(run, agent) == fresh, after
        for out in agent:
            assert (run / "output" / out).stat().st_size > 0, (after, out)

    for phase in flow.phases:  # re-run from P: P runs, later phases run or are reused
        before = state_of(run).phase(phase.id).attempt
        runner.rerun(flow, phase.id, run_id)
        to_end(flow, run_id)
        same_as_fresh(f"re-run from {phase.id}")
        again = state_of(run).phase(phase.id)
        assert (again.attempt, again.reused) == (before + 1, False)

    for gi, gate in enumerate(flow.phases):  # at each Gate, reopen each phase up to it
        if not gate.gated:
            continue
        runner.rerun(flow, gate.id, run_id)
        state = to_gate(flow, run_id, gate.id)
        for reopen in flow.phases[: gi + 1]:
            before = state.phase(reopen.id).attempt
            runner.reject(flow, reopen.id, "again", run_id, expect_revision=state.revision)
            state = to_gate(flow, run_id, gate.id)  # later outputs: those of the last attempt
            same_as_fresh(f"reopened {reopen.id} at the Gate after {gate.id}")
            assert state.phase(reopen.id).attempt == before + 1
        to_end(flow, run_id)
        same_as_fresh(f"approved the Gate after {gate.id}")


# --- item 28: a re-run of P sees the workspace as P first saw it -----------------------------

LISTING = """\
import json, os

def listing():
    seen = []
    for folder, dirs, files in os.walk("."):
        for name in dirs:
            seen.append(os.path.relpath(os.path.join(folder, name)) + "/")
        for name in files:
            seen.append(os.path.relpath(os.path.join(folder, name)))
    return sorted(seen)
"""

SEEN_FLOW = """
    flow: seen
    SANDBOX
    phases:
      - id: first
        kind: script
        script: first.py
        inputs: {working: [data/in.txt]}
        outputs: [a.txt]
      - id: second
        kind: script
        script: second.py
        inputs: {working: [a.txt]}
        outputs: [seen2.json]
      - id: third
        kind: script
        script: third.py
        inputs: {working: [a.txt, seen2.json]}
        outputs: [seen3.json]
"""
SEEN_FILES = {
    "data/in.txt": "one\ntwo\n",
    "first.py": """
        import os
        text = open("data/in.txt").read()
        open("a.txt", "w").write(text.upper())
        os.makedirs("notes", exist_ok=True)
        open("notes/first.txt", "w").write("scratch of first")
    """,
    "second.py": LISTING
    + "seen = listing()  # before it writes anything\n"
    + "os.makedirs('work/deep', exist_ok=True)\n"
    + "open('work/deep/tmp.bin', 'wb').write(b'x' * 100)\n"
    + "open('second_scratch.txt', 'w').write('scratch of second')\n"
    + "json.dump(seen, open('seen2.json', 'w'))\n",
    "third.py": LISTING + "\njson.dump(listing(), open('seen3.json', 'w'))\n",
}
LATER = ["second_scratch.txt", "work/", "work/deep/", "work/deep/tmp.bin", "seen2.json"]


def _folders(files: list[str]) -> set[str]:
    return {"/".join(f.split("/")[: i + 1]) + "/" for f in files for i in range(f.count("/"))}


def test_item28_a_rerun_sees_the_workspace_as_it_was_before_the_phase_first_ran(
    backend: Backend, tmp_path: Path
) -> None:
    flow = runner.load_flow(write_flow(tmp_path / "seen", backend, SEEN_FLOW, SEEN_FILES))
    run_id = runner.begin(flow).id
    run = flow.root / "runs" / run_id
    to_end(flow, run_id)
    seen3 = json.loads((run / "output" / "seen3.json").read_text())
    assert set(LATER) <= set(seen3), seen3  # phase 3 does see what phase 2 left

    runner.rerun(flow, "second", run_id)
    to_end(flow, run_id)
    assert state_of(run).phase("second").attempt == 2
    first = json.loads((run / "attempts" / "second" / "1" / "output" / "seen2.json").read_text())
    again = json.loads((run / "output" / "seen2.json").read_text())
    assert again == first
    assert not set(again) & (set(LATER) | {"seen3.json"}), again
    manifests = [
        json.loads((run / "snapshots" / "second" / f"{n}.json").read_text()) for n in (1, 2)
    ]
    recorded = sorted(manifests[0]["files"])
    assert recorded == ["a.txt", "data/in.txt", "notes/first.txt"]
    assert sorted(manifests[1]["files"]) == recorded
    assert manifests[1]["digest"] == manifests[0]["digest"]
    assert again == sorted(recorded + sorted(_folders(recorded)))


EMPTY_FOLDER_FLOW = """
    flow: folders
    SANDBOX
    phases:
      - id: first
        kind: script
        script: first.py
        outputs: [a.txt]
      - id: second
        kind: script
        script: second.py
        outputs: [seen2.json]
"""
EMPTY_FOLDER_FILES = {
    "first.py": "open('a.txt', 'w').write('a')\n",
    "second.py": LISTING + "\nseen = listing()\nos.mkdir('made_by_second')\n"
    "json.dump(seen, open('seen2.json', 'w'))\n",
}


def test_item28_a_folder_a_phase_made_is_gone_when_it_runs_again(
    backend: Backend, tmp_path: Path
) -> None:
    root = write_flow(tmp_path / "folders", backend, EMPTY_FOLDER_FLOW, EMPTY_FOLDER_FILES)
    flow = runner.load_flow(root)
    run_id = runner.begin(flow).id
    run = flow.root / "runs" / run_id
    to_end(flow, run_id)
    runner.rerun(flow, "second", run_id)
    to_end(flow, run_id)  # os.mkdir fails if the folder of the first attempt is still there
    assert json.loads((run / "output" / "seen2.json").read_text()) == ["a.txt"]


# --- item 29: nothing recorded changes after it is written -----------------------------------

TAMPER_FLOW = """
    flow: tamper
    SANDBOX
    params: {everything: false}
    phases:
      - id: first
        kind: script
        script: first.py
        inputs: {working: [data/in.csv]}
        outputs: [a.csv]
      - id: second
        kind: script
        script: second.py
        inputs: {working: [a.csv]}
        outputs: [b.csv]
        review: required
      - id: third
        kind: script
        script: third.py
        inputs: {working: [a.csv, b.csv]}
        outputs: [attack.json]
"""
TAMPER_FILES = {
    "data/in.csv": "x,y\n1,2\n3,4\n",
    "first.py": """
        text = open("data/in.csv").read()
        open("a.csv", "w").write(text)
        open("first_scratch.txt", "w").write("scratch")
    """,
    "second.py": "open('b.csv', 'w').write(open('a.csv').read().replace('1', '9'))\n",
    # every regular file it can reach: rewritten in place, made writable, its times changed
    "third.py": """
        import json, os, stat
        roots = ["."] + (["/"] if params["everything"] else [])
        skip = {"/proc", "/sys", "/dev"}
        seen, tried, wrote = set(), 0, 0
        for root in roots:
            for folder, dirs, files in os.walk(root):
                dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skip]
                for name in files:
                    path = os.path.join(folder, name)
                    try:
                        st = os.lstat(path)
                    except OSError:
                        continue
                    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in seen:
                        continue
                    seen.add((st.st_dev, st.st_ino))
                    tried += 1
                    for attempt in (lambda: os.chmod(path, 0o666), lambda: os.utime(path, (0, 0))):
                        try:
                            attempt()
                        except OSError:
                            pass
                    try:
                        with open(path, "r+b") as fh:
                            fh.write(b"TAMPERED")
                        wrote += 1
                    except OSError:
                        pass
        json.dump({"tried": tried, "wrote": wrote}, open("attack.json", "w"))
    """,
}
RECORDED = ("attempts", "records", "objects", "output", "snapshots")


def recorded_files(run: Path, skip: set[str]) -> dict[str, tuple[str, int, int]]:
    """Every recorded file: (sha256, mode, mtime_ns), but those relative paths in ``skip``."""
    found = {}
    for top in RECORDED:
        # the objects are the flow's store's, shared by its runs
        base = run.parent.parent / ".praxis" if top == "objects" else run
        for path in sorted((base / top).rglob("*")):
            name = path.relative_to(base).as_posix()
            if path.is_file() and not path.is_symlink() and name not in skip:
                info = path.stat()
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[name] = (digest, stat.S_IMODE(info.st_mode), info.st_mtime_ns)
    return found


def test_item29_a_phase_rewriting_all_it_can_reach_changes_nothing_recorded(
    backend: Backend, tmp_path: Path
) -> None:
    text = TAMPER_FLOW
    if backend.name == "docker":  # the whole container; on the host (as root) only cwd
        text = text.replace("everything: false", "everything: true")
    flow = runner.load_flow(write_flow(tmp_path / "tamper", backend, text, TAMPER_FILES))
    run_id = runner.begin(flow).id
    run = flow.root / "runs" / run_id
    state = to_gate(flow, run_id, "second")
    runner.reject(flow, "first", "again", run_id, expect_revision=state.revision)  # attempts/
    state = to_gate(flow, run_id, "second")
    writable = {"output/b.csv"}  # the Gate's file: a reviewer may edit it
    before = recorded_files(run, writable)
    assert any(n.startswith("attempts/first/1/") for n in before), sorted(before)
    assert any(n.startswith("objects/") for n in before)
    runner.approve(flow, run_id, expect_revision=state.revision)
    assert runner.advance(flow, run_id).status == "done"
    attack = json.loads((run / "output" / "attack.json").read_text())
    assert attack["tried"] >= 3, attack  # it reached at least its inputs
    if backend.name == "docker":
        assert attack["tried"] > 1000, attack  # the container's own files too
    else:
        assert attack["wrote"] >= 3, attack  # as root it may write the workspace...
    after = recorded_files(run, writable)
    changed = {n: (before[n], after.get(n)) for n in before if after.get(n) != before[n]}
    assert not changed  # ...but nothing recorded


# --- item 30: flow.yaml changed after begin ----------------------------------------------------

THREE = """
    flow: changing
    sandbox: {backend: fake, timeout: 30}
    phases:
      - id: one
        kind: script
        script: one.py
        outputs: [one.txt]
      - id: two
        kind: script
        script: two.py
        outputs: [two.txt]
      - id: three
        kind: script
        script: three.py
        outputs: [three.txt]
"""
THREE_FILES = {f"{n}.py": f"open('{n}.txt', 'w').write('{n}')\n" for n in ("one", "two", "three")}
FOUR = "  - id: four\n    kind: script\n    script: one.py\n    outputs: [four.txt]\n"
CHANGES = {
    "renamed": ("one, two, three", "one, deux, three"),
    "added": ("one, two, three", "one, two, three, four"),
    "removed": ("one, two, three", "one, three"),
}


def _changed_yaml(change: str) -> str:
    text = textwrap.dedent(THREE)
    if change == "renamed":
        return text.replace("id: two", "id: deux")
    if change == "added":
        return text + FOUR
    start = text.index("  - id: two")
    return text[:start] + text[text.index("  - id: three") :]


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_item30_a_changed_flow_yaml_is_refused_and_the_run_can_be_cancelled(
    change: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], local_env: None
) -> None:
    root = _write_flow(tmp_path / "changing", THREE, THREE_FILES)
    res = praxis_here(capsys, "begin", str(root))
    assert res.returncode == 0, res.stderr
    run = root / "runs" / res.stdout.strip()
    (root / "flow.yaml").write_text(_changed_yaml(change))
    recorded = (run / "run.json").read_bytes()
    for argv in (("advance", str(root)), ("rerun", str(root), "--from", "one")):
        res = praxis_here(capsys, *argv)
        assert res.returncode == 4, (argv, res.stdout, res.stderr)
        line = one_line_error(res, "Refused:")
        was, now = CHANGES[change]
        assert "flow.yaml changed" in line and was in line and now in line, line
        assert (run / "run.json").read_bytes() == recorded
    assert state_of(run).status == "paused"
    res = praxis_here(capsys, "status", str(root))
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    res = praxis_here(capsys, "cancel", str(root))
    assert res.returncode == 0, res.stderr
    assert state_of(run).status == "cancelled"


LAST_GATED = """
    flow: last-gated
    sandbox: {backend: fake, timeout: 30}
    phases:
      - id: one
        kind: script
        script: one.py
        outputs: [one.txt]
        review: required
"""


def test_approving_the_gate_after_the_last_phase_finishes_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], local_env: None
) -> None:
    root = _write_flow(tmp_path / "last", LAST_GATED, {"one.py": THREE_FILES["one.py"]})
    res = praxis_here(capsys, "run", str(root))
    assert res.returncode == 0, res.stderr
    run = only_run(root)
    revision = str(state_of(run).revision)
    res = praxis_here(capsys, "approve", str(root), "--expect-revision", revision)
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert state_of(run).status == "done"
    res = praxis_here(capsys, "rerun", str(root), "--from", "one")
    assert res.returncode == 0, res.stderr
    res = praxis_here(capsys, "advance", str(root))
    assert res.returncode == 0, res.stderr
    revision = str(state_of(run).revision)
    res = praxis_here(capsys, "approve", str(root), "--expect-revision", revision)
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert state_of(run).status == "done"


# --- acceptance 4: settled work is reused; --no-reuse runs it ---------------------------------

REUSE_FLOW = """
    flow: settled
    SANDBOX
    params: {marks: ""}
    phases:
      - id: one
        kind: script
        script: one.py
        inputs: {working: [data/in.txt]}
        outputs: [one.txt]
      - id: two
        kind: script
        script: two.py
        inputs: {working: [one.txt]}
        outputs: [two.txt]
      - id: three
        kind: script
        script: three.py
        inputs: {working: [two.txt]}
        outputs: [three.txt]
"""


def _marking(name: str, source: str) -> str:
    """A phase that writes ``name``.txt from ``source`` and, given a folder, leaves a mark."""
    return (
        "import os\n"
        f"open('{name}.txt', 'w').write(open('{source}').read() + '{name}\\n')\n"
        "if params['marks']:\n"
        f"    open(os.path.join(params['marks'], 'marks.txt'), 'a').write('{name}\\n')\n"
    )


REUSE_FILES = {
    "data/in.txt": "start\n",
    "one.py": _marking("one", "data/in.txt"),
    "two.py": _marking("two", "one.txt"),
    "three.py": _marking("three", "two.txt"),
}


def test_acceptance4_a_rerun_with_identical_output_reuses_later_phases(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_flow(tmp_path / "settled", backend, REUSE_FLOW, REUSE_FILES)
    marks = tmp_path / "marks"
    marks.mkdir()
    ledger = marks / "marks.txt"
    host = backend.name != "docker"  # a docker phase cannot reach a host folder
    res = praxis_here(capsys, "run", str(root), *(("-p", f"marks={marks}") if host else ()))
    assert res.returncode == 0, res.stderr
    run = only_run(root)
    if host:
        assert ledger.read_text().split() == ["one", "two", "three"]

    res = praxis_here(capsys, "rerun", str(root), "--from", "one")
    assert res.returncode == 0, res.stderr
    res = praxis_here(capsys, "advance", str(root))
    assert res.returncode == 0, res.stderr
    assert "reused" in res.stdout + res.stderr
    state = state_of(run)
    assert state.status == "done"
    assert [(p.id, p.attempt, p.reused) for p in state.phases] == [
        ("one", 2, False),
        ("two", 1, True),
        ("three", 1, True),
    ]
    assert kinds_count(run, "phase_reused") == 2
    assert not (run / "attempts" / "two").exists()
    if host:
        assert ledger.read_text().split() == ["one", "two", "three", "one"]
    res = praxis_here(capsys, "status", str(root))
    assert res.returncode == 0 and "reused" in res.stdout, res.stdout

    res = praxis_here(capsys, "rerun", str(root), "--from", "one", "--no-reuse")
    assert res.returncode == 0, res.stderr
    res = praxis_here(capsys, "advance", str(root))
    assert res.returncode == 0, res.stderr
    state = state_of(run)
    assert [(p.id, p.attempt, p.reused) for p in state.phases] == [
        ("one", 3, False),
        ("two", 2, False),
        ("three", 2, False),
    ]
    assert kinds_count(run, "phase_reused") == 2
    if host:
        assert ledger.read_text().split() == ["one", "two", "three", "one"] + [
            "one",
            "two",
            "three",
        ]


# --- the same after a Gate through the commands (each backend: item 27) -----------------------


def test_sales_report_reruns_and_reopens_after_its_gate_through_the_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], local_env: None
) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return praxis_here(capsys, *args)

    fake = Backend("fake", 'sandbox: {"backend": "fake", "timeout": 120}')
    root = copy_example("sales-report", tmp_path, fake)
    res = cli("run", str(root))
    assert res.returncode == 0, res.stderr
    run = only_run(root)
    res = cli("approve", str(root), "--expect-revision", str(state_of(run).revision))
    assert res.returncode == 0, res.stderr
    assert state_of(run).status == "done"
    fresh = outputs(run, set())

    res = cli("rerun", str(root), "--from", "flag")
    assert res.returncode == 0, res.stderr
    res = cli("advance", str(root))
    assert res.returncode == 0, res.stderr
    assert (state_of(run).waiting, state_of(run).gate) == ("gate", "flag")
    res = cli("reject", str(root), "--reopen", "clean", "--note", "again",
              "--expect-revision", str(state_of(run).revision))  # fmt: skip
    assert res.returncode == 0, res.stderr
    state = state_of(run)
    assert (state.waiting, state.gate, state.phase("clean").attempt) == ("gate", "flag", 2)
    res = cli("approve", str(root), "--expect-revision", str(state.revision))
    assert res.returncode == 0, res.stderr
    assert state_of(run).status == "done"
    assert outputs(run, set()) == fresh


# --- a busy flow; cancel and Ctrl-C -------------------------------------------------------------

NAP_FLOW = """
    flow: nap
    sandbox: {backend: local, timeout: 300}
    phases:
      - id: nap
        kind: script
        script: nap.py
        outputs: [nap.txt]
"""
NAP_FILES = {"nap.py": "import time\ntime.sleep(240)\nopen('nap.txt', 'w').write('x')\n"}


def _start(root: Path) -> subprocess.Popen[str]:
    """`praxis run` in a session of its own (so its kernels can be ended with it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "praxis", "run", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _wait_started(root: Path, child: subprocess.Popen[str], *, besides: Path | None = None) -> Path:
    """The child's run folder (another than ``besides``), once its phase started (events.jsonl
    says so)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        for events in sorted((root / "runs").glob("*/events.jsonl")):
            if events.parent == besides:
                continue
            if '"phase_started"' in events.read_text():  # a line may be half written yet
                return events.parent
        time.sleep(0.2)
    raise AssertionError("the phase did not start")


def _end(child: subprocess.Popen[str]) -> None:
    if child.poll() is None:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def test_a_second_run_of_a_busy_flow_runs_beside_it_and_cancel_stops_each(
    tmp_path: Path, local_env: None
) -> None:
    root = _write_flow(tmp_path / "nap", NAP_FLOW, NAP_FILES)
    first = _start(root)
    second = None
    try:
        run1 = _wait_started(root, first)
        second = _start(root)  # nothing holds the flow's lock while a phase runs
        run2 = _wait_started(root, second, besides=run1)
        assert sorted(p.name for p in (root / "runs").iterdir()) == sorted([run1.name, run2.name])
        for run in (run1, run2):
            status = json.loads(praxis("status", str(root), "--run", run.name, "--json").stdout)
            assert (status["run"], status["status"]) == (run.name, "running")
        res = praxis("cancel", str(root), "--run", run1.name)
        assert res.returncode == 0, res.stderr
        out, err = first.communicate(timeout=120)
        assert first.returncode == 7, (out, err)
        assert second.poll() is None  # the other run goes on
        assert state_of(run2).status == "running"
        res = praxis("cancel", str(root), "--run", run2.name)
        assert res.returncode == 0, res.stderr
        out, err = second.communicate(timeout=120)
        assert second.returncode == 7, (out, err)
    finally:
        _end(first)
        if second is not None:
            _end(second)
    for run in (run1, run2):
        state = state_of(run)
        assert state.status == "cancelled"
        assert state.phase("nap").error == st.STOPPED


def test_ctrl_c_during_a_phase_cancels_the_run_and_exits_130(
    tmp_path: Path, local_env: None
) -> None:
    root = _write_flow(tmp_path / "nap", NAP_FLOW, NAP_FILES)
    child = _start(root)
    try:
        run = _wait_started(root, child)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
        assert child.returncode == 130, (out, err)
    finally:
        _end(child)
    state = state_of(run)
    assert state.status == "cancelled"
    assert state.phase("nap").error == st.STOPPED
