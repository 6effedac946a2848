"""Item 45: `praxis serve` serves record files only (never the live workspace, its disk
image, the content store or the snapshots), and SIGTERM closes its warm sandboxes (container
and workspace mount gone) as Ctrl-C does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from benchmarks.serve_load import Load, Serve, begin_runs, load_flow

from ..labels import TEST_LABELS
from .conftest import Served

REFUSED = ("workspace.img", "workspace/live.csv", "snapshots/a/1.json", "objects/x", "run.lock")


def test_only_record_files_are_served_never_the_workspace_or_its_image(served: Served) -> None:
    served.login()
    run_dir = served.gated.flow / "runs" / served.gated.run_id
    with open(run_dir / "workspace.img", "wb") as f:
        f.truncate(10 << 30)  # sparse, as the sandbox's disk image is
    (run_dir / "workspace").mkdir(exist_ok=True)
    (run_dir / "workspace" / "live.csv").write_text("live,workspace\n")
    for folder in ("snapshots/a", "objects"):
        (run_dir / folder).mkdir(parents=True, exist_ok=True)
    (run_dir / "snapshots" / "a" / "1.json").write_text("{}")
    (run_dir / "objects" / "x").write_text("x")
    query = f"flow={served.gated.ref}&run={served.gated.run_id}&path="
    for name in REFUSED:
        r = served.client.get(f"/file?{query}{name}")
        assert r.status_code == 403, name
        assert "content-length" in r.headers and int(r.headers["content-length"]) < 1000
        assert b"only record files of the run folder are served" in r.content
        assert served.client.get(f"/view?{query}{name}").status_code == 404, name
    assert served.client.get(f"/file?{query}output/review.csv").status_code == 200
    for name in ("events.jsonl", "run.json"):  # praxis's own account of the run, as the page lists
        assert served.client.get(f"/file?{query}{name}").status_code == 200, name


def _containers(run_id: str) -> list[str]:
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=praxis.run={run_id}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return found.stdout.split()


@pytest.mark.docker
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_serve_leaves_no_warm_container_or_mount(
    docker_image: str, tmp_path: Path, sig: signal.Signals
) -> None:
    sandbox = {"backend": "docker", "image": docker_image, "labels": TEST_LABELS, "timeout": 60}
    load_flow(tmp_path / "load", sandbox)
    serve = Serve(tmp_path, max_runs=1)
    try:
        (run_id,) = begin_runs(serve, "load", ["r1"], Load())
        run = tmp_path / "load" / "runs" / run_id
        for _ in range(1200):  # at its Gate; the advance closed its own sandbox
            saved = run / "run.json"
            state = json.loads(saved.read_text()) if saved.exists() else {}
            if state.get("waiting") == "gate" and not _containers(run_id):
                break
            time.sleep(0.1)
        assert state.get("waiting") == "gate", serve.stderr
        with serve.client() as client:  # a reviewer on its page: its sandbox opens, warm
            page = client.get(f"/run?flow=load&run={run_id}")
            assert page.status_code == 200
        for _ in range(1200):
            if _containers(run_id) and os.path.ismount(run / "workspace"):
                break
            time.sleep(0.1)
        assert _containers(run_id), serve.stderr
        assert os.path.ismount(run / "workspace")  # its quota mount
    finally:
        code = serve.stop(sig=sig)
    assert code in (0, 130), serve.stderr[-2000:]
    for _ in range(300):  # the daemon removes a killed container in a moment
        if not _containers(run_id):
            break
        time.sleep(0.1)
    assert _containers(run_id) == []
    assert not os.path.ismount(run / "workspace")  # no quota mount of its workspace is left
