"""Read a phase's .ipynb and say why praxis cannot run it, before any phase runs.

``read`` is the one way praxis opens a notebook (``praxis check``, the notebook executor,
``praxis params``): plain JSON first, then the shape nbformat v4 wants, then the language.
Cell ids are normalised on the way in (a 4.4 notebook has none; copies may repeat them), so
nbformat's MissingIDFieldWarning never reaches the user. Each problem is one line.
"""

from __future__ import annotations

import json
import re
import uuid
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from . import flow_files

if TYPE_CHECKING:
    from nbformat import NotebookNode

CELL_TYPES = ("code", "markdown", "raw")
CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
PYTHON = ("python", "python3", "ipython", "ipython3")
MAX_BYTES = 50 << 20  # the contract's limit for any file a flow names


class NotebookProblem(UsageError, ValueError):
    """Raised by ``read`` when a notebook cannot be run; the message is one line."""


def read(path: Path) -> NotebookNode:
    """The notebook at ``path`` as nbformat 4.5 (cell ids set), or NotebookProblem."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise NotebookProblem(f"cannot be read ({exc.strerror or exc})") from exc
    return _parse(raw)


def read_flow(root: Path, name: str) -> NotebookNode:
    """Notebook ``name`` of the flow folder ``root``, read by descriptor (no link followed)."""

    try:
        raw = flow_files.read(root, name, MAX_BYTES)
    except flow_files.PathRefused as exc:
        raise NotebookProblem(exc.reason) from exc
    except OSError as exc:
        raise NotebookProblem(f"cannot be read ({exc.strerror or exc})") from exc
    return _parse(raw)


def _parse(raw: bytes) -> NotebookNode:
    if len(raw) > MAX_BYTES:
        raise NotebookProblem("is over the 50 MiB limit")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise NotebookProblem(f"is not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise NotebookProblem(
            f"is not JSON (line {exc.lineno}: {exc.msg}); open it in Jupyter and save it again"
        ) from exc
    return _notebook(data)


def problem(path: Path) -> str | None:
    """Why ``path`` cannot run as a notebook phase, or None."""
    try:
        read(path)
    except NotebookProblem as exc:
        return str(exc)
    return None


def flow_problem(root: Path, name: str) -> str | None:
    """``praxis check``: one line on the notebook ``name`` of the flow at ``root``, or None.

    A missing file, a link out of the flow or a non-regular file is the contract's to report.
    """
    path = root / name
    try:
        if not path.resolve().is_relative_to(root.resolve()) or not path.is_file():
            return None
    except (OSError, RuntimeError):
        return None
    found = problem(path)
    return None if found is None else f"{name}: {found}"


def language(nb: NotebookNode) -> str:
    """The notebook's kernel language (kernelspec, then language_info); python when unsaid."""
    meta = nb.get("metadata", {})
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        value = meta.get(key, {}).get(field) if isinstance(meta.get(key), dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip()
    return "python"


def _notebook(data: Any) -> NotebookNode:
    if not isinstance(data, dict) or "nbformat" not in data:
        raise NotebookProblem("is not a Jupyter notebook (no 'nbformat' and 'cells')")
    major = data.get("nbformat")
    if major != 4:
        raise NotebookProblem(
            f"is nbformat v{str(major)[:20]}; praxis reads v4: upgrade it with "
            "`jupyter nbconvert --to notebook --inplace` or save it again in Jupyter"
        )
    if not isinstance(data.get("cells"), list):
        raise NotebookProblem("is not a Jupyter notebook (its 'cells' is not a list)")
    _cells(data["cells"])
    import nbformat  # here: `praxis status` loads the contract and must stay quick

    minor = data.get("nbformat_minor")
    data["nbformat_minor"] = max(5, minor if isinstance(minor, int) else 0)
    nb: NotebookNode = nbformat.from_dict(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            nbformat.validate(nb)
        except nbformat.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "the notebook"
            first = str(exc.message).splitlines()[0][:200]
            raise NotebookProblem(f"is not a valid v4 notebook ({where}: {first})") from None
    lang = language(nb)
    if lang.lower() not in PYTHON:
        raise NotebookProblem(
            f"kernel language is {lang[:40]!r}; praxis runs Python notebooks only"
        )
    return nb


def _cells(cells: list[Any]) -> None:
    """Check each cell's type; give every cell a unique, valid id."""
    seen: set[str] = set()
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            raise NotebookProblem(f"cell {number} is not an object")
        kind = cell.get("cell_type")
        if kind not in CELL_TYPES:
            raise NotebookProblem(
                f"cell {number} has an unknown type {str(kind)[:40]!r} (code, markdown or raw)"
            )
        cid = cell.get("id")
        if not isinstance(cid, str) or not CELL_ID.fullmatch(cid) or cid in seen:
            cid = uuid.uuid4().hex[:8]
            while cid in seen:
                cid = uuid.uuid4().hex[:8]
            cell["id"] = cid
        seen.add(cid)
        if kind != "code":
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
