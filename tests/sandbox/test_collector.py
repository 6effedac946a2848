"""sandbox.collector: nbclient's handling of each message, within the caps, whatever the
kernel sends."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import nbformat
from nbclient.client import _RGX_BACKSPACE, _RGX_CARRIAGERETURN

from sandbox.collector import MAX_OUTPUTS, Collector, overwrite

BACKSPACE = re.compile(r"[^\n]\x08")  # JupyterLab's; nbclient's r"[^\n]\b" is a word boundary


def nbclients(text: str) -> str:
    """What nbclient's coalesce_streams makes of a stream's text (its backspace expression
    as JupyterLab writes it)."""
    assert _RGX_BACKSPACE.pattern == r"[^\n]\b"  # a word boundary, not a backspace
    old = text
    while True:
        new = BACKSPACE.sub("", old)
        if len(new) >= len(old):
            break
        old = new
    return _RGX_CARRIAGERETURN.sub("", old)


def underflows(text: str) -> bool:
    """Whether a backspace in ``text`` has no character of its line left to remove."""
    left = 0
    for char in text:
        if char == "\n":
            left = 0
        elif char == "\b":
            if left == 0:
                return True
            left -= 1
        else:
            left += 1
    return False


def display(data: object, display_id: object = None, kind: str = "display_data") -> dict:
    content: dict = {"data": data, "metadata": {}}
    if display_id is not None:
        content["transient"] = {"display_id": display_id}
    return content


def valid(outputs: list[dict]) -> None:
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    nbformat.validate(nbformat.v4.new_notebook(cells=[cell]))


# JupyterLab's fixCarriageReturn (packages/outputarea/src/model.ts), its JavaScript expressions
# in Python's: `.` is [^\n\r], a multiline ^ and $ also match beside a \r
BOL, EOL = r"(?:(?<=[\n\r])|\A)", r"(?=[\n\r]|\Z)"


def jupyterlabs(text: str) -> str:
    """What JupyterLab's output model (``removeOverwrittenChars``) makes of a stream's text."""
    old = text
    while True:  # fixBackspace
        new = BACKSPACE.sub("", old)
        if len(new) >= len(old):
            break
        old = new
    text = re.sub(r"\r+\n", "\n", old)
    while re.search(r"\r[^$]", text):
        base = re.search(BOL + r"([^\n\r]*)\r+", text)
        insert = re.search(r"\r+([^\n\r]*)" + EOL, text)
        assert base is not None and insert is not None
        merged = insert[1] + base[1][len(insert[1]) :]
        text = re.sub(r"\r+[^\n\r]*" + EOL, "\r", text, count=1)
        text = re.sub(BOL + r"[^\n\r]*\r", lambda _, m=merged: m, text, count=1)
    return text


def test_overwrite_is_what_jupyterlab_shows_in_linear_time() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(5000):
        text = "".join(rng.choice("abc\r\n\b") for _ in range(rng.randrange(14)))
        if not underflows(text) and "\b\b" not in text:
            assert overwrite(text) == jupyterlabs(text), repr(text)
            checked += 1
    assert checked > 1000
    # where the expressions, applied again and again, let a backspace delete a backspace, a
    # backspace here deletes characters, as a terminal does, and one with none left stays
    assert overwrite("ab\r\b\b\b") == "" and nbclients("ab\r\b\b\b") == "ab"
    assert overwrite("a\b\b\nb") == "\b\nb"
    long_line = "x" * 1_000_000  # nbclient's \r expression takes minutes on this
    assert overwrite(long_line + "\rdone") == "done" + long_line[4:]
    assert overwrite("y" + "z\b" * 200_000) == "y"
    assert overwrite("\r".join(["x" * 80] * 100_000)) == "x" * 80


def test_a_carriage_return_overwrites_in_place_and_before_a_newline_is_one() -> None:
    """The two cases of a real notebook: ``!head`` of a file with Windows line endings (each
    line ends in \\r\\r\\n) and a line rewritten in place."""
    windows = "id,name\r\r\n1,north\r\r\n"
    assert overwrite(windows) == jupyterlabs(windows) == "id,name\n1,north\n"
    assert nbclients(windows) == "\r\n\r\n"  # nbclient drops the text
    assert overwrite("abcdef\rXY\n") == jupyterlabs("abcdef\rXY\n") == "XYcdef\n"
    assert nbclients("abcdef\rXY\n") == "XY\n"
    c = Collector(1000, 1000)
    c.add("stream", {"name": "stdout", "text": "id,name\r"})
    c.add("stream", {"name": "stdout", "text": "\r\nabcdef\r"})
    c.add("stream", {"name": "stdout", "text": "XY\n"})
    assert [o["text"] for o in c.finish(0.1, {"status": "ok"}).outputs] == ["id,name\nXYcdef\n"]


def test_without_carriage_returns_overwrite_is_what_nbclient_does() -> None:
    rng = random.Random(11)
    checked = 0
    for _ in range(3000):
        text = "".join(rng.choice("ab\n\b") for _ in range(rng.randrange(14)))
        if not underflows(text) and "\b\b" not in text:
            assert overwrite(text) == nbclients(text), repr(text)
            checked += 1
    assert checked > 1000


def test_a_display_updated_in_place_keeps_its_last_value() -> None:
    c = Collector(1000, 1000)
    c.add("display_data", display({"text/plain": "'first'"}, "d1"))
    c.add("stream", {"name": "stdout", "text": "between\n"})
    c.add("update_display_data", display({"text/plain": "'second'"}, "d1"))
    c.add("update_display_data", display({"text/plain": "'elsewhere'"}, "other"))
    result = c.finish(0.1, {"status": "ok"})
    assert [o.get("data", o.get("text")) for o in result.outputs] == [
        {"text/plain": "'second'"},
        "between\n",
    ]
    assert result.display_ids == {0: "d1"}
    assert result.display_updates["other"]["data"] == {"text/plain": "'elsewhere'"}


def test_clear_output_wait_clears_at_the_next_output() -> None:
    c = Collector(1000, 1000)
    c.add("stream", {"name": "stdout", "text": "old\n"})
    c.add("clear_output", {"wait": True})
    c.add("stream", {"name": "stdout", "text": "new\n"})
    c.add("stream", {"name": "stdout", "text": "more\n"})
    c.add("execute_input", {"execution_count": 4})
    result = c.finish(0.1, {"status": "ok"})
    assert result.outputs == [{"output_type": "stream", "name": "stdout", "text": "new\nmore\n"}]
    assert result.execution_count == 4


def test_a_flood_of_messages_stays_bounded() -> None:
    c = Collector(1 << 20, 1 << 20)
    for _ in range(100_000):  # a print with flush each time: one output, as JupyterLab shows it
        c.add("stream", {"name": "stdout", "text": "."})
    for i in range(MAX_OUTPUTS + 500):
        c.add("display_data", display({"text/plain": str(i)}))
    result = c.finish(0.1, {"status": "ok"})
    assert result.outputs[0]["text"] == "." * 100_000
    assert len(result.outputs) == MAX_OUTPUTS + 1  # and the truncation marker
    assert result.truncated and "output truncated" in result.outputs[-1]["text"]


def test_a_cleared_output_frees_its_room_under_the_display_cap() -> None:
    c = Collector(1000, 100)
    for i in range(50):  # an animation: 60 bytes a frame, 3000 in all, one frame held
        c.add("clear_output", {"wait": True})
        c.add("display_data", display({"text/plain": f"{i:060d}"}))
    result = c.finish(0.1, {"status": "ok"})
    assert [o["data"]["text/plain"] for o in result.outputs] == [f"{49:060d}"]
    assert not result.truncated


def test_whatever_the_kernel_sends_gives_valid_outputs() -> None:
    c = Collector(1000, 10_000)
    c.add("display_data", {"data": {"text/plain": 3, "application/json": {"a": [1]}}})
    c.add("display_data", {"data": "not a bundle", "metadata": [1], "transient": "x"})
    c.add("execute_result", {"data": {"text/plain": ["a", "b"]}, "execution_count": True})
    c.add("update_display_data", {"data": {"text/plain": "no id"}})
    c.add("stream", {"name": "stdin", "text": ["x", "y"]})
    c.add("error", {"ename": None, "evalue": 5, "traceback": "not a list"})
    c.add("comm_open", {"comm_id": "c", "target_name": "jupyter.widget", "data": {}})
    c.add("clear_output", "not a dict")
    result = c.finish(0.1, None)
    valid(result.outputs)
    assert [o["output_type"] for o in result.outputs] == [
        "display_data",
        "display_data",
        "execute_result",
        "stream",
        "error",
    ]
    assert result.outputs[2]["execution_count"] is None and result.status == "error"


WARM_PROBE = """
import json, sys, threading
import sandbox.collector as collector
before = "nbclient" in sys.modules
collector.warm_ahead()
collector.warm_ahead()  # once a process: no second thread
warming = [t for t in threading.enumerate() if t.name == "sandbox-warm-outputs"]
for t in warming:
    t.join(60)
import nbformat.validator
print(json.dumps({"before": before, "threads": len(warming),
                  "validators": len(nbformat.validator.validators)}))
"""


def test_warm_ahead_builds_the_first_outputs_schema_validator_once() -> None:
    """What a process's first kept output costs (nbclient, nbformat's compiled schema) is made
    ahead on one thread, in a fresh interpreter where none of it was loaded."""
    done = subprocess.run(
        [sys.executable, "-c", WARM_PROBE], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {"before": False, "threads": 1, "validators": 1}
