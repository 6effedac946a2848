"""docs/reliability.md items 19-23 and 26: the sandbox boundary, attacked by real phase code.

Every test runs a flow on the docker backend through the `praxis` CLI (a process of its
own) with attack code as a phase's script, and asserts on what the run recorded and on the
host's files afterwards. Races are looped inside one run (many phases, many uploads), since
a race that wins once in ten is a hole.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import docker
import pytest

from praxis.flows.model.state import STOPPED
from sandbox.container import RUN_LABEL

from ..labels import left_after
from ._flows import (
    begin,
    docker_sandbox,
    event_kinds,
    popen_praxis,
    praxis,
    state_of,
)

pytestmark = pytest.mark.docker

ROUNDS = 20  # each race runs at least this many times


# -- helpers ---------------------------------------------------------------------------------


def _phase(
    pid: str,
    script: str,
    outputs: list[str],
    *,
    working: list[str] | None = None,
    timeout: int | None = None,
    kind: str = "script",
) -> dict[str, Any]:
    phase: dict[str, Any] = {"id": pid, "kind": kind, "script": script, "outputs": outputs}
    if working:
        phase["inputs"] = {"working": working}
    if timeout:
        phase["timeout"] = timeout
    return phase


def _flow(
    root: Path,
    image: str,
    phases: list[dict[str, Any]],
    files: dict[str, str],
    **sandbox: object,
) -> Path:
    options: dict[str, object] = {"timeout": 120, **sandbox}
    text = docker_sandbox(image, **options) + "\nphases: " + json.dumps(phases, indent=1) + "\n"
    root.mkdir(parents=True, exist_ok=True)
    (root / "flow.yaml").write_text(text)
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return root


def _remove_containers(run_id: str) -> None:
    """Clean-up after a failed assertion: the session's finaliser would fail on them too."""
    client = docker.from_env()
    try:
        for row in client.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run_id}"}):
            try:
                client.api.remove_container(row["Id"], force=True)
            except docker.errors.NotFound:  # it went by itself meanwhile
                pass
    finally:
        client.close()


def _the_run(flow: Path, res: subprocess.CompletedProcess[str]) -> Path:
    """The one run `praxis run` began (or a failure showing what praxis said)."""
    said = (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    assert (flow / "runs").is_dir(), said
    runs = [p for p in (flow / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(runs) == 1, (runs, said)
    return runs[0]


def _error(run: Path, phase: str) -> str:
    return str(state_of(run).phase(phase).error or "")


def _no_traceback(res: subprocess.CompletedProcess[str] | tuple[str, str]) -> None:
    err = res.stderr if isinstance(res, subprocess.CompletedProcess) else res[1]
    assert "Traceback" not in err, err[-4000:]


def _wait_until(found: Any, proc: subprocess.Popen[str], what: str) -> None:
    """Poll ``found()`` until true; fail if praxis ended first (a guard against hangs only)."""
    deadline = time.monotonic() + 180
    while not found():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"praxis ended before {what}: {out[-2000:]} {err[-2000:]}")
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.05)


def _files_under(root: Path) -> list[Path]:
    """Every regular file under ``root``, never following a link."""
    found = []
    for dirpath, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            path = Path(dirpath, name)
            if path.is_file() and not path.is_symlink():
                found.append(path)
    return found


def _bytes_under(run: Path) -> int:
    """Bytes of the files the host wrote into a run folder (its workspace and image aside)."""
    return sum(
        p.stat().st_size
        for p in _files_under(run)
        if not p.relative_to(run).parts[0].startswith("workspace")
    )


# Phase code that lists the container's processes: {pid: [uid, ppid, state]}, and whether
# a pid is in the calling kernel's own tree (the kernel and its descendants).
PROCS = r'''
import os
def processes():
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
            found[int(name)] = (
                int(fields["Uid"].split()[0]),
                int(fields["PPid"].split()[0]),
                fields["State"].split()[0],
            )
        except (OSError, KeyError, ValueError):
            pass  # ended while we looked
    return found
def ours(pid, procs):
    seen = set()
    while pid and pid not in seen:
        if pid == os.getpid():
            return True
        seen.add(pid)
        pid = procs.get(pid, (0, 0, ""))[1]
    return False
def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return "?"
def strangers(uid=1000):
    """Live processes of ``uid`` that are not this kernel's own."""
    procs = processes()
    return [
        [pid, cmdline(pid)]
        for pid, (u, _ppid, state) in sorted(procs.items())
        if u == uid and state != "Z" and not ours(pid, procs)
    ]
'''


# -- item 19: no process outlives its phase ---------------------------------------------------

# A daemon body: ignores the polite signals, rewrites b<i>.csv (a later phase's declared
# output) and its own marker file as fast as it can. HYDRA forks a successor every turn.
DAEMON = r"""
import os, signal, sys, time
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_IGN)
kind, i = sys.argv[1], sys.argv[2]
os.chdir("/workspace")
n = 0
while True:
    n += 1
    for name, text in ((f"b{i}.csv", f"who,n\n{kind},{n}\n"), (f"alive-{i}-{kind}.txt", str(n))):
        try:
            with open(name, "w") as fh:
                fh.write(text)
        except OSError:
            pass
    if kind == "hydra" and os.fork():
        os._exit(0)
    time.sleep(0.005)
"""

KINDS = ("setsid", "nohup", "double", "hydra")

SPAWN = r"""
import os, subprocess, sys, time
I = __I__
DAEMON = __DAEMON__
quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
py = sys.executable
subprocess.Popen([py, "-c", DAEMON, "setsid", str(I)], start_new_session=True, **quiet)
subprocess.Popen(["nohup", py, "-c", DAEMON, "nohup", str(I)], **quiet)
subprocess.Popen([py, "-c", DAEMON, "hydra", str(I)], start_new_session=True, **quiet)
child = os.fork()
if child == 0:  # a classic daemon: fork, setsid, fork again, the middle one exits
    try:
        os.setsid()
        if os.fork() == 0:
            os.execv(py, [py, "-c", DAEMON, "double", str(I)])
    finally:
        os._exit(0)
os.waitpid(child, 0)
deadline = time.monotonic() + 60
while not all(os.path.exists(f"alive-{I}-{k}.txt") for k in __KINDS__):
    if time.monotonic() > deadline:
        raise RuntimeError("the daemons never started")
    time.sleep(0.01)
with open(f"s{I}.txt", "w") as fh:
    fh.write("spawned")
"""

CHECK = (
    PROCS
    + r"""
import json, time
I = __I__
def markers():
    found = {}
    for k in __KINDS__:
        try:
            with open(f"alive-{I}-{k}.txt") as fh:
                found[k] = fh.read()
        except OSError as exc:
            found[k] = type(exc).__name__
    return found
first, others = markers(), strangers()
mine = f"who,n\ncheck,{I}\n"
if os.path.lexists(f"b{I}.csv"):  # an earlier phase's file: read-only, but ours to replace
    os.unlink(f"b{I}.csv")
with open(f"b{I}.csv", "w") as fh:
    fh.write(mine)
time.sleep(0.3)  # room for a survivor to show itself
with open(f"b{I}.csv") as fh:
    kept = fh.read() == mine
report = {"others": others, "markers": first, "later": markers(), "kept": kept,
          "others_after": strangers()}
with open(f"procs{I}.json", "w") as fh:
    json.dump(report, fh)
"""
)


def _fill(template: str, **values: object) -> str:
    for key, value in values.items():
        template = template.replace(f"__{key}__", repr(value) if key != "I" else str(value))
    return template


def test_item19_no_process_of_a_phase_survives_into_the_next(
    docker_image: str, tmp_path: Path
) -> None:
    # phase k checks what phase k-1 left behind, then starts daemons aimed at phase k+1
    phases, files = [], {}
    for k in range(ROUNDS + 1):
        parts, outputs = [], []
        if k > 0:
            parts.append(_fill(CHECK, I=k, KINDS=KINDS))
            outputs += [f"b{k}.csv", f"procs{k}.json"]
        if k < ROUNDS:
            parts.append(_fill(SPAWN, I=k + 1, DAEMON=DAEMON, KINDS=KINDS))
            outputs.append(f"s{k + 1}.txt")
        files[f"p{k}.py"] = "\n".join(parts)
        phases.append(_phase(f"p{k}", f"p{k}.py", outputs))
    flow = _flow(tmp_path / "flow", docker_image, phases, files, pids=512)
    res = praxis("run", str(flow), timeout=600)
    run = _the_run(flow, res)
    try:
        for k in range(1, ROUNDS + 1):
            if not (run / "output" / f"procs{k}.json").exists():
                break  # the run stopped; the assertion below says why
            report = json.loads((run / "output" / f"procs{k}.json").read_text())
            assert report["others"] == [] and report["others_after"] == [], (k, report)
            assert report["markers"] == report["later"], (k, report)
            assert report["kept"] is True, (k, report)
            assert (run / "output" / f"b{k}.csv").read_text() == f"who,n\ncheck,{k}\n"
            scratch = run / "scratch" / f"p{k - 1}"
            for kind in KINDS:  # what the host collected is what the workspace still holds
                marker = (scratch / f"alive-{k}-{kind}.txt").read_text()
                assert marker == report["markers"][kind], (k, kind, marker, report)
        assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-3000:])
        assert event_kinds(run).count("phase_done") == ROUNDS + 1
        assert left_after(run.name) == []
    finally:
        _remove_containers(run.name)


# -- item 20: the kernel server, its socket, the keys and the next kernel are out of reach ----

PLANTED = [
    "/tmp/planted",
    "/dev/shm/planted",
    "/dev/mqueue/planted",
    "/tmp/.ipython/profile_default/startup/00-planted.py",
    "/tmp/.matplotlib/matplotlibrc",
]

ATTACK = (
    PROCS
    + r"""
import builtins, ctypes, glob, json, os, signal, socket, sysconfig
I = __I__
PLANTED = __PLANTED__
found = {}
def attempt(name, fn):
    try:
        fn()
    except Exception as exc:
        found[name] = type(exc).__name__
    else:
        found[name] = "ok"
def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    finally:
        s.close()
def write(path, text="PLANTED_GLOBAL = 'planted'\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)
attempt("rt list", lambda: os.listdir("/rt"))
attempt("rt write", lambda: write("/rt/planted"))
attempt("rt mkdir", lambda: os.mkdir("/rt/k999"))
attempt("rt connect zygote.sock", lambda: connect("/rt/zygote.sock"))
attempt("rt rename zygote.sock", lambda: os.rename("/rt/zygote.sock", "/tmp/zygote.sock"))
attempt("rt unlink zygote.sock", lambda: os.unlink("/rt/zygote.sock"))
for n in range(1, 9):
    for path in (f"/rt/k{n}.json", f"/rt/k{n}/kernel.json", f"/rt/k{n}/k.json"):
        attempt(f"rt read {path}", lambda path=path: open(path).read())
found["rt glob"] = glob.glob("/rt/*") + glob.glob("/rt/*/*") + glob.glob("/rt/**/*.json")
libc = ctypes.CDLL(None, use_errno=True)
def ptrace(pid):
    if libc.ptrace(ctypes.c_long(16), ctypes.c_long(pid), None, None) != 0:  # ATTACH
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    libc.ptrace(ctypes.c_long(17), ctypes.c_long(pid), None, None)  # DETACH
def read(path):
    with open(path, "rb") as fh:
        fh.read(64)
procs = processes()
targets = sorted(p for p, (_u, _pp, st) in procs.items() if st != "Z" and not ours(p, procs))
found["targets"] = [[p, procs[p][0], cmdline(p)] for p in targets]
for pid in targets:
    attempt(f"proc mem {pid}", lambda pid=pid: read(f"/proc/{pid}/mem"))
    attempt(f"proc environ {pid}", lambda pid=pid: read(f"/proc/{pid}/environ"))
    attempt(f"proc fd {pid}", lambda pid=pid: os.listdir(f"/proc/{pid}/fd"))
    attempt(f"ptrace {pid}", lambda pid=pid: ptrace(pid))
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        attempt(f"kill {sig.name} {pid}", lambda pid=pid, sig=sig: os.kill(pid, sig))
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
pgids = set()
for pid in targets:
    try:
        pgids.add(os.getpgid(pid))
    except OSError:
        pass
for pgid in sorted(pgids - {os.getpgid(0), 0, 1}):  # killpg(1) means kill(-1): everyone
    attempt(f"killpg SIGKILL {pgid}", lambda pgid=pgid: os.killpg(pgid, signal.SIGKILL))
for path in PLANTED:
    attempt(f"plant {path}", lambda path=path: write(path))
site = sysconfig.get_paths()["purelib"]
attempt("plant site-packages", lambda: write(os.path.join(site, "planted.pth"), "import os\n"))
attempt("plant sitecustomize", lambda: write(os.path.join(site, "sitecustomize.py")))
os.environ["PRAXIS_PLANTED"] = "env"
os.putenv("PRAXIS_PLANTED_PUT", "env")
builtins.planted_builtin = "builtin"
planted_global = "global"
with open(f"attack{I}.json", "w") as fh:
    json.dump(found, fh)
"""
)

TOTAL = r"""import builtins, csv, json, os, sysconfig
with open("data/sales.csv", newline="") as fh:
    total = sum(int(row["amount"]) for row in csv.DictReader(fh))
print(f"total={total}")
site = sysconfig.get_paths()["purelib"]
paths = __PLANTED__ + [os.path.join(site, n) for n in ("planted.pth", "sitecustomize.py")]
names = ("planted_global", "PLANTED_GLOBAL", "planted_builtin")
seen = {
    "files": [p for p in paths if os.path.lexists(p)],
    "env": [k for k in os.environ if "PLANTED" in k],
    "names": [n for n in names if n in globals() or hasattr(builtins, n)],
    "uid": os.getuid(),
}
with open("total__I__.txt", "w") as fh:
    fh.write(str(total))
with open("seen__I__.json", "w") as fh:
    json.dump(seen, fh)
"""

REFUSED = {"PermissionError", "ProcessLookupError", "FileNotFoundError"}


def test_item20_phase_code_cannot_reach_the_kernel_server_or_plant_state(
    docker_image: str, tmp_path: Path
) -> None:
    amounts = [secrets.randbelow(1000) for _ in range(50)]
    sales = "order,amount\n" + "".join(f"O{n},{a}\n" for n, a in enumerate(amounts))
    phases, files = [], {"data/sales.csv": sales}
    for i in range(2):
        files[f"attack{i}.py"] = _fill(ATTACK, I=i, PLANTED=PLANTED)
        files[f"total{i}.py"] = _fill(TOTAL, I=i, PLANTED=PLANTED)
        phases.append(_phase(f"attack{i}", f"attack{i}.py", [f"attack{i}.json"]))
        phases.append(
            _phase(
                f"total{i}",
                f"total{i}.py",
                [f"total{i}.txt", f"seen{i}.json"],
                working=["data/sales.csv"],
            )
        )
    flow = _flow(tmp_path / "flow", docker_image, phases, files)
    res = praxis("run", str(flow))
    run = _the_run(flow, res)
    try:
        assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-3000:])
        for i in range(2):
            found = json.loads((run / "output" / f"attack{i}.json").read_text())
            assert found["rt glob"] == []
            rt = {k: v for k, v in found.items() if k.startswith("rt ") and k != "rt glob"}
            assert rt and set(rt.values()) == {"PermissionError"}, rt
            # the container's init, the kernel server and the spare kernels at least
            assert len(found["targets"]) >= 3, found["targets"]
            reach = {
                k: v
                for k, v in found.items()
                if k.split()[0] in ("proc", "ptrace", "kill", "killpg") and v not in REFUSED
            }
            assert reach == {}, (reach, found["targets"])
            for name in ("plant site-packages", "plant sitecustomize"):
                assert found[name] != "ok", found  # a read-only root
            seen = json.loads((run / "output" / f"seen{i}.json").read_text())
            assert seen == {"files": [], "env": [], "names": [], "uid": 1000}, seen
            assert (run / "output" / f"total{i}.txt").read_text() == str(sum(amounts))
            record = json.loads((run / "records" / f"total{i}.ipynb").read_text())
            code = [c for c in record["cells"] if c["cell_type"] == "code"]
            assert len(code) == 1, code
            assert "".join(code[0]["source"]) == files[f"total{i}.py"]
            shown = [(o["output_type"], "".join(o.get("text", ""))) for o in code[0]["outputs"]]
            assert shown == [("stream", f"total={sum(amounts)}\n")], code[0]["outputs"]
        assert left_after(run.name) == []
    finally:
        _remove_containers(run.name)


# -- item 21: the host never follows a link the sandbox planted ----------------------------

# Swaps each pair of names with renameat2(RENAME_EXCHANGE) as fast as it can, for ever.
SWAPPER = r"""
import ctypes, os, platform
def swap_forever(pairs):
    nr = {"x86_64": 316, "aarch64": 276}[platform.machine()]
    libc = ctypes.CDLL(None, use_errno=True)
    here = ctypes.c_long(-100)  # AT_FDCWD
    names = [(a.encode(), b.encode()) for a, b in pairs]
    while True:
        for a, b in names:
            libc.syscall(ctypes.c_long(nr), here, a, here, b, ctypes.c_long(2))
"""

SWAP = r"""
import os, shutil, subprocess, sys, threading, time
I = __I__
DIR, FILE = __DIR__, __FILE__
SWAPPER = __SWAPPER__
def make(path, text="a,b\n1,2\n"):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)
mine = [f"o{I}", f"ol{I}", f"p{I}", f"pl{I}", f"f{I}.csv", f"fl{I}", f"g{I}.txt", f"gl{I}",
        f"r{I}", f"rl{I}"]
left = [n for n in mine if os.path.lexists(n)]  # a re-run starts from before the first try
kinds = {n: "link" if os.path.islink(n) else "dir" if os.path.isdir(n) else "file" for n in left}
for name in left:
    if os.path.isdir(name) and not os.path.islink(name):
        shutil.rmtree(name)
    else:
        os.unlink(name)
make(f"o{I}/r.csv"); make(f"o{I}/sub/r2.csv"); make(f"p{I}/r.csv"); make(f"r{I}/r.csv")
make(f"f{I}.csv"); make(f"g{I}.txt", "plain\n")
links = {f"ol{I}": DIR, f"o{I}/subl": DIR, f"pl{I}": "/proc/self", f"fl{I}": FILE,
         f"gl{I}": "/proc/self/environ", "in/xl": FILE, f"rl{I}": "/"}
for name, target in links.items():
    if os.path.lexists(name):
        os.unlink(name)
    os.symlink(target, name)
pairs = [(f"o{I}", f"ol{I}"), (f"o{I}/sub", f"o{I}/subl"), (f"p{I}", f"pl{I}"),
         (f"f{I}.csv", f"fl{I}"), (f"g{I}.txt", f"gl{I}"), ("in/x.csv", "in/xl"),
         (f"r{I}", f"rl{I}")]
ns = {}
exec(SWAPPER, ns)
threading.Thread(target=ns["swap_forever"], args=(pairs,), daemon=True).start()
code = SWAPPER + "\nimport sys\nopen(sys.argv[1], 'w').close()\n" \
    "swap_forever([a.split(':') for a in sys.argv[2:]])\n"
ready = f"swapping{I}"
subprocess.Popen([sys.executable, "-c", code, ready, *(f"{a}:{b}" for a, b in pairs)],
                 start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while not os.path.exists(ready):
    time.sleep(0.005)
with open(f"s{I}.txt", "w") as fh:
    fh.write(f"swapped; found {sorted(kinds.items())}")
"""


def _host_secret(tmp_path: Path) -> tuple[Path, Path, str]:
    """A root-only folder holding a root-only canary file: (folder, file, its text)."""
    folder = tmp_path / "host-secret"
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o700)
    text = f"canary-file-{secrets.token_hex(16)}"
    canary = folder / "canary.txt"
    canary.write_text(text)
    os.chmod(canary, 0o600)
    return folder, canary, text


def _fingerprint(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Name -> (sha256, mtime_ns, mode) of everything in ``folder``, and the folder's own."""
    found = {".": ("", folder.stat().st_mtime_ns, folder.stat().st_mode)}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        found[str(path.relative_to(folder))] = (digest, st.st_mtime_ns, st.st_mode)
    return found


def _holds(path: Path, needles: list[bytes]) -> list[bytes]:
    """The needles found in ``path``, reading only its data (a sparse image's holes skipped)."""
    found: set[bytes] = set()
    keep = max(len(n) for n in needles)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        end, offset = os.fstat(fd).st_size, 0
        while offset < end:
            try:
                offset = os.lseek(fd, offset, os.SEEK_DATA)
                stop = os.lseek(fd, offset, os.SEEK_HOLE)
            except OSError:  # no data past offset
                break
            tail = b""
            while offset < stop:
                chunk = os.pread(fd, min(1 << 20, stop - offset), offset)
                if not chunk:
                    break
                window = tail + chunk
                found.update(n for n in needles if n in window)
                tail, offset = window[-keep:], offset + len(chunk)
    finally:
        os.close(fd)
    return sorted(found)


def _leaks(runs: Path, needles: list[str]) -> list[str]:
    """Files under ``runs`` holding any of ``needles`` (the workspace's disk image too)."""
    wanted = [n.encode() for n in needles]
    return [f"{p}: {n[:12]!r}..." for p in _files_under(runs) for n in _holds(p, wanted)]


def test_item21_swapping_folders_for_links_never_brings_a_host_file_into_the_run(
    docker_image: str, tmp_path: Path
) -> None:
    """20 phases each leave a thread and a detached process exchanging their folders and files
    with links to the host's /, /proc/self (the runner's environment holds a secret), and a
    root-only folder and file of the host; then a re-run restores that workspace."""
    folder, canary, canary_text = _host_secret(tmp_path)
    before = _fingerprint(folder)
    secret = f"env-secret-{secrets.token_hex(16)}"
    phases, files = [], {"in/x.csv": "a,b\n3,4\n"}
    for i in range(ROUNDS):
        files[f"swap{i}.py"] = _fill(SWAP, I=i, DIR=str(folder), FILE=str(canary), SWAPPER=SWAPPER)
        phases.append(_phase(f"swap{i}", f"swap{i}.py", [f"s{i}.txt"], working=["in/x.csv"]))
    flow = _flow(tmp_path / "flow", docker_image, phases, files)
    env = {"PRAXIS_CANARY_SECRET": secret}
    res = praxis("run", str(flow), env=env, timeout=600)
    run = _the_run(flow, res)
    try:
        if res.returncode == 0:  # a re-run restores a workspace full of planted links
            again = praxis("rerun", str(flow), "--from", f"swap{ROUNDS - 2}", env=env)
            assert again.returncode == 0, again.stderr
            res = praxis("advance", str(flow), env=env, timeout=600)
        assert _leaks(flow / "runs", [secret, canary_text]) == []
        assert _fingerprint(folder) == before  # nothing outside the run changed
        assert canary.read_text() == canary_text
        _no_traceback(res)
        state = state_of(run)
        assert res.returncode == 0 and state.status == "done", (
            res.stderr[-3000:],
            [(p.id, p.status, p.error) for p in state.phases if p.status != "done"],
        )
        assert event_kinds(run).count("phase_done") == ROUNDS + 2
        for i in range(ROUNDS):  # restore brought back no link or folder of the first try
            assert (run / "output" / f"s{i}.txt").read_text() == "swapped; found []", i
        assert left_after(run.name) == []
    finally:
        _remove_containers(run.name)


PLANT = r"""
import os, subprocess, sys, time
TARGET = __TARGET__
SWAPPER = __SWAPPER__
os.symlink(TARGET, "data")  # where the next phase's input data/x.csv goes
os.makedirs("d2", exist_ok=True)
os.symlink(TARGET, "d2l")
code = SWAPPER + "\nimport sys\nopen(sys.argv[1], 'w').close()\n" \
    "swap_forever([('d2', 'd2l')])\n"
subprocess.Popen([sys.executable, "-c", code, "swapping"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while not os.path.exists("swapping"):
    time.sleep(0.005)
with open("planted.txt", "w") as fh:
    fh.write("planted")
"""

USE = r"""
names = [f"d2/y{n}.csv" for n in range(__ROUNDS__)] + ["data/x.csv"]
text = ""
for name in names:
    with open(name) as fh:
        text += fh.read()
with open("used.txt", "w") as fh:
    fh.write(text)
"""


def test_item21_the_host_never_uploads_through_a_planted_link(
    docker_image: str, tmp_path: Path
) -> None:
    target = tmp_path / "host-target"
    target.mkdir(mode=0o700)
    os.chmod(target, 0o700)
    (target / "keep.txt").write_text("the host's own file\n")
    before = _fingerprint(target)
    inputs = {f"d2/y{n}.csv": f"y,{n}\n" for n in range(ROUNDS)}
    inputs["data/x.csv"] = "x,1\n"
    files = {
        **inputs,
        "plant.py": _fill(PLANT, TARGET=str(target), SWAPPER=SWAPPER),
        "use.py": USE.replace("__ROUNDS__", str(ROUNDS)),
    }
    phases = [
        _phase("plant", "plant.py", ["planted.txt"]),
        _phase("use", "use.py", ["used.txt"], working=list(inputs)),
    ]
    flow = _flow(tmp_path / "flow", docker_image, phases, files)
    res = praxis("run", str(flow))
    run = _the_run(flow, res)
    try:
        assert _fingerprint(target) == before  # the host wrote nothing through the links
        _no_traceback(res)
        use = state_of(run).phase("use")
        if use.status == "failed":  # refusing the upload is right; its message says why
            assert res.returncode == 1, res.stderr[-3000:]
            assert use.error and STOPPED not in use.error, use.error
        else:
            assert use.status == "done", (use.status, use.error, res.stderr[-3000:])
            used = (run / "output" / "used.txt").read_text()
            assert used == "".join(inputs.values())
        assert left_after(run.name) == []
    finally:
        _remove_containers(run.name)


# -- item 22: the host never trusts a size the sandbox chose ---------------------------------

MEASURE = r"""
import resource, subprocess, sys
res = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
sys.stderr.write(res.stderr[-20000:].decode(errors="replace"))
print(res.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, len(res.stderr))
"""

BIG = r"""
import sys
with open("big.bin", "wb") as fh:
    fh.truncate(2 << 30)  # sparse: costs the sandbox nothing
chunk = "x" * (1 << 20)
for _ in range(50):
    sys.stdout.write(chunk)
with open("ok.txt", "w") as fh:
    fh.write("ok")
"""

BOOM = r"""
import sys
chunk = "y" * (1 << 20)
for _ in range(50):
    sys.stdout.write(chunk)
raise ValueError("z" * (10 << 20))
"""

LIMIT = re.compile(r"limit|quota|cap", re.IGNORECASE)


def _advance_measured(flow: Path) -> tuple[int, int, int, str]:
    """`praxis advance` in a child process: (exit code, peak RSS in bytes, stderr bytes, stderr)."""
    res = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-m", "praxis", "advance", str(flow)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    code, rss_kib, err_bytes = (int(x) for x in res.stdout.split())
    return code, rss_kib * 1024, err_bytes, res.stderr


def test_item22_a_2_gib_file_and_50_mb_of_output_stay_within_the_limits(
    docker_image: str, tmp_path: Path
) -> None:
    flow = _flow(
        tmp_path / "flow", docker_image, [_phase("big", "big.py", ["ok.txt"])], {"big.py": BIG}
    )
    run = begin(flow)
    try:
        code, rss, _err_bytes, err = _advance_measured(flow)
        assert "Traceback" not in err, err
        assert rss < 256 << 20, f"praxis advance peaked at {rss >> 20} MiB"
        collected = _bytes_under(run)
        assert collected < 256 << 20, f"{collected >> 20} MiB collected into the run folder"
        phase = state_of(run).phase("big")
        if phase.status == "failed":
            assert code == 1 and LIMIT.search(str(phase.error)), phase.error
            assert STOPPED not in str(phase.error)
        else:  # collected, with a marker naming the cap
            assert code == 0 and phase.status == "done", (code, phase.status, err)
            told = (run / "events.jsonl").read_text() + (run / "records/big.ipynb").read_text()
            assert LIMIT.search(told.replace("output truncated", "")), "no marker of the cap"
        assert left_after(run.name) == []
    finally:
        _remove_containers(run.name)
        shutil.rmtree(run, ignore_errors=True)  # a 2 GiB copy, if one was made


def test_item22_a_10_mb_exception_is_capped_with_a_marker(
    docker_image: str, tmp_path: Path
) -> None:
    flow = _flow(
        tmp_path / "flow",
        docker_image,
        [_phase("boom", "boom.py", ["never.txt"])],
        {"boom.py": BOOM},
        timeout=60,
    )
    run = begin(flow)
    try:
        code, rss, err_bytes, err = _advance_measured(flow)
        assert "Traceback" not in err, err[-3000:]
        assert rss < 256 << 20, f"praxis advance peaked at {rss >> 20} MiB"
        assert code == 1, err[-3000:]
        error = _error(run, "boom")
        assert error.startswith("boom.py line 5: ValueError: zzz"), error[:300]
        assert len(error) < 1 << 20 and re.search(r"truncated|dropped|cut", error), len(error)
        assert err_bytes < 1 << 20, f"praxis printed {err_bytes} bytes of error"
        assert (run / "records" / "boom.ipynb").stat().st_size < 4 << 20
        assert _bytes_under(run) < 16 << 20
        assert left_after(run.name) == []
    finally:
        _remove_containers(run.name)


MANY = r"""
import os
os.makedirs("many", exist_ok=True)
for n in range(20_000):  # twice the files one phase may leave
    with open(f"many/f{n}.txt", "w") as fh:
        fh.write("x")
with open("ok.txt", "w") as fh:
    fh.write("ok")
"""


def test_item22_a_phase_leaving_20000_files_fails_naming_the_limit(
    docker_image: str, tmp_path: Path
) -> None:
    flow = _flow(
        tmp_path / "flow", docker_image, [_phase("many", "many.py", ["ok.txt"])], {"many.py": MANY}
    )
    run = begin(flow)
    try:
        code, rss, _err_bytes, err = _advance_measured(flow)
        assert "Traceback" not in err, err[-3000:]
        assert rss < 256 << 20, f"praxis advance peaked at {rss >> 20} MiB"
        phase = state_of(run).phase("many")
        assert code == 1 and phase.status == "failed", (code, phase.status, err[-2000:])
        error = str(phase.error)
        assert LIMIT.search(error) and "files" in error, error
        kept = [p for p in _files_under(run) if not p.relative_to(run).parts[0].startswith("work")]
        assert len(kept) < 1000, f"{len(kept)} files written into the run folder"
        assert left_after(run.name) == []
    finally:
        _remove_containers(run.name)


FILL = r"""
chunk = b"\1" * (1 << 20)
with open("fill.bin", "wb") as fh:
    for _ in range(256):  # four times the quota, and no more
        fh.write(chunk)
        fh.flush()
with open("never.txt", "w") as fh:
    fh.write("x")
"""


def test_item22_a_phase_that_fills_the_disk_quota_fails_naming_it(
    docker_image: str, tmp_path: Path
) -> None:
    flow = _flow(
        tmp_path / "flow",
        docker_image,
        [_phase("fill", "fill.py", ["never.txt"])],
        {"fill.py": FILL},
        disk="64m",
    )
    res = praxis("run", str(flow))
    _no_traceback(res)
    run = _the_run(flow, res)
    try:
        assert res.returncode == 1, (res.stdout[-2000:], res.stderr[-2000:])
        error = _error(run, "fill")
        assert state_of(run).phase("fill").status == "failed"
        assert re.search(r"disk|quota", error, re.IGNORECASE) and "64" in error, error
        assert not (run / "output" / "never.txt").exists()
        assert _bytes_under(run) < 80 << 20
        assert left_after(run.name) == []
    finally:
        _remove_containers(run.name)


# -- item 23: a runner that dies leaves no container running ---------------------------------

SLEEPER = r"""
import json, os, time
with open("mode.txt") as fh:
    mode = fh.read().strip()
if mode == "check":  # the re-run: nobody else may write here any more
    with open("out.txt", "w") as fh:
        fh.write("new")
    def beat():
        try:
            with open("beat") as fh:
                return fh.read()
        except OSError:
            return None
    first = beat()
    time.sleep(0.5)
    with open("out.txt") as fh:
        kept = fh.read()
    assert (first, kept) == (beat(), "new"), "a process of the killed run is still writing"
else:
    n = 0
    while True:
        n += 1
        with open("out.txt", "w") as fh:
            fh.write("old")
        with open("beat", "w") as fh:
            fh.write(str(n))
        time.sleep(0.01)
"""


def _started(run: Path) -> bool:
    events = run / "events.jsonl"
    return events.exists() and "phase_started" in event_kinds(run)


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL], ids=["TERM", "HUP", "KILL"]
)
def test_item23_a_runner_killed_by_a_signal_leaves_no_container(
    docker_image: str, tmp_path: Path, sig: signal.Signals
) -> None:
    flow = _flow(
        tmp_path / "flow",
        docker_image,
        [_phase("work", "work.py", ["out.txt"], working=["mode.txt"])],
        {"work.py": SLEEPER, "mode.txt": "loop\n"},
        timeout=300,
    )
    run = begin(flow)
    proc = popen_praxis("advance", str(flow))
    try:
        _wait_until(lambda: _started(run), proc, "phase_started")
        _wait_until((run / "workspace" / "beat").exists, proc, "the phase's code ran")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
        if sig != signal.SIGKILL:  # handled like a cancel
            _no_traceback((out, err))
            state = state_of(run)
            assert state.status == "cancelled", (state.status, out[-2000:], err[-2000:])
            assert state.phase("work").status in ("cancelled", "failed"), state.phase("work")
            assert left_after(run.name) == []
            assert not os.path.ismount(run / "workspace")  # its disk image let go too
            return
        res = praxis("advance", str(flow))  # records the lost phase as failed
        _no_traceback(res)
        assert state_of(run).phase("work").status == "failed"
        # the orphan container may wait until a sandbox of the run opens again: the re-run's
        # advance removes it before the phase runs, and the phase checks nothing else writes
        (flow / "mode.txt").write_text("check\n")  # the re-run's copy of the phase checks
        res = praxis("rerun", str(flow), "--from", "work")
        assert res.returncode == 0, res.stderr
        res = praxis("advance", str(flow))
        assert res.returncode == 0, (res.stdout[-2000:], res.stderr[-2000:])
        assert (run / "output" / "out.txt").read_text() == "new"
        assert left_after(run.name) == []
        assert not os.path.ismount(run / "workspace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
        _remove_containers(run.name)
        if os.path.ismount(run / "workspace"):  # a mount left behind breaks tmp clean-up
            subprocess.run(["umount", "-l", str(run / "workspace")], check=False)


# -- item 26: a phase error of any type fails the phase with its own message -----------------

NOT_UTF8 = r"""
import os
fd = os.open(b"\xff\xfe.csv", os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"a,b\n1,2\n")
os.close(fd)
with open("ok.txt", "w") as fh:
    fh.write("ok")
"""


def test_item26_a_file_name_that_is_not_utf8_never_stops_the_run_unexplained(
    docker_image: str, tmp_path: Path
) -> None:
    flow = _flow(
        tmp_path / "flow", docker_image, [_phase("odd", "odd.py", ["ok.txt"])], {"odd.py": NOT_UTF8}
    )
    res = praxis("run", str(flow))
    _no_traceback(res)
    run = _the_run(flow, res)
    try:
        phase = state_of(run).phase("odd")
        assert phase.status in ("done", "failed"), phase.status
        if phase.status == "failed":
            assert res.returncode == 1, res.stderr[-2000:]
            assert phase.error and STOPPED not in phase.error, phase.error
            assert phase.error in res.stderr or "csv" in phase.error, (phase.error, res.stderr)
        else:
            assert res.returncode == 0, res.stderr[-2000:]
        status = praxis("status", str(flow))
        _no_traceback(status)
        assert status.returncode == 0, status.stderr
        assert left_after(run.name) == []
    finally:
        _remove_containers(run.name)


NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    },
    "cells": [
        {
            "id": "c1",
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "source": "with open('nb.txt', 'w') as fh:\n    fh.write('x')\n",
            "outputs": [],
        }
    ],
}

HOLD = r"""
import os, time
open("started", "w").close()
while not os.path.exists("release"):
    time.sleep(0.02)
with open("held.txt", "w") as fh:
    fh.write("held")
"""


def test_item26_a_notebook_made_malformed_during_the_run_fails_its_phase_with_its_message(
    docker_image: str, tmp_path: Path
) -> None:
    phases = [
        _phase("hold", "hold.py", ["held.txt"]),
        _phase("nb", "nb.ipynb", ["nb.txt"], kind="notebook"),
    ]
    flow = _flow(
        tmp_path / "flow", docker_image, phases, {"hold.py": HOLD, "nb.ipynb": json.dumps(NOTEBOOK)}
    )
    run = begin(flow)
    proc = popen_praxis("advance", str(flow))
    try:
        _wait_until((run / "workspace" / "started").exists, proc, "the first phase ran")
        (flow / "nb.ipynb").write_text('{"cells": [')  # edited while the run goes on
        (run / "workspace" / "release").write_text("go")
        out, err = proc.communicate(timeout=180)
        _no_traceback((out, err))
        # a phase failed (1), or the flow's definition is bad now (2): either says which file
        assert proc.returncode in (1, 2), (out[-2000:], err[-2000:])
        state = state_of(run)
        assert state.phase("hold").status == "done"
        nb = state.phase("nb")
        assert nb.status == "failed" and nb.error and STOPPED not in nb.error, nb.error
        assert "not JSON" in nb.error, nb.error
        assert left_after(run.name) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
        _remove_containers(run.name)
