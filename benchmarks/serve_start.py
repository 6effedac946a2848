"""Benchmark 6: from the reviewer's click (Approve) in `praxis serve` to the first statement
of the next phase, with the run's sandbox kept warm while the page was open, and without.

The run reaches its Gate with ``praxis run``; then, in a fresh interpreter as a newly
started ``praxis serve`` would be, the web app runs (Starlette's TestClient: the same
handlers and threads, no network), its page is shown and Approve clicked.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

from . import command
from .measure import PYTHON, REPO, BenchmarkFailed, median, run_timed
from .report import Results, Row
from .workload import flow_yaml

FIRST = "open('a.txt', 'w').write('a')\n"
SECOND = "import time\nopen('started.txt', 'w').write(repr(time.time()))\n"


def gated_flow(root: Path) -> Path:
    """Two phases: ``first`` (a Gate after it), then ``second``, which writes when it began."""
    (root / "scripts").mkdir(parents=True, exist_ok=True)
    (root / "scripts" / "first.py").write_text(FIRST, encoding="utf-8")
    (root / "scripts" / "second.py").write_text(SECOND, encoding="utf-8")
    phases = [
        {"id": "first", "kind": "script", "script": "scripts/first.py", "outputs": ["a.txt"],
         "review": "required"},
        {"id": "second", "kind": "script", "script": "scripts/second.py",
         "inputs": {"working": ["a.txt"]}, "outputs": ["started.txt"]},
    ]  # fmt: skip
    (root / "flow.yaml").write_text(flow_yaml("bench-serve", phases), encoding="utf-8")
    return root


def click_to_code(root: Path, backend: str, *, keep: int) -> dict[str, float]:
    """Run the flow to its Gate, open its page (warming its sandbox when ``keep``), approve;
    seconds from the click to the second phase's first statement."""
    from starlette.testclient import TestClient

    from praxis.web.app import create_app
    from praxis.web.background import Advancer
    from praxis.web.security import Guard

    flow = gated_flow(root / "flows" / "gated")
    make = _factory(backend)
    run_id = _to_the_gate(flow, backend)
    guard = Guard()
    advancer = Advancer(make_sandbox=make, keep=keep)
    app = create_app(root, guard=guard, advancer=advancer)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            client.get(f"/?token={guard.token}", follow_redirects=False)
            page = client.get(f"/run?flow=flows/gated&run={run_id}").text
            if keep:
                _wait_warm(advancer, flow, run_id)
            fields = _approve_fields(page)
            t0 = time.time()
            answer = client.post("/approve", data=fields, follow_redirects=False)
            if answer.status_code >= 400:
                raise BenchmarkFailed(f"approve answered {answer.status_code}: {answer.text[:200]}")
            advancer.wait(120)
    finally:
        advancer.close()
    started = flow / "runs" / run_id / "output" / "started.txt"
    if not started.is_file():
        job = advancer.job(flow, run_id)
        raise BenchmarkFailed(
            f"run {run_id} did not run its second phase: {job.error if job else 'not advanced'}"
        )
    return {"click": float(started.read_text(encoding="utf-8")) - t0}


def _to_the_gate(flow: Path, backend: str) -> str:
    """``praxis run`` in its own process, to the Gate; the run's id."""
    timed = run_timed(
        command.praxis("run", str(flow), "--quiet"), cwd=flow, env={"PRAXIS_SANDBOX": backend}
    )
    found = re.search(r"^run (\S+): waiting at the Gate", timed.stdout, re.MULTILINE)
    if found is None:
        raise BenchmarkFailed(f"the serve benchmark's run did not stop at its Gate: {timed.stdout}")
    return found.group(1)


def sample(root: Path, backend: str, keep: int) -> dict[str, float]:
    """``click_to_code`` in a fresh interpreter: nothing of an earlier advance imported."""
    code = (
        "import json, sys\nfrom pathlib import Path\n"
        "from benchmarks.serve_start import click_to_code\n"
        "print(json.dumps(click_to_code(Path(sys.argv[1]), sys.argv[2], keep=int(sys.argv[3]))))"
    )
    timed = run_timed([PYTHON, "-c", code, str(root), backend, str(keep)], cwd=REPO)
    result: dict[str, float] = json.loads(timed.stdout.strip().splitlines()[-1])
    return result


def _factory(backend: str) -> Any:
    from sandbox import open_sandbox

    def make(flow: Any, run: Any) -> Any:
        return open_sandbox({"backend": backend}, workspace=run.paths.workspace, name=run.id)

    return make


def _wait_warm(advancer: Any, flow: Path, run_id: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not advancer.warm.ready(flow, run_id):
        if time.monotonic() > deadline:
            raise BenchmarkFailed("the run's sandbox did not get warm")
        time.sleep(0.05)
    time.sleep(1.0)  # its spare kernels start after the container: let them be ready too


def _approve_fields(page: str) -> dict[str, str]:
    form = page.split('action="/approve"', 1)[1].split("</form>", 1)[0]
    found = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form)
    return {name: html.unescape(value) for name, value in found}


def measure(results: Results, work: Path, repeats: int, backends: list[str]) -> None:
    details: dict[str, Any] = {}
    for backend in backends:
        for keep, label in ((1, "warm sandbox"), (0, "no warm sandbox")):
            got = []
            for n in range(repeats):
                root = work / f"serve-{backend}-{keep}-{n}"
                try:
                    got.append(sample(root, backend, keep))
                finally:
                    shutil.rmtree(root, ignore_errors=True)
            secs = median([g["click"] for g in got])
            details[f"{backend}, {label}"] = got
            results.add(
                Row(
                    "6. praxis serve",
                    f"Approve click -> next phase's code, {label}, {backend}",
                    secs,
                    "s",
                    limit=0.1 if keep and backend == "docker" else None,
                )
            )
    results.details["serve"] = details
