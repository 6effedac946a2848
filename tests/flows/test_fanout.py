"""A fan-out phase (DESIGN.md §17) on real local kernels: partitions at once, each with its
own attempts, record and reuse; a failed one re-run alone; a backfill; a Gate after it; the
next phase reading every partition. Times are the ones run.json recorded, never a wall clock."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.definition import contract
from praxis.flows.engine import runner
from praxis.flows.model.events import Event, PartitionChanged, SandboxOpened
from praxis.flows.model.state import STOPPED, RunState
from praxis.flows.report import status as status_of
from praxis.flows.store.event_log import EventLog
from praxis.flows.store.handle import RunHandle
from sandbox.fake import FakeSandbox

from ..labels import TEST_LABELS
from .helpers import in_thread, write_flow

REGIONS = """\
flow: regions
sandbox: {backend: local, timeout: 60}
phases:
  - id: prep
    kind: script
    script: prep.py
    outputs: [base.csv]
  - id: per_region
    kind: script
    script: region.py
    inputs: {working: [base.csv]}
    foreach: {param: region, values: [north, south, east, west]}
    parallel: 4
    outputs: [summary.csv]
    checks:
      summary.csv: {columns: [region, n], min_rows: 1}
    review: %(review)s
  - id: combine
    kind: script
    script: combine.py
    outputs: [all.csv]
"""
# Each partition waits (bounded) until all four have started: with parallel: 4 they meet; one
# at a time, the first would wait in vain and fail. The meeting point is a host folder the
# test names (local kernels run on this host).
REGION = """\
import os, pathlib, time
meet = pathlib.Path(%(meet)r)
if meet.name:
    meet.mkdir(exist_ok=True)
    (meet / params["region"]).touch()
    deadline = time.monotonic() + 30
    while len(list(meet.iterdir())) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(list(meet.iterdir())) == 4, "the partitions did not run at once"
broken = pathlib.Path(%(broken)r)
if params["region"] == "east" and broken.name and not broken.exists():
    raise SystemExit("east broke")
base = open("base.csv").read().splitlines()[1]
open("summary.csv", "w").write(f"region,n\\n{params['region']},{base}\\n")
"""
COMBINE = """\
import glob
rows = [open(f).read().splitlines()[1] for f in sorted(glob.glob("per_region/*/summary.csv"))]
open("all.csv", "w").write("region,n\\n" + "\\n".join(rows) + "\\n")
"""


def _flow(tmp_path: Path, *, meet: str = "", broken: str = "", review: str = "none") -> Path:
    return write_flow(
        tmp_path / "regions",
        REGIONS % {"review": review},
        {
            "prep.py": "open('base.csv', 'w').write('x\\n7\\n')\n",
            "region.py": REGION % {"meet": meet, "broken": broken},
            "combine.py": COMBINE,
        },
    )


def _parts(root: Path, run_id: str, phase: str = "per_region") -> dict[str, dict[str, Any]]:
    state = json.loads((root / "runs" / run_id / "run.json").read_text())
    return next(p for p in state["phases"] if p["id"] == phase)["partitions"]


def test_four_partitions_with_parallel_4_overlap(tmp_path: Path, allow_local: None) -> None:
    root = _flow(tmp_path, meet=str(tmp_path / "meet"))
    state = runner.run(root)
    assert state.status == "done", state.error
    parts = _parts(root, state.run)
    assert sorted(parts) == ["east", "north", "south", "west"]
    # every interval overlaps every other: the latest start is before the earliest end
    assert max(p["started"] for p in parts.values()) < min(p["ended"] for p in parts.values())
    assert all(p["status"] == "done" and p["attempt"] == 1 for p in parts.values())
    out = root / "runs" / state.run / "output"
    assert (out / "per_region" / "east" / "summary.csv").read_text() == "region,n\neast,7\n"
    assert (out / "all.csv").read_text() == "region,n\neast,7\nnorth,7\nsouth,7\nwest,7\n"
    assert (root / "runs" / state.run / "records" / "per_region" / "west.ipynb").is_file()


def test_a_failed_partition_reruns_alone(tmp_path: Path, allow_local: None) -> None:
    fixed = tmp_path / "fixed"
    root = _flow(tmp_path, broken=str(fixed))
    state = runner.run(root)
    assert state.status == "failed"
    assert state.phase("per_region").error is not None
    assert "partition east of per_region failed" in state.phase("per_region").error
    before = _parts(root, state.run)
    assert before["east"]["status"] == "failed"
    assert {n: p["status"] for n, p in before.items() if n != "east"} == dict.fromkeys(
        ("north", "south", "west"), "done"
    )
    facts_route = status_of.status_of(RunHandle.open(contract.require(root), state.run))
    assert "--partition east" in " ".join(facts_route.next)
    fixed.touch()
    runner.rerun(root, "per_region", state.run, partition="east")
    state = runner.advance(root, state.run)
    assert state.status == "done", state.error
    after = _parts(root, state.run)
    assert after["east"]["attempt"] == 2 and after["east"]["status"] == "done"
    for name in ("north", "south", "west"):  # untouched: the same attempt, the same times
        assert after[name] == before[name]
    kept = root / "runs" / state.run / "attempts" / "per_region" / "partitions" / "east" / "1"
    assert (kept / "record.ipynb").is_file()
    ran = [
        e.partition
        for e in EventLog(root / "runs" / state.run / "events.jsonl").read()
        if isinstance(e, PartitionChanged) and e.status == "running"
    ]
    assert sorted(ran) == ["east", "east", "north", "south", "west"]


MONTHS = """\
flow: months
sandbox: {backend: local, timeout: 60}
phases:
  - id: monthly
    kind: script
    script: month.py
    foreach: {param: month, range: ["2026-01", "2026-06"]}
    parallel: 2
    outputs: [m.csv]
"""


def test_a_backfill_runs_a_sub_range(tmp_path: Path, allow_local: None) -> None:
    root = write_flow(
        tmp_path / "months",
        MONTHS,
        {"month.py": "open('m.csv', 'w').write(f\"month\\n{params['month']}\\n\")\n"},
    )
    state = runner.run(root, partitions="2026-03..2026-05")
    assert state.status == "done", state.error
    assert sorted(_parts(root, state.run, "monthly")) == ["2026-03", "2026-04", "2026-05"]
    out = root / "runs" / state.run / "output" / "monthly"
    assert sorted(os.listdir(out)) == ["2026-03", "2026-04", "2026-05"]
    with pytest.raises(runner.Refused, match="'2026-09' is not a partition"):
        runner.run(root, partitions="2026-03..2026-09")


def test_each_partition_is_reused_on_a_second_run(tmp_path: Path, allow_local: None) -> None:
    root = _flow(tmp_path)
    first = runner.run(root)
    assert first.status == "done", first.error
    second = runner.run(root)
    assert second.status == "done", second.error
    parts = _parts(root, second.run)
    assert all(p["source"].startswith(f"{first.run}/per_region/") for p in parts.values())
    events = EventLog(root / "runs" / second.run / "events.jsonl").read()
    assert not [e for e in events if isinstance(e, PartitionChanged) and e.status == "running"]
    out = root / "runs" / second.run / "output"
    assert (out / "all.csv").read_text() == "region,n\neast,7\nnorth,7\nsouth,7\nwest,7\n"
    # one value more: only the new partition runs
    flow_yaml = root / "flow.yaml"
    flow_yaml.write_text(flow_yaml.read_text().replace("west]", "west, central]"))
    third = runner.run(root)
    assert third.status == "done", third.error
    ran = [
        e.partition
        for e in EventLog(root / "runs" / third.run / "events.jsonl").read()
        if isinstance(e, PartitionChanged) and e.status == "running"
    ]
    assert ran == ["central"]


def test_a_gate_after_a_fan_out_shows_every_partition(tmp_path: Path, allow_local: None) -> None:
    root = _flow(tmp_path, review="required")
    state = runner.run(root)
    assert state.waiting == "gate" and state.gate == "per_region"
    shown = status_of.status_of(RunHandle.open(contract.require(root), state.run))
    rows = {p["partition"]: p for p in shown.phases[1]["partitions"]}
    assert sorted(rows) == ["east", "north", "south", "west"]
    assert rows["east"]["status"] == "done"
    assert rows["east"]["outputs"] == ["per_region/east/summary.csv"]
    state = runner.approve(root, state.run, expect_revision=state.revision)
    state = runner.advance(root, state.run)
    assert state.status == "done", state.error
    out = root / "runs" / state.run / "output" / "all.csv"
    assert out.read_text() == "region,n\neast,7\nnorth,7\nsouth,7\nwest,7\n"


@pytest.mark.docker
def test_partitions_run_in_containers_of_their_own(tmp_path: Path, docker_image: str) -> None:
    """On Docker each partition is a hardened container of its own, its workspace its own:
    a file one partition leaves is not in another's."""
    labels = ", ".join(f'"{k}": "{v}"' for k, v in TEST_LABELS.items())
    sandbox = f"{{backend: docker, image: '{docker_image}', labels: {{{labels}}}, timeout: 120}}"
    root = write_flow(
        tmp_path / "boxed",
        f"flow: boxed\nsandbox: {sandbox}\nphases:\n"
        "  - id: each\n    kind: script\n    script: each.py\n"
        "    foreach: {param: part, values: [a, b]}\n    parallel: 2\n    outputs: [seen.txt]\n",
        {
            "each.py": "import os, socket\n"
            "open(params['part'] + '.mark', 'w').write('x')\n"
            "seen = sorted(n for n in os.listdir('.') if n.endswith('.mark'))\n"
            "open('seen.txt', 'w').write(','.join(seen) + ' ' + socket.gethostname())\n"
        },
    )
    state = runner.run(root)
    assert state.status == "done", state.error
    assert state.backend == "docker"
    out = root / "runs" / state.run / "output" / "each"
    a, b = ((out / p / "seen.txt").read_text().split() for p in ("a", "b"))
    assert (a[0], b[0]) == ("a.mark", "b.mark")  # each saw only its own workspace
    assert a[1] != b[1]  # two containers


def test_a_cancel_stops_every_partition(tmp_path: Path, allow_local: None) -> None:
    root = write_flow(
        tmp_path / "slow",
        "flow: slow\nsandbox: {backend: local, timeout: 120}\nphases:\n"
        "  - id: each\n    kind: script\n    script: each.py\n"
        "    foreach: {param: part, values: [a, b, c]}\n    parallel: 2\n    outputs: [o.txt]\n",
        {"each.py": "import time\ntime.sleep(60)\n"},
    )
    running: list[str] = []
    both = threading.Event()
    ended: list[RunState] = []

    def seen(event: Event) -> None:
        if isinstance(event, PartitionChanged) and event.status == "running":
            running.append(event.partition)
            if len(running) == 2:
                both.set()

    thread = threading.Thread(
        target=in_thread(
            lambda: ended.append(runner.run(root, options=runner.RunOptions(on_event=seen)))
        )
    )
    thread.start()
    assert both.wait(60)
    runner.cancel(root)
    thread.join(60)
    assert not thread.is_alive()
    assert ended[0].status == "cancelled"
    parts = ended[0].phase("each").partitions
    assert {n: p["status"] for n, p in parts.items()} == {"a": "failed", "b": "failed"}
    assert {p["error"] for p in parts.values()} == {STOPPED}


class _Counted(FakeSandbox):
    opens = 0

    def open(self) -> None:
        type(self).opens += 1
        super().open()


def test_a_fan_out_opens_no_sandbox_of_the_run(tmp_path: Path, allow_local: None) -> None:
    """The partitions run in sandboxes of their own: the run's sandbox is made (its workspace
    folder) but opened only for a later phase that runs code in it, after the fan-out."""
    phases = (
        "  - id: each\n    kind: script\n    script: each.py\n"
        "    foreach: {param: part, values: [a, b, c]}\n    parallel: 2\n    outputs: [o.txt]\n"
    )
    after = "  - id: after\n    kind: script\n    script: after.py\n    outputs: [all.txt]\n"
    files = {
        "each.py": "open('o.txt', 'w').write(params['part'])\n",
        "after.py": "import glob\n"
        "open('all.txt', 'w').write(''.join(open(f).read() for f in sorted(glob.glob("
        "'each/*/o.txt'))))\n",
    }
    made: list[FakeSandbox] = []

    def make(flow: Any, run: Any) -> FakeSandbox:
        made.append(_Counted(workspace=run.paths.workspace, name=run.id))
        return made[-1]

    for text, opens in ((phases, 0), (phases + after, 1)):
        _Counted.opens = 0
        root = write_flow(
            tmp_path / f"fan{opens}",
            f"flow: fan\nsandbox: {{backend: local}}\nphases:\n{text}",
            files,
        )
        run = runner.begin(root)
        state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=make))
        assert state.status == "done", state.error
        assert _Counted.opens == opens
        events = EventLog(root / "runs" / run.id / "events.jsonl").read()
        opened = [i for i, e in enumerate(events) if isinstance(e, SandboxOpened)]
        assert len(opened) == opens
        if opens:  # opened after every partition ended, for the phase that needs it
            parts_at = [i for i, e in enumerate(events) if isinstance(e, PartitionChanged)]
            assert opened[0] > max(parts_at)
            assert (root / "runs" / run.id / "output" / "all.txt").read_text() == "abc"
    parts = state.phase("each").partitions
    record = json.loads((root / "runs" / run.id / "records" / "each" / "a.ipynb").read_text())
    assert set(record["metadata"]["praxis"]["steps"]) >= {"open", "wait", "run", "collect"}
    assert all(p["status"] == "done" for p in parts.values())
