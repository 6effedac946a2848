"""sandbox.output: the execute_reply decides an ExecResult's status; on_output stays in the cap."""

from __future__ import annotations

from sandbox.collector import Collector
from sandbox.output import truncation_marker


def test_a_reply_with_status_error_fails_without_an_error_output() -> None:
    collector = Collector(100, 100)
    collector.add("stream", {"name": "stderr", "text": "UsageError: Line magic function"})
    reply = {"status": "error", "ename": "UsageError", "evalue": "Line magic function"}
    result = collector.finish(0.1, reply)
    assert (result.status, result.ename, result.evalue) == ("error", "UsageError", reply["evalue"])
    assert [o["output_type"] for o in result.outputs] == ["stream"]  # as the kernel sent them


def test_an_aborted_reply_is_an_error_and_an_ok_reply_is_ok() -> None:
    aborted = Collector(100, 100).finish(0.1, {"status": "aborted"})
    assert (aborted.status, aborted.ename) == ("error", "Aborted")
    ok = Collector(100, 100).finish(0.1, {"status": "ok"})
    assert ok.ok and ok.ename is None


def test_without_a_reply_an_error_output_decides() -> None:
    collector = Collector(100, 100)
    collector.add("error", {"ename": "ValueError", "evalue": "bad", "traceback": ["tb"]})
    result = collector.finish(0.1, None)
    assert (result.status, result.ename, result.traceback) == ("error", "ValueError", ["tb"])
    assert Collector(100, 100).finish(0.1, None).ok


def test_on_output_is_told_the_kept_text_then_the_marker() -> None:
    told: list[tuple[str, str]] = []
    collector = Collector(10, 100, on_output=lambda name, text: told.append((name, text)))
    collector.add("stream", {"name": "stdout", "text": "0123456"})
    collector.add("stream", {"name": "stderr", "text": "789abcdef"})
    collector.add("stream", {"name": "stdout", "text": "more"})
    collector.finish(0.1, {"status": "ok"})
    assert told == [("stdout", "0123456"), ("stderr", "789"), ("stderr", truncation_marker(10))]
    assert sum(len(text) for _, text in told[:-1]) == 10


def test_a_failing_listener_does_not_lose_the_output() -> None:
    def listener(name: str, text: str) -> None:
        raise OSError("disk full")

    collector = Collector(100, 100, on_output=listener)
    collector.add("stream", {"name": "stdout", "text": "kept"})
    assert collector.finish(0.1, {"status": "ok"}).stdout == "kept"
