"""A Jupyter kernel reached over ZMQ, as a ``sandbox.Kernel``; shared by every backend.

The backend starts the kernel process and hands over a ``BlockingKernelClient`` (or any
object with a ``client()`` method returning one, such as a started ``KernelManager``) plus
callables for what only it knows: whether the process is alive, how to kill it, and why it
died. This module owns the protocol policy: reading iopub until idle, capping output as it
arrives, interrupt-then-kill at the timeout, and noticing a dead kernel while code runs.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable
from typing import Any

import zmq
from jupyter_client.blocking.client import BlockingKernelClient

from .base import GRACE, ExecResult, Kernel, OutputCallback
from .collector import Collector
from .errors import ExecTimeout, KernelDied, SandboxUnavailable
from .output import DISPLAY_LIMIT, STREAM_LIMIT, WARM_UP, start_code

log = logging.getLogger("sandbox")

POLL = 0.2  # seconds between liveness checks while waiting on iopub
IOPUB_HWM = 8  # iopub messages queued on the host side; the rest wait in the kernel's queue
RECONNECT_MS = 10  # zmq's retry interval while the new kernel has not bound its sockets yet
REPLY_WAIT = 5.0  # seconds to wait for execute_reply once iopub went idle
READY_IOPUB = 0.25  # seconds ready() waits for kernel_info's idle on iopub before asking again
MAX_MESSAGE = 64 << 20  # bytes: zmq drops a larger message (from hostile code) unread


def alive(kernel: Kernel) -> bool:
    """Whether a kernel from a backend's spares is still fit to hand out."""
    return isinstance(kernel, JupyterKernel) and kernel.alive()


class JupyterKernel(Kernel):
    """A started Jupyter kernel: ``execute`` with caps, timeout and death detection.

    ``is_alive()`` and ``kill()`` come from the backend (process or container); ``kill`` must
    tolerate a process already gone. ``death_cause()`` names why the kernel died ("exit code
    1", "out of memory") or returns None. ``interrupt`` defaults to an ``interrupt_request`` on
    the control channel, which ipykernel honours on every transport.
    """

    def __init__(
        self,
        client: BlockingKernelClient | Any,
        *,
        is_alive: Callable[[], bool],
        kill: Callable[[], None],
        death_cause: Callable[[], str | None] | None = None,
        interrupt: Callable[[], None] | None = None,
        stream_limit: int = STREAM_LIMIT,
        display_limit: int = DISPLAY_LIMIT,
        grace: float = GRACE,
        poll: float = POLL,
        name: str = "",
    ) -> None:
        if not isinstance(client, BlockingKernelClient) and callable(
            getattr(client, "client", None)
        ):
            client = client.client()
        self.client: BlockingKernelClient = client
        self._is_alive = is_alive
        self._kill = kill
        self._death_cause = death_cause
        self._interrupt = interrupt
        self.stream_limit = stream_limit
        self.display_limit = display_limit
        self.grace = grace
        self.poll = poll
        self.name = name  # the backend's name for this kernel (its zygote key)
        self.closed = False
        self._unfinished: ExecResult | None = None
        if not self.client.channels_running:
            self._start_channels()

    # -- lifecycle -------------------------------------------------------------------------

    def _start_channels(self) -> None:
        """Start the client's channels with a small receive queue.

        Output past the cap is dropped as it is read, but zmq would otherwise queue up to
        1000 messages (of any size) on the host while we read; a low receive high-water mark
        leaves that backlog in the kernel's process instead.
        """
        ctx = self.client.context
        saved = dict(ctx.sockopts)
        ctx.sockopts[zmq.RCVHWM] = IOPUB_HWM
        ctx.sockopts[zmq.RECONNECT_IVL] = RECONNECT_MS
        ctx.sockopts[zmq.MAXMSGSIZE] = MAX_MESSAGE
        try:
            # no heartbeat (liveness comes from the backend) and no stdin (allow_stdin=False)
            self.client.start_channels(shell=True, iopub=True, stdin=False, hb=False)
        except zmq.ZMQError as exc:
            raise SandboxUnavailable(f"cannot connect to the kernel: {exc}") from exc
        finally:
            ctx.sockopts.clear()
            ctx.sockopts.update(saved)

    def ready(self, timeout: float = 60.0) -> None:
        """Wait until the kernel answers kernel_info and iopub delivers; raise if it never does.

        Raises KernelDied if the process ends meanwhile, SandboxUnavailable past ``timeout``.
        """
        self._ready(time.monotonic() + timeout, timeout)

    def ready_running(self, code: str, timeout: float = 60.0) -> ExecResult:
        """``ready``, with ``code`` as the first probe instead of a kernel_info: one round
        trip where ``ready`` then ``execute`` take two. ``code`` runs once. Its result comes
        from its reply and the output iopub delivered; if iopub was not connected yet (its
        idle does not come), kernel_info probes follow until it is, and output sent before
        then is missing from the result."""
        deadline = time.monotonic() + timeout
        started = time.monotonic()
        collector = Collector(self.stream_limit, self.display_limit)
        try:
            msg_id = self.client.execute(code, store_history=False, allow_stdin=False)
            reply = None
            while reply is None:
                self._check_alive_or_expired(deadline, timeout)
                reply = self._wait_reply(msg_id, min(1.0, max(0.0, deadline - time.monotonic())))
            delivered = self._drain(msg_id, collector, time.monotonic() + READY_IOPUB)
        except zmq.ZMQError as exc:
            raise SandboxUnavailable(f"cannot reach the kernel: {exc}") from exc
        content = reply.get("content")
        result = collector.finish(
            time.monotonic() - started, content if isinstance(content, dict) else None
        )
        if not delivered:
            self._ready(deadline, timeout)
        return result

    def _check_alive_or_expired(self, deadline: float, timeout: float) -> None:
        if not self.alive():
            cause = self.cause()
            self.shutdown()
            raise KernelDied(cause)
        if time.monotonic() > deadline:
            self.shutdown()
            raise SandboxUnavailable(
                f"the kernel did not answer within {timeout:g} s; check that ipykernel "
                "is installed where the kernel runs"
            )

    def _ready(self, deadline: float, timeout: float) -> None:
        while True:
            self._check_alive_or_expired(deadline, timeout)
            try:
                # kernel_info makes busy/idle on iopub: once its idle arrives, iopub delivers.
                # Ask again if it does not: our subscription may have reached the kernel late.
                msg_id = self.client.kernel_info()
                if self._wait_reply(msg_id, 1.0) is None:
                    continue
                if self._drain(msg_id, None, time.monotonic() + READY_IOPUB):
                    return
            except zmq.ZMQError as exc:
                raise SandboxUnavailable(f"cannot reach the kernel: {exc}") from exc

    def start_up(
        self, timeout: float = 60.0, warm_up: str = WARM_UP, *, ran_at_start: bool = False
    ) -> None:
        """Wait until ready, install the output cap in the kernel, run ``warm_up``.

        Backends call this on a new kernel before handing it out (the default warm-up
        imports pandas). Raises like ``ready``; a failing warm-up is logged, not raised.
        With ``ran_at_start`` the backend had the kernel run ``start_code`` itself as it
        started (the zygote does), and this only waits until the kernel is ready.
        """
        self.ready(timeout)
        if ran_at_start:
            return
        for code in start_code(self.stream_limit, warm_up):
            result = self.execute(code, timeout=timeout)
            if not result.ok:
                log.warning("kernel start-up code failed: %s: %s", result.ename, result.evalue)

    def alive(self) -> bool:
        try:
            return bool(self._is_alive())
        except Exception:  # a backend that cannot tell is treated as dead
            log.debug("is_alive failed", exc_info=True)
            return False

    def cause(self) -> str:
        """Why the kernel died, as well as the backend can tell."""
        cause = None
        if self._death_cause is not None:
            try:
                cause = self._death_cause()
            except Exception:
                log.debug("death_cause failed", exc_info=True)
        return cause or "the kernel process ended"

    def interrupt(self) -> None:
        try:
            if self._interrupt is not None:
                self._interrupt()
            else:
                msg = self.client.session.msg("interrupt_request", {})
                self.client.control_channel.send(msg)
        except Exception:  # interrupting a dead kernel is not an error
            log.debug("interrupt failed", exc_info=True)

    def shutdown(self) -> None:
        if self.closed:
            return
        self.abandon()
        try:
            self._kill()
        except Exception:
            log.debug("kill failed", exc_info=True)

    def abandon(self) -> None:
        """Close this end only: stop the client's channels and mark the kernel closed, without
        killing its process. Called by a backend that is about to end every process at once
        (the docker backend's close, which ends the container). Idempotent."""
        self.closed = True
        try:
            self.client.stop_channels()
        except Exception:
            log.debug("stop_channels failed", exc_info=True)

    # -- execute ---------------------------------------------------------------------------

    def execute(
        self,
        code: str,
        *,
        timeout: float,
        on_output: OutputCallback | None = None,
        store_history: bool = False,
        stop_on_error: bool = True,
    ) -> ExecResult:
        """Run ``code``; success is the kernel's word (the execute_reply's status)."""
        if self.closed:
            raise KernelDied("the kernel was shut down")
        started = time.monotonic()
        collector = Collector(self.stream_limit, self.display_limit, on_output=on_output)
        self._unfinished = None
        try:
            reply = self._execute(code, collector, timeout, store_history, stop_on_error)
        except BaseException:  # a timeout, a death, or Ctrl-C in this process: keep what came
            try:
                self._unfinished = collector.finish(time.monotonic() - started, None)
            except Exception:
                log.debug("the unfinished execute's outputs are lost", exc_info=True)
            raise
        content = reply.get("content") if reply is not None else None
        return collector.finish(
            time.monotonic() - started, content if isinstance(content, dict) else None
        )

    def unfinished(self) -> ExecResult | None:
        return self._unfinished

    def _execute(
        self,
        code: str,
        collector: Collector,
        timeout: float,
        store_history: bool,
        stop_on_error: bool,
    ) -> dict[str, Any] | None:
        """Send the execute_request, read its output; the reply (None if it never came)."""
        deadline = time.monotonic() + timeout
        try:
            msg_id = self.client.execute(
                code, store_history=store_history, allow_stdin=False, stop_on_error=stop_on_error
            )
            if not self._drain(msg_id, collector, deadline):
                self._expire(msg_id, collector)
                raise ExecTimeout(timeout)
            # ipykernel sends the reply before going idle: it is here, or nearly so
            reply = self._wait_reply(msg_id, REPLY_WAIT)
        except zmq.ZMQError as exc:
            if not self.alive():
                cause = self.cause()
                self.shutdown()
                raise KernelDied(cause) from exc
            raise SandboxUnavailable(f"lost the connection to the kernel: {exc}") from exc
        if reply is not None:
            collector.reply(reply)
        return reply

    def _drain(self, msg_id: str, collector: Collector | None, deadline: float) -> bool:
        """Read iopub until ``msg_id`` goes idle (True) or the deadline passes (False)."""
        next_check = time.monotonic() + self.poll
        while True:
            now = time.monotonic()
            if now >= deadline:
                return False
            if now >= next_check:
                next_check = now + self.poll
                self._check_alive()
            msg = self._iopub(min(self.poll, deadline - now))
            if msg is None:
                self._check_alive()
                next_check = time.monotonic() + self.poll
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            msg_type = msg["header"]["msg_type"]
            content = msg.get("content", {})
            if collector is not None:
                collector.add(msg_type, content, msg["header"])
            if msg_type == "status" and content.get("execution_state") == "idle":
                return True

    def _expire(self, msg_id: str, collector: Collector) -> None:
        """At the timeout: interrupt, give the kernel ``grace`` seconds to go idle (what it
        sends meanwhile, such as the KeyboardInterrupt's traceback, is kept), kill it."""
        self.interrupt()
        try:
            self._drain(msg_id, collector, time.monotonic() + self.grace)
        except KernelDied:
            pass
        finally:
            self.shutdown()

    def _check_alive(self) -> None:
        if not self.alive():
            cause = self.cause()
            self.shutdown()
            raise KernelDied(cause)

    def _iopub(self, timeout: float) -> dict[str, Any] | None:
        try:
            return self.client.get_iopub_msg(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None

    def _wait_reply(self, msg_id: str, timeout: float) -> dict[str, Any] | None:
        """The shell reply to ``msg_id``, skipping replies to earlier requests; None if late."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                reply = self.client.get_shell_msg(timeout=left)
            except queue.Empty:
                return None
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                return reply
        return None
