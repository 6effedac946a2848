"""The cells of a Parquet batch as text, each clipped before it is expanded.

A cell shows at most ``MAX_CELL`` characters. Text is clipped in Arrow before it becomes a
Python string: a dictionary column's dictionary once (then its indices pick the clipped
values), a plain one value by value, and a nested value (a list, a struct, a map) is written
element by element until its room is spent, so one row holding a list of a hundred million
values costs a cell's worth. Every column's text is counted against the read's budget before
it is made into Python strings; ``OverBudget`` says the next column would pass it.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

MAX_CELL = 10_000  # characters of one cell as text


class OverBudget(Exception):
    """The cells asked for hold more text than the read may show."""


def of_batch(batch: Any, room: list[int]) -> list[list[str]]:
    """The batch's rows as text; ``room[0]`` is the characters left, spent as columns are made."""
    columns = [_column(batch.column(i), room) for i in range(batch.num_columns)]
    return [[col[r] for col in columns] for r in range(batch.num_rows)]


def _column(array: Any, room: list[int]) -> list[str]:
    kind = array.type
    if pa.types.is_dictionary(kind) and _is_text(kind.value_type):
        clipped, lengths = _clip(array.dictionary)
        return _spend(clipped.take(array.indices), lengths.take(array.indices), room)
    if _is_text(kind):
        clipped, lengths = _clip(array)
        return _spend(clipped, lengths, room)
    if pa.types.is_nested(kind) or pa.types.is_dictionary(kind):
        texts = [_cell(array[r]) for r in range(len(array))]
        _charge(sum(map(len, texts)), room)
        return texts
    texts = ["" if v is None else str(v) for v in array.to_pylist()]  # fixed width: bounded
    _charge(sum(map(len, texts)), room)
    return [_clip_text(t, len(t)) for t in texts]


def _is_text(kind: Any) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind)
                or pa.types.is_binary(kind) or pa.types.is_large_binary(kind))  # fmt: skip


def _clip(array: Any) -> tuple[Any, Any]:
    """Each value (of an array or one scalar) cut at MAX_CELL characters (bytes for binary),
    and its full length."""
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return pc.utf8_slice_codeunits(array, 0, MAX_CELL), pc.utf8_length(array)
    return pc.binary_slice(array, 0, MAX_CELL), pc.binary_length(array)


def _spend(clipped: Any, lengths: Any, room: list[int]) -> list[str]:
    if pa.types.is_string(clipped.type) or pa.types.is_large_string(clipped.type):
        _charge(int(pc.sum(pc.utf8_length(clipped)).as_py() or 0), room)
    else:  # shown as Python's bytes literal: up to four characters a byte
        _charge(4 * int(pc.sum(pc.binary_length(clipped)).as_py() or 0), room)
    return [
        "" if value is None else _clip_text(str(value), full)
        for value, full in zip(clipped.to_pylist(), lengths.to_pylist(), strict=True)
    ]


def _charge(used: int, room: list[int]) -> None:
    room[0] -= used
    if room[0] < 0:
        raise OverBudget


def _clip_text(text: str, full: int) -> str:
    if full > MAX_CELL or len(text) > MAX_CELL:
        more = max(full, len(text)) - MAX_CELL
        return text[:MAX_CELL] + f" [... {more} more characters]"
    return text


def _cell(scalar: Any) -> str:
    if not scalar.is_valid:
        return ""
    parts: list[str] = []
    _write(scalar, parts, [MAX_CELL])
    text = "".join(parts)
    return text[:MAX_CELL] + " [...]" if len(text) > MAX_CELL else text


def _write(scalar: Any, parts: list[str], room: list[int]) -> None:
    """Python's text of the value, element by element, until ``room[0]`` characters are out."""
    if room[0] <= 0:
        return
    kind = scalar.type
    if not scalar.is_valid:
        _put("None", parts, room)
    elif pa.types.is_dictionary(kind):
        _write(scalar.value, parts, room)
    elif _is_text(kind):
        value = _clip(scalar)[0].as_py()  # at most MAX_CELL
        _put(repr(value), parts, room)
    elif pa.types.is_struct(kind):
        _many([(repr(kind.field(i).name) + ": ", scalar[i]) for i in range(kind.num_fields)],
              "{", "}", parts, room)  # fmt: skip
    elif pa.types.is_map(kind):
        entries = scalar.values
        count = 0 if entries is None else min(len(entries), MAX_CELL)
        _many([("", entries[i]) for i in range(count)], "[", "]", parts, room, pair=True)
    elif pa.types.is_nested(kind):  # the list kinds
        values = scalar.values
        _many([("", values[i]) for i in range(min(len(values), MAX_CELL))], "[", "]", parts, room)
    else:
        _put(repr(scalar.as_py()), parts, room)


def _many(
    items: list[tuple[str, Any]],
    opening: str,
    closing: str,
    parts: list[str],
    room: list[int],
    *,
    pair: bool = False,
) -> None:
    _put(opening, parts, room)
    for n, (label, item) in enumerate(items):
        if room[0] <= 0:
            return
        _put((", " if n else "") + label, parts, room)
        if pair:  # a map's entry, as Python's (key, value)
            _put("(", parts, room)
            _write(item[0], parts, room)
            _put(", ", parts, room)
            _write(item[1], parts, room)
            _put(")", parts, room)
        else:
            _write(item, parts, room)
    _put(closing, parts, room)


def _put(text: str, parts: list[str], room: list[int]) -> None:
    parts.append(text)
    room[0] -= len(text)
