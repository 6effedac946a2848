"""The host side of the kernel zygote (``sandbox/zygote.py``): start it, ask it for kernels.

Both backends start one zygote per sandbox and get every kernel from it: a fork of a process
that has ipykernel and pandas imported already, so a fresh interpreter costs a fork and the
kernel's own start-up, not a Python start and the imports. ``ForkServer`` speaks the zygote's
one-line protocol over its unix socket; ``ForkedKernel`` gives ``JupyterKernel`` what it needs
of one kernel (alive?, kill, why it died), from the zygote's answers and its ``KEY.exit``
files.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import SandboxUnavailable
from .files import open_nofollow

if TYPE_CHECKING:
    from jupyter_client.blocking.client import BlockingKernelClient

log = logging.getLogger("sandbox")

SOCKET = "zygote.sock"
LOG = "zygote.log"
REQUEST_TIMEOUT = 10.0  # seconds for one answer; the zygote answers in microseconds
# A sweep's answer: the zygote's own budget (zygote.py: 10 s to kill, 20 s to empty the
# folders) and a margin.
SWEEP_TIMEOUT = 45.0
READY_TIMEOUT = 60.0  # seconds for the zygote to import what kernels need
POLL = 0.01  # seconds between attempts to reach a starting zygote
ENDED_EVERY = 0.25  # seconds between checks that a starting zygote's process still runs


class ZygoteGone(SandboxUnavailable):
    """Raised when the zygote does not answer: it ended, or never started."""


@cache
def zygote_source() -> str:
    """The zygote script's source, as run with ``python -c``: its sweep's module first (the
    image has no ``sandbox`` package to import it from)."""
    here = Path(__file__).parent
    parts = [(here / name).read_text(encoding="utf-8") for name in ("zygote_sweep.py", "zygote.py")]
    return "\n".join(parts)


class ForkServer:
    """A client of the zygote listening on ``folder/zygote.sock`` (``folder`` is a host path)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.socket = self.folder / SOCKET

    def request(
        self, op: str, *, timeout: float = REQUEST_TIMEOUT, **fields: Any
    ) -> dict[str, Any]:
        """Send one request; the zygote's answer. Raises ZygoteGone if nobody answers."""
        line = json.dumps({"op": op, **fields}).encode() + b"\n"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            try:
                conn.connect(str(self.socket))
                conn.sendall(line)
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError as exc:  # refused, no such file, timeout, reset
                raise ZygoteGone(
                    f"the sandbox's kernel server does not answer ({exc.strerror or exc}); "
                    f"its log is {self.folder / LOG}"
                ) from exc
        try:
            answer = json.loads(data)
        except ValueError:
            raise ZygoteGone(f"the sandbox's kernel server hung up on {op!r}") from None
        if not isinstance(answer, dict):
            raise ZygoteGone(f"the sandbox's kernel server answered {op!r} with {data[:100]!r}")
        return answer

    def ping(self) -> bool:
        try:
            return bool(self.request("ping", timeout=2.0).get("ok"))
        except ZygoteGone:
            return False

    def wait_ready(self, *, ended: Callable[[], bool], timeout: float = READY_TIMEOUT) -> None:
        """Wait until the zygote answers; raise SandboxUnavailable if it ends or is too slow.

        ``ended()`` (is the zygote's process gone?) is asked every ENDED_EVERY seconds.
        """
        now = time.monotonic()
        deadline, check = now + timeout, now + ENDED_EVERY
        while not (self.socket.exists() and self.ping()):
            now = time.monotonic()
            if now >= check and ended():
                raise ZygoteGone(
                    f"the sandbox's kernel server ended while starting: {self.log_tail()}; "
                    "check that ipykernel is installed where kernels run"
                )
            check = now + ENDED_EVERY if now >= check else check
            if now > deadline:
                raise SandboxUnavailable(
                    f"the sandbox's kernel server did not start within {timeout:g} s: "
                    f"{self.log_tail()}"
                )
            time.sleep(POLL)

    def spawn(self, key: str, connection: dict[str, Any], code: Sequence[str] = ()) -> int:
        """Fork kernel ``key`` on ``connection`` (connection-file info as the zygote sees it),
        ``code`` run in it before it answers; its pid there."""
        answer = self.request("spawn", key=key, connection=connection, code=list(code))
        if not answer.get("ok"):
            raise SandboxUnavailable(
                f"the sandbox could not start a kernel: {answer.get('error', answer)}"
            )
        return int(answer["pid"])

    def activate(self, key: str) -> None:
        """Let dormant kernel ``key`` take the kernel uid and start answering."""
        answer = self.request("activate", key=key)
        if not answer.get("ok"):
            raise SandboxUnavailable(f"the sandbox could not start a kernel: {answer.get('error')}")

    def kill(self, key: str) -> None:
        """SIGKILL kernel ``key`` and its process group; returns at once."""
        self.request("kill", key=key)

    def sweep(self, timeout: float = SWEEP_TIMEOUT) -> None:
        """Kill every process that is not the zygote's own and remove what they left; wait
        until it is done. SandboxUnavailable when it fails or misses ``timeout``: never
        ZygoteGone (which lets the caller carry on as if the zygote had simply ended)."""
        try:
            answer = self.request("sweep", timeout=timeout)
        except ZygoteGone as exc:
            if isinstance(exc.__cause__, TimeoutError):
                raise SandboxUnavailable(
                    f"the sandbox's sweep did not finish within {timeout:g} s: the phase's "
                    f"processes may still run; its log is {self.folder / LOG}"
                ) from exc
            raise
        if not answer.get("ok"):
            raise SandboxUnavailable(
                f"the sandbox could not stop the phase's processes: {answer.get('error')}"
            )

    def status(self, key: str) -> str:
        """'running PID', 'exit N', 'signal N' or 'unknown'."""
        return str(self.request("status", key=key).get("status", "unknown"))

    def exit_status(self, key: str) -> str | None:
        """What ``KEY.exit`` says ('exit N' or 'signal N'), None while there is none."""
        text = read_tail(self.folder / f"{key}.exit", 64)
        return (text.strip() or None) if text is not None else None

    def log_tail(self, lines: int = 3) -> str:
        text = read_tail(self.folder / LOG, TAIL_BYTES)
        if text is None:
            return "no log"
        return " | ".join(text.strip().splitlines()[-lines:])[:TAIL_BYTES] or "empty log"

    def forget(self, key: str) -> None:
        """Remove what kernel ``key`` left in the folder (socket folder, exit file)."""
        (self.folder / f"{key}.exit").unlink(missing_ok=True)
        shutil.rmtree(self.folder / key, ignore_errors=True)


TAIL_BYTES = 2048


def read_tail(path: Path, limit: int) -> str | None:
    """The last ``limit`` bytes of a regular file, never following a link; None if absent."""
    try:
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        return os.pread(fd, limit, max(0, st.st_size - limit)).decode("utf-8", "replace")
    finally:
        os.close(fd)


class ZygoteSupervisor:
    """The host's hold on a sandbox's zygote (``sandbox/zygote.py``'s ``Zygote``, the server
    itself): started by ``launch``, started again once if it is found gone.

    ``launch()`` starts the zygote's process without waiting for it and returns a callable
    that tells whether that process has ended.
    """

    def __init__(
        self, server: ForkServer, launch: Callable[[], Callable[[], bool]], *, timeout: float
    ) -> None:
        self.server = server
        self.timeout = timeout
        self._launch = launch
        self._lock = threading.Lock()
        self._ended = launch()

    def spawn(self, key: str, connection: dict[str, Any], code: Sequence[str] = ()) -> int:
        """Fork kernel ``key`` (waiting for the zygote to be ready); its pid where it runs."""
        for attempt in (1, 2):
            with self._lock:
                ended = self._ended
            try:
                self.server.wait_ready(ended=ended, timeout=self.timeout)
                return self.server.spawn(key, connection, code)
            except ZygoteGone:
                if attempt == 2:
                    raise
                log.warning("the sandbox's kernel server ended; starting it again")
                with self._lock:
                    if self._ended is ended:  # not already started again by another thread
                        self._ended = self._launch()
        raise AssertionError("unreachable")


def describe_status(status: str | None) -> str | None:
    """'exit code 3', 'killed by signal SIGKILL' from a zygote status; None if not ended."""
    if not status:
        return None
    kind, _, number = status.partition(" ")
    if kind == "exit" and number.isdigit():
        return f"exit code {number}"
    if kind == "signal" and number.isdigit():
        try:
            return f"killed by signal {signal.Signals(int(number)).name}"
        except ValueError:
            return f"killed by signal {number}"
    return None


class ForkedKernel:
    """One kernel of a zygote, as ``JupyterKernel`` sees it: alive?, kill, why it died.

    ``fallback_kill`` stops the kernel (by its pid where the zygote runs) when the zygote is
    gone; ``JupyterKernel.shutdown`` then still leaves nothing running.
    """

    def __init__(
        self,
        server: ForkServer,
        key: str,
        pid: int,
        *,
        fallback_kill: Callable[[int], None] | None = None,
    ) -> None:
        self.server = server
        self.key = key
        self.pid = pid
        self.fallback_kill = fallback_kill
        self.ended: str | None = None  # the zygote's final status, once known
        self.zygote_gone = False
        self.killed = False  # SIGKILL sent: dead to its user, however soon the zygote reaps it

    def is_alive(self) -> bool:
        if self.ended is not None or self.zygote_gone or self.killed:
            return False
        try:
            status = self.server.status(self.key)
        except ZygoteGone:
            self.zygote_gone = True
            return False
        if status.startswith("running"):
            return True
        self.ended = status
        return False

    def kill(self) -> None:
        self.killed = True
        try:
            if not self.zygote_gone:
                self.server.kill(self.key)
        except ZygoteGone:
            self.zygote_gone = True
        if self.zygote_gone and self.fallback_kill is not None:
            self.fallback_kill(self.pid)
        self.server.forget(self.key)

    def death_cause(self) -> str | None:
        status = self.ended or self.server.exit_status(self.key)
        if status is None and not self.zygote_gone:
            try:
                status = self.server.status(self.key)
            except ZygoteGone:
                self.zygote_gone = True
        cause = describe_status(status)
        if cause is None and self.zygote_gone:
            return (
                "the sandbox's kernel server ended, and its kernels with it "
                f"({self.server.log_tail(1)})"
            )
        return cause


def connection_files(
    key: str, host_folder: Path, host_ip: str, kernel_ip: str
) -> tuple[BlockingKernelClient, dict[str, Any]]:
    """Kernel ``key``'s connection: a client for the host, and the info the kernel gets.

    Only the host's file is written (in ``host_folder``); the kernel's info (the same key,
    sockets named by ``kernel_ip``: the same folder seen from where the kernel runs) goes to
    the zygote in the spawn request and never lands in a file other code could read.
    """
    from jupyter_client.blocking.client import BlockingKernelClient
    from jupyter_client.connect import write_connection_file

    secret = uuid.uuid4().hex.encode()
    path, info = write_connection_file(
        str(host_folder / f"{key}.json"),
        ip=host_ip,  # e.g. <runtime>/k1/k: the kernel makes the folder k1/ (0700) itself
        transport="ipc",
        key=secret,
        shell_port=1,  # with ipc a "port" is only a socket file's suffix: k1-1, ...
        iopub_port=2,
        stdin_port=3,
        control_port=4,
        hb_port=5,
    )
    client = BlockingKernelClient(connection_file=path)
    client.load_connection_file()
    kernel = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in info.items()}
    kernel["ip"] = kernel_ip
    return client, kernel


def start_local(folder: Path, *, cwd: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """Start a zygote on this interpreter, serving ``folder/zygote.sock``; does not wait."""
    try:
        return subprocess.Popen(
            [sys.executable, "-c", zygote_source(), str(folder / SOCKET)],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C at the terminal is for the runner, not for it
        )
    except OSError as exc:
        raise SandboxUnavailable(
            f"cannot start the kernel server with {sys.executable}: {exc}"
        ) from exc


def stop_local(proc: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """Stop a local zygote and every kernel it started (SIGTERM, then SIGKILL)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
