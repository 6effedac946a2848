"""flow.yaml's ``foreach:`` and ``parallel:`` of a phase, read into a ``FanOut``
(``model/fanout.py``), and the files of a ``files:`` pattern found without following a link.

```yaml
foreach: {param: region, values: [north, south, east, west]}
foreach: {param: month, range: ["2026-01", "2026-12"]}      # months, or two integers
foreach: {files: "data/parts/*.csv", param: file}            # one partition per file
parallel: 4                                                   # partitions at once (default 1)
```
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from sandbox.files import folder_below

from ..model.fanout import MAX_PARALLEL, MAX_PARTITIONS, FanOut, expand_range, unsafe
from .yaml_values import ValueReader, describe

KEYS = ("param", "values", "range", "files")
PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class NoFiles(ValueError):
    """A ``files:`` pattern that finds no partition, or one whose file cannot be one."""


def read(raw: dict[str, Any], loc: str, reader: ValueReader) -> FanOut | None:
    """The phase's fan-out, or None (no ``foreach:``); each problem reported on one line."""
    if "foreach" not in raw:
        if "parallel" in raw:
            reader.error(f"{loc}.parallel", "parallel needs a foreach: (the partitions to run)")
        return None
    at = f"{loc}.foreach"
    spec = reader.mapping(raw["foreach"], at, KEYS)
    if spec is None:
        return None
    parallel = _parallel(raw.get("parallel", 1), f"{loc}.parallel", reader)
    given = [k for k in ("values", "range", "files") if k in spec]
    if len(given) != 1:
        reader.error(at, "give one of values:, range: or files: (the partitions)")
        return None
    param = spec.get("param", "file" if given == ["files"] else None)
    if param is None:
        reader.error(at, "missing param: (the run parameter that holds the partition's value)")
        return None
    name = reader.ident(param, f"{at}.param", PARAM, "parameter name")
    if given == ["files"]:
        pattern = _pattern(spec["files"], f"{at}.files", reader)
        if pattern is None or name is None:
            return None
        try:
            files_of(reader.root, pattern)
        except NoFiles as exc:
            reader.error(f"{at}.files", str(exc))
            return None
        return FanOut(param=name, files=pattern, parallel=parallel or 1, written=dict(spec))
    values = _values(spec, given[0], f"{at}.{given[0]}", reader)
    if values is None or name is None:
        return None
    return FanOut(param=name, values=tuple(values), parallel=parallel or 1, written=dict(spec))


def _parallel(value: Any, loc: str, reader: ValueReader) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PARALLEL:
        reader.error(loc, f"expected a whole number 1 to {MAX_PARALLEL}, got {describe(value)}")
        return None
    return value


def _values(spec: dict[str, Any], key: str, loc: str, reader: ValueReader) -> list[str] | None:
    value = spec[key]
    if key == "range":
        if not (isinstance(value, list) and len(value) == 2):
            reader.error(
                loc, f'expected [first, last] (e.g. ["2026-01", "2026-12"]), got {describe(value)}'
            )
            return None
        try:
            return expand_range(str(value[0]), str(value[1]))
        except ValueError as exc:
            reader.error(loc, str(exc))
            return None
    if not isinstance(value, list) or not value:
        reader.error(loc, f"expected a list of partition values, got {describe(value)}")
        return None
    if len(value) > MAX_PARTITIONS:
        reader.error(loc, f"{len(value)} values, over {MAX_PARTITIONS}")
        return None
    out: list[str] = []
    for i, item in enumerate(value):
        text = str(item) if isinstance(item, (str, int)) and not isinstance(item, bool) else None
        problem = "a value is a string or a whole number" if text is None else unsafe(text)
        if problem is None and text in out:
            problem = f"{text!r} is listed twice"
        if problem is not None:
            reader.error(f"{loc}[{i}]", problem)
            return None
        out.append(str(text))
    return out


def _pattern(value: Any, loc: str, reader: ValueReader) -> str | None:
    pattern = reader.string(value, loc)
    if pattern is None:
        return None
    parts = PurePosixPath(pattern).parts
    if not parts or pattern.startswith("/") or ".." in parts or any("*" in p for p in parts[:-1]):
        reader.error(
            loc, f"{pattern!r}: a folder of the flow, then a file pattern (data/parts/*.csv)"
        )
        return None
    return pattern


def files_of(root: Path, pattern: str) -> list[tuple[str, str]]:
    """The partitions of ``pattern`` (``folder/*.csv`` below ``root``): (name, file), sorted.
    The name is the file's stem; the folder and each file are reached without a link (a link
    is refused, never followed). NoFiles when none, or a name that cannot be a partition."""
    folder, _, glob = pattern.rpartition("/")
    parts = [p for p in folder.split("/") if p not in ("", ".")]
    found: list[tuple[str, str]] = []
    try:
        with folder_below(Path(root).resolve(), parts) as fd:
            for entry in sorted(os.listdir(fd)):
                if fnmatch.fnmatchcase(entry, glob):
                    found.append(_partition(fd, entry, folder, pattern))
    except FileNotFoundError:
        raise NoFiles(f"{pattern!r}: the folder {folder or '.'!r} does not exist") from None
    except OSError as exc:
        raise NoFiles(
            f"{pattern!r}: the folder {folder or '.'!r} cannot be read, a link is never "
            f"followed ({exc.strerror})"
        ) from None
    if not found:
        raise NoFiles(f"{pattern!r} matches no file of the flow (one partition per file)")
    if len(found) > MAX_PARTITIONS:
        raise NoFiles(f"{pattern!r} matches {len(found)} files, over {MAX_PARTITIONS}")
    if len({n for n, _ in found}) != len(found):
        raise NoFiles(f"{pattern!r}: two files share a name before their suffix")
    return found


def _partition(fd: int, entry: str, folder: str, pattern: str) -> tuple[str, str]:
    st = os.stat(entry, dir_fd=fd, follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode):
        raise NoFiles(f"{entry!r} of {pattern!r} is not a regular file (a link is never followed)")
    name = entry.rsplit(".", 1)[0] if "." in entry[1:] else entry
    problem = unsafe(name)
    if problem is not None:
        raise NoFiles(f"{pattern!r}: {problem}; rename the file")
    return name, f"{folder}/{entry}" if folder else entry


def not_an_input(name: str, producer: str) -> str:
    """Why an output of a fan-out is not named as a later phase's input."""
    return (
        f"{name!r} is an output of the fan-out {producer}, one per partition: a later phase "
        f"finds each at <phase>/<partition>/{name} in its workspace; remove it from inputs"
    )
