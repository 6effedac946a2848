"""Settled work is reused across runs (issue 29), on docker and on the fake.

Each phase's code leaves a random value in the workspace, a side effect that shows whether
it ran: a phase restored from another run has that run's value, one that ran has its own.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from praxis.flows.definition.contract import require
from praxis.flows.engine import runner
from praxis.flows.store.snapshot import load_manifest

from ._flows import docker_sandbox, event_kinds, popen_praxis, praxis_here, state_of
from ._flows import write_flow as _write_flow

FLOWS = Path(__file__).resolve().parents[2] / "flows"
NONCE = "import secrets\nopen('nonce-{0}.txt', 'w').write(secrets.token_hex(8))\n"


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker), "fake"])
def sandbox_line(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        return docker_sandbox(request.getfixturevalue("docker_image"), timeout=120)
    for allowance in ("local_env", "allow_local"):  # the person's --allow-local: code on this host
        request.getfixturevalue(allowance)
    return 'sandbox: {"backend": "fake", "timeout": 120}'


def runs_of(root: Path) -> list[Path]:
    return sorted(p for p in (root / "runs").iterdir() if not p.name.startswith("."))


def nonce(run: Path, phase: str) -> str:
    return (run / "scratch" / phase / f"nonce-{phase}.txt").read_text()


def reused_from(run: Path) -> dict[str, str | None]:
    return {p.id: p.reused_from for p in state_of(run).phases}


def example_with_nonces(dest: Path, line: str) -> Path:
    """flows/notebook-example, each of its phases leaving a random value beside its outputs."""
    root = dest / "notebook-example"
    shutil.copytree(FLOWS / root.name, root, ignore=shutil.ignore_patterns("runs", ".praxis"))
    text = (root / "flow.yaml").read_text().splitlines()
    (root / "flow.yaml").write_text(
        "\n".join(line if t.startswith("sandbox:") else t for t in text) + "\n"
    )
    for phase in ("tidy", "report"):
        script = root / "scripts" / f"{phase}.py"
        script.write_text(script.read_text() + "\n" + NONCE.format(phase))
    path = root / "notebooks" / "explore.ipynb"
    notebook = json.loads(path.read_text())
    cell = {"cell_type": "code", "execution_count": None, "id": "nonce", "metadata": {}}
    notebook["cells"].append({**cell, "outputs": [], "source": NONCE.format("explore")})
    path.write_text(json.dumps(notebook, indent=1))
    return root


def test_a_second_run_of_the_example_reuses_every_phase_and_no_reuse_runs_them(
    sandbox_line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = example_with_nonces(tmp_path, sandbox_line)
    phases = ["tidy", "explore", "report"]
    assert praxis_here(capsys, "run", str(root)).returncode == 0
    (first,) = runs_of(root)

    res = praxis_here(capsys, "run", str(root))
    assert res.returncode == 0, res.stderr
    second = runs_of(root)[-1]
    for phase in phases:
        assert f"↺ {phase} reused from {first.name} (attempt 1" in res.stderr, res.stderr
        assert nonce(second, phase) == nonce(first, phase)
    assert "phase_started" not in event_kinds(second)  # no kernel ran a phase's code
    # the pre-state reckoned from the records is the one the workspace held: no sandbox
    # was needed to see that every phase was settled work
    assert "sandbox_opened" not in event_kinds(second)
    assert event_kinds(second).count("phase_reused") == 3
    assert reused_from(second) == {p: f"{first.name}/1" for p in phases}
    for name in ("tidy.csv", "stations.csv", "report.md"):
        assert (second / "output" / name).read_bytes() == (first / "output" / name).read_bytes()
    status = praxis_here(capsys, "status", str(root))
    assert status.returncode == 0 and f"reused from {first.name}" in status.stdout, status.stdout

    res = praxis_here(capsys, "run", str(root), "--no-reuse")
    assert res.returncode == 0, res.stderr
    third = runs_of(root)[-1]
    assert event_kinds(third).count("phase_started") == 3
    assert "phase_reused" not in event_kinds(third)
    for phase in phases:
        assert nonce(third, phase) not in (nonce(first, phase), nonce(second, phase))


CHAIN = """
    flow: chain
    SANDBOX
    phases:
      - {id: p1, kind: script, script: p1.py, inputs: {working: [data/a.txt]}, outputs: [p1.txt]}
      - {id: p2, kind: script, script: p2.py, inputs: {working: [p1.txt]}, outputs: [p2.txt]}
      - id: p3
        kind: script
        script: p3.py
        inputs: {working: [p2.txt, data/b.txt]}
        outputs: [p3.txt]
      - {id: p4, kind: script, script: p4.py, inputs: {working: [p3.txt]}, outputs: [p4.txt]}
"""


def _step(name: str, sources: list[str], nonce: bool = True) -> str:
    reads = " + ".join(f"open('{s}').read()" for s in sources)
    return f"open('{name}.txt', 'w').write({reads} + '{name}\\n')\n" + (
        NONCE.format(name) if nonce else ""
    )


CHAIN_FILES = {
    "data/a.txt": "a\n",
    "data/b.txt": "b\n",
    "p1.py": _step("p1", ["data/a.txt"]),
    "p2.py": _step("p2", ["p1.txt"]),
    "p3.py": _step("p3", ["p2.txt", "data/b.txt"], nonce=False),  # its output alone: p4 sees it
    "p4.py": _step("p4", ["p3.txt"]),
}


def test_a_changed_input_reruns_from_its_first_reader_and_reuses_what_comes_out_the_same(
    sandbox_line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _write_flow(tmp_path / "chain", CHAIN.replace("SANDBOX", sandbox_line), CHAIN_FILES)
    assert praxis_here(capsys, "run", str(root)).returncode == 0
    (first,) = runs_of(root)

    # p3's code changes, not what it writes: p3 runs, p4 is restored (p1, p2 too)
    (root / "p3.py").write_text("# the same, said again\n" + CHAIN_FILES["p3.py"])
    assert praxis_here(capsys, "run", str(root)).returncode == 0
    second = runs_of(root)[-1]
    assert reused_from(second) == {
        "p1": f"{first.name}/1",
        "p2": f"{first.name}/1",
        "p3": None,
        "p4": f"{first.name}/1",
    }
    assert nonce(second, "p4") == nonce(first, "p4")

    # an input p3 reads changes: p1 and p2 are restored, p3 and every phase after it run
    (root / "data" / "b.txt").write_text("B\n")
    assert praxis_here(capsys, "run", str(root)).returncode == 0
    third = runs_of(root)[-1]
    assert reused_from(third) == {"p1": f"{second.name}/1", "p2": f"{second.name}/1"} | {
        "p3": None,
        "p4": None,
    }
    assert nonce(third, "p1") == nonce(first, "p1")
    assert nonce(third, "p4") != nonce(first, "p4")
    assert (third / "output" / "p4.txt").read_text() == "a\np1\np2\nB\np3\np4\n"


SLOW = """
    flow: slow
    SANDBOX
    phases:
      - id: copy
        kind: script
        script: copy.py
        inputs: {working: [data/in.bin]}
        outputs: [copy.bin]
      - {id: tail, kind: script, script: tail.py, inputs: {working: [copy.bin]}, outputs: [t.bin]}
"""
SLOW_FILES = {
    "copy.py": (
        "import time\n"
        "data = open('data/in.bin', 'rb').read()\n"
        "time.sleep(4)  # the window in which other runs are deleted and the store swept\n"
        "open('copy.bin', 'wb').write(data)\n" + NONCE.format("copy")
    ),
    "tail.py": "open('t.bin', 'wb').write(open('copy.bin', 'rb').read()[-100:])\n",
}


def test_deleting_runs_while_a_run_advances_never_removes_what_it_holds(
    sandbox_line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _write_flow(tmp_path / "slow", SLOW.replace("SANDBOX", sandbox_line), SLOW_FILES)
    data = os.urandom(1 << 16)
    (root / "data").mkdir()
    (root / "data" / "in.bin").write_bytes(data)
    assert praxis_here(capsys, "run", str(root)).returncode == 0
    (old,) = runs_of(root)
    old_only = nonce(old, "copy")
    flow = require(root)

    advancing = popen_praxis("run", str(root), "--no-reuse")
    try:
        while not any(
            r != old and (r / "run.json").is_file() and state_of(r).phases[0].status == "running"
            for r in runs_of(root)
        ):
            assert advancing.poll() is None, advancing.communicate()
            time.sleep(0.05)
        runner.delete_runs(flow, [old.name])  # holds the input the advancing run holds too
        swept = 1
        while advancing.poll() is None or swept < 20:
            doomed = runner.begin(flow)
            runner.delete_runs(flow, [doomed.id])  # each delete sweeps the store
            swept += 1
        out, err = advancing.communicate(timeout=120)
    finally:
        if advancing.poll() is None:
            advancing.kill()
    assert advancing.returncode == 0, err
    (run,) = runs_of(root)
    assert state_of(run).status == "done"
    assert (run / "output" / "copy.bin").read_bytes() == data
    assert (run / "output" / "t.bin").read_bytes() == data[-100:]
    objects = root / ".praxis" / "objects"
    for manifest in (run / "snapshots").rglob("*.json"):
        for name, item in (load_manifest(manifest) or {}).items():
            if not name.endswith("/"):
                assert (objects / item.sha256).is_file(), (manifest, name)
    left = [p.read_bytes() for p in objects.iterdir() if len(p.name) == 64]
    assert old_only.encode() not in left  # what only the deleted run held is gone
    assert data in left
