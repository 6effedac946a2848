"""The ray backend on a two-node Ray cluster on this machine, with the real Docker daemon.

One cluster per module (``ray.cluster_utils.Cluster``): the head and a second node, both
offering ``praxis-docker``; only the second offers the custom resource ``node-2``. The
contract suite runs on one ray sandbox (reset between cases), then containment probes,
placement, the sales-report flow through the runner, and last node loss.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox import ExecTimeout, KernelDied, Sandbox, SandboxUnavailable, open_sandbox

from ..labels import TEST_LABELS
from ..probes import assert_contained, probe_code
from ..ray_nodes import TwoNodes, two_nodes
from . import test_contract as contract

pytestmark = [
    pytest.mark.docker,
    pytest.mark.ray,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

CANARY = "PRAXIS_RAY_CANARY"


@pytest.fixture(scope="module")
def nodes(docker_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoNodes]:
    """Two Ray nodes with token authentication; a canary in the environment they inherit."""
    with two_nodes(tmp_path_factory.mktemp("ray-nodes"), {CANARY: "host-secret"}) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def make(
    nodes: TwoNodes, docker_image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., Sandbox]]:
    """Open ray sandboxes on the cluster; each is closed after the module."""
    made: list[Sandbox] = []
    base = tmp_path_factory.mktemp("ray-runs")

    def _make(name: str, **config: Any) -> Sandbox:
        sb = open_sandbox(
            {
                "backend": "ray",
                "address": nodes.address,
                "image": docker_image,
                "labels": dict(TEST_LABELS),
                "memory": "1g",
                **config,
            },
            workspace=base / name / "workspace",
            name=name,
        )
        made.append(sb)
        sb.open()
        return sb

    yield _make
    for sb in made:
        sb.close()


@pytest.fixture(scope="module")
def shared(make: Callable[..., Sandbox]) -> Sandbox:
    return make("ray-contract")


def reset(sb: Sandbox) -> None:
    """An empty workspace again (the node is this machine, so its folder is reachable)."""
    sb.open()
    sb.quiesce()
    root = contract.workspace(sb)
    for entry in root.iterdir():
        if entry.name == "lost+found":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _docker_cases() -> list[Callable[..., None]]:
    """Every case of the contract suite that runs on the docker backend."""
    cases = []
    for name, case in vars(contract).items():
        for mark in getattr(case, "pytestmark", []) if name.startswith("test_") else []:
            if mark.name == "parametrize" and mark.args[0] == "sandbox":
                backends = [getattr(p, "values", (p,))[0] for p in mark.args[1]]
                if "docker" in backends:
                    cases.append(case)
    return cases


@pytest.mark.parametrize("case", _docker_cases(), ids=lambda case: case.__name__[5:])
def test_contract(case: Callable[..., None], shared: Sandbox, tmp_path: Path) -> None:
    reset(shared)
    given = {"sandbox": shared, "tmp_path": tmp_path}
    case(**{name: given[name] for name in inspect.signature(case).parameters})


def test_folders_are_made_listed_and_removed(shared: Sandbox) -> None:
    reset(shared)
    shared.make_folder("a/b")
    assert {"a", "a/b"} <= shared.folders()
    shared.remove_folder("a/b")
    assert "a/b" not in shared.folders()


def test_containment_probes_and_streamed_output(shared: Sandbox) -> None:
    reset(shared)
    streamed: list[tuple[str, str]] = []
    kernel = shared.kernel()
    try:
        result = kernel.execute(
            probe_code(CANARY), timeout=60, on_output=lambda s, t: streamed.append((s, t))
        )
    finally:
        kernel.shutdown()
    assert result.ok, (result.ename, result.evalue)
    assert_contained(json.loads(result.stdout))
    assert "".join(t for s, t in streamed if s == "stdout") == result.stdout
    assert "probes.json" in shared.listing()


def test_interrupt_reaches_running_code_and_a_hung_cell_times_out(shared: Sandbox) -> None:
    reset(shared)
    kernel = shared.kernel()
    try:
        started = threading.Event()
        waiter = threading.Thread(target=lambda: started.wait(60) and kernel.interrupt())
        waiter.start()
        result = kernel.execute(
            "import time\nprint('go', flush=True)\ntime.sleep(60)",
            timeout=90,
            on_output=lambda _s, _t: started.set(),
        )
        waiter.join()
        assert (result.status, result.ename) == ("error", "KeyboardInterrupt")
        with pytest.raises(ExecTimeout):
            kernel.execute("while True:\n    pass", timeout=2)
    finally:
        kernel.shutdown()


def test_a_large_file_moves_in_chunks_both_ways(shared: Sandbox, tmp_path: Path) -> None:
    reset(shared)
    from sandbox import ray as ray_backend

    big = tmp_path / "big.bin"
    pattern = bytes(range(256)) * 4096
    with big.open("wb") as fh:
        for _ in range(ray_backend.SMALL // len(pattern) + 3):
            fh.write(pattern)
    shared.upload(big, "data/big.bin")
    assert shared.listing()["data/big.bin"].size == big.stat().st_size > ray_backend.SMALL
    back = tmp_path / "back.bin"
    shared.fetch("data/big.bin", back)
    assert back.read_bytes() == big.read_bytes()


def test_placement_by_a_resource_only_node_2_has(
    make: Callable[..., Sandbox], nodes: TwoNodes
) -> None:
    sb = make("ray-node-2", resources={"node-2": 1})
    try:
        assert sb.describe()["node"] == nodes.second.node_id
        assert contract.run(sb, "print('on node 2')") == "on node 2\n"
    finally:
        sb.close()  # node 2 has one unit of node-2: the node-loss test needs it


def test_more_memory_than_any_node_fails_at_once(make: Callable[..., Sandbox]) -> None:
    with pytest.raises(SandboxUnavailable) as err:
        make("ray-too-big", memory="64g")
    message = str(err.value)
    assert "no node of the Ray cluster at" in message and "memory 64g" in message
    assert "the largest praxis-docker node has CPU 2, memory 4g" in message


def test_a_resource_no_node_has_fails_at_once(make: Callable[..., Sandbox]) -> None:
    with pytest.raises(SandboxUnavailable, match="gpu-a100 1"):
        make("ray-no-such", resources={"gpu-a100": 1})


def test_an_unreachable_cluster_names_the_address(tmp_path: Path) -> None:
    root = _sales_report(tmp_path, "sandbox: {backend: ray, cluster: gone}")
    env = {k: v for k, v in os.environ.items() if k != "PRAXIS_RAY_ADDRESS"}
    env["PRAXIS_PROFILE"] = str(_profile(tmp_path, gone="ray://127.0.0.1:9"))
    done = subprocess.run(
        [sys.executable, "-m", "praxis", "run", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 5, done.stderr
    assert "RayUnavailable: no Ray cluster answers at ray://127.0.0.1:9" in done.stderr
    assert "next: fix what it names (README: Ray cluster), then: praxis advance" in done.stderr


def _profile(tmp_path: Path, **clusters: str) -> Path:
    """The person's profile, naming ``clusters`` (name: address)."""
    path = tmp_path / "profile.yaml"
    lines = [f"  {name}: {{address: '{address}'}}" for name, address in clusters.items()]
    path.write_text("clusters:\n" + "\n".join(lines) + "\n")
    return path


def _sales_report(tmp_path: Path, sandbox: str) -> Path:
    """A copy of the sales-report example with ``sandbox`` as its sandbox line."""
    from ..test_examples import FLOWS

    root = tmp_path / "sales-report"
    shutil.copytree(FLOWS / "sales-report", root, ignore=shutil.ignore_patterns("runs", "run.lock"))
    text = (root / "flow.yaml").read_text()
    lines = [sandbox if line.startswith("sandbox:") else line for line in text.splitlines()]
    (root / "flow.yaml").write_text("\n".join(lines) + "\n")
    return root


def test_a_driver_without_the_token_is_refused(nodes: TwoNodes, tmp_path: Path) -> None:
    code = (
        "from pathlib import Path\n"
        "from sandbox import open_sandbox, SandboxUnavailable\n"
        f"sb = open_sandbox({{'backend': 'ray', 'address': {nodes.address!r}}},"
        f" workspace=Path({str(tmp_path)!r}), name='x')\n"
        "try:\n    sb.open()\nexcept SandboxUnavailable as exc:\n    print(exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env["HOME"] = str(tmp_path)  # no ~/.ray/auth_token either
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert f"cannot connect to the Ray cluster at {nodes.address}" in done.stdout, done.stderr
    assert "set RAY_AUTH_MODE=token and its token" in done.stdout


def test_a_runner_speaks_to_the_cluster_through_ray_client(
    nodes: TwoNodes, docker_image: str, tmp_path: Path
) -> None:
    config = {"backend": "ray", "address": nodes.client, "image": docker_image,
              "labels": dict(TEST_LABELS)}  # fmt: skip
    code = (
        "from pathlib import Path\nfrom sandbox import open_sandbox\n"
        f"sb = open_sandbox({config!r}, workspace=Path({str(tmp_path)!r}), name='ray-client')\n"
        "sb.open()\nk = sb.kernel()\n"
        "r = k.execute('print(6 * 7)', timeout=60, on_output=lambda s, t: print('streamed', t))\n"
        "k.shutdown()\nsb.close()\nprint('result', r.stdout, end='')\n"
        "import sys\nprint('ray imported:', 'ray' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines() == [
        "streamed 42",
        "",
        "result 42",
        "ray imported: False",  # the runner never joins the cluster: its bridge does
    ], done.stderr[-2000:]


def test_a_runner_that_dies_leaves_no_container(
    nodes: TwoNodes, docker_image: str, tmp_path: Path
) -> None:
    config = {"backend": "ray", "address": nodes.address, "image": docker_image}
    code = (
        "import os\nfrom pathlib import Path\nfrom sandbox import open_sandbox\n"
        f"sb = open_sandbox({config!r}, workspace=Path({str(tmp_path)!r}), name='ray-orphan')\n"
        "sb.open()\nprint(sb.describe()['container'], flush=True)\nos._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("praxis-ray-orphan-"), done.stderr
    deadline = time.monotonic() + 60
    while _containers("ray-orphan") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _containers("ray-orphan") == []


def test_sales_report_flow_runs_on_the_cluster_with_its_gate(
    nodes: TwoNodes, docker_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from praxis.flows.engine import runner
    from praxis.flows.store import state_file

    pinned = (
        f"sandbox: {{backend: ray, cluster: here, image: '{docker_image}', memory: 1g, "
        "timeout: 120}"
    )
    root = _sales_report(tmp_path, pinned)
    monkeypatch.delenv("PRAXIS_RAY_ADDRESS", raising=False)
    monkeypatch.setenv("PRAXIS_PROFILE", str(_profile(tmp_path, here=nodes.address)))

    state = runner.run(root)
    assert (state.waiting, state.gate, state.backend) == ("gate", "flag", "ray"), state.error
    runner.approve(root, expect_revision=state.revision)
    state = runner.advance(root)
    assert state.status == "done", state.error
    run_dir = root / "runs" / state.run
    assert '"backend": "ray"' in (run_dir / "events.jsonl").read_text()
    assert (
        "![Revenue by week](revenue_by_week.png)" in (run_dir / "output" / "report.md").read_text()
    )
    assert state_file.load(run_dir / "run.json").status == "done"


FANOUT = """\
flow: spread
sandbox: {backend: ray, cluster: here, image: '%s', memory: 1g, timeout: 120}
phases:
  - id: per_region
    kind: script
    script: region.py
    foreach: {param: region, values: [north, south, east, west]}
    parallel: 4
    outputs: [summary.csv]
"""


def test_a_fan_out_spreads_its_partitions_over_both_nodes(
    nodes: TwoNodes, docker_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each partition opens a sandbox of its own; on a cluster they are spread over its
    nodes: the node id each partition recorded names both."""
    from praxis.flows.engine import runner

    root = tmp_path / "spread"
    root.mkdir()
    (root / "flow.yaml").write_text(FANOUT % docker_image)
    (root / "region.py").write_text(
        "open('summary.csv', 'w').write('region\\n' + params['region'] + '\\n')\n"
    )
    monkeypatch.delenv("PRAXIS_RAY_ADDRESS", raising=False)
    monkeypatch.setenv("PRAXIS_PROFILE", str(_profile(tmp_path, here=nodes.address)))
    state = runner.run(root)
    assert state.status == "done", state.error
    parts = state.phase("per_region").partitions
    assert sorted(parts) == ["east", "north", "south", "west"]
    placed = {str(p["node"]) for p in parts.values()}
    assert placed == {nodes.cluster.head_node.node_id, nodes.second.node_id}
    out = root / "runs" / state.run / "output" / "per_region" / "east" / "summary.csv"
    assert out.read_text() == "region\neast\n"


TRAP = """
import os, sys, ray

class Payload:  # unpickled, it runs its code: what a hostile head may send any driver
    def __init__(self, code, relayed):
        self.code = code
        self.relayed = relayed

    def __reduce__(self):
        if not self.relayed:
            return (exec, (self.code,))
        # through a Ray client server, which unpickles a value and pickles it again for its
        # client: unpickled there, this makes the object whose pickle runs the code
        again = "type('P', (), {'__reduce__': lambda self: (exec, (%r,))})()" % self.code
        return (eval, (again,))

@ray.remote(num_cpus=0)
class Trap:
    def __init__(self, code, relayed):
        self.code = code
        self.relayed = relayed

    def close(self):
        return Payload(self.code, self.relayed)

ray.init(address=sys.argv[1], namespace="praxis")
if sys.argv[2] == "set":
    relayed = sys.argv[1].startswith("ray://")
    trap = Trap.options(name=sys.argv[3], lifetime="detached").remote(sys.argv[4], relayed)
    ray.get(trap.__ray_ready__.remote())
    os.environ["PRAXIS_TEST_MARK"] = sys.argv[5]
    ray.get(trap.close.remote())  # the control: an ordinary driver (or client) runs it
else:
    try:
        ray.kill(ray.get_actor(sys.argv[3], namespace="praxis"))
    except ValueError:
        pass
"""

PAYLOAD = """
import os
mark = os.environ.get("PRAXIS_TEST_MARK", {marker!r})
os.makedirs(os.path.dirname(mark), exist_ok=True)
with open(mark, "w") as fh:
    fh.write("ran as uid %d" % os.getuid())
if {garbage!r}:
    os.write(1, b"\\xff" * 8)  # and answer the runner with what no frame may be
"""


@pytest.mark.parametrize("garbage", [False, True], ids=["contained", "garbage-reply"])
@pytest.mark.parametrize("client", [False, True], ids=["driver", "ray-client"])
def test_a_pickle_from_a_hostile_cluster_runs_nothing_on_the_host(
    nodes: TwoNodes, docker_image: str, tmp_path: Path, garbage: bool, client: bool
) -> None:
    """RELIABILITY.md 50: an actor of the cluster answers the runner with a pickle whose
    ``__reduce__`` runs code. An ordinary driver runs it (the control marker appears); the
    runner's bridge unpickles it confined: the marker never reaches this machine's files, and
    a bridge it took over fails the open naming the address instead of hanging."""
    from sandbox import ray as ray_backend

    workspace = tmp_path / "run" / "workspace"
    name = f"sandbox-{ray_backend._node_key(workspace)}"  # the leftover the runner closes
    marker, control = tmp_path / "host" / "pwned", tmp_path / "control"
    payload = PAYLOAD.format(marker=str(marker), garbage=garbage)
    address = nodes.client if client else nodes.address  # ray:// or a driver's
    trap = [sys.executable, "-c", TRAP, address]
    for _ in range(2):  # a fresh head's first Ray client server may fail to start (Ray's own)
        set_up = subprocess.run(
            [*trap, "set", name, payload, str(control)], capture_output=True, timeout=120
        )
        if control.exists() or b"Starting Ray client server failed" not in set_up.stderr:
            break
    ran = control.read_text() if control.exists() else None  # the set-up's error, else
    assert ran == "ran as uid 0", (set_up.returncode, set_up.stderr[-3000:])
    try:
        sb = open_sandbox(
            {"backend": "ray", "address": address, "image": docker_image,
             "labels": dict(TEST_LABELS), "memory": "1g", "cpus": 0.5},
            workspace=workspace,
            name="ray-hostile",
        )  # fmt: skip
        if garbage:
            with pytest.raises(SandboxUnavailable) as err:
                sb.open()
            assert str(err.value).startswith(
                f"the Ray bridge for the cluster at {address} broke the reply format"
            )
        else:
            sb.open()
            try:
                assert contract.run(sb, "print('still mine')") == "still mine\n"
            finally:
                sb.close()
    finally:
        subprocess.run([*trap, "kill", name], capture_output=True, timeout=120, check=False)
    assert not marker.exists() and not marker.parent.exists()


def test_losing_the_node_mid_execute_names_it_and_a_new_sandbox_works(
    make: Callable[..., Sandbox], nodes: TwoNodes
) -> None:
    sb = make("ray-lost", resources={"node-2": 1})
    lost = nodes.second.node_id
    started = threading.Event()
    kernel = sb.kernel()

    def kill_when_started() -> None:
        if started.wait(60):
            nodes.cluster.remove_node(nodes.second)

    killer = threading.Thread(target=kill_when_started)
    killer.start()
    try:
        with pytest.raises(KernelDied) as err:
            kernel.execute(
                "import time\nprint('started', flush=True)\ntime.sleep(120)",
                timeout=150,
                on_output=lambda _s, _t: started.set(),
            )
    finally:
        killer.join()
        subprocess.run(
            ["docker", "rm", "-f", *_containers("ray-lost")], capture_output=True, check=False
        )
    assert lost in str(err.value)
    after = make("ray-after")
    assert contract.run(after, "print(1 + 1)") == "2\n"


def _containers(run: str) -> list[str]:
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=praxis.run={run}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.split()


def test_flow_yaml_takes_the_ray_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ..flows.test_contract import SCRIPT_PHASE, lines, make

    monkeypatch.setenv("PRAXIS_PROFILE", str(_profile(tmp_path, prod="ray://head:10001")))
    text = SCRIPT_PHASE + (
        "sandbox: {backend: ray, cluster: prod, resources: {bigmem: 1}, memory: 64g, cpus: 16}\n"
    )
    assert lines(make(tmp_path, text)) == []  # a node may be bigger than this machine
    text = SCRIPT_PHASE + "sandbox: {backend: ray, address: 7, resources: {bigmem: 0}}\n"
    (tmp_path / "flow" / "flow.yaml").write_text(text)
    assert lines(tmp_path / "flow") == [
        "flow.yaml: sandbox.address: a flow names no cluster address: add `clusters: {prod: "
        '{address: "ray://…"}}` to your profile and write `sandbox: {backend: ray, cluster: prod}`',
        "flow.yaml: sandbox.resources.bigmem: expected a positive number, got integer 0",
    ]
