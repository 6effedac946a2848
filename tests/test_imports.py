"""The quick commands import only what they need: never pandas, langchain, the web stack,
docker, nbformat or zmq. Asserted on ``sys.modules`` in a fresh interpreter, not on time."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.engine import runner

from .flows.helpers import Fakes, one_script_flow

FLOWS = Path(__file__).resolve().parent.parent / "flows"
# The heavy packages, which no quick command needs: each is imported where it is used.
HEAVY = (
    *("docker", "ray", "pandas", "pyarrow", "langchain_core", "nbformat", "starlette"),
    *("jupyter_client", "zmq"),
)
PROBE = """
import contextlib, io, sys
from praxis.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
modules = sorted(sys.modules)  # before the probe's own json
import json
print(json.dumps({"code": code, "modules": modules}))
"""


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("imports") / "sales-report"
    shutil.copytree(FLOWS / "sales-report", root, ignore=shutil.ignore_patterns("runs"))
    runner.begin(root)  # a run for status and runs to show
    return root


@pytest.mark.parametrize("command", [["--help"], ["status"], ["runs"], ["check"]])
def test_quick_commands_import_no_heavy_module(flow: Path, command: list[str]) -> None:
    args = command if command == ["--help"] else [*command, str(flow)]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    loaded = [m for m in HEAVY if m in report["modules"]]
    assert loaded == [], f"praxis {' '.join(command)} imported {loaded}"


@pytest.fixture(scope="module")
def done_flow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A flow whose run is done (its output hashed, its phase's definition recorded)."""
    root = one_script_flow(tmp_path_factory.mktemp("done"), "open('x.txt', 'w').write('x')")
    run = runner.begin(root)
    assert (
        runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=Fakes())).status
        == "done"
    )
    return root


# What each quick command does not need: praxis's modules taken out of its imports, kept out.
# The standard library is not pinned module by module (it is imported where it is used, at the
# top of a module); the start-up it costs is measured whole: python -m benchmarks.compare
# --only quick.
NOT_NEEDED = {
    "status": (
        "praxis.flows.engine.runner",  # status records hand edits through reconcile, not the runner
        "praxis.flows.engine.opening",
        "praxis.flows.engine.collect",
        "praxis.flows.store.snapshot",  # a run's manifests only at a Gate
        "praxis.flows.engine.edits",  # only when a hand edit is recorded
        "praxis.flows.store.live",
        "praxis.flows.definition.notebook_check",  # the flow has no notebook phase
        "praxis.flows.model.events",  # a log without decisions or edits adds nothing to the receipt
        "praxis.flows.model.event_base",  # (the base each module of event classes imports)
        "praxis.flows.model.decisions",
        "praxis.flows.engine.checks",  # tables are checked only at a Gate
        "praxis.console",  # the words of status are in status_lines
    ),
    "runs": (
        "praxis.flows.engine.runner",
        "praxis.flows.model.events",
        "praxis.flows.model.event_base",
        "praxis.flows.definition.notebook_check",
        "praxis.flows.engine.checks",
        "praxis.status_lines",
        "praxis.flows.model.machine",  # reading a run never moves it
        "praxis.flows.model.transitions",
        "argon2",
    ),
    "check": (
        "praxis.flows.engine.checks",  # flow.yaml's checks: are read by check_spec
        "praxis.flows.engine.context",
        "praxis.flows.definition.notebook_check",
        "praxis.flows.store.handle",  # a schedule's facts read keeper.json, not a run
        "praxis.flows.model.transitions",
        "argon2",  # who calls is not asked: no token is checked
    ),
}


def quick_command(flow: Path, command: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, command, str(flow)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    return report


@pytest.mark.parametrize("command", sorted(NOT_NEEDED))
@pytest.mark.parametrize("which", ["flow", "done_flow"])
def test_quick_commands_import_only_what_they_show(
    request: pytest.FixtureRequest, which: str, command: str
) -> None:
    report = quick_command(request.getfixturevalue(which), command)
    loaded = [m for m in (*NOT_NEEDED[command], *HEAVY) if m in report["modules"]]
    assert loaded == [], f"praxis {command} imported {loaded}"


def test_help_imports_no_flow_machinery() -> None:
    """`praxis --help` (and a mistyped command line) is the parser alone."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "--help"], capture_output=True, text=True, timeout=120
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    loaded = [m for m in report["modules"] if m.startswith(("praxis.flows", "sandbox", "yaml"))]
    assert loaded == [], f"praxis --help imported {loaded}"


def test_a_run_without_agent_phases_imports_no_model_or_table_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`praxis run` of script phases up to a Gate (with its table preview) in the runner:
    kernels are other processes; the runner needs neither pandas nor langchain nor the web."""
    root = tmp_path / "sales-report"
    shutil.copytree(FLOWS / "sales-report", root, ignore=shutil.ignore_patterns("runs"))
    monkeypatch.setenv("PRAXIS_SANDBOX", "local")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "run", str(root)], capture_output=True, text=True, timeout=300
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    assert (root / "runs").is_dir()
    top = {m.split(".")[0] for m in report["modules"]}
    loaded = [m for m in ("pandas", "langchain_core", "starlette") if m in top]
    assert loaded == [], f"praxis run imported {loaded}"


BEGUN_PROBE = """
import sys
from praxis.flows.store import handle
create = handle.RunHandle.create.__func__

def begun(cls, *args, **kwargs):
    seen = [m for m in ("nbformat", "jupyter_client") if m in sys.modules]
    print("loaded before the run began:", ",".join(seen) or "-", flush=True)
    return create(cls, *args, **kwargs)

handle.RunHandle.create = classmethod(begun)
from praxis.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
"""


def test_a_run_begins_before_the_record_and_kernel_stacks_are_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`praxis run` starts the run's sandbox once the run is begun: what only a phase needs
    (nbformat for its record, jupyter_client for its kernel) is imported after that, while
    the sandbox starts, not before it (benchmark 3, cold start)."""
    root = one_script_flow(tmp_path / "flow", "open('x.txt', 'w').write('x')")
    monkeypatch.setenv("PRAXIS_SANDBOX", "local")
    done = subprocess.run(
        [sys.executable, "-c", BEGUN_PROBE, "run", str(root), "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "loaded before the run began: -" in done.stdout, done.stdout + done.stderr
    records = list((root / "runs").glob("*/records/*.ipynb"))
    assert records, done.stdout + done.stderr  # and the phase's record was written
