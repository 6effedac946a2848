"""The docker backend: one hardened container per run, kernels started in it with docker exec.

The container runs an idle init process; each kernel is ``python -m ipykernel_launcher -f
/rt/k<n>.json`` started by ``docker exec``. Transport is ZMQ ``ipc``: the kernel binds unix
sockets in ``/rt``, a bind-mounted private runtime folder, and the host's jupyter_client
connects to the same sockets by their host path. The container has no network at all.

Hardening (RELIABILITY.md item 1) is in ``_host_config``; the workspace is a host folder
bind-mounted at ``/workspace`` and moved with plain file operations (``Workspace``).
Kernels run with umask 000 so the host user can read, move and delete what they write.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.connect import write_connection_file

from .base import FileStat, Kernel, Sandbox
from .client import DISPLAY_LIMIT, GRACE, STREAM_LIMIT, JupyterKernel
from .errors import SandboxError, SandboxUnavailable
from .local import _close_thread_loop
from .standby import Standby
from .workspace import Workspace

log = logging.getLogger("sandbox")

RUN_LABEL = "praxis.run"
UID = "1000:1000"
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
    "MPLBACKEND": "Agg",
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}
LOG_OPTIONS = {"max-size": "1m", "max-file": "2"}
KILL_WAIT = 5.0  # seconds kill() waits for the daemon to report the kernel ended


def docker_available(timeout: float = 2.0) -> str | None:
    """None when a Docker daemon answers a ping within ``timeout`` s, else a short reason."""
    try:
        import docker
    except ImportError:
        return "the docker Python package is not installed"
    try:
        client = docker.from_env(timeout=max(1, round(timeout)))
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # DockerException, requests' connection errors and timeouts
        text = str(exc).strip().splitlines()
        return (text[0] if text else type(exc).__name__)[:200]
    return None


def _container_name(run: str) -> str:
    safe = re.sub(r"[^a-zA-Z0-9_.-]+", "-", run).strip("-.")[:40] or "run"
    return f"praxis-{safe}-{uuid.uuid4().hex[:6]}"


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return str(code)


class DockerSandbox(Sandbox):
    """A run's hardened container; ``kernel()`` hands out fresh kernels from a warm standby."""

    backend = "docker"
    isolated = True

    def __init__(
        self,
        *,
        workspace: Path,
        name: str,
        image: str | None = None,
        memory: str = "2g",
        cpus: float = 1.0,
        pids: int = 256,
        tmp_size: str = "256m",
        timeout: float | None = None,  # the runner's per-phase timeout; not used here
        labels: dict[str, str] | None = None,
        stream_limit: int = STREAM_LIMIT,
        display_limit: int = DISPLAY_LIMIT,
        grace: float = GRACE,
        start_timeout: float = 60.0,
        warm: bool = True,
        **options: Any,
    ) -> None:
        if options:
            log.debug("docker sandbox ignores options %s", ", ".join(sorted(options)))
        self.workspace = Workspace(Path(workspace))
        self.name = name
        self.image = image
        self.memory = str(memory)
        self.cpus = float(cpus)
        self.pids = int(pids)
        self.tmp_size = str(tmp_size)
        self.labels = {str(k): str(v) for k, v in (labels or {}).items()}
        self.stream_limit = stream_limit
        self.display_limit = display_limit
        self.grace = grace
        self.start_timeout = start_timeout
        self.warm = warm
        self.container: Any = None
        self._client: Any = None
        self._private: Path | None = None  # 0700 host folder: host connection files
        self._runtime: Path | None = None  # mounted at /rt: sockets, kernel connection files
        self._standby: Standby | None = None
        self._kernels: list[JupyterKernel] = []
        self._count = 0
        self._lock = threading.Lock()

    # -- Sandbox ---------------------------------------------------------------------------

    def open(self) -> None:
        if self.container is not None:
            return
        import docker.errors

        from .image.build import image_tag

        self.image = self.image or image_tag()
        client = connect_docker()
        try:
            client.images.get(self.image)
        except docker.errors.DockerException as exc:
            client.close()
            if isinstance(exc, docker.errors.ImageNotFound):
                raise SandboxUnavailable(
                    f"the sandbox image {self.image} is missing; build it with "
                    "`praxis sandbox build` (python -m sandbox.image.build)"
                ) from None
            raise SandboxUnavailable(f"cannot inspect image {self.image}: {exc}") from exc
        self._client = client
        self.workspace.open()
        self._private = Path(tempfile.mkdtemp(prefix="praxis-rt-"))
        self._runtime = self._private / "rt"
        self._runtime.mkdir()
        os.chmod(self._runtime, 0o777)  # the kernel (uid 1000) creates its sockets here
        try:
            self.container = self._client.containers.run(
                self.image,
                ["sleep", "infinity"],
                name=_container_name(self.name),
                detach=True,
                labels={**self.labels, RUN_LABEL: self.name},
                environment=dict(ENVIRONMENT),
                user=UID,
                working_dir=WORKSPACE,
                **self._host_config(),
            )
        except docker.errors.DockerException as exc:
            self._remove_runtime()
            self._client.close()
            self._client = None
            raise SandboxUnavailable(
                f"cannot start the sandbox container from {self.image}: {exc}"
            ) from exc
        self._standby = Standby(self._start)
        if self.warm:
            self._standby.warm()

    def upload(self, src: Path, name: str) -> None:
        self.workspace.upload(src, name)
        dest = self.workspace.root / name
        if not os.stat(dest).st_mode & stat.S_IROTH:
            # A hardlink shares the source's mode: give the kernel (uid 1000) a readable copy.
            os.unlink(dest)
            shutil.copyfile(src, dest)
            os.chmod(dest, 0o644)

    def listing(self) -> dict[str, FileStat]:
        return self.workspace.listing()

    def fetch(self, name: str, dest: Path) -> None:
        self.workspace.fetch(name, dest)

    def kernel(self) -> Kernel:
        if self._standby is None:
            raise SandboxUnavailable("the docker sandbox is not open; call open() first")
        try:
            kernel = self._standby.take()
        except SandboxError as exc:
            # The spare may have failed to start while the last phase ran (e.g. it used up
            # the pids limit); one more attempt starts a kernel now.
            log.debug("standby kernel failed (%s); starting another", exc)
            kernel = self._standby.take()
        with self._lock:
            self._kernels = [k for k in self._kernels if not k._closed]
            self._kernels.append(kernel)  # type: ignore[arg-type]
        return kernel

    @property
    def kernels_started(self) -> int:
        return self._standby.started if self._standby is not None else 0

    def close(self) -> None:
        standby, self._standby = self._standby, None
        if standby is not None:
            standby.close()
        with self._lock:
            kernels, self._kernels = self._kernels, []
        for kernel in kernels:
            kernel.client.stop_channels()  # the container goes next, with every process
            kernel._closed = True
        container, self.container = self.container, None
        if container is not None:
            _remove(container)
        self._remove_runtime()
        if self._client is not None:
            self._client.close()
            self._client = None

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "image": self.image,
            "container": getattr(self.container, "name", None),
            "memory": self.memory,
            "cpus": self.cpus,
            "pids": self.pids,
        }

    # -- the container ---------------------------------------------------------------------

    def _host_config(self) -> dict[str, Any]:
        """Every hardening setting of the container (RELIABILITY.md item 1)."""
        from docker.types import LogConfig, Mount

        assert self._runtime is not None
        return {
            "network_mode": "none",
            "cap_drop": ["ALL"],
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

    def _remove_runtime(self) -> None:
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = self._runtime = None

    # -- kernels ---------------------------------------------------------------------------

    def _start(self) -> JupyterKernel:
        """Start one kernel, wait until it answers, import pandas. Runs on the standby thread."""
        with self._lock:
            self._count += 1
            key = f"k{self._count}"
        if self.container is None or self._runtime is None or self._private is None:
            raise SandboxUnavailable("the docker sandbox is closed")
        client = self._connect_kernel(key)
        baseline = self._oom_kills()
        exec_id = self._exec(
            f"umask 000; echo $$ > {RUNTIME}/{key}.pid; "
            f"exec python -m ipykernel_launcher -f {RUNTIME}/{key}.json",
            detach=True,
        )
        kernel = JupyterKernel(
            client,
            is_alive=lambda: self._running(exec_id),
            kill=lambda: self._kill(key, exec_id),
            death_cause=lambda: self._death_cause(exec_id, baseline),
            grace=self.grace,
            stream_limit=self.stream_limit,
            display_limit=self.display_limit,
        )
        try:
            kernel.start_up(self.start_timeout)
        except BaseException:
            kernel.shutdown()
            raise
        finally:
            _close_thread_loop()
        return kernel

    def _connect_kernel(self, key: str) -> BlockingKernelClient:
        """Write the two connection files (container paths, host paths); a client for the host."""
        assert self._runtime is not None and self._private is not None
        secret = uuid.uuid4().hex.encode()
        files = ((self._runtime, f"{RUNTIME}/{key}"), (self._private, str(self._runtime / key)))
        for folder, ip in files:
            write_connection_file(
                str(folder / f"{key}.json"),
                ip=ip,
                transport="ipc",
                key=secret,
                shell_port=1,  # with ipc a "port" is only a socket file's suffix: k1-1, ...
                iopub_port=2,
                stdin_port=3,
                control_port=4,
                hb_port=5,
            )
        # Read by uid 1000 in the container; the folder above is private to the host user.
        os.chmod(self._runtime / f"{key}.json", 0o644)
        client = BlockingKernelClient(connection_file=str(self._private / f"{key}.json"))
        client.load_connection_file()
        return client

    def _exec(self, script: str, *, detach: bool = False) -> str:
        """Run ``sh -c script`` in the container as uid 1000; the exec's id."""
        import docker.errors

        try:
            api = self._client.api
            created = api.exec_create(
                self.container.id,
                ["sh", "-c", script],
                user=UID,
                workdir=WORKSPACE,
                environment=dict(ENVIRONMENT),
            )
            exec_id: str = created["Id"]
            if detach:
                api.exec_start(exec_id, detach=True)
            else:
                api.exec_start(exec_id)
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(f"cannot run in the sandbox container: {exc}") from exc
        return exec_id

    def _oom_kills(self) -> int | None:
        """How many processes the container's memory cgroup has OOM-killed, if it can be told.

        Read on the host when the daemon is local (cgroup v1 ``memory.oom_control``, v2
        ``memory.events``), else inside the container.
        """
        cid = self.container.id
        for path in _CGROUP_FILES:
            try:
                return _oom_count(Path(path.format(id=cid)).read_text())
            except (OSError, ValueError):
                continue
        try:
            out = self.container.exec_run(
                [
                    "sh",
                    "-c",
                    "cat /sys/fs/cgroup/memory/memory.oom_control "
                    "/sys/fs/cgroup/memory.events 2>/dev/null",
                ],
                user=UID,
            ).output
            return _oom_count(out.decode(errors="replace"))
        except Exception:
            log.debug("cannot read the OOM counter", exc_info=True)
            return None

    def _running(self, exec_id: str) -> bool:
        import docker.errors

        try:
            return bool(self._client.api.exec_inspect(exec_id).get("Running"))
        except docker.errors.NotFound:
            return False  # the container is gone, and the kernel with it

    def _kill(self, key: str, exec_id: str) -> None:
        """SIGKILL the kernel by the pid it wrote and wait (briefly) for the daemon to see it.

        Tolerates a kernel or container already gone.
        """
        if self.container is None or self._runtime is None:
            return
        pid_file = self._runtime / f"{key}.pid"
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            pid = None
        if pid is not None:
            try:
                self._exec(f"kill -9 {pid} 2>/dev/null || true")
            except SandboxUnavailable:
                log.debug("could not kill kernel %s", key, exc_info=True)
            deadline = time.monotonic() + KILL_WAIT
            while time.monotonic() < deadline and self._running(exec_id):
                time.sleep(0.05)
        for leftover in (pid_file, self._runtime / f"{key}.json"):
            leftover.unlink(missing_ok=True)
        if self._private is not None:
            (self._private / f"{key}.json").unlink(missing_ok=True)

    def _death_cause(self, exec_id: str, baseline: int | None) -> str | None:
        import docker.errors

        try:
            state = self._client.api.inspect_container(self.container.id)["State"]
        except docker.errors.NotFound:
            return "the sandbox container was removed (by prune or by hand?)"
        except Exception:
            state = {"Running": True}
        if not state.get("Running"):
            return "the sandbox container stopped"
        kills = self._oom_kills()
        if baseline is not None and kills is not None and kills > baseline:
            return f"out of memory (the sandbox's memory limit is {self.memory})"
        try:
            code = self._client.api.exec_inspect(exec_id).get("ExitCode")
        except Exception:
            return None
        if code is None:
            return None
        if code > 128:
            return f"killed by signal {_signal_name(code - 128)}"
        return f"exit code {code}"


_CGROUP_FILES = (
    "/sys/fs/cgroup/memory/docker/{id}/memory.oom_control",
    "/sys/fs/cgroup/memory/system.slice/docker-{id}.scope/memory.oom_control",
    "/sys/fs/cgroup/system.slice/docker-{id}.scope/memory.events",
    "/sys/fs/cgroup/docker/{id}/memory.events",
)


def _oom_count(text: str) -> int:
    """The ``oom_kill N`` counter of a v1 memory.oom_control or a v2 memory.events."""
    match = re.search(r"^oom_kill (\d+)$", text, re.M)
    if match is None:
        raise ValueError("no oom_kill counter")
    return int(match.group(1))


def connect_docker() -> Any:
    import docker
    import docker.errors

    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(
            f"no Docker daemon answers ({exc}); start Docker or use the local backend"
        ) from exc
    return client


def _remove(container: Any) -> None:
    import docker.errors

    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.DockerException as exc:
        log.warning("could not remove container %s: %s", container.name, exc)
