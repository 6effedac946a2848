"""A columnar copy of one version of a CSV/TSV, for finding rows among millions.

Built once per file version (csvedit's size, mtime and inode) in one streaming pass: each
data row's byte span and its cells (each cut at ``FIELD_CAP`` characters; a record longer
than ``LINE_CAP`` bytes is scanned to its end but only its head is parsed) go in batches
into an Arrow IPC file in a private cache folder, which is read back memory-mapped. A query
over it touches only the columns it names, paged in by the operating system; no request
reads the table file whole. Rows found are read from the table itself by their byte spans
(``csvedit.read_spans``), so the page shows the file, never the copy.

Arrow (pyarrow, already what praxis reads Parquet with) rather than DuckDB: the copy must
hold the cells exactly as this module's lossless parser reads them, row for row, and
pyarrow's compute functions filter and sort a memory-mapped column in one call each.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc

from sandbox.files import replace_file

from . import csvedit, rowscan

FIELD_CAP = 1000  # characters of a cell the copy keeps (filters read at most these)
LINE_CAP = 64 * 1024  # bytes of a record that are parsed for the copy
BATCH_ROWS = 65_536
BLOCK = 1 << 20  # bytes Arrow's CSV reader reads at a time
FAST_RECORD = BLOCK // 4  # a file with a longer record is copied by the record-by-record pass
KEEP_FILES = 16  # copies kept in the cache folder, newest first
OPEN_COPIES = 8
MAX_COLUMNS = 1000  # a wider table is paged, not searched


@dataclass
class Copy:
    """The copy of one file version: ``table`` has columns c0..c{width-1}, start, end."""

    key: str
    header: list[str]
    table: pa.Table
    rows: int
    kept: bool = True  # a file's version (False: one with unsaved cells, not to be kept by key)

    def column(self, i: int) -> pa.ChunkedArray:
        return self.table.column(f"c{i}")

    def spans(self, rows: list[int]) -> list[tuple[int, int]]:
        at = pa.array(rows, pa.int64())
        starts = self.table.column("start").take(at).to_pylist()
        ends = self.table.column("end").take(at).to_pylist()
        return list(zip(starts, ends, strict=True))


_private: list[Path] = []


def cache_dir() -> Path:
    """``praxis-tables-UID`` below ``$PRAXIS_CACHE`` or the temp folder, when it is this
    user's own folder that no one else may write to; else a new private one for this
    process (a folder planted by someone else is never read)."""
    base = Path(os.environ.get("PRAXIS_CACHE") or tempfile.gettempdir())
    folder = base / f"praxis-tables-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(folder)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022:
            return folder
    except OSError:
        pass
    if not _private:
        _private.append(Path(tempfile.mkdtemp(prefix="praxis-tables-")))
    return _private[0]


def key_of(idx: csvedit.Index) -> str:
    size, mtime, ino = idx.version
    raw = f"{os.path.realpath(idx.path)}\0{size}\0{mtime}\0{ino}".encode()
    return hashlib.sha256(raw).hexdigest()[:32]


_open: OrderedDict[str, Copy] = OrderedDict()
_lock = threading.Lock()
DERIVED = 64  # results kept of a whole pass over one column of a copy
_derived: OrderedDict[tuple[str, int, str], Any] = OrderedDict()


def derived(key: str, column: int, what: str) -> Any:
    """What a pass ``what`` over column ``column`` of copy ``key`` found (None if not kept)."""
    with _lock:
        return _derived.get((key, column, what))


def derive(key: str, column: int, what: str, value: Any) -> None:
    """Keep what a pass over one column found; a save carries it to the next version of the
    file when the save left that column alone."""
    with _lock:
        _derived[(key, column, what)] = value
        _derived.move_to_end((key, column, what))
        while len(_derived) > DERIVED:
            _derived.popitem(last=False)


def _carry_derived(old: str, new: str, touched: set[int]) -> None:
    with _lock:
        found = [(c, w, v) for (k, c, w), v in _derived.items() if k == old and c not in touched]
    for column, what, value in found:
        derive(new, column, what, value)


_building: dict[str, threading.Lock] = {}


def copy_of(idx: csvedit.Index) -> Copy:
    """The columnar copy of this index's file version, built on first use; NotATable for a
    table of more than ``MAX_COLUMNS`` columns."""
    width = len(csvedit.header(idx))
    if width > MAX_COLUMNS:
        raise csvedit.NotATable(
            idx.path.name,
            f"has {width} columns: rows are found in tables of at most "
            f"{MAX_COLUMNS}; page through it, or open it raw",
        )
    key = key_of(idx)
    with _lock:
        found = _open.get(key)
        if found is not None:
            _open.move_to_end(key)
            return found
        building = _building.setdefault(key, threading.Lock())
    with building:  # one build per version, however many requests ask at once
        with _lock:
            if key in _open:
                return _open[key]
        path = cache_dir() / f"{key}.arrow"
        if not path.is_file():
            build(idx, path)
            _prune(path.parent)
        table = ipc.open_file(pa.memory_map(str(path))).read_all()
        made = Copy(key, csvedit.header(idx), table, table.num_rows)
        with _lock:
            _open[key] = made
            while len(_open) > OPEN_COPIES:
                _open.popitem(last=False)
            _building.pop(key, None)
        return made


def prepare_later(idx: csvedit.Index) -> None:
    """Build the copy of ``idx`` in a thread unless it is open (a big table's page asks for
    it when shown, so its first find or save does not wait for the build)."""
    with _lock:
        if key_of(idx) in _open:
            return
    threading.Thread(target=_quietly, args=(idx,), daemon=True).start()


def _quietly(idx: csvedit.Index) -> None:
    try:
        copy_of(idx)
    except (OSError, csvedit.NotATable, pa.ArrowException):
        pass  # the find or save that needs it builds it again, and says why it cannot


def carry_later(
    before: csvedit.Index,
    after: csvedit.Index,
    shifts: list[tuple[int, int, int]],
    edits: dict[int, dict[int, str]],
) -> threading.Thread | None:
    """Make the copy of ``after`` (``before``'s file with ``edits`` spliced in) from the copy
    of ``before``, in a thread, when that copy is open; None when there is none to carry."""
    with _lock:
        old = _open.get(key_of(before))
        if old is None:
            return None
        building = _building.setdefault(key_of(after), threading.Lock())
    ready = threading.Event()

    def carry() -> None:
        with building:  # a find of the new version waits for this rather than scanning
            ready.set()
            try:
                _carry(old, after, shifts, edits)
            except (OSError, pa.ArrowException):
                pass  # the copy is built from the file when it is asked for

    thread = threading.Thread(target=carry, daemon=True)
    thread.start()
    ready.wait()
    return thread


def _carry(
    old: Copy,
    after: csvedit.Index,
    shifts: list[tuple[int, int, int]],
    edits: dict[int, dict[int, str]],
) -> None:
    key = key_of(after)
    dest = cache_dir() / f"{key}.arrow"
    table = old.table
    touched = {c for cells in edits.values() for c in cells}
    _carry_derived(old.key, key, touched)
    for c in sorted(touched):
        if c >= len(old.header):
            continue
        rows = sorted(r for r, cells in edits.items() if c in cells)
        mask = np.zeros(old.rows, dtype=bool)
        mask[rows] = True
        values = pa.array([edits[r][c][:FIELD_CAP] for r in rows], pa.string())
        col = pc.replace_with_mask(old.column(c).combine_chunks(), pa.array(mask), values)
        table = table.set_column(c, f"c{c}", col)
    starts = table.column("start").to_numpy()
    at = np.array([a for a, _, _ in sorted(shifts)], dtype=np.int64)
    grow = np.cumsum([n - (b - a) for a, b, n in sorted(shifts)], dtype=np.int64)
    before = np.searchsorted(at, starts, side="left")  # shifted rows that start earlier
    delta = np.where(before > 0, grow[np.maximum(before - 1, 0)], 0)
    new_starts = starts + delta
    ends = table.column("end").to_numpy()
    # a row's end moves by every shift up to and including its own
    upto = np.searchsorted(at, starts, side="right")
    new_ends = ends + np.where(upto > 0, grow[np.maximum(upto - 1, 0)], 0)
    table = table.set_column(len(old.header), "start", pa.array(new_starts))
    table = table.set_column(len(old.header) + 1, "end", pa.array(new_ends))

    def write(sink: BinaryIO) -> None:
        with ipc.new_file(sink, table.schema) as out:
            out.write_table(table, max_chunksize=BATCH_ROWS)
        if csvedit.version_of(after.path) != after.version:
            raise _Changed  # the file moved on meanwhile: its copy is built again on use

    try:
        replace_file(dest, write, durable=False)
    except _Changed:
        pass


def build(idx: csvedit.Index, dest: Path) -> None:
    """Write the copy of ``idx``'s file to ``dest`` (atomically) in one pass: Arrow's CSV
    reader for the cells when it reads the file row for row as ``csvedit`` does (the same
    count of records), else this module's own record-by-record pass."""
    width = max(1, len(csvedit.header(idx)))
    schema = pa.schema([pa.field(f"c{i}", pa.string()) for i in range(width)]
                       + [pa.field("start", pa.int64()), pa.field("end", pa.int64())])  # fmt: skip
    with open(idx.path, "rb") as fh:
        fast = rowscan.longest(fh, len(idx.dialect.bom), idx.size) <= FAST_RECORD

    def write(sink: BinaryIO) -> None:
        if fast:
            try:
                return _write(sink, schema, _fast_batches(idx, width))
            except (pa.ArrowInvalid, Misread):
                sink.seek(0)
                sink.truncate()
        _write(sink, schema, _slow_batches(idx, width))

    replace_file(dest, write, durable=False)


class Misread(Exception):
    """Arrow's reader and csvedit's scan disagree on where rows are: the slow pass reads it."""


class _Changed(Exception):
    """The table changed while its copy was carried over: the copy is dropped."""


def _write(sink: BinaryIO, schema: pa.Schema, batches: Iterator[list[Any]]) -> None:
    with ipc.new_file(sink, schema) as out:
        for batch in batches:
            out.write_batch(pa.record_batch(batch, schema=schema))


def _fast_batches(idx: csvedit.Index, width: int) -> Iterator[list[Any]]:
    d = idx.dialect
    with open(idx.path, "rb") as fh:
        fh.seek(len(d.bom))
        if csvedit.version_of(idx.path) != idx.version:
            raise csvedit.NotATable(idx.path.name, "changed while it was read: reload")
        reader = pacsv.open_csv(
            fh,
            read_options=pacsv.ReadOptions(
                column_names=[f"c{i}" for i in range(width)],
                skip_rows=1,
                encoding="latin-1" if d.encoding == "latin-1" else "utf8",
                block_size=BLOCK,
                use_threads=False,  # one block read at a time: memory stays a few blocks
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=d.delimiter, newlines_in_values=True, ignore_empty_lines=False
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={f"c{i}": pa.string() for i in range(width)},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
        with open(idx.path, "rb") as raw:
            spans = rowscan.Spans(raw, len(d.bom), idx.size)
            spans.take(1)  # the header
            for batch in reader:
                n = batch.num_rows
                starts, ends = spans.take(n)
                if len(starts) != n:
                    raise Misread("fewer records than rows")
                cols = [pc.utf8_slice_codeunits(batch.column(i), 0, FIELD_CAP)
                        for i in range(width)]  # fmt: skip
                yield [*cols, pa.array(starts), pa.array(ends)]
            if spans.take(1)[0].size:
                raise Misread("more records than rows")


def _slow_batches(idx: csvedit.Index, width: int) -> Iterator[list[Any]]:
    cols: list[list[Any]] = [[] for _ in range(width + 2)]
    parse, dialect = csvedit.lenient, idx.dialect
    first = True
    with open(idx.path, "rb") as fh:
        if csvedit.version_of(idx.path) != idx.version:
            raise csvedit.NotATable(idx.path.name, "changed while it was read: reload")
        for start, end, head in heads(fh, len(dialect.bom), idx.size, LINE_CAP):
            if first:  # the header
                first = False
                continue
            fields = _cut(head, dialect) if end - start > len(head) else parse(head, dialect).fields
            for c in range(width):
                value = fields[c] if c < len(fields) else ""
                cols[c].append(value if len(value) <= FIELD_CAP else value[:FIELD_CAP])
            cols[width].append(start)
            cols[width + 1].append(end)
            if len(cols[width]) >= BATCH_ROWS:
                yield cols
                cols = [[] for _ in range(width + 2)]
    if cols[width] or not idx.data_rows:
        yield cols


def _cut(head: bytes, dialect: csvedit.Dialect) -> list[str]:
    """The fields of a record's head (its first ``LINE_CAP`` bytes): a quoted field the cut
    leaves open is closed where the head ends."""
    for attempt in (head, head + b'"'):
        try:
            return csvedit.parse_record(attempt, dialect).fields
        except (csvedit.BadRow, UnicodeError):
            continue
    return csvedit.lenient(head, dialect).fields


def _prune(folder: Path) -> None:
    found = sorted(folder.glob("*.arrow"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in found[KEEP_FILES:]:
        try:
            old.unlink()
        except OSError:
            pass


def heads(fh: BinaryIO, pos: int, size: int, cap: int) -> Iterator[tuple[int, int, bytes]]:
    """(start, end, first ``cap`` bytes) of each record from ``pos``; memory stays within
    about ``cap`` + two windows however long a record is (the rest is scanned, not kept)."""
    fh.seek(pos)
    buf, base = b"", pos
    while pos < size:
        rel = pos - base
        end, quotes = csvedit.record_ends(buf, rel, len(buf))
        if end >= len(buf) and base + len(buf) < size:
            if len(buf) - rel > cap + csvedit.CHUNK:
                head = buf[rel : rel + cap]
                end, buf, base = _long_end(fh, buf[rel:], pos, size, quotes % 2)
                yield pos, end, head
                pos = end
                continue
            more = fh.read(csvedit.CHUNK)
            if not more:
                raise csvedit.NotATable(
                    Path(getattr(fh, "name", "?")).name, "shrank while being read"
                )
            buf, base = buf[rel:] + more, pos
            continue
        yield pos, base + end, buf[rel : min(end, rel + cap)]
        pos = base + end


def _long_end(
    fh: BinaryIO, seen: bytes, pos: int, size: int, open_quote: int
) -> tuple[int, bytes, int]:
    """The end of a long record starting at ``pos`` (``seen``: its bytes read so far, with
    ``open_quote`` 1 when they leave a quote open), scanning window by window; returns
    (end, the window holding it, that window's offset)."""
    base = pos + len(seen)
    while base < size:
        chunk = fh.read(csvedit.CHUNK)
        if not chunk:
            raise _shrank(fh)
        at = 0
        while True:
            nl = chunk.find(b"\n", at)
            if nl < 0:
                open_quote = (open_quote + chunk.count(b'"', at)) % 2
                break
            open_quote = (open_quote + chunk.count(b'"', at, nl + 1)) % 2
            at = nl + 1
            if not open_quote:
                return base + at, chunk, base
        base += len(chunk)
    return size, b"", size


def _shrank(fh: BinaryIO) -> csvedit.NotATable:
    return csvedit.NotATable(Path(getattr(fh, "name", "?")).name, "shrank while being read")
