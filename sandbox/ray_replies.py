"""The shapes of what the Ray bridge answers (``sandbox/ray.py``): each method's reply
checked as data and built into the sandbox's own types, or ``Malformed``. A reply is JSON
(``sandbox/ray_wire.py``): nothing here is ever unpickled."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from .base import ExecResult, FileStat

MAX_TEXT = 2000  # characters kept of a message the bridge sends


class Malformed(Exception):
    """A reply that is not of the shape its request returns."""


def text(value: Any) -> str:
    """A message from the bridge as one bounded line of printable characters."""
    raw = value if isinstance(value, str) else repr(value)
    return "".join(c if c.isprintable() else "?" for c in raw[:MAX_TEXT])


def with_blob(value: Any, blob: bytes) -> Any:
    """``value`` with the frame's raw part where the bridge put ``{"$blob": 0}``."""
    if value == {"$blob": 0}:
        return blob
    if isinstance(value, list):
        return [with_blob(v, blob) for v in value]
    return value


def _nothing(value: Any) -> None:
    return None


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise Malformed
    return value


def _int(value: Any) -> int:
    if type(value) is not int:
        raise Malformed
    return value


def _file_stat(value: Any) -> FileStat:
    if not isinstance(value, dict) or set(value) != {f.name for f in fields(FileStat)}:
        raise Malformed
    return FileStat(**{k: _int(v) for k, v in value.items()})


def _listing(value: Any) -> dict[str, FileStat]:
    if not isinstance(value, dict):
        raise Malformed
    return {_str(k): _file_stat(v) for k, v in value.items()}


def _folders(value: Any) -> set[str]:
    if not isinstance(value, list):
        raise Malformed
    return {_str(v) for v in value}


def _output(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, list):
        raise Malformed
    pieces = []
    for piece in value:
        if not isinstance(piece, list) or len(piece) != 2:
            raise Malformed
        pieces.append((_str(piece[0]), _str(piece[1])))
    return pieces


def _staged(value: Any) -> tuple[str, int, bytes | None]:
    if not isinstance(value, list) or len(value) != 3:
        raise Malformed
    data = value[2]
    if data is not None and not isinstance(data, bytes):
        raise Malformed
    size = _int(value[1])
    if size < 0 or (data is not None and len(data) != size):
        raise Malformed
    return _str(value[0]), size, data


def _piece(value: Any) -> bytes:
    if not isinstance(value, bytes):
        raise Malformed
    return value


def _info(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Malformed
    info = {k: v for k, v in value.items() if v is None or isinstance(v, (str, int, float))}
    _str(info.get("node"))
    _str(info.get("workspace"))
    return {k: text(v) if isinstance(v, str) else v for k, v in info.items()}


RESULT_TYPES: dict[str, tuple[type, ...]] = {
    "status": (str,),
    "stdout": (str,),
    "stderr": (str,),
    "result": (dict, type(None)),
    "display": (list,),
    "outputs": (list,),
    "ename": (str, type(None)),
    "evalue": (str, type(None)),
    "traceback": (list,),
    "wall": (int, float),
    "truncated": (bool,),
    "execution_count": (int, type(None)),
    "execution": (dict,),
    "display_ids": (dict,),
    "display_updates": (dict,),
}


def _exec_result(value: Any) -> ExecResult:
    if not isinstance(value, dict) or set(value) != set(RESULT_TYPES):
        raise Malformed
    for key, types in RESULT_TYPES.items():
        if not isinstance(value[key], types):
            raise Malformed
    if value["status"] not in ("ok", "error"):
        raise Malformed
    if not all(isinstance(d, dict) for d in (*value["display"], *value["outputs"])):
        raise Malformed
    return ExecResult(
        **{
            **value,
            "traceback": [_str(line) for line in value["traceback"]],
            "wall": float(value["wall"]),
            "execution": {_str(k): _str(v) for k, v in value["execution"].items()},
            "display_ids": {int(k): _str(v) for k, v in value["display_ids"].items()},
        }
    )


SHAPES: dict[str, Any] = {
    "open": _info,
    "listing": _listing,
    "folders": _folders,
    "kernel": _str,
    "begin_upload": _str,
    "execute": _exec_result,
    "take_output": _output,
    "stage_fetch": _staged,
    "read_at": _piece,
}


def shaped(value: Any, method: str) -> Any:
    """``value`` as ``method`` returns it; Malformed (or TypeError, ValueError, KeyError)
    when it is not of that shape. A method that returns nothing takes anything as None."""
    return SHAPES.get(method, _nothing)(value)
