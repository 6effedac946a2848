"""A phase's definition digest: it moves with what decides what the phase computes (its
flow.yaml entry, its code and instruction files, the run's parameters) and with nothing else."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from praxis.flows.definition import digests as definition
from praxis.flows.definition import kinds
from praxis.flows.model.flow import Flow, Phase

LOAD = Phase(
    id="load", kind="script", script="load.py", working=("data/in.csv",), outputs=("a.csv",)
)
ASK = Phase(
    id="ask",
    kind="agent",
    prompt="ask.md",
    scripts=("prep.py",),
    queries=("top.sql",),
    reference=("notes.md", "a.csv"),
    outputs=("b.md",),
)


def flow_in(root: Path) -> Flow:
    for name, text in {
        "flow.yaml": "flow: f\n",
        "load.py": "print(1)\n",
        "data/in.csv": "x\n1\n",
        "ask.md": "Ask.\n",
        "prep.py": "",
        "top.sql": "select 1",
        "notes.md": "Notes.\n",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return Flow(name="f", root=root, phases=(LOAD, ASK))


def test_the_files_of_a_phase_are_its_code_and_flow_files_it_reads(tmp_path: Path) -> None:
    flow = flow_in(tmp_path)
    assert kinds.get(LOAD.kind).files(flow, LOAD) == ["load.py"]  # data/in.csv is state, not code
    assert kinds.get(ASK.kind).files(flow, ASK) == ["ask.md", "prep.py", "top.sql", "notes.md"]


def test_the_digest_moves_with_code_instructions_entry_and_params(tmp_path: Path) -> None:
    flow = flow_in(tmp_path)
    base = definition.digest_of(flow, ASK, {"n": 1})
    assert definition.digest_of(flow, ASK, {"n": 1}) == base
    assert definition.digest_of(flow, ASK, {"n": 2}) != base
    changed_entry = dataclasses.replace(ASK, outputs=("c.md",))
    assert definition.digest_of(flow, changed_entry, {"n": 1}) != base
    for name in ("ask.md", "notes.md", "top.sql"):
        before = (tmp_path / name).read_text()
        (tmp_path / name).write_text(before + "changed\n")
        assert definition.digest_of(flow, ASK, {"n": 1}) != base, name
        (tmp_path / name).write_text(before)
    assert definition.digest_of(flow, ASK, {"n": 1}) == base
    (tmp_path / "prep.py").unlink()  # a missing file is a definition of its own
    assert definition.digest_of(flow, ASK, {"n": 1}) != base


def test_the_digest_ignores_working_inputs_and_earlier_outputs(tmp_path: Path) -> None:
    flow = flow_in(tmp_path)
    load, ask = definition.digest_of(flow, LOAD, {}), definition.digest_of(flow, ASK, {})
    (tmp_path / "data" / "in.csv").write_text("x\n2\n")
    (tmp_path / "a.csv").write_text("an output of load, not a flow file\n")
    assert definition.digest_of(flow, LOAD, {}) == load
    assert definition.digest_of(flow, ASK, {}) == ask


def test_a_run_records_flow_yamls_sha256_and_phase_ids(tmp_path: Path) -> None:
    flow = flow_in(tmp_path)
    recorded = definition.of_flow(flow)
    assert recorded["phases"] == ["load", "ask"] and len(recorded["sha256"]) == 64
    (tmp_path / "flow.yaml").write_text("flow: g\n")
    assert definition.of_flow(flow)["sha256"] != recorded["sha256"]
    (tmp_path / "flow.yaml").unlink()
    assert definition.of_flow(flow)["phases"] == ["load", "ask"]


def test_the_code_digest_stays_with_the_params_and_moves_with_the_code(tmp_path: Path) -> None:
    flow = flow_in(tmp_path)
    base = definition.digests_of(flow, ASK, {"n": 1})
    other = definition.digests_of(flow, ASK, {"n": 2})
    assert other["definition"] != base["definition"] and other["code"] == base["code"]
    assert base["definition"] == definition.digest_of(flow, ASK, {"n": 1})  # as recorded before
    (tmp_path / "ask.md").write_text("Ask again.\n")
    assert definition.digests_of(flow, ASK, {"n": 1})["code"] != base["code"]
