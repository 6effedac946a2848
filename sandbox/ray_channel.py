"""The runner's end of the Ray bridge (``sandbox/ray_bridge.py``): the confined process, the
frames it is sent, and the replies it owes by request id.

A reply is a frame of JSON and raw bytes (``sandbox/ray_wire.py``), read by one thread and
handed to the request that waits for it. A bridge that breaks the format, answers what it
was not asked, or ends fails every waiting request with ``RayUnavailable`` naming the
address; one that stops reading is killed after ``WRITE_TIMEOUT``.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

from . import ray_confine, ray_wire
from .ray_cluster import RayUnavailable
from .ray_replies import text

log = logging.getLogger("sandbox")

WRITE_TIMEOUT = 300.0  # seconds one frame to the bridge may take
STDERR_TAIL = 4000  # characters kept of what the bridge printed, for its last words

Reply = Future[tuple[dict[str, Any], bytes]]


# bubblewrap's --die-with-parent ends the bridge when the *thread* that started it ends
# (PR_SET_PDEATHSIG), and sandboxes open on short-lived threads (``Opening``): every bridge is
# started by this one thread, which lives as long as the process.
_SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="ray-bridge-spawner")


class Bridge:
    """The confined Ray bridge process and the replies it owes, by request id."""

    def __init__(self, address: str) -> None:
        self.address = address
        argv, env = ray_confine.command(address)
        self.process = _SPAWNER.submit(
            subprocess.Popen,
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        ).result()
        self.pending: dict[int, Future[tuple[dict[str, Any], bytes]]] = {}
        self.lock = threading.Lock()  # pending, count, broken
        self.writing = threading.Lock()  # stdin
        self.count = 0
        self.broken: str | None = None
        self.stderr = ""
        threading.Thread(target=self._read, name="ray-bridge", daemon=True).start()
        threading.Thread(target=self._drain, name="ray-bridge-err", daemon=True).start()

    def request(
        self, message: dict[str, Any], blob: bytes = b""
    ) -> Future[tuple[dict[str, Any], bytes]]:
        future: Future[tuple[dict[str, Any], bytes]] = Future()
        with self.lock:
            if self.broken is not None:
                raise RayUnavailable(self.broken)
            self.count += 1
            rid = self.count
            self.pending[rid] = future
        if not self._write({**message, "id": rid}, blob):
            with self.lock:
                self.pending.pop(rid, None)
            raise RayUnavailable(self.broken or self._ended("ended"))
        return future

    def cast(self, message: dict[str, Any]) -> None:
        """A request whose reply nobody waits for."""
        if self.broken is None:
            self._write({**message, "id": None})

    def _write(self, message: dict[str, Any], blob: bytes = b"") -> bool:
        """One frame to the bridge; False when it is gone. A bridge that stops reading is
        ended after ``WRITE_TIMEOUT`` seconds, so no write waits longer."""
        stdin = self.process.stdin
        assert stdin is not None
        with self.writing:
            stop = threading.Timer(WRITE_TIMEOUT, self.process.kill)
            stop.start()
            try:
                ray_wire.write(stdin, message, blob)
                return True
            except (OSError, ValueError):
                return False
            finally:
                stop.cancel()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        why = "ended"
        try:
            while (frame := ray_wire.read(stdout)) is not None:
                message, blob = frame
                rid = message.get("id")
                with self.lock:
                    future = self.pending.pop(rid, None) if type(rid) is int else None
                if future is None:
                    why = "answered a request it was not asked"
                    break
                future.set_result((message, blob))
        except ray_wire.FrameError as exc:
            why = f"broke the reply format ({exc})"
        except (OSError, ValueError):
            pass
        self._fail(why)
        stdout.close()  # the bridge is ended now: nothing more to read

    def _fail(self, why: str) -> None:
        if why == "ended":  # its last words are on stderr: give them a moment
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        with self.lock:
            self.broken = self.broken or self._ended(why)
            pending, self.pending = self.pending, {}
        for future in pending.values():
            future.set_exception(RayUnavailable(self.broken))
        if self.process.poll() is None:
            self.process.kill()

    def _ended(self, why: str) -> str:
        last = [text(line) for line in self.stderr.strip().splitlines() if line.strip()]
        said = f": {last[-1]}" if last else ""
        return f"the Ray bridge for the cluster at {self.address} {why}{said}"

    def _drain(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        with stderr:  # closed at the bridge's end of it
            while piece := stderr.read1(65536):  # type: ignore[attr-defined]
                tail = self.stderr + piece.decode("utf-8", "replace")
                self.stderr = tail[-STDERR_TAIL:]

    def close(self) -> None:
        with self.lock:
            self.broken = self.broken or f"the Ray bridge for {self.address} was closed"
            stdin: IO[bytes] | None = self.process.stdin
        if stdin is not None and self.writing.acquire(timeout=5):
            try:
                stdin.close()  # the bridge closes the sandbox it holds, and ends
            except OSError:
                pass
            finally:
                self.writing.release()
        else:  # a write is stuck: a bridge that stopped reading
            self.process.kill()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
