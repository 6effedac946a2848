"""The frames the runner and its Ray bridge (``sandbox/ray_bridge.py``) exchange over a pipe.

A frame is a header of two big-endian 32-bit lengths, then that many bytes of JSON (an
object), then that many raw bytes (a file's piece, or nothing). Both lengths are bounded
before anything is read, and JSON decodes to data only: nothing in a frame is ever
unpickled by the runner, so a bridge that a hostile cluster took over can send wrong data
(checked by the reader) but not code.
"""

from __future__ import annotations

import json
import struct
from typing import IO, Any

HEADER = struct.Struct(">II")
MAX_JSON = 96 << 20  # bytes of one frame's JSON: an execute's capped outputs fit
MAX_BLOB = 8 << 20  # bytes of one frame's raw part: one file piece (sandbox.ray.CHUNK)


class FrameError(Exception):
    """A frame that breaks the format: too large, cut short, or not a JSON object."""


def write(out: IO[bytes], message: dict[str, Any], blob: bytes = b"") -> None:
    """One frame; the caller holds the stream's lock."""
    text = json.dumps(message, separators=(",", ":")).encode()  # NaN as a kernel gave it
    if len(text) > MAX_JSON or len(blob) > MAX_BLOB:
        raise FrameError(f"a frame of {len(text)} + {len(blob)} bytes is over the bound")
    out.write(HEADER.pack(len(text), len(blob)) + text)
    if blob:
        out.write(blob)
    out.flush()


def read(stream: IO[bytes]) -> tuple[dict[str, Any], bytes] | None:
    """The next frame's JSON object and raw bytes; None at a clean end of the stream;
    FrameError for anything else."""
    head = _exactly(stream, HEADER.size, eof_ok=True)
    if head is None:
        return None
    size, blob_size = HEADER.unpack(head)
    if size > MAX_JSON or blob_size > MAX_BLOB:
        raise FrameError(f"a frame announced {size} + {blob_size} bytes, over the bound")
    text = _exactly(stream, size)
    blob = _exactly(stream, blob_size) if blob_size else b""
    assert text is not None and blob is not None
    try:
        message = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise FrameError(f"a frame is not JSON ({type(exc).__name__})") from None
    if not isinstance(message, dict):
        raise FrameError("a frame is not a JSON object")
    return message, blob


def _exactly(stream: IO[bytes], size: int, *, eof_ok: bool = False) -> bytes | None:
    parts: list[bytes] = []
    left = size
    while left:
        piece = stream.read(left)
        if not piece:
            if eof_ok and left == size:
                return None
            raise FrameError(f"the stream ended inside a frame ({size - left} of {size} bytes)")
        parts.append(piece)
        left -= len(piece)
    return b"".join(parts)
