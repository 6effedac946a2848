"""Output of one execute: capped as it arrives, built into an ExecResult.

Output is capped twice. In the kernel, a hook installed at start-up (``start_code``) cuts each
execute's stream text before ipykernel sends it: ipykernel batches 0.2 s of output into ONE
message, so 100 MB printed in a loop would otherwise reach the host as one 100 MB message.
On the host, ``Collector`` drops whatever is past the caps as it reads, and ends the output
with one truncation marker.
"""

from __future__ import annotations

import logging
from typing import Any

from .base import ExecResult, OutputCallback

log = logging.getLogger("sandbox")

STREAM_LIMIT = 1 << 20  # bytes of stdout + stderr kept per execute
DISPLAY_LIMIT = 16 << 20  # bytes of display/result bundles kept per execute
ERROR_TEXT = 8 << 10  # characters of an exception's name or message kept
TRACEBACK_TEXT = 64 << 10  # characters of a traceback kept, in all

# Run in each new kernel by ``JupyterKernel.start_up``: ipykernel buffers a stream for 0.2 s
# and sends it as ONE message, so 100 MB printed in a loop would reach the host as a 100 MB
# message. This hook on the kernel's stdout/stderr cuts each execute's stream text at the
# limit before it is sent, and says how much it dropped; it leaves no name behind.
PRELUDE = """\
def _praxis_cap(limit):
    import sys
    import threading
    state = {"parent": None, "used": 0}

    def hook(msg):
        parent = msg.get("parent_header", {}).get("msg_id")
        if parent != state["parent"]:
            state["parent"], state["used"] = parent, 0
        data = msg["content"].get("text", "").encode("utf-8", "surrogateescape")
        room = limit - state["used"]
        if len(data) > room:
            keep = max(room, 0)
            msg["content"]["text"] = data[:keep].decode("utf-8", "ignore")
            msg["content"]["dropped"] = len(data) - keep
            data = data[:keep]
        state["used"] += len(data)
        return msg

    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "register_hook") and hasattr(stream, "pub_thread"):
            done = threading.Event()

            def register(stream=stream, done=done):  # hooks are per thread: the IO thread's
                stream.register_hook(hook)
                done.set()

            stream.pub_thread.schedule(register)
            done.wait(5)


_praxis_cap(LIMIT)
del _praxis_cap


def _praxis_cap_errors(text_limit, traceback_limit):
    import inspect

    def cut(text):
        text = str(text)
        if len(text) <= text_limit:
            return text
        return text[:text_limit] + f" … [{len(text) - text_limit} characters cut]"

    def cut_lines(lines):
        kept, left = [], traceback_limit
        for line in lines or []:
            if left <= 0:
                kept.append("[… traceback lines cut]")
                break
            kept.append(cut(line) if len(str(line)) <= left else str(line)[:left] + " …")
            left -= len(kept[-1])
        return kept

    shell = get_ipython()  # noqa: F821
    show = shell._showtraceback

    class Shown:
        def __init__(self, value):
            self.text = cut(value)

        def __str__(self):
            return self.text

    def showtraceback(etype, evalue, stb):
        return show(etype, Shown(evalue), cut_lines(stb))

    shell._showtraceback = showtraceback
    kernel = getattr(shell, "kernel", None)
    execute = getattr(kernel, "do_execute", None)
    if execute is None:
        return

    def capped(reply):
        if isinstance(reply, dict) and reply.get("status") == "error":
            reply["evalue"] = cut(reply.get("evalue", ""))
            reply["ename"] = cut(reply.get("ename", ""))
            reply["traceback"] = cut_lines(reply.get("traceback"))
        return reply

    if inspect.iscoroutinefunction(execute):
        async def do_execute(*args, **kwargs):
            return capped(await execute(*args, **kwargs))
    else:
        def do_execute(*args, **kwargs):
            return capped(execute(*args, **kwargs))
    kernel.do_execute = do_execute


_praxis_cap_errors(ERROR_TEXT, TRACEBACK_TEXT)
del _praxis_cap_errors
"""

WARM_UP = "try:\n    import pandas as _p\n    del _p\nexcept ImportError:\n    pass\n"


def start_code(stream_limit: int, warm_up: str = WARM_UP) -> list[str]:
    """The cells a new kernel runs before it is handed out: the output cap, then ``warm_up``."""
    prelude = PRELUDE.replace("_praxis_cap(LIMIT)", f"_praxis_cap({int(stream_limit)})")
    prelude = prelude.replace(
        "_praxis_cap_errors(ERROR_TEXT, TRACEBACK_TEXT)",
        f"_praxis_cap_errors({ERROR_TEXT}, {TRACEBACK_TEXT})",
    )
    return [prelude, warm_up]


def truncation_marker(dropped: int) -> str:
    """The line that ends a capped output."""
    return f"\n[praxis: output truncated, {dropped} bytes dropped]\n"


class Collector:
    """Builds an ExecResult from iopub messages, dropping output past the caps as it arrives."""

    def __init__(
        self, stream_limit: int, display_limit: int, *, on_output: OutputCallback | None = None
    ) -> None:
        self.on_output = on_output  # (stream name, text): told as kept stream text arrives
        self.stream_limit = stream_limit
        self.display_limit = display_limit
        self.stream_bytes = 0
        self.display_bytes = 0
        self.dropped = 0
        self.dropped_stream = ""  # the stream the marker goes to
        self.outputs: list[dict[str, Any]] = []
        self.parts: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self.display: list[dict[str, Any]] = []
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.clear_pending = False

    def add(self, msg_type: str, content: dict[str, Any]) -> None:
        if msg_type == "clear_output":
            if content.get("wait"):
                self.clear_pending = True
            else:
                self.outputs.clear()
            return
        if msg_type not in ("stream", "display_data", "execute_result", "error"):
            return
        if self.clear_pending:
            self.outputs.clear()
            self.clear_pending = False
        if msg_type == "stream":
            dropped = content.get("dropped", 0)
            self._stream(
                content.get("name", "stdout"),
                content.get("text", ""),
                dropped if isinstance(dropped, int) else 0,
            )
        elif msg_type == "error":
            self.error = capped_error(content)
            self.outputs.append({"output_type": "error", **self.error})
        else:
            self._bundle(msg_type, content)

    def _stream(self, name: str, text: str, dropped: int = 0) -> None:
        name = name if name in self.parts else "stdout"
        if dropped:  # cut in the kernel already (PRELUDE)
            self.dropped += dropped
            self.dropped_stream = self.dropped_stream or name
        data = text.encode("utf-8", "surrogateescape")
        room = self.stream_limit - self.stream_bytes
        if len(data) > room:
            keep = max(room, 0)
            self.dropped += len(data) - keep
            self.dropped_stream = self.dropped_stream or name
            text = data[:keep].decode("utf-8", "ignore")
            data = data[:keep]
        self.stream_bytes += len(data)
        if not text:
            return
        self._tell(name, text)
        self.parts[name].append(text)
        last = self.outputs[-1] if self.outputs else None
        if last and last["output_type"] == "stream" and last["name"] == name:
            last["text"].append(text)
        else:
            self.outputs.append({"output_type": "stream", "name": name, "text": [text]})

    def _bundle(self, msg_type: str, content: dict[str, Any]) -> None:
        data = content.get("data", {})
        size = sum(len(v) if isinstance(v, str) else len(str(v)) for v in data.values())
        if self.display_bytes + size > self.display_limit:
            self.dropped += size
            self.dropped_stream = self.dropped_stream or "stdout"
            return
        self.display_bytes += size
        out: dict[str, Any] = {
            "output_type": msg_type,
            "data": data,
            "metadata": content.get("metadata", {}),
        }
        if msg_type == "execute_result":
            out["execution_count"] = content.get("execution_count")
            self.result = data
        else:
            self.display.append(data)
        self.outputs.append(out)

    def _tell(self, name: str, text: str) -> None:
        if self.on_output is None:
            return
        try:
            self.on_output(name, text)
        except Exception:  # a listener's failure must not lose the execution
            log.debug("on_output failed", exc_info=True)

    def finish(self, wall: float, reply: dict[str, Any] | None = None) -> ExecResult:
        """The ExecResult; ``reply`` is the execute_reply's content, whose status decides.

        Without a reply (it never came) an error output decides. A reply with status error
        but no error output (a UsageError from a line magic) still fails, with the reply's
        ename/evalue; ``aborted`` is an error too.
        """
        if self.dropped:
            marker = truncation_marker(self.dropped)
            self._tell(self.dropped_stream, marker)
            self.parts[self.dropped_stream].append(marker)
            self.outputs.append(
                {"output_type": "stream", "name": self.dropped_stream, "text": [marker]}
            )
        for out in self.outputs:
            if out["output_type"] == "stream":
                out["text"] = "".join(out["text"])
        status, error = _verdict(reply, self.error)
        return ExecResult(
            status=status,
            stdout="".join(self.parts["stdout"]),
            stderr="".join(self.parts["stderr"]),
            result=self.result,
            display=self.display,
            outputs=self.outputs,
            ename=error.get("ename"),
            evalue=error.get("evalue"),
            traceback=list(error.get("traceback", [])),
            wall=wall,
            truncated=bool(self.dropped),
        )


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" … [{len(text) - limit} characters cut]"


def capped_error(content: dict[str, Any]) -> dict[str, Any]:
    """An error's ename, evalue and traceback, each bounded (hostile code controls them)."""
    lines: list[str] = []
    left = TRACEBACK_TEXT
    raw = content.get("traceback")
    frames: list[Any] = raw if isinstance(raw, list) else []
    for line in frames:
        if left <= 0:
            lines.append(f"[… {len(frames) - len(lines)} traceback lines cut]")
            break
        text = _cut(str(line), left)
        lines.append(text)
        left -= len(text)
    return {
        "ename": _cut(str(content.get("ename", "") or ""), ERROR_TEXT),
        "evalue": _cut(str(content.get("evalue", "") or ""), ERROR_TEXT),
        "traceback": lines,
    }


def _verdict(
    reply: dict[str, Any] | None, error: dict[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    """("ok" | "error", the error's fields) from the kernel's reply, else from the outputs."""
    if reply is None:
        return ("error", error) if error else ("ok", {})
    status = reply.get("status")
    if status == "ok":
        return "ok", {}
    if status == "aborted":
        return "error", {
            "ename": "Aborted",
            "evalue": "the kernel aborted this execution",
            "traceback": [],
        }
    fields = dict(error or {})
    capped = capped_error(reply)
    for key in ("ename", "evalue"):
        if capped.get(key) and not fields.get(key):
            fields[key] = capped[key]
    if not fields.get("traceback") and capped.get("traceback"):
        fields["traceback"] = capped["traceback"]
    fields.setdefault("ename", "Error")
    fields.setdefault("evalue", f"the kernel replied {str(status)[:40]!r}")
    return "error", fields
