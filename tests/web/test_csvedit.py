"""Lossless table edits: after a one-cell edit every other byte of the file is unchanged."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from praxis.web import csvedit, csvsplice

CORPUS: dict[str, bytes] = {
    "quoted_newline.csv": b'id,note,amount\n1,"two\nlines",3\n2,plain,4\n3,"a ""quote""",5\n',
    "bom.csv": b"\xef\xbb\xbfid,name\n1,Ana\n2,Bo\n3,Cy\n",
    "crlf.csv": b'id,name,city\r\n1,Ana,"Rome, IT"\r\n2,Bo,Paris\r\n3,Cy,Oslo\r\n',
    "semicolon.csv": b"id;name;price\n1;Ana;3,50\n2;Bo;4,25\n3;Cy;1,00\n",
    "tabs.tsv": b"id\tname\tnote\n1\tAna\tx y\n2\tBo\t\n3\tCy\tz\n",
    "latin1.csv": b"id,name\n1,Caf\xe9\n2,Na\xefve\n3,plain\n",
    "empty_trailing.csv": b"a,b,c\n1,,\n2,x,\n3,,\n",
    "no_final_newline.csv": b"a,b\n1,x\n2,y\n3,z",
    "quote_all.csv": b'"id","name"\n"1","Ana"\n"2","Bo"\n"3","Cy"\n',
    "mixed_quoting.csv": b'id,name,n\n1,"Ana",7\n"2",Bo,"8"\n3,Cy,9\n',
    "crlf_multiline.csv": b'id,text\r\n1,"one\r\ntwo"\r\n2,three\r\n3,four\r\n',
    "ragged.csv": b"a,b,c\n1,2\n3,4,5\n6\n",
    "bom_crlf_semicolon.csv": b'\xef\xbb\xbfid;name\r\n1;"a;b"\r\n2;c\r\n3;d\r\n',
    "latin1_semicolon_no_newline.csv": b'id;nom\n1;\xe9t\xe9\n2;hiver\n3;"po\xe8me\nlong"',
    "quoted_empty.csv": b'a,b,c\n"",x,""\n"",y,""\n,z,\n',
    "blank_line.csv": b"a,b\n1,x\n\n2,y\n3,z\n",
}


def rows_of(data: bytes, dialect: csvedit.Dialect) -> list[bytes]:
    body = data[len(dialect.bom) :]
    out, pos = [], 0
    while pos < len(body):
        end, _ = csvedit.record_ends(body, pos, len(body))
        out.append(body[pos:end])
        pos = end
    return out


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_a_one_cell_edit_leaves_every_other_row_byte_identical(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(CORPUS[name])
    idx = csvedit.index(path)
    assert idx.problem is None, idx.problem
    new = csvsplice.splice(idx, {1: {1: 'Zoë; "new"\nline'}})
    before, after = rows_of(CORPUS[name], idx.dialect), rows_of(new, idx.dialect)
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert changed == [2]  # header is row 0: data row 1 is record 2
    assert new.startswith(idx.dialect.bom)
    assert new.endswith(b"\n") == CORPUS[name].endswith(b"\n")
    text = new[len(idx.dialect.bom) :].decode(idx.dialect.encoding)
    parsed = list(csv.reader(io.StringIO(text, newline=""), delimiter=idx.dialect.delimiter))
    assert parsed[2][1].replace("\r\n", "\n") == 'Zoë; "new"\nline'


def test_dialect_detection(tmp_path: Path) -> None:
    found = {}
    for name, data in CORPUS.items():
        (tmp_path / name).write_bytes(data)
        d = csvedit.index(tmp_path / name).dialect
        found[name] = (d.encoding, d.bom != b"", d.delimiter, d.newline)
    assert found["semicolon.csv"][2] == ";"
    assert found["tabs.tsv"][2] == "\t"
    assert found["latin1.csv"][0] == "latin-1"
    assert found["bom.csv"][:2] == ("utf-8", True)
    assert found["crlf.csv"][3] == b"\r\n"
    assert found["quoted_newline.csv"] == ("utf-8", False, ",", b"\n")


def test_a_multiline_cell_keeps_its_own_line_breaks(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_bytes(CORPUS["crlf_multiline.csv"])
    idx = csvedit.index(path)
    assert idx.rows == 4 and idx.data_rows == 3
    assert csvedit.read_rows(idx, 1, 1)[0].fields == ["1", "one\r\ntwo"]
    new = csvsplice.splice(idx, {0: {1: "one\r\ntwo\r\nthree"}})
    assert new == b'id,text\r\n1,"one\r\ntwo\r\nthree"\r\n2,three\r\n3,four\r\n'


def test_a_value_latin1_cannot_hold_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    path.write_bytes(CORPUS["latin1.csv"])
    with pytest.raises(UnicodeEncodeError):
        csvsplice.splice(csvedit.index(path), {0: {1: "日本"}})


@pytest.mark.parametrize(
    "data",
    [b'a,b\n1, "x"\n', b'a,b\n1,"x"y\n', b'a,b\n1,"open\n'],
    ids=["space-before-quote", "text-after-quote", "unclosed"],
)
def test_a_file_that_would_not_round_trip_is_text_only(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "odd.csv"
    path.write_bytes(data)
    idx = csvedit.index(path)
    assert idx.problem is not None
    with pytest.raises(csvedit.BadRow):
        csvsplice.splice(idx, {0: {0: "2"}})


def test_pages_are_read_by_offset_across_index_blocks(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    lines = ["n,text"] + [
        f'{i},"line {i}\nsecond"' if i % 7 == 0 else f"{i},t{i}" for i in range(2500)
    ]
    path.write_text("\n".join(lines) + "\n")
    idx = csvedit.index(path)
    assert idx.data_rows == 2500
    assert len(idx.offsets) == 3
    rows = csvedit.read_rows(idx, 1 + 1998, 5)
    assert [r.fields[0] for r in rows] == ["1998", "1999", "2000", "2001", "2002"]
    assert rows[4].fields[1] == "line 2002\nsecond"
