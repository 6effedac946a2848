"""Item 43: nothing survives a phase. Phase 1 plants, with real system calls, what could
outlive it outside the workspace: a 300 MB SysV shared memory segment saying "planted by
p1", a message queue holding a message, a semaphore set, a folder chain 1,500 levels deep
in /tmp and a file in /dev/shm/x; phase 2 looks for each of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._flows import begin, docker_sandbox, praxis, state_of, write_flow

pytestmark = pytest.mark.docker

SEGMENT = 300 << 20
DEPTH = 1500

IPC = """
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
KEY = 0x50524158
CREATE = 0o1000 | 0o666  # IPC_CREAT, readable and writable by all


class Message(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]
"""

PLANT = (
    IPC
    + f"""
shm = libc.shmget(KEY, {SEGMENT}, CREATE)
assert shm >= 0, os.strerror(ctypes.get_errno())
addr = libc.shmat(shm, None, 0)
ctypes.memset(addr, ord("."), {SEGMENT})  # all of it in memory
ctypes.memmove(addr, b"planted by p1", 13)
libc.shmdt(ctypes.c_void_p(addr))
queue = libc.msgget(KEY + 1, CREATE)
message = Message(1, b"planted by p1")
assert libc.msgsnd(queue, ctypes.byref(message), 64, 0) == 0
semaphores = libc.semget(KEY + 2, 3, CREATE)
assert queue >= 0 and semaphores >= 0

fd = os.open("/tmp", os.O_RDONLY)
for name in ["deep"] + ["d"] * {DEPTH}:
    os.mkdir(name, dir_fd=fd)
    child = os.open(name, os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = child
os.close(fd)
os.makedirs("/dev/shm/x")
open("/dev/shm/x/planted", "w").write("planted by p1")
json.dump({{"shm": shm, "queue": queue, "semaphores": semaphores}}, open("planted.json", "w"))
"""
)

LOOK = (
    IPC
    + """
found = {}
shm = libc.shmget(KEY, 0, 0)
found["shm"] = [shm, errno.errorcode.get(ctypes.get_errno())]
if shm >= 0:
    addr = libc.shmat(shm, None, 0)
    found["read"] = ctypes.string_at(addr, 13).decode("latin-1")
queue = libc.msgget(KEY + 1, 0)
found["queue"] = [queue, errno.errorcode.get(ctypes.get_errno())]
found["semaphores"] = [libc.semget(KEY + 2, 0, 0), errno.errorcode.get(ctypes.get_errno())]
found["sysvipc"] = {
    kind: open(f"/proc/sysvipc/{kind}").read().splitlines()[1:] for kind in ("shm", "msg", "sem")
}
found["tmp"] = sorted(os.listdir("/tmp"))
found["dev_shm"] = sorted(os.listdir("/dev/shm"))
writable = []
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    point, options = fields[4], fields[5].split(",")
    if "rw" in options and os.path.isdir(point) and os.access(point, os.W_OK):
        writable.append(point)
found["writable"] = sorted(set(writable))
json.dump(found, open("found.json", "w"))
"""
)


def test_item43_no_ipc_object_or_deep_folder_survives_into_the_next_phase(
    docker_image: str, tmp_path: Path
) -> None:
    yaml = f"""
        {docker_sandbox(docker_image, timeout=120, memory="1g")}
        phases:
          - id: p1
            kind: script
            script: plant.py
            outputs: [planted.json]
          - id: p2
            kind: script
            script: look.py
            outputs: [found.json]
    """
    flow = write_flow(tmp_path / "flow", yaml, {"plant.py": PLANT, "look.py": LOOK})
    run = begin(flow)
    res = praxis("advance", str(flow), timeout=600)
    assert res.returncode == 0, (res.stdout, res.stderr)
    state = state_of(run)
    assert [p.status for p in state.phases] == ["done", "done"]
    planted = json.loads((run / "output" / "planted.json").read_text())
    assert min(planted.values()) >= 0  # phase 1 did make all three
    found = json.loads((run / "output" / "found.json").read_text())
    assert "read" not in found  # the segment's "planted by p1" was not read
    assert found["shm"] == [-1, "ENOENT"]
    assert found["queue"] == [-1, "ENOENT"]
    assert found["semaphores"] == [-1, "ENOENT"]
    assert found["sysvipc"] == {"shm": [], "msg": [], "sem": []}
    assert "deep" not in found["tmp"]
    assert found["dev_shm"] == []
    # every folder the phase's uid can write outside the workspace is one the sweep empties
    # (docker's masks of /proc files are /dev/null: nothing stays in them)
    assert set(found["writable"]) <= {"/workspace", "/tmp", "/dev/shm", "/dev/mqueue"}
