"""The docker backend: one hardened container per run, kernels forked in it by a zygote.

The container runs an idle init process. One ``docker exec`` starts the kernel zygote
(``sandbox/zygote.py``, run with ``python -E -s -B -u -c``: no PYTHON* variable (``-B -u``
say what the image's variables say), no user site, only the image's own site hooks; not
``-I``, whose safe path would keep IPython from putting a kernel's working folder on
sys.path) in it as root with only the capabilities SETUID,
SETGID and KILL; every kernel is a fork of the zygote,
asked for over the zygote's unix socket ``/rt/zygote.sock``, and killed the same way: no
docker exec per kernel. A kernel binds its sockets in ``/rt/k<n>/`` while it is still root,
and becomes uid 1000 (with no capability) only when it is handed out: the runtime folder
(0700, root's), the zygote, the spare kernels and their keys are out of reach of phase code.
A flow's packages sit in their own prefix (``/opt/flow``, see ``image/layer_install.py``)
that only a kernel puts on its path, once it is uid 1000: nothing of theirs runs as root.
Between phases ``quiesce`` kills every process that is not the server's own, whatever its
uid, and removes what they left (``zygote_sweep.py``); a sweep that cannot finish raises.
Transport is ZMQ ``ipc``: the host's jupyter_client connects to the kernel's sockets by their
host path. The container has no network at all and its own IPC namespace.

Hardening (docs/reliability.md item 1) is in ``_host_config``; the workspace is a host folder
bind-mounted at ``/workspace`` and moved with plain file operations (``WorkspaceFolder``).
Kernels run with umask 022; the host (root) reads what they write by descriptor.
"""

from __future__ import annotations

import glob
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cgroup import oom_kills
from .daemon import connect as connect_docker
from .daemon import docker_errors
from .errors import DockerConflict, DockerMissing, SandboxUnavailable
from .forkserver import (
    SOCKET,
    ForkedKernel,
    ForkServer,
    ZygoteGone,
    ZygoteSupervisor,
    connection_files,
    zygote_source,
)
from .image.build import image_tag
from .options import DockerOptions
from .standby import Standby
from .values import disk_bytes
from .watchdog import Watchdog
from .workspace import FolderSandbox, WorkspaceFolder, unmount
from .zygote_kernels import ZygoteKernels

if TYPE_CHECKING:
    from .client import JupyterKernel

log = logging.getLogger("sandbox")

RUN_LABEL = "praxis.run"
ROOT = "0:0"  # the container and its kernel server: root with only SERVER_CAPS
UID = "1000:1000"  # phase code: no capabilities at all
KERNEL_UID = 1000
KERNEL_GID = 1000
SERVER_CAPS = ["SETUID", "SETGID", "KILL"]  # start kernels as KERNEL_UID, kill its processes
WORKSPACE = "/workspace"
RUNTIME = "/rt"
PATH = "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The whole environment of the container and its kernels: nothing comes from the host.
ENVIRONMENT = {
    "PATH": PATH,
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "IPYTHONDIR": "/tmp/.ipython",
    "MPLCONFIGDIR": "/tmp/.matplotlib",
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",  # figures shown as in Jupyter
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}
LOG_OPTIONS = {"max-size": "1m", "max-file": "2"}
# The container's command: the kernel server starts with the container (no docker exec on
# the way to the first kernel); `sleep` keeps the container up if the server ends, so that it
# can be started again with an exec, and the line it prints then says so (container logs).
ENDED = "kernel server ended"
COMMAND = [
    "sh",
    "-c",
    f'(python -E -s -B -u -c "$1" "$2" "$3" "$4" "$5"; echo "{ENDED}: $?") & exec sleep infinity',
]
GOING = 3.0  # seconds an earlier open's container gets to end by itself before it is removed
RUNTIME_PREFIX = "praxis-rt-"  # host runtime folders: praxis-rt-<name>-<random>
RUNTIME_SIZE = "64m"  # the runtime tmpfs: sockets, exit files, the kernel server's log


def _safe(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", name).strip("-.")[:40] or "run"


def _container_name(run: str) -> str:
    return f"praxis-{_safe(run)}-{uuid.uuid4().hex[:6]}"


class DockerSandbox(ZygoteKernels, FolderSandbox):
    """A run's hardened container; ``kernel()`` hands out fresh kernels from a warm standby."""

    backend = "docker"
    isolated = True

    def __init__(self, *, workspace: Path, name: str, options: DockerOptions | None = None) -> None:
        o = self.options = options or DockerOptions()
        # Inputs and recorded files go in as read-only links: the kernel's uid cannot write them.
        self.workspace = WorkspaceFolder(
            Path(workspace), kernel_uid=KERNEL_UID, disk=disk_bytes(o.disk) if o.disk else None
        )
        self.name = name
        self.image = o.image
        self.memory = str(o.memory)
        self.cpus = float(o.cpus)
        self.pids = int(o.pids)
        self.tmp_size = str(o.tmp_size)
        self.labels = {str(k): str(v) for k, v in o.labels.items()}
        self.stream_limit = o.stream_limit
        self.display_limit = o.display_limit
        self.grace = o.grace
        self.start_timeout = o.start_timeout
        self.warm = o.warm
        self.spares = int(o.spares)
        self.container: Any = None
        self._client: Any = None
        self._private: Path | None = None  # 0700 host folder: host connection files
        self._runtime: Path | None = None  # mounted at /rt: sockets, kernel connection files
        self._standby: Standby | None = None
        self._zygote: ZygoteSupervisor | None = None
        self._count = 0
        self._launches = 0
        self._watchdog: Watchdog | None = None
        self._dirty = False  # a kernel was handed out since the last quiesce
        self._lock = threading.Lock()

    # -- Sandbox ---------------------------------------------------------------------------

    def open(self) -> None:
        if self.container is not None:
            return
        self.image = self.image or image_tag()
        client = connect_docker()
        try:
            with docker_errors(f"inspect image {self.image}"):
                client.images.get(self.image)
        except SandboxUnavailable as exc:
            client.close()
            if isinstance(exc, DockerMissing):
                raise SandboxUnavailable(
                    f"the sandbox image {self.image} is missing; build it with "
                    "`praxis sandbox build` (python -m sandbox.image.build)"
                ) from None
            raise
        self._client = client
        self._remove_leftovers()
        self.workspace.open()
        name = _container_name(self.name)
        self._watchdog = Watchdog(self.watch_report)  # ends the container if we die first
        self._watchdog.watch("container", name)
        self._private = Path(tempfile.mkdtemp(prefix=f"{RUNTIME_PREFIX}{_safe(self.name)}-"))
        self._runtime = self._private / "rt"
        self._runtime.mkdir(mode=0o700)  # the kernel server's (root): phase code cannot enter
        _mount_runtime(self._runtime)  # its own tmpfs: its host path is not in mountinfo
        self._watchdog.watch("runtime", str(self._runtime))  # unmounted, removed if we die
        try:
            with docker_errors(f"start the sandbox container from {self.image}"):
                self.container = self._client.containers.run(
                    self.image,
                    [*COMMAND, "zygote", *self._zygote_args()],
                    name=name,
                    detach=True,
                    labels={**self.labels, RUN_LABEL: self.name},
                    environment=dict(ENVIRONMENT),
                    user=ROOT,
                    working_dir=WORKSPACE,
                    auto_remove=True,  # close() only kills it: the daemon removes it meanwhile
                    **self._host_config(),
                )
        except SandboxUnavailable:
            self._remove_runtime()
            self._client.close()
            self._client = None
            self._end_watch()
            raise
        try:
            server = ForkServer(self._runtime)
            self._launches = 0  # this container's command is its zygote's first start
            self._zygote = ZygoteSupervisor(server, self._launch_zygote, timeout=self.start_timeout)
        except BaseException:
            self.close()
            raise
        self._standby = Standby(self._start, spares=self.spares, activate=self._activate)
        if self.warm:
            self._standby.warm()

    def close(self) -> None:
        standby, self._standby = self._standby, None
        for kernel in standby.close() if standby is not None else []:
            from .client import JupyterKernel  # jupyter_client: heavy, once kernels were made

            if isinstance(kernel, JupyterKernel):
                kernel.abandon()  # the container goes next, with every process
        self._zygote = None
        container, self.container = self.container, None
        stopping = None
        if container is not None:  # it removes itself (auto_remove): nobody waits for that
            stopping = threading.Thread(target=_stop, args=(container,), name="sandbox-stop")
            stopping.start()
        self.workspace.close()  # the host's mount, while the kill is on its way
        if stopping is not None:
            stopping.join()
        self._end_watch()
        self._remove_runtime()
        if self._client is not None:
            self._client.close()
            self._client = None

    def usable(self) -> bool:
        if self.container is None or self._client is None:
            return False
        try:
            with docker_errors("inspect the sandbox container"):
                state = self._client.api.inspect_container(self.container.id)["State"]
        except SandboxUnavailable:
            return False
        return bool(state.get("Running"))

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "image": self.image,
            "container": getattr(self.container, "name", None),
            "memory": self.memory,
            "cpus": self.cpus,
            "pids": self.pids,
            "disk": self.workspace.quota,
        }

    # -- the container ---------------------------------------------------------------------

    def _host_config(self) -> dict[str, Any]:
        """Every hardening setting of the container (docs/reliability.md item 1)."""
        from docker.types import LogConfig, Mount

        assert self._runtime is not None
        return {
            "network_mode": "none",
            "ipc_mode": "private",  # its own SysV IPC namespace, emptied at each sweep
            "cgroupns": "private",  # its cgroup paths start at / (no host path in mountinfo)
            "cap_drop": ["ALL"],
            "cap_add": list(SERVER_CAPS),
            "security_opt": ["no-new-privileges"],
            "read_only": True,
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={self.tmp_size},mode=1777"},
            "pids_limit": self.pids,
            "mem_limit": self.memory,
            "memswap_limit": self.memory,
            "nano_cpus": int(self.cpus * 1e9),
            "init": True,
            "log_config": LogConfig(type="json-file", config=dict(LOG_OPTIONS)),
            "mounts": [
                Mount(WORKSPACE, str(self.workspace.root.resolve()), type="bind"),
                Mount(RUNTIME, str(self._runtime), type="bind"),
            ],
        }

    def _remove_leftovers(self) -> None:
        """Remove what a runner of this sandbox's name left when it died (SIGKILL): its
        container (with every process in it) and its runtime folders. Before anything runs."""
        found = self._leftovers()
        going = [row["Id"] for row in found if _closed(row)]
        if going:  # the last close's container, ending by itself: a moment
            self._wait_gone(going, timeout=GOING, quiet=True)
            found = self._leftovers()
        for row in found:
            if row.get("State") not in ("exited", "dead", "removing"):  # killed: going by itself
                log.warning("removing a container left by a runner that died: %s", row["Names"])
            try:
                with docker_errors("remove a leftover container"):
                    self._client.api.remove_container(row["Id"], force=True)
            except (DockerMissing, DockerConflict):  # gone, or its removal is under way
                pass
        self._wait_gone([row["Id"] for row in found])
        prefix = f"{RUNTIME_PREFIX}{_safe(self.name)}-"
        for folder in Path(tempfile.gettempdir()).glob(f"{glob.escape(prefix)}*"):
            if folder.is_dir() and not folder.is_symlink():
                unmount(folder / "rt")
                shutil.rmtree(folder, ignore_errors=True)

    def _leftovers(self) -> list[dict[str, Any]]:
        """The daemon's rows of every container labelled with this sandbox's name."""
        with docker_errors("list containers"):
            found: list[dict[str, Any]] = self._client.api.containers(
                all=True, filters={"label": f"{RUN_LABEL}={self.name}"}
            )
        return found

    def _wait_gone(self, ids: list[str], timeout: float = 30.0, quiet: bool = False) -> None:
        """Return once no container of ``ids`` exists: the workspace (and its disk image) is
        then no longer in use by a container of an earlier open. Past ``timeout``: raise, or
        with ``quiet`` return."""
        deadline = time.monotonic() + timeout
        for cid in ids:
            while True:
                try:
                    with docker_errors("inspect a container"):
                        self._client.api.inspect_container(cid)
                except DockerMissing:
                    break
                if time.monotonic() > deadline:
                    if quiet:
                        return
                    raise SandboxUnavailable(
                        f"container {cid[:12]} of an earlier run of {self.name} is still being "
                        "removed; try again, or run `praxis sandbox prune`"
                    )
                time.sleep(0.02)

    def _end_watch(self) -> None:
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.close()

    def _remove_runtime(self) -> None:
        if self._private is not None:
            unmount(self._private / "rt")
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = self._runtime = None

    # -- kernels ---------------------------------------------------------------------------

    def _zygote_args(self) -> list[str]:
        return [
            zygote_source(),
            f"{RUNTIME}/{SOCKET}",
            str(KERNEL_UID),
            str(KERNEL_GID),
            str(os.getuid()),
        ]

    def _launch_zygote(self) -> Callable[[], bool]:
        """The zygote's first start is the container's command; a later one (it ended) is a
        docker exec. It imports in the background. Returns: has that start ended?"""
        self._launches += 1
        if self._launches == 1:
            return self._command_ended
        server = ["python", "-E", "-s", "-B", "-u", "-c", *self._zygote_args()]
        exec_id = self._exec(server, user=ROOT)
        return lambda: not self._running(exec_id)

    def _command_ended(self) -> bool:
        """Whether the zygote the container started has ended (its shell said so)."""
        try:
            with docker_errors("read the sandbox container's log"):
                return ENDED.encode() in self._client.api.logs(self.container.id, tail=3)
        except DockerMissing:
            return True  # the container is gone, and the zygote with it
        except SandboxUnavailable:
            return False

    def _start(self) -> JupyterKernel:
        """Fork one dormant kernel in the container (its uid comes at ``_activate``)."""
        key = self._next_key()
        if self.container is None or self._runtime is None or self._private is None:
            raise SandboxUnavailable("the docker sandbox is closed")
        client, info = connection_files(
            key, self._private, str(self._runtime / key / "k"), f"{RUNTIME}/{key}/k"
        )
        baseline = oom_kills(self.container, UID)
        return self._fork(
            key,
            client,
            info,
            fallback_kill=self._kill_group,
            files=[self._private / f"{key}.json"],
            death_cause=lambda forked: self._death_cause(forked, baseline),
        )

    def _handing_out(self) -> None:
        self._dirty = True  # code may run from now on: the next quiesce sweeps

    def quiesce(self) -> None:
        """Stop everything a phase started and remove what it left outside the workspace,
        then seal the workspace. Raises SandboxUnavailable when the sweep cannot finish (and
        sweeps again at the next call): nothing is sealed over a phase still running."""
        if not self._dirty:
            return  # no kernel was handed out since the last quiesce: nothing can run
        if self._standby is not None:
            for kernel in self._standby.handed_out():
                kernel.shutdown()
        if self.container is None:
            self._dirty = False
            return
        try:
            if self._zygote is None:
                raise ZygoteGone("no kernel server")
            self._zygote.server.sweep()
        except ZygoteGone:
            # the kernel server is gone: kill the kernel uid's processes with a docker exec;
            # the next kernel starts a new server, whose first sweep does the rest
            self._exec_wait(["python", "-I", "-c", "import os; os.kill(-1, 9)"], user=UID)
        self._dirty = False
        self.workspace.seal()  # what the phase wrote is read-only to every later phase

    def _exec(self, cmd: list[str], *, user: str = UID) -> str:
        """Start ``cmd`` in the container as ``user``, detached; the exec's id."""
        with docker_errors("run in the sandbox container"):
            api = self._client.api
            created = api.exec_create(
                self.container.id,
                cmd,
                user=user,
                workdir=WORKSPACE,
                environment=dict(ENVIRONMENT),
            )
            exec_id: str = created["Id"]
            api.exec_start(exec_id, detach=True)
        return exec_id

    def _exec_wait(self, cmd: list[str], *, user: str) -> None:
        """Run ``cmd`` in the container as ``user`` and wait for it (its output is dropped)."""
        with docker_errors("run in the sandbox container"):
            self.container.exec_run(cmd, user=user)

    def _running(self, exec_id: str) -> bool:
        try:
            with docker_errors("inspect an exec of the sandbox container"):
                return bool(self._client.api.exec_inspect(exec_id).get("Running"))
        except DockerMissing:
            return False  # the container is gone, and the kernel with it

    def _kill_group(self, pid: int) -> None:
        """SIGKILL a kernel's process group with a docker exec: the zygote is gone."""
        if self.container is None:
            return
        try:
            self._exec(["python", "-I", "-c", f"import os; os.killpg({int(pid)}, 9)"], user=ROOT)
        except SandboxUnavailable:
            log.debug("could not kill kernel %s", pid, exc_info=True)

    def _death_cause(self, forked: ForkedKernel, baseline: int | None) -> str | None:
        try:
            with docker_errors("inspect the sandbox container"):
                state = self._client.api.inspect_container(self.container.id)["State"]
        except DockerMissing:
            return "the sandbox container is gone (it stopped, or prune or a person removed it)"
        except Exception:
            state = {"Running": True}
        if not state.get("Running"):
            return "the sandbox container stopped"
        kills = oom_kills(self.container, UID)
        if baseline is not None and kills is not None and kills > baseline:
            return f"out of memory (the sandbox's memory limit is {self.memory})"
        return forked.death_cause()


def _mount_runtime(folder: Path) -> None:
    """Make the runtime folder a small tmpfs of its own when the host may mount (root): the
    container's mountinfo then shows ``/`` for ``/rt``, not the host path (the run's name),
    and what the kernel server writes there cannot fill the host's disk. Without root it
    stays a plain folder, its path visible in the container."""
    if os.geteuid() != 0:
        return
    options = f"size={RUNTIME_SIZE},mode=0700,nosuid,nodev,noexec"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "praxis-rt", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        log.warning("runtime folder %s stays a plain folder: %s", folder, done.stderr.strip())


def _closed(row: dict[str, Any]) -> bool:
    """Whether a container (a row of the daemon's list) was closed by its runner: close()
    removes the runtime folder once the container's end is under way; a runner that died
    left its folder behind."""
    for mount in row.get("Mounts") or []:
        if mount.get("Destination") == RUNTIME:
            return not os.path.lexists(str(mount.get("Source", "")))
    return False


def _stop(container: Any) -> None:
    """End the container; the daemon then removes it (it was started with auto_remove).

    SIGTERM goes to its init (docker-init), which passes it to its one child (``sleep``, the
    command's last word): that ends, the init ends with it, and the kernel kills every other
    process of the container's PID namespace. Phase code (uid 1000, no capability) can
    neither catch nor block a signal to root's processes. The daemon answers a SIGKILL only
    once the container has stopped (80-100 ms here); this returns once the signal is sent
    (about 20 ms), and the container goes in the next moments. If the signal cannot be sent,
    the container is removed here (force)."""
    try:
        with docker_errors(f"kill container {container.name}"):
            container.kill(signal="SIGTERM")
        return
    except DockerMissing:
        return
    except SandboxUnavailable as exc:
        log.debug("%s; removing it", exc)
    try:
        with docker_errors(f"remove container {container.name}"):
            container.remove(force=True)
    except DockerMissing:
        pass
    except SandboxUnavailable as exc:
        log.warning("%s", exc)
