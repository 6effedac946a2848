"""One execute's output as Jupyter keeps it, bounded as it arrives.

Every iopub message of an execute goes through nbclient's own handling of it
(``NotebookClient.process_message``: ``output_from_msg``, ``display_id`` tracking and
``update_display_data``, ``clear_output`` with ``wait``, the execution count of
``execute_input``, the timings of ``metadata.execution``), after the sandbox's caps: stream
text past ``stream_limit`` and bundles past ``display_limit`` are dropped as they arrive (the
output then ends with one truncation marker), at most ``MAX_OUTPUTS`` outputs are kept, and
every field is made schema-valid first (hostile code controls it all).

Consecutive stream messages of one name become one output as they arrive, as JupyterLab keeps
them (ipykernel batches stream text by time, so where one message ends is not the code's
doing); at the end ``\\r`` and ``\\b`` act on that text as in JupyterLab's output model, in
linear time: ``\\r\\n`` is a newline and ``\\r`` overwrites its line in place. (nbclient's
``coalesce_streams`` deletes the whole line before a ``\\r`` instead, so ``text\\r\\r\\n``
loses its text; its expressions take quadratic time on a long line, and the one for
backspace matches a word boundary.) For text without ``\\r`` the two agree. Comm messages
(widgets) are not kept: a record has no widget state.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
import threading
from typing import Any

from .base import ExecResult, OutputCallback
from .output import DISPLAY_LIMIT, STREAM_LIMIT, bounded, capped_error, truncation_marker, verdict

log = logging.getLogger("sandbox")

MAX_OUTPUTS = 2000  # outputs one execute keeps (each is a node in memory and a block on a page)
MAX_DISPLAY_ID = 200  # characters of a display_id
JSON_MIME = re.compile(r"^application/(.*\+)?json$")  # nbformat keeps these as JSON values
OUTPUT_TYPES = ("display_data", "execute_result", "update_display_data")


def text_of(value: Any) -> str:
    """A multiline string of nbformat (str or list of str) as one str."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def bundle(data: Any) -> dict[str, Any]:
    """A mime bundle as nbformat wants it: str per type, dicts kept for JSON types."""
    found: dict[str, Any] = {}
    for mime, value in (data if isinstance(data, dict) else {}).items():
        if JSON_MIME.match(str(mime)) and isinstance(value, dict | list):
            found[str(mime)] = json.loads(json.dumps(value, default=str))
        else:
            found[str(mime)] = text_of(value)
    return found


def json_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, made JSON-safe; else an empty dict."""
    if not isinstance(value, dict):
        return {}
    safe: dict[str, Any] = json.loads(json.dumps(value, default=str))
    return safe


def size_of(data: dict[str, Any]) -> int:
    return sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in data.values())


def overwrite(text: str) -> str:
    """``text`` as JupyterLab shows it (its output model's ``removeOverwrittenChars``), in
    linear time: ``\\b`` removes the character before it (not a newline); ``\\r`` followed by
    ``\\n`` (any number of them) is a newline; any other ``\\r`` takes the cursor back to the
    start of its line, and what follows overwrites the line in place (``abcdef\\rXY`` is
    ``XYcdef``, as in a terminal). One ``\\r`` that ends the text is kept, a run of them is
    dropped (JupyterLab's expressions, to the letter)."""
    if "\b" in text:
        kept: list[str] = []
        for char in text:
            if char == "\b" and kept and kept[-1] != "\n":
                kept.pop()
            else:
                kept.append(char)
        text = "".join(kept)
    if "\r" not in text:
        return text
    lines = CR_NEWLINE.sub("\n", text).split("\n")
    for i, line in enumerate(lines):
        if "\r" in line:
            lines[i] = _overwritten(line)
    return "\n".join(lines)


CR_NEWLINE = re.compile(r"\r+\n")


def _overwritten(line: str) -> str:
    """One line (no newline in it) whose ``\\r`` each take the cursor back to its start."""
    shown: list[str] = []
    for part in line.split("\r"):
        shown[: len(part)] = part
    end = "\r" if line.endswith("\r") and not line.endswith("\r\r") else ""
    return "".join(shown) + end


class Collector:
    """Builds an ExecResult from one execute's iopub messages, within the caps."""

    def __init__(
        self, stream_limit: int, display_limit: int, *, on_output: OutputCallback | None = None
    ) -> None:
        from nbclient import NotebookClient  # here: `import sandbox` stays light
        from nbformat import NotebookNode

        self.on_output = on_output  # (stream name, text): told as kept stream text arrives
        self.stream_limit = bounded("stream_limit", stream_limit)
        self.display_limit = bounded("display_limit", display_limit)
        self.stream_bytes = 0
        self.display_bytes = 0  # bundles taken in (recounted from what is held after clears)
        self.recount = False  # a clear or an update may have freed room since the last count
        self.dropped = 0
        self.dropped_stream = ""  # the stream the marker goes to
        self.marked = False  # the truncation marker was added
        self.parts: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self.error: dict[str, Any] | None = None
        self.updates: dict[str, dict[str, Any]] = {}
        self.tail: tuple[NotebookNode, list[str]] | None = None  # the last stream output
        self.cell = NotebookNode(
            cell_type="code",
            source="",
            metadata=NotebookNode(execution=NotebookNode()),
            outputs=[],
            execution_count=None,
        )
        self.client = NotebookClient(
            NotebookNode(cells=[self.cell], metadata=NotebookNode()), record_timing=True
        )
        self.client.clear_before_next_output = False  # set per cell by nbclient's own loop

    @property
    def outputs(self) -> list[Any]:
        return self.cell["outputs"]  # type: ignore[no-any-return]

    def add(self, msg_type: str, content: Any, header: Any = None) -> None:
        """One iopub message of this execute (``header`` gives its time when it has one)."""
        if not isinstance(content, dict):
            return
        if msg_type == "stream":
            dropped = content.get("dropped", 0)
            name = content.get("name")
            self._stream(
                name if name in self.parts else "stdout",
                text_of(content.get("text")),
                dropped if isinstance(dropped, int) else 0,
                header,
            )
            return
        clean = self._clean(msg_type, content)
        if clean is not None:
            self._process(msg_type, clean, header)

    def _clean(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any] | None:
        """The message's content as nbclient may take it, or None to drop the message."""
        if msg_type in OUTPUT_TYPES:
            return self._bundle(msg_type, content)
        if msg_type == "error":
            self.error = capped_error(content)
            return dict(self.error)
        if msg_type == "clear_output":
            self.recount = True
            return {"wait": bool(content.get("wait"))}
        if msg_type == "execute_input":
            count = content.get("execution_count")
            return {"execution_count": count} if _count(count) else {}
        if msg_type == "status" and content.get("execution_state") in ("busy", "idle"):
            return {"execution_state": content["execution_state"]}
        return None  # comms, and what nbclient does not keep either

    def _bundle(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any] | None:
        data = bundle(content.get("data"))
        clean: dict[str, Any] = {"data": data, "metadata": json_dict(content.get("metadata"))}
        transient = content.get("transient")
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        if isinstance(display_id, str) and display_id:
            display_id = display_id[:MAX_DISPLAY_ID]
            clean["transient"] = {"display_id": display_id}
        elif msg_type == "update_display_data":
            return None  # an update without an id updates nothing
        else:
            display_id = None
        if msg_type == "execute_result":
            count = content.get("execution_count")
            clean["execution_count"] = count if _count(count) else None
        size = size_of(data)
        new = msg_type != "update_display_data"
        if (new and len(self.outputs) >= MAX_OUTPUTS) or not self._room(size):
            self.dropped += size
            self.dropped_stream = self.dropped_stream or "stdout"
            return None
        self.display_bytes += size
        if display_id is not None:
            self.updates[display_id] = {"data": data, "metadata": clean["metadata"]}
            self.recount = True
        return clean

    def _room(self, size: int) -> bool:
        if self.display_bytes + size <= self.display_limit:
            return True
        if self.recount:  # count what is held now: cleared outputs free their room
            self.recount = False
            pending = self.client.clear_before_next_output  # this output clears the others
            held = [] if pending else [o["data"] for o in self.outputs if "data" in o]
            held += [u["data"] for u in self.updates.values()]
            self.display_bytes = sum(size_of(d) for d in held)
        return self.display_bytes + size <= self.display_limit

    def _stream(self, name: str, text: str, dropped: int, header: Any) -> None:
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
        outs = self.outputs
        if (
            self.tail is not None
            and outs
            and outs[-1] is self.tail[0]
            and outs[-1]["name"] == name
            and not self.client.clear_before_next_output
        ):
            self.tail[1].append(text)
            return
        if len(outs) >= MAX_OUTPUTS and not self.client.clear_before_next_output:
            self.dropped += len(data)
            self.dropped_stream = self.dropped_stream or name
            return
        self._process("stream", {"name": name, "text": text}, header)
        if outs and outs[-1].get("output_type") == "stream" and outs[-1]["name"] == name:
            self.tail = (outs[-1], [outs[-1]["text"]])

    def _process(self, msg_type: str, content: dict[str, Any], header: Any) -> None:
        from nbclient.exceptions import CellExecutionComplete

        self._join_tail()
        head: dict[str, Any] = {"msg_type": msg_type}
        date = header.get("date") if isinstance(header, dict) else None
        if isinstance(date, datetime.datetime):
            head["date"] = date
        msg = {"msg_type": msg_type, "header": head, "parent_header": {}, "content": content}
        try:
            self.client.process_message(msg, self.cell, 0)
        except CellExecutionComplete:  # the idle status: its time is recorded
            pass
        except Exception:  # a message the schema refuses after all: dropped, not fatal
            log.debug("iopub %s message not kept", msg_type, exc_info=True)

    def _join_tail(self) -> None:
        if self.tail is not None:
            node, parts = self.tail
            node["text"] = "".join(parts)
            self.tail = None

    def reply(self, msg: Any) -> None:
        """The execute_reply: its time, as nbclient records it."""
        from nbclient.client import timestamp

        if isinstance(msg, dict):
            self.cell.metadata.execution["shell.execute_reply"] = timestamp(msg)

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
        self._join_tail()
        if self.dropped and not self.marked:
            self.marked = True
            marker = truncation_marker(self.dropped)
            self._tell(self.dropped_stream, marker)
            self.parts[self.dropped_stream].append(marker)
            # an output of its own, after the code's; a clear the code left pending stays undone
            self.client.clear_before_next_output = False
            self._process("stream", {"name": self.dropped_stream, "text": marker}, None)
        outputs = [json.loads(json.dumps(o)) for o in self.outputs]
        _coalesce(outputs)
        status, error = verdict(reply, self.error)
        results = [o["data"] for o in outputs if o["output_type"] == "execute_result"]
        count = self.cell.get("execution_count")
        return ExecResult(
            status=status,
            stdout="".join(self.parts["stdout"]),
            stderr="".join(self.parts["stderr"]),
            result=results[-1] if results else None,
            display=[o["data"] for o in outputs if o["output_type"] == "display_data"],
            outputs=outputs,
            ename=error.get("ename"),
            evalue=error.get("evalue"),
            traceback=list(error.get("traceback", [])),
            wall=wall,
            truncated=self.marked,
            execution_count=count if _count(count) else None,
            execution={str(k): str(v) for k, v in self.cell.metadata.execution.items()},
            display_ids=self._display_ids(len(outputs)),
            display_updates=dict(self.updates),
        )

    def _display_ids(self, kept: int) -> dict[int, str]:
        """Which outputs carry a display_id: nbclient's map of this cell, after clears."""
        found: dict[int, str] = {}
        mapping = getattr(self.client, "_display_id_map", {})
        for display_id, cells in mapping.items():
            for index in cells.get(0, []):
                if isinstance(index, int) and 0 <= index < kept:
                    found[index] = str(display_id)
        return found


def _coalesce(outputs: list[dict[str, Any]]) -> None:
    """Stream text as a terminal shows it (one output per run of a stream already)."""
    for out in outputs:
        if out.get("output_type") == "stream":
            out["text"] = overwrite(text_of(out.get("text")))


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 53


_warming = threading.Lock()  # held for good once a warm-up has started


def warm_ahead() -> None:
    """Make, on a thread of its own, what a process's first kept output costs: nbclient's and
    nbformat's modules and nbformat's schema compiled into its validator (40-50 ms here, else
    paid after the first phase's code ran, before its execute could end). Backends call it as
    their first kernel starts, while its container or kernel server imports; once a process."""
    if _warming.acquire(blocking=False):
        threading.Thread(target=_warm, name="sandbox-warm-outputs", daemon=True).start()


def _warm() -> None:
    try:
        collector = Collector(STREAM_LIMIT, DISPLAY_LIMIT)
        collector.add("stream", {"name": "stdout", "text": "\n"})
        collector.finish(0.0, None)
    except Exception:  # only a head start: the first output pays it instead
        log.debug("warming the output machinery failed", exc_info=True)
