"""flow.yaml's sandbox: a mapping whose keys are the backend's, limits that cannot be
switched off nor exceed this machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from praxis.flows.definition import contract, host_resources, sandbox_config
from praxis.flows.definition.sandbox_config import SandboxInvalid
from praxis.flows.model.flow import SandboxSettings
from sandbox import DockerOptions, LocalOptions, RayOptions, UnknownBackend

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
    from praxis.flows.definition.sandbox_config import host_cpus, host_memory, size

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


def test_every_option_is_checked_by_the_backends_own_class(tmp_path: Path) -> None:
    text = SCRIPT_PHASE + (
        "sandbox: {grace: 0, warm: maybe, labels: [team], image: 5, spares: 99}\n"
    )
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: sandbox.grace: must be a positive number, got 0",
        "flow.yaml: sandbox.warm: expected true or false, got string 'maybe'",
        "flow.yaml: sandbox.spares: must be between 0 and 16, got 99",
        "flow.yaml: sandbox.image: expected an image tag such as praxis-sandbox:<tag>, got "
        "integer 5",
        "flow.yaml: sandbox.labels: expected a mapping of names to strings, got a list",
    ]


def test_the_operators_options_are_not_flow_yamls(tmp_path: Path) -> None:
    text = SCRIPT_PHASE + "sandbox: {backend: ray, node_root: /etc, place_timeout: 1}\n"
    assert lines(make(tmp_path, text)) == [
        "flow.yaml: sandbox.node_root: the ray backend takes 'node_root' from the program that "
        "opens the sandbox, not from flow.yaml",
        "flow.yaml: sandbox.place_timeout: the ray backend takes 'place_timeout' from the "
        "program that opens the sandbox, not from flow.yaml",
    ]


def test_the_settings_are_typed(tmp_path: Path) -> None:
    text = SCRIPT_PHASE + (
        "sandbox: {backend: docker, memory: 1g, cpus: 1, timeout: 30, collect: 2m, "
        "packages: [scikit-learn], labels: {team: data}}\n"
    )
    flow, report = contract.load(make(tmp_path, text))
    assert flow is not None, report.lines()
    assert (flow.sandbox.backend, flow.sandbox.timeout) == ("docker", 30.0)
    assert flow.sandbox.packages == ("scikit-learn",) and flow.sandbox.collect == 2 << 20
    assert flow.sandbox.options == DockerOptions(memory="1g", cpus=1, labels={"team": "data"})
    assert contract.require(tmp_path / "flow").sandbox == flow.sandbox


def settings_of(tmp_path: Path, section: str) -> SandboxSettings:
    flow, report = contract.load(make(tmp_path, SCRIPT_PHASE + f"sandbox: {section}\n"))
    assert flow is not None, report.lines()
    return flow.sandbox


def test_a_callers_override_is_checked_as_strictly_as_open_sandbox(tmp_path: Path) -> None:
    settings = settings_of(tmp_path, "{backend: docker, memory: 1g}")
    root = tmp_path / "flow"
    with pytest.raises(SandboxInvalid) as info:
        sandbox_config.overlay(settings, {"memroy": "2g"}, root)
    assert info.value.problems == [
        "sandbox: unknown option 'memroy' for the docker backend; did you mean 'memory'?"
    ]
    with pytest.raises(SandboxInvalid, match=r"^sandbox: the docker backend does not take option "):
        sandbox_config.overlay(settings, {"resources": {"gpu": 1}}, root)
    with pytest.raises(SandboxInvalid, match=r"^sandbox\.address: a flow names no cluster address"):
        sandbox_config.overlay(settings, {"address": "auto"}, root)  # nor does a caller
    with pytest.raises(SandboxInvalid, match=r"^sandbox.cpus: expected a number of cores, got "):
        sandbox_config.overlay(settings, {"cpus": "two"}, root)
    laid = sandbox_config.overlay(settings, {"memory": "2g", "pids": 64}, root)
    assert laid.options == DockerOptions(memory="2g", pids=64)
    assert laid.written == {"backend": "docker", "memory": "2g", "pids": 64}
    # the flow's own key another backend does not take is dropped, as it was a warning
    assert sandbox_config.overlay(settings, {"backend": "local"}, root).options == LocalOptions()


def test_a_flows_section_moves_to_another_backend(tmp_path: Path) -> None:
    """PRAXIS_SANDBOX=local over auto, an override's backend: the options of the section
    that backend takes; and a key ignored by the flow's backend applies on one taking it."""
    local = settings_of(tmp_path, "{backend: local, memory: 1g, grace: 2}")
    root = tmp_path / "flow"
    docker = sandbox_config.on_backend(local, "docker", root)
    assert docker.options == DockerOptions(memory="1g", grace=2)
    assert sandbox_config.on_backend(docker, "local", root).options == LocalOptions(grace=2)
    with pytest.raises(UnknownBackend):
        sandbox_config.on_backend(local, "podman", root)


def test_the_options_a_run_opens_with_label_its_containers_with_the_flow(
    tmp_path: Path,
) -> None:
    settings = settings_of(tmp_path, "{memory: 1g, labels: {team: data}}")
    root = tmp_path / "flow"
    label = {"team": "data", "praxis.flow": str(root.resolve())}
    assert sandbox_config.opening(settings, "docker", root) == DockerOptions(
        memory="1g", labels=label
    )
    assert sandbox_config.opening(settings, "local", root) == LocalOptions()
    assert settings.options.labels == {"team": "data"}  # the flow's own stay as written


# -- a cluster is the person's (DESIGN.md §13, RELIABILITY.md 50) -----------------------------

FIX = (
    'a flow names no cluster address: add `clusters: {prod: {address: "ray://…"}}` to your '
    "profile and write `sandbox: {backend: ray, cluster: prod}`"
)


def with_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    monkeypatch.setenv("PRAXIS_PROFILE", str(path))
    return path


@pytest.mark.parametrize("backend", ["ray", "docker", "auto"])
def test_a_flow_cannot_name_a_cluster_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    with_profile(tmp_path, monkeypatch, "clusters:\n  prod: {address: 'ray://head:10001'}\n")
    text = SCRIPT_PHASE + f"sandbox: {{backend: {backend}, address: 'ray://10.6.6.6:10001'}}\n"
    assert only(make(tmp_path, text)) == f"flow.yaml: sandbox.address: {FIX}"


def test_a_flow_names_a_cluster_of_the_profile_and_runs_at_its_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_profile(tmp_path, monkeypatch, "clusters:\n  prod: {address: 'ray://${RAY_HEAD}:10001'}\n")
    monkeypatch.setenv("RAY_HEAD", "head.internal")
    settings = settings_of(tmp_path, "{backend: ray, cluster: prod, memory: 4g}")
    assert settings.cluster == "prod" and settings.options == RayOptions(memory="4g")
    opened = sandbox_config.opening(settings, "ray", tmp_path / "flow")
    assert opened == RayOptions(memory="4g", address="ray://head.internal:10001")
    # no cluster named: the sandbox takes PRAXIS_RAY_ADDRESS, else Ray's auto
    plain = sandbox_config.opening(SandboxSettings(), "ray", tmp_path / "flow")
    assert plain == RayOptions()


def test_a_cluster_the_profile_lacks_is_refused_at_check_and_at_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = with_profile(tmp_path, monkeypatch, "clusters:\n  dev: {address: 'head:6379'}\n")
    folder = make(tmp_path, SCRIPT_PHASE + "sandbox: {backend: ray, cluster: prod}\n")
    flow, report = contract.load(folder)  # reading a flow reads no profile (status needs none)
    assert flow is not None, report.lines()
    assert host_resources.missing(flow) == [
        (
            "sandbox.cluster",
            f"'prod' is not in your profile {path} (it has: dev): add "
            '`clusters: {prod: {address: "ray://HEAD:10001"}}` there',
        )
    ]
    with pytest.raises(host_resources.ProfileLacks):  # praxis begin and run
        host_resources.require(flow)
    path.write_text("clusters:\n  prod: {address: 'head:6379'}\n")
    assert host_resources.missing(flow) == []
    path.write_text("clusters:\n  dev: {address: 'head:6379'}\n")  # gone before the run
    with pytest.raises(sandbox_config.ClusterUnknown, match=r"^sandbox.cluster: 'prod' is not in"):
        sandbox_config.opening(flow.sandbox, "ray", folder)
    (tmp_path / "flow" / "flow.yaml").write_text(
        SCRIPT_PHASE + "sandbox: {backend: ray, cluster: 'ray://head:10001'}\n"
    )
    assert only(folder).startswith(
        "flow.yaml: sandbox.cluster: expected the name of a cluster of your profile, got "
        f"'ray://head:10001': {FIX}"
    )


def test_praxis_check_and_run_refuse_an_address_and_an_unknown_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = with_profile(tmp_path, monkeypatch, "clusters:\n  dev: {address: 'head:6379'}\n")
    env = {**os.environ, "PRAXIS_PROFILE": str(profile)}
    folder = make(tmp_path, SCRIPT_PHASE + "sandbox: {backend: ray, address: 'ray://x:1'}\n")
    for verb in ("check", "run"):
        done = subprocess.run([sys.executable, "-m", "praxis", verb, str(folder)], env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 2, (verb, done.stdout, done.stderr)
        assert f"sandbox.address: {FIX}" in done.stdout + done.stderr, verb
    (folder / "flow.yaml").write_text(SCRIPT_PHASE + "sandbox: {backend: ray, cluster: prod}\n")
    for verb in ("check", "run"):
        done = subprocess.run([sys.executable, "-m", "praxis", verb, str(folder)], env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 2, (verb, done.stdout, done.stderr)
        assert "sandbox.cluster: 'prod' is not in your profile" in done.stdout + done.stderr
    assert not (folder / "runs").exists() or not any((folder / "runs").iterdir())
