"""The caps on one execute's output, and the code that installs them in a kernel.

Output is capped twice. In the kernel, a hook installed at start-up (``start_code``) cuts each
execute's stream text before ipykernel sends it: ipykernel batches 0.2 s of output into ONE
message, so 100 MB printed in a loop would otherwise reach the host as one 100 MB message.
On the host, ``collector.Collector`` drops whatever is past the caps as it reads, and ends the
output with one truncation marker.
"""

from __future__ import annotations

from typing import Any

STREAM_LIMIT = 1 << 20  # bytes of stdout + stderr kept per execute
DISPLAY_LIMIT = 16 << 20  # bytes of display/result bundles kept per execute
# what a limit may be set to: the host holds what a limit keeps (and copies it into the
# record), so these bound its memory whatever flow.yaml says
LIMITS = {"stream_limit": (1, 8 << 20), "display_limit": (1, 16 << 20)}
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


def bounded(key: str, value: int) -> int:
    """``value`` of limit ``key`` (``stream_limit``, ``display_limit``); ValueError naming
    the bounds when it is outside them."""
    low, high = LIMITS[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(
            f"{key} must be a whole number of bytes from {low} to {high} ({high >> 20} MiB), "
            f"got {value!r}"
        )
    return value


def start_code(stream_limit: int, warm_up: str = WARM_UP) -> list[str]:
    """The cells a new kernel runs before it is handed out: the output cap, then ``warm_up``."""
    bounded("stream_limit", stream_limit)
    prelude = PRELUDE.replace("_praxis_cap(LIMIT)", f"_praxis_cap({int(stream_limit)})")
    prelude = prelude.replace(
        "_praxis_cap_errors(ERROR_TEXT, TRACEBACK_TEXT)",
        f"_praxis_cap_errors({ERROR_TEXT}, {TRACEBACK_TEXT})",
    )
    return [prelude, warm_up]


def truncation_marker(dropped: int) -> str:
    """The line that ends a capped output."""
    return f"\n[praxis: output truncated, {dropped} bytes dropped]\n"


def cut(text: str, limit: int) -> str:
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
        text = cut(str(line), left)
        lines.append(text)
        left -= len(text)
    return {
        "ename": cut(str(content.get("ename", "") or ""), ERROR_TEXT),
        "evalue": cut(str(content.get("evalue", "") or ""), ERROR_TEXT),
        "traceback": lines,
    }


def verdict(
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
