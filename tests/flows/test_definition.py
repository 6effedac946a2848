"""A phase's definition digest: it moves with what decides what the phase computes (its
flow.yaml entry, its code and instruction files, the run's parameters) and with nothing else."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from praxis.agent.spec import AgentSpec
from praxis.flows.definition import digests as definition
from praxis.flows.definition import kinds
from praxis.flows.model.flow import Flow, Phase
from praxis.phases.kinds import NotebookSpec, ScriptSpec

LOAD = Phase(
    id="load",
    kind="script",
    spec=ScriptSpec("load.py"),
    working=("data/in.csv",),
    outputs=("a.csv",),
)
ASK = Phase(
    id="ask",
    kind="agent",
    spec=AgentSpec("ask.md", scripts=("prep.py",), queries=("top.sql",)),
    reference=("notes.md", "a.csv"),
    outputs=("b.md",),
)


NB = Phase(
    id="nb",
    kind="notebook",
    spec=NotebookSpec("n.ipynb", allow_errors=True),
    outputs=("n.csv",),
    review="required",
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
        "n.ipynb": "{}",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return Flow(name="f", root=root, phases=(LOAD, ASK, NB))


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
    assert recorded["phases"] == ["load", "ask", "nb"] and len(recorded["sha256"]) == 64
    (tmp_path / "flow.yaml").write_text("flow: g\n")
    assert definition.of_flow(flow)["sha256"] != recorded["sha256"]
    (tmp_path / "flow.yaml").unlink()
    assert definition.of_flow(flow)["phases"] == ["load", "ask", "nb"]


def test_the_code_digest_stays_with_the_params_and_moves_with_the_code(tmp_path: Path) -> None:
    flow = flow_in(tmp_path)
    base = definition.digests_of(flow, ASK, {"n": 1})
    other = definition.digests_of(flow, ASK, {"n": 2})
    assert other["definition"] != base["definition"] and other["code"] == base["code"]
    assert base["definition"] == definition.digest_of(flow, ASK, {"n": 1})  # as recorded before
    (tmp_path / "ask.md").write_text("Ask again.\n")
    assert definition.digests_of(flow, ASK, {"n": 1})["code"] != base["code"]


# The digests of these three phases when every kind's keys were fields of one flat Phase
# (before a kind kept them in its spec): settled work is found again only if they stay.
SETTLED = {
    "load": ("fb73e64cba59d723419c545c0420cbad43cb7c8de40d6450fce3894f2a403618",
             "531522523c00acd03f5818fedef015d534d8f98fce692b88277651242d1807d7"),
    "ask": ("37a81839e2ab46acb045161eae4b8d8bb6c71fdf975198321faaf7f420008a19",
            "99b8c4c8a2f14b06d83d23d6f8902b760073dac7b2814a205008694027b4a410"),
    "nb": ("180cefaca21e15e5df06ae1a0b81c0fc5d99453a1c8aa01d6a9d6cd4ff95e5bf",
           "2a8f9fa504269ef85b88f9ace88c14c6c5069d9cfa7c1464138d46a91ac1eb60"),
}  # fmt: skip


def test_the_digests_of_settled_work_are_what_they_were(tmp_path: Path) -> None:
    flow = flow_in(tmp_path)
    for phase in flow.phases:
        found = definition.digests_of(flow, phase, {"n": 1})
        assert (found["definition"], found["code"]) == SETTLED[phase.id], phase.id
    assert definition.entry_of(LOAD) == {
        "id": "load", "kind": "script", "script": "load.py", "prompt": None, "scripts": (),
        "queries": (), "working": ("data/in.csv",), "reference": (), "outputs": ("a.csv",),
        "may_be_empty": (), "review": "none", "limits": {"model_calls": 20, "run_python": 8},
        "timeout": None, "description": "", "delegatable": False, "checks": {},
        "allow_errors": False,
    }  # fmt: skip
