"""Item 39: nothing from a flow's packages runs in the kernel server.

The attack is a real package, built here as a wheel and installed by the layer builder like
any of ``sandbox.packages``: a ``.pth`` hook, and a ``bottleneck`` module (pandas imports it,
when it is there, as the server preloads pandas). Run as root, either forks a root daemon
that rewrites the sealed ``a.csv`` whenever a phase asks it to, after that phase's
pre-snapshot. One run of 21 phases on one container: phase 1 writes ``a.csv`` and leaves a
uid-1000 daemon; each of the 20 phases after it asks any daemon to tamper, then records what
it read and which processes it saw.
"""

from __future__ import annotations

import base64
import hashlib
import json
import textwrap
import zipfile
from pathlib import Path

import pytest

from praxis.flows.store.snapshot import FOLDER, load_manifest

from ._flows import begin, docker_sandbox, praxis, state_of, write_flow

pytestmark = pytest.mark.docker

PACKAGE = "praxis_hook_probe"
ATTACKS = 20
ORIGINAL = "x\n1\n"
SERVER_NAMES = {"docker-init", "sleep", "sh", "python"}  # pid 1, its command, the server

HOOK = '''
import ctypes, os, time

RAN_AS = os.getuid()


def _rename(name):
    ctypes.CDLL(None).prctl(15, name, 0, 0, 0)  # PR_SET_NAME: its name in /proc


def _tamper_forever():
    """Root, in the kernel server: rewrite the sealed a.csv whenever a phase asks."""
    if os.fork():
        return
    if os.fork():
        os._exit(0)
    os.setsid()  # a group of its own: the server's kill of its child's group misses it
    _rename(b"praxis-hook")
    while True:
        try:
            if os.path.exists("/tmp/praxis-go"):
                os.chmod("/workspace/a.csv", 0o644)  # root owns the sealed file
                with open("/workspace/a.csv", "w") as f:
                    f.write("x\\ntampered\\n")
        except OSError:
            pass
        time.sleep(0.005)


if os.getuid() == 0 and not os.environ.get("PRAXIS_HOOK_STARTED"):
    os.environ["PRAXIS_HOOK_STARTED"] = "1"
    _tamper_forever()
'''

FIRST = f"""
import ctypes, json, os, subprocess, sys, time
import {PACKAGE}
# a Python process of the phase's own finds the package too (as uid 1000)
again = subprocess.run([sys.executable, "-c", "import {PACKAGE}; print({PACKAGE}.RAN_AS)"],
                       capture_output=True, text=True)
open("a.csv", "w").write({ORIGINAL!r})
if os.fork() == 0:  # a daemon of the phase's own uid: it must not outlive the phase
    os.setsid()
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, b"p1-daemon", 0, 0, 0)
        while True:
            time.sleep(1)
    os._exit(0)
json.dump({{"hook_uid": {PACKAGE}.RAN_AS, "again": again.stdout + again.stderr}},
          open("b1.json", "w"))
"""

LATER = f"""
import hashlib, json, os, time


def processes():
    found = []
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            text = open(f"/proc/{{pid}}/status").read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        found.append([int(pid), fields["Name"].strip(), int(fields["Uid"].split()[0])])
    return found


daemons = [p for p in processes() if p[1] == "praxis-hook"]
if daemons:  # the attack: ask for the tampering, wait until it is done
    open("/tmp/praxis-go", "w").write("go")
    for _ in range(1000):
        if open("a.csv").read() != {ORIGINAL!r}:
            break
        time.sleep(0.005)
data = open("a.csv", "rb").read()
import {PACKAGE}
json.dump(
    {{
        "sha256": hashlib.sha256(data).hexdigest(),
        "text": data.decode(),
        "hook_uid": {PACKAGE}.RAN_AS,
        "daemons": daemons,
        "root": [p for p in processes() if p[2] == 0],
        "left": [p for p in processes() if p[1] == "p1-daemon"],
    }},
    open("b{{k}}.json", "w"),
)
"""


# its version follows its code: the layer's tag (from the requirement) changes with it
VERSION = f"1.{int(hashlib.sha256(HOOK.encode()).hexdigest()[:8], 16)}"


def _wheel(folder: Path) -> Path:
    """A real wheel of the attacking package (py3-none-any), written with zipfile."""
    dist = f"{PACKAGE}-{VERSION}.dist-info"
    files = {
        f"{PACKAGE}.py": HOOK,
        f"{PACKAGE}.pth": f"import {PACKAGE}\n",
        "bottleneck/__init__.py": f"import {PACKAGE}\n__version__ = '0.0.1'\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE.replace('_', '-')}\n"
        f"Version: {VERSION}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{PACKAGE}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return wheel


@pytest.fixture(scope="module")
def hooked_image(docker_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The sandbox image with the attacking package as a flow's package (built once)."""
    from sandbox.image.layer import ensure_layer

    wheels = _wheel(tmp_path_factory.mktemp("wheels")).parent
    with pytest.MonkeyPatch.context() as mp:  # the host's pip finds it beside its own links
        mp.setenv("PIP_FIND_LINKS", f"{wheels} /opt/wheels")
        requirement = f"{PACKAGE.replace('_', '-')}=={VERSION}"
        return ensure_layer([requirement], progress=lambda _line: None)


def _flow(tmp_path: Path, image: str) -> Path:
    phases = ["  - id: p1\n    kind: script\n    script: p1.py\n    outputs: [a.csv, b1.json]\n"]
    files = {"p1.py": FIRST}
    for k in range(2, ATTACKS + 2):
        phases.append(
            f"  - id: p{k}\n    kind: script\n    script: p{k}.py\n    outputs: [b{k}.json]\n"
        )
        files[f"p{k}.py"] = LATER.replace("{k}", str(k))
    yaml = f"{docker_sandbox(image, timeout=120, spares=1)}\nphases:\n" + "".join(phases)
    return write_flow(tmp_path / "flow", textwrap.dedent(yaml), files)


def _objects(run: Path) -> Path:
    store = run.parents[1] / ".praxis" / "objects"  # the flow's content store
    assert store.is_dir(), f"no content store for {run}"
    return store


def test_item39_a_packages_hooks_never_run_as_root_and_sealed_files_hold(
    hooked_image: str, tmp_path: Path
) -> None:
    flow = _flow(tmp_path, hooked_image)
    run = begin(flow)
    res = praxis("advance", str(flow), timeout=900)
    assert res.returncode == 0, (res.stdout, res.stderr)
    state = state_of(run)
    sealed = load_manifest(run / "snapshots" / "p1" / "1.post.json")
    assert sealed is not None
    original = hashlib.sha256(ORIGINAL.encode()).hexdigest()
    assert sealed["a.csv"].sha256 == original
    seen = []
    for k in range(2, ATTACKS + 2):
        assert state.phase(f"p{k}").status == "done", state.phase(f"p{k}").error
        found = json.loads((run / "output" / f"b{k}.json").read_text())
        seen.append(found)
        # what the phase read is what the manifests say it was given
        assert found["sha256"] == original, (k, found["text"])
        assert found["daemons"] == [], found  # no root daemon of the package's
        assert found["left"] == [], found  # phase 1's daemon did not outlive phase 1
        assert {name for _, name, _ in found["root"]} <= SERVER_NAMES, found["root"]
        assert found["hook_uid"] == 1000
        for which in ("1.json", "1.post.json"):
            manifest = load_manifest(run / "snapshots" / f"p{k}" / which)
            assert manifest is not None and manifest["a.csv"].sha256 == original
    objects = _objects(run)
    for manifest_file in sorted((run / "snapshots").rglob("*.json")):
        manifest = load_manifest(manifest_file)
        assert manifest is not None
        for name, item in manifest.items():
            if item.sha256 == FOLDER:
                continue
            data = (objects / item.sha256).read_bytes()
            assert hashlib.sha256(data).hexdigest() == item.sha256, (manifest_file, name)
    assert len(seen) == ATTACKS
    first = json.loads((run / "output" / "b1.json").read_text())
    assert first["hook_uid"] == 1000  # the package works, in the phase's kernel, as uid 1000
    assert first["again"] == "1000\n"  # and in the phase's own Python processes
