"""A reviewer's fix survives a reopen and a re-run on each backend (docker, local kernels,
the fake): with --keep-edits it is re-applied by row key to the new output, which the next
phase then reads; without a choice nothing changes; with --discard-edits the phase's own
rows return and the fix stays in the record."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from praxis.flows.engine import runner
from praxis.flows.store.handle import RunHandle

from ._flows import docker_sandbox, event_kinds, state_of, write_flow

FLOW = """
    flow: weather
    SANDBOX
    params: {scale: 1}
    phases:
      - id: clean
        kind: script
        script: clean.py
        outputs: [clean.csv]
        review: required
        checks:
          clean.csv: {key: [station, day], not_null: [city]}
      - id: report
        kind: script
        script: report.py
        inputs: {working: [clean.csv]}
        outputs: [report.txt]
"""
FILES = {
    # a parameter change reorders the rows and rescales the temperatures
    "clean.py": """
        rows = [("OSL", 1, "Olso", 5), ("BGN", 1, "Bergen", 7), ("TOS", 1, "Troms", 2)]
        if params["scale"] != 1:
            rows = rows[::-1]
        with open("clean.csv", "w") as fh:
            fh.write("station,day,city,temp\\n")
            for station, day, city, temp in rows:
                fh.write(f"{station},{day},{city},{temp * params['scale']}\\n")
    """,
    "report.py": """
        import csv
        rows = list(csv.DictReader(open("clean.csv")))
        open("report.txt", "w").write(" ".join(sorted(r["city"] for r in rows)))
    """,
}


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker), "local", "fake"])
def sandbox_line(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        return docker_sandbox(request.getfixturevalue("docker_image"), timeout=120)
    for allowance in ("local_env", "allow_local"):  # the person's --allow-local: code on this host
        request.getfixturevalue(allowance)
    return f'sandbox: {{"backend": "{request.param}", "timeout": 120}}'


def test_a_fix_survives_a_reopen_and_a_rerun_with_keep_edits(
    sandbox_line: str, tmp_path: Path
) -> None:
    flow = write_flow(tmp_path / "weather", FLOW.replace("SANDBOX", sandbox_line), FILES)
    run_id = runner.begin(flow).id
    run = flow / "runs" / run_id
    assert runner.advance(flow, run_id).waiting == "gate"
    clean = run / "output" / "clean.csv"
    runner.edit(flow, "clean.csv", clean.read_bytes().replace(b"Olso", b"Oslo"), run_id)
    revision = state_of(run).revision
    with pytest.raises(runner.EditsAtRisk):
        runner.reject(flow, "clean", "again", run_id, gate="clean")
    assert state_of(run).revision == revision

    runner.reject(flow, "clean", "again", run_id, gate="clean", edits="keep")
    assert runner.advance(flow, run_id).waiting == "gate"
    assert b"OSL,1,Oslo,5" in clean.read_bytes()
    # the kept edit is a file of its own, never an inode of the store
    store = sorted((flow / ".praxis" / "objects").glob("*"))  # the flow's content store
    assert store
    objects = {os.stat(p).st_ino for p in store}
    assert os.stat(clean).st_ino not in objects

    runner.approve(flow, run_id, gate="clean", attempt=2)  # the reopened Gate: its attempt
    assert runner.advance(flow, run_id).status == "done"
    assert (run / "output" / "report.txt").read_text() == "Bergen Oslo Troms"

    runner.rerun(flow, "clean", run_id, params={"scale": "2"}, edits="keep")
    assert runner.advance(flow, run_id).waiting == "gate"
    assert (
        clean.read_bytes()
        == b"station,day,city,temp\nTOS,1,Troms,4\nBGN,1,Bergen,14\nOSL,1,Oslo,10\n"
    )
    assert event_kinds(run).count("edits_carried") == 2
    state = RunHandle.open(runner.load_flow(flow), run_id).state
    assert state.phase("clean").attempt == 3 and state.phase("clean").edited

    runner.rerun(flow, "clean", run_id, edits="discard")
    assert runner.advance(flow, run_id).waiting == "gate"
    assert b"Olso" in clean.read_bytes()
    assert b"Oslo" in (run / "attempts" / "clean" / "3" / "output" / "clean.csv").read_bytes()
