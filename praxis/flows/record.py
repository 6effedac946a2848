"""The executed record of one phase attempt: an nbformat v4 notebook.

Executors append cells as code runs (``code`` with the sandbox's ExecResult outputs,
``markdown`` for model messages and notes); the runner saves it to ``records/<phase>.ipynb``
with the run's metadata, also when the phase failed.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbformat import v4

from sandbox import ExecResult


class Record:
    def __init__(self, metadata: dict[str, Any] | None = None) -> None:
        self.nb = v4.new_notebook()
        self.nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        self.nb.metadata["language_info"] = {"name": "python"}
        self.nb.metadata["praxis"] = dict(metadata or {})
        self._count = 0

    @property
    def metadata(self) -> dict[str, Any]:
        return self.nb.metadata["praxis"]

    def markdown(self, text: str, **meta: Any) -> None:
        cell = v4.new_markdown_cell(text)
        if meta:
            cell.metadata["praxis"] = meta
        self.nb.cells.append(cell)

    def code(self, source: str, result: ExecResult | None = None, **meta: Any) -> None:
        cell = v4.new_code_cell(source)
        if result is not None:
            self._count += 1
            cell.execution_count = self._count
            cell.outputs = [nbformat.from_dict(o) for o in result.outputs]
            for out in cell.outputs:
                if out.get("output_type") == "execute_result":
                    out["execution_count"] = self._count
        if meta:
            cell.metadata["praxis"] = meta
        self.nb.cells.append(cell)

    def error(self, text: str) -> None:
        """A failure that did not come from the kernel (timeout, death, a failed check)."""
        self.markdown(f"**Phase failed:** {text}", failure=True)

    def save(self, path: Path) -> None:
        nbformat.validate(self.nb)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.nb, fh, ensure_ascii=False, indent=1)
                fh.write("\n")
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
