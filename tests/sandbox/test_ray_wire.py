"""What the runner accepts from its Ray bridge: bounded frames of data, each reply of the shape
its method returns; and the confinement the bridge runs in (real bubblewrap, no cluster)."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from sandbox import ray_confine, ray_wire
from sandbox.base import ExecResult, FileStat
from sandbox.errors import PathRefused
from sandbox.ray import RaySandbox
from sandbox.ray_cluster import RayUnavailable


def frame(message: object, blob: bytes = b"") -> bytes:
    text = json.dumps(message).encode()
    return ray_wire.HEADER.pack(len(text), len(blob)) + text + blob


def test_a_frame_round_trips_with_its_raw_part() -> None:
    out = io.BytesIO()
    ray_wire.write(out, {"id": 1, "ok": ["ok", {"$blob": 0}]}, b"\x00\xff" * 10)
    stream = io.BytesIO(out.getvalue())
    assert ray_wire.read(stream) == ({"id": 1, "ok": ["ok", {"$blob": 0}]}, b"\x00\xff" * 10)
    assert ray_wire.read(stream) is None  # a clean end


def test_a_frame_over_the_bound_is_refused_before_it_is_read() -> None:
    big = io.BytesIO(ray_wire.HEADER.pack(ray_wire.MAX_JSON + 1, 0))  # and nothing follows
    with pytest.raises(ray_wire.FrameError, match="over the bound"):
        ray_wire.read(big)
    blob = io.BytesIO(ray_wire.HEADER.pack(2, ray_wire.MAX_BLOB + 1) + b"{}")
    with pytest.raises(ray_wire.FrameError, match="over the bound"):
        ray_wire.read(blob)
    with pytest.raises(ray_wire.FrameError, match="over the bound"):
        ray_wire.write(io.BytesIO(), {}, b"x" * (ray_wire.MAX_BLOB + 1))


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (frame({"id": 1})[:-2], "the stream ended inside a frame"),
        (ray_wire.HEADER.pack(3, 0)[:5], "the stream ended inside a frame"),
        (frame([1, 2]), "not a JSON object"),
        (ray_wire.HEADER.pack(4, 0) + b"\x80\x04K.", "not JSON"),  # a pickle is not a frame
        (ray_wire.HEADER.pack(200_000, 0) + b"[" * 200_000, "not JSON"),  # nesting bomb
    ],
    ids=["cut", "cut-header", "array", "pickle", "nested"],
)
def test_anything_else_is_a_frame_error(data: bytes, says: str) -> None:
    with pytest.raises(ray_wire.FrameError, match=says):
        ray_wire.read(io.BytesIO(data))


@pytest.fixture
def sandbox(tmp_path: Path) -> RaySandbox:
    return RaySandbox(workspace=tmp_path / "ws", name="shapes")


def test_replies_are_taken_only_in_the_shape_their_method_returns(sandbox: RaySandbox) -> None:
    stat = {"size": 3, "mtime_ns": 5, "ino": 7, "ctime_ns": 9}
    assert sandbox.shape({"a.csv": stat}, "listing") == {"a.csv": FileStat(3, 5, 7, 9)}
    assert sandbox.shape(["b", "a"], "folders") == {"a", "b"}
    assert sandbox.shape(["t", 2, b"hi"], "stage_fetch") == ("t", 2, b"hi")
    fields = {f: v for f, v in ExecResult("ok").__dict__.items()}
    fields["display_ids"] = {"0": "d"}  # JSON keys are strings
    assert sandbox.shape(fields, "execute") == ExecResult("ok", display_ids={0: "d"})
    assert sandbox.shape("anything", "remove") is None
    bad = [
        ({"a.csv": {**stat, "size": "3"}}, "listing"),
        ({"a.csv": {**stat, "extra": 1}}, "listing"),
        ({"a.csv": {**stat, "size": True}}, "listing"),
        ([1], "folders"),
        (["t", 5, b"hi"], "stage_fetch"),  # says 5 bytes, holds 2
        (["t", 2, "hi"], "stage_fetch"),
        ({**fields, "status": "pwned"}, "execute"),
        ({**fields, "__reduce__": "x"}, "execute"),
        ({**fields, "display_ids": {"x": "d"}}, "execute"),
        ([["stdout"]], "take_output"),
        ("text", "read_at"),
        ({"node": 1, "workspace": "/w"}, "open"),
        ({"$blob": 0}, "kernel"),
    ]
    for value, method in bad:
        with pytest.raises(RayUnavailable, match=f"answered {method} with data of the wrong"):
            sandbox.shape(value, method)


def test_a_node_error_is_rebuilt_from_data_only(sandbox: RaySandbox) -> None:
    error = sandbox.error("PathRefused", ["../x", "leaves the workspace"])
    assert isinstance(error, PathRefused) and error.name == "../x"
    assert "wrong shape" in str(sandbox.error("SystemExit", [0]))
    assert "wrong shape" in str(sandbox.error("PathRefused", [["nested"], "x"]))
    assert "wrong shape" in str(sandbox.error("PathRefused", []))  # the wrong arity
    said = sandbox.error("SandboxError", ["\x1b]52;c;cHduZWQ=\x07 " + "x" * 5000])
    assert "\x1b" not in str(said) and len(str(said)) <= 2000


def test_without_bubblewrap_the_ray_backend_says_how_to_install_it(
    sandbox: RaySandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on this PATH
    with pytest.raises(RayUnavailable, match=r"bubblewrap, which is not installed here: apt-get"):
        sandbox.open()
    assert sandbox.bridge is None


PROBE = """
import json, os, sys
seen = {}
def can(path, mode="r"):
    try:
        open(path, mode).close()
        return True
    except OSError:
        return False
seen["profile"] = can(sys.argv[1])
seen["home"] = sorted(os.listdir(sys.argv[2])) if os.path.isdir(sys.argv[2]) else []
seen["write_usr"] = can("/usr/praxis-probe", "w")
seen["env"] = sorted(os.environ)
seen["caps"] = open("/proc/self/status").read().split("CapEff:")[1].split()[0]
seen["runner_seen"] = os.path.exists("/proc/%s" % sys.argv[3])
try:
    os.kill(int(sys.argv[3]), 0)
    seen["signal"] = True
except OSError:
    seen["signal"] = False
seen["docker"] = os.path.exists("/var/run/docker.sock")
print(json.dumps(seen))
"""


@pytest.mark.parametrize("address", ["ray://head:10001", "10.0.0.5:6379"])
def test_the_bridge_runs_confined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    """What a payload unpickled in the bridge can reach: no file of the person's (a profile
    under the run's folders, the home folder), no system file to write, no capability, no
    signal to the runner, no Docker socket, no environment variable but PATH, locale, Ray's."""
    profile = tmp_path / "profile.yaml"
    profile.write_text("connections: {}\n")
    monkeypatch.setenv("PRAXIS_PROFILE", str(profile))
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "host-secret")
    argv, env = ray_confine.command(address)
    assert argv[-2:-1] == ["-c"]
    argv[-1] = PROBE
    home = str(Path.home())
    seen = json.loads(
        subprocess.run(
            [*argv, str(profile), home, str(os.getpid())],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    )
    assert seen["profile"] is False
    python = {  # the home folder holds only the Python the bridge runs, if it is there
        Path(p).relative_to(home).parts[0]
        for p in ray_confine._python_paths()
        if p.startswith(home + "/")
    }
    assert set(seen["home"]) <= python
    assert seen["write_usr"] is False and seen["caps"] == "0000000000000000"
    assert seen["signal"] is False and seen["docker"] is False
    assert seen["runner_seen"] is (not address.startswith("ray://"))  # a driver lists them
    allowed = {"PATH", "HOME", "PWD", "PYTHONDONTWRITEBYTECODE", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}
    assert all(k in allowed or k.startswith("RAY_") for k in seen["env"]), seen["env"]
