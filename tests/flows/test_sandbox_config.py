"""flow.yaml's sandbox: a mapping whose keys are the backend's, limits that cannot be
switched off nor exceed this machine."""

from __future__ import annotations

from pathlib import Path

from praxis.flows import contract
from sandbox import LocalOptions

from .test_contract import SCRIPT_PHASE, lines, make, only


def test_sandbox_must_be_a_mapping_and_its_keys_are_the_backends(tmp_path: Path) -> None:
    text = SCRIPT_PHASE + "sandbox: docker\n"
    assert (
        only(make(tmp_path, text)) == "flow.yaml: sandbox: expected a mapping, got string 'docker'"
    )
    text = SCRIPT_PHASE + "sandbox: {backend: docker, image: x, memroy: 1g}\n"
    (tmp_path / "flow" / "flow.yaml").write_text(text)
    assert only(tmp_path / "flow") == (
        "flow.yaml: sandbox.memroy: unknown key for the docker backend (did you mean 'memory'?)"
    )
    text = SCRIPT_PHASE + "sandbox: {backend: local, memory: 1g}\n"
    (tmp_path / "flow" / "flow.yaml").write_text(text)
    flow, report = contract.load(tmp_path / "flow")
    assert flow is not None and flow.sandbox.written["memory"] == "1g"  # as written (reuse)
    assert flow.sandbox.options == LocalOptions()  # and ignored
    assert report.lines()[1] == (
        "flow.yaml: sandbox.memory: warning: the local backend does not use 'memory' "
        "(only docker and ray do); it is ignored here"
    )


def test_limits_cannot_be_switched_off(tmp_path: Path) -> None:
    from praxis.flows.sandbox_config import host_cpus, host_memory, size

    ram, cores = size(host_memory()), host_cpus()
    text = SCRIPT_PHASE + (
        "    timeout: 0\n"
        "sandbox: {memory: 0, cpus: 0, pids: -1, tmp_size: 1t, timeout: 1000000000}\n"
    )
    assert lines(make(tmp_path, text)) == [
        f"flow.yaml: sandbox.memory: must be between 64m and {ram} (this machine's RAM), got 0",
        "flow.yaml: sandbox.tmp_size: expected a size such as 256m, got string '1t'",
        f"flow.yaml: sandbox.cpus: must be between 0.01 and {cores} (this machine's cores), got 0",
        "flow.yaml: sandbox.pids: must be between 32 and 65536, got -1",
        "flow.yaml: sandbox.timeout: must be at most 604800 seconds (7 days), got 1000000000",
        "flow.yaml: phases[clean].timeout: must be a positive number, got 0",
    ]
    text = SCRIPT_PHASE + f"sandbox: {{memory: 100000g, cpus: {cores + 1}, tmp_size: 4m}}\n"
    (tmp_path / "flow" / "flow.yaml").write_text(text)
    assert lines(tmp_path / "flow") == [
        f"flow.yaml: sandbox.memory: must be between 64m and {ram} (this machine's RAM), "
        "got '100000g'",
        f"flow.yaml: sandbox.tmp_size: must be between 16m and {ram} (this machine's RAM), "
        "got '4m'",
        f"flow.yaml: sandbox.cpus: must be between 0.01 and {cores} (this machine's cores), "
        f"got {cores + 1}",
    ]
    text = SCRIPT_PHASE + "sandbox: {memory: 1.5g, cpus: 0.5, pids: 128, tmp_size: 64m}\n"
    (tmp_path / "flow" / "flow.yaml").write_text(text)
    assert lines(tmp_path / "flow") == []
