"""Cross-run reuse on the fake sandbox: the key, what is restored, and what never is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from praxis.flows.definition.contract import load
from praxis.flows.engine import runner
from praxis.flows.engine.reuse import index_dir, sandbox_part
from praxis.flows.model.events import PhaseReused
from praxis.flows.store.event_log import EventLog
from praxis.flows.store.layout import run_paths
from praxis.status_lines import timeline

from .helpers import Fakes, write_flow

FLOW = """
    flow: nonce
    sandbox: {backend: fake, timeout: 30}
    phases:
      - {id: a, kind: script, script: a.py, inputs: {working: [data/in.txt]}, outputs: [a.txt]}
      - {id: b, kind: script, script: b.py, inputs: {working: [a.txt]}, outputs: [b.txt]}
"""
# each phase writes a random value beside its output: a reused phase's is the first run's
FILES = {
    "data/in.txt": "in\n",
    "a.py": """
        import secrets
        open("a.txt", "w").write(open("data/in.txt").read() + "a\\n")
        open("nonce-a.txt", "w").write(secrets.token_hex(8))
    """,
    "b.py": """
        import secrets
        open("b.txt", "w").write(open("a.txt").read() + "b\\n")
        open("nonce-b.txt", "w").write(secrets.token_hex(8))
    """,
}


def nonces(root: Path, run_id: str) -> dict[str, str]:
    paths = run_paths(root, run_id)
    return {p: (paths.scratch_of(p) / f"nonce-{p}.txt").read_text() for p in ("a", "b")}


def test_a_second_run_restores_every_phase_from_the_first(tmp_path: Path) -> None:
    root = write_flow(tmp_path / "nonce", FLOW, FILES)
    fakes = Fakes()
    first = runner.run(root, options=runner.RunOptions(make_sandbox=fakes))
    ran = len(fakes.executed)
    second = runner.run(root, options=runner.RunOptions(make_sandbox=fakes))
    assert len(fakes.executed) == ran  # no code of the second run ran
    assert len(fakes.made) == 1  # nor was a sandbox opened for it
    assert nonces(root, second.run) == nonces(root, first.run)
    paths = run_paths(root, second.run)
    assert paths.out("b.txt").read_text() == "in\na\nb\n"
    assert [(p.status, p.attempt, p.reused, p.reused_from) for p in second.phases] == [
        ("done", 1, True, f"{first.run}/1"),
        ("done", 1, True, f"{first.run}/1"),
    ]
    reused = [e for e in EventLog(paths.events).read() if isinstance(e, PhaseReused)]
    assert [(e.phase, e.source_run, e.source_attempt) for e in reused] == [
        ("a", first.run, 1),
        ("b", first.run, 1),
    ]
    record = json.loads(paths.record("a").read_text())
    assert record["metadata"]["praxis"]["run"] == first.run  # the record it came from
    assert f"reused from {first.run}" in timeline(second)
    assert paths.snapshot("b", 1, "post").is_file()


def test_no_reuse_and_reuse_never_run_the_code(tmp_path: Path) -> None:
    root = write_flow(tmp_path / "nonce", FLOW, FILES)
    fakes = Fakes()
    first = runner.run(root, options=runner.RunOptions(make_sandbox=fakes))
    again = runner.run(root, options=runner.RunOptions(make_sandbox=fakes, reuse=False))
    assert not any(p.reused for p in again.phases)
    assert nonces(root, again.run)["a"] != nonces(root, first.run)["a"]
    (root / "flow.yaml").write_text(
        (root / "flow.yaml")
        .read_text()
        .replace("outputs: [b.txt]}", "outputs: [b.txt], reuse: never}")
    )
    flow, report = load(root)
    assert flow is not None and not report.errors
    third = runner.run(root, options=runner.RunOptions(make_sandbox=fakes))
    assert [p.reused for p in third.phases] == [True, False]
    assert nonces(root, third.run)["b"] not in {
        nonces(root, r)["b"] for r in (first.run, again.run)
    }


def test_a_rerun_asked_for_runs_and_a_changed_input_runs_from_its_reader(tmp_path: Path) -> None:
    plain = {**FILES, "a.py": 'open("a.txt", "w").write(open("data/in.txt").read() + "a\\n")\n'}
    root = write_flow(tmp_path / "nonce", FLOW, plain)  # a leaves nothing random for b
    fakes = Fakes()
    first = runner.run(root, options=runner.RunOptions(make_sandbox=fakes))
    runner.rerun(root, "a", first.run)  # a person asked for a: it runs; b comes out the same
    state = runner.advance(root, first.run, options=runner.RunOptions(make_sandbox=fakes))
    assert [(p.attempt, p.reused) for p in state.phases] == [(2, False), (1, True)]
    (root / "data" / "in.txt").write_text("changed\n")
    second = runner.run(root, options=runner.RunOptions(make_sandbox=fakes))
    assert [p.reused for p in second.phases] == [False, False]
    assert run_paths(root, second.run).out("b.txt").read_text() == "changed\na\nb\n"
    third = runner.run(
        root, options=runner.RunOptions(make_sandbox=fakes)
    )  # the changed input's work is settled now
    assert [p.reused_from for p in third.phases] == [f"{second.run}/1"] * 2


def test_deleted_runs_leave_the_index_and_are_never_a_source(tmp_path: Path) -> None:
    root = write_flow(tmp_path / "nonce", FLOW, FILES)
    fakes = Fakes()
    first = runner.run(root, options=runner.RunOptions(make_sandbox=fakes))
    flow, _ = load(root)
    assert flow is not None
    runner.delete_runs(flow, [first.run])
    assert not any(index_dir(root).rglob("*.json"))
    second = runner.run(root, options=runner.RunOptions(make_sandbox=fakes))
    assert not any(p.reused for p in second.phases)


# The sandbox part of the key of flows written before the settings were typed, as that code
# computed it (json.dumps of flow.sandbox but timeout and labels): the same bytes, so settled
# work on disk is still found after an upgrade.
GOLDEN = {
    "": '{"backend": "auto"}',
    "sandbox: {backend: docker, memory: 2g, cpus: 1, timeout: 5, labels: {team: data}, "
    "packages: [scikit-learn==1.6.1], collect: 2g, pids: 128, tmp_size: 256m, disk: 10g}": (
        '{"backend": "docker", "collect": "2g", "cpus": 1, "disk": "10g", "memory": "2g", '
        '"packages": ["scikit-learn==1.6.1"], "pids": 128, "tmp_size": "256m"}'
    ),
    "sandbox: {memory: 1.5g, cpus: 0.5, stream_limit: 1000, display_limit: 2000, grace: 2, "
    "warm: false, spares: 1, start_timeout: 30}": (
        '{"backend": "auto", "cpus": 0.5, "display_limit": 2000, "grace": 2, "memory": "1.5g", '
        '"spares": 1, "start_timeout": 30, "stream_limit": 1000, "warm": false}'
    ),
    "sandbox: {backend: local, memory: 1g, timeout: 60}": (
        '{"backend": "local", "memory": "1g"}'  # a key local ignores still counts
    ),
    "sandbox: {backend: ray, cluster: prod, resources: {bigmem: 1}, "
    "memory: 64g, cpus: 16, image: 'praxis-sandbox:abc'}": (
        '{"backend": "ray", "cluster": "prod", "cpus": 16, "image": '
        '"praxis-sandbox:abc", "memory": "64g", "resources": {"bigmem": 1}}'
    ),
    "sandbox: {backend: fake}": '{"backend": "fake"}',
}


def test_the_sandbox_part_of_the_key_is_what_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = tmp_path / "profile.yaml"  # the cluster a flow names is the person's
    profile.write_text("clusters:\n  prod: {address: 'ray://head:10001'}\n")
    monkeypatch.setenv("PRAXIS_PROFILE", str(profile))
    for i, (section, golden) in enumerate(GOLDEN.items()):
        root = write_flow(
            tmp_path / f"f{i}",
            f"{section}\nphases: [{{id: a, kind: script, script: s.py}}]\n",
            {"s.py": ""},
        )
        flow, report = load(root)
        assert flow is not None, report.lines()
        part = json.dumps(sandbox_part(flow.sandbox), sort_keys=True, default=str)
        assert part == golden, section
