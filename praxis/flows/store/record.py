"""The executed record of one phase attempt: an nbformat v4 notebook.

Executors append cells as code runs (``code`` with the sandbox's ExecResult outputs,
``markdown`` for model messages and notes, ``copy`` for a notebook's own cells); the runner
saves it to ``records/<phase>.ipynb`` with the run's metadata, also when the phase failed. An
executor may ``checkpoint`` it while the phase runs (status ``running``): every save is atomic,
so a reader never sees half a record.

The notebook's ``metadata.praxis`` holds flow, run, phase, kind, attempt, status, backend,
isolated, ``started``/``ended`` (epoch seconds) and, added on save, ``started_at``/``ended_at``
(ISO 8601, UTC) and ``seconds``. Outputs are normalised to the nbformat schema as they are
added, so whatever a kernel sent, the saved record validates.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from sandbox import ExecResult
from sandbox.collector import bundle, json_dict, text_of
from sandbox.files import replace_file

if TYPE_CHECKING:
    from nbformat import NotebookNode

MAX_RECORD = 32 << 20  # bytes of one record notebook
V4 = (4, 5)  # the nbformat version and minor version of a record


# nbformat imported by two threads at once (a record made while the validator is built, or
# by two partitions of a fan-out) could deadlock: one holding the package and waiting for its
# validator module, the other the reverse. Its first import is made by one thread at a time,
# and every other use starts with it, so no thread meets a half-imported package.
_IMPORTING = threading.Lock()


def _nbformat() -> ModuleType:
    """nbformat, imported when the first record is made, not when the engine is: its import
    (with its validator's) is a third of the engine's, and ``praxis run`` starts the run's
    sandbox only once the run is begun, so the run begins that much sooner and the import
    happens while the container starts."""
    with _IMPORTING:  # the first import by one thread at a time: see _IMPORTING
        import nbformat
    return nbformat


_validator: threading.Thread | None = None  # builds nbformat's validator once a process


def _build_validator() -> None:
    validator = _nbformat().validator  # the package first: it imports its validator module
    try:
        validator.get_validator(*V4)
    except Exception:  # validating builds it again, and raises there
        pass


def prepare_validator() -> None:
    """Build the notebook validator on a thread (compiling its schema takes tens of ms), so
    the first record saved need not wait for it: a phase's kernel and code take longer."""
    global _validator
    if _validator is None:
        _validator = threading.Thread(target=_build_validator, name="nb-validator", daemon=True)
        _validator.start()


def _validate(nb: NotebookNode) -> None:
    if _validator is not None:
        _validator.join()
    _nbformat().validate(nb)


class Record:
    def __init__(self, metadata: dict[str, Any] | None = None) -> None:
        prepare_validator()
        node = _nbformat().NotebookNode
        self.nb = node(nbformat=V4[0], nbformat_minor=V4[1], metadata=node(), cells=[])
        self.nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        self.nb.metadata["language_info"] = {"name": "python"}
        self.nb.metadata["praxis"] = dict(metadata or {})
        self._count = 0
        # display_id -> the outputs showing it (cell, index), as nbclient's display map
        self._displays: dict[str, list[tuple[NotebookNode, int]]] = {}

    @property
    def metadata(self) -> dict[str, Any]:
        return self.nb.metadata["praxis"]  # type: ignore[no-any-return]

    @property
    def cells(self) -> list[NotebookNode]:
        return self.nb.cells  # type: ignore[no-any-return]

    def markdown(self, text: str, *, tags: list[str] | None = None, **meta: Any) -> NotebookNode:
        """Append a markdown cell (a model message, a note); ``meta`` goes to metadata.praxis."""
        cell = _cell("markdown", text)
        _label(cell, tags, meta)
        self.nb.cells.append(cell)
        return cell

    def code(
        self,
        source: str,
        result: ExecResult | None = None,
        *,
        tags: list[str] | None = None,
        **meta: Any,
    ) -> NotebookNode:
        """Append a code cell; with ``result`` it shows that execution's outputs.

        Without one the cell is shown as not run; ``outputs`` can fill it in later (an
        executor appends the cell before running it, so a timeout still shows what ran).
        """
        cell = _cell("code", source, execution_count=None, outputs=[])
        _label(cell, tags, meta)
        self.nb.cells.append(cell)
        if result is not None:
            self.outputs(cell, result)
        return cell

    def outputs(
        self, cell: NotebookNode, result: ExecResult, *, kernel_count: bool = False
    ) -> None:
        """Give ``cell`` (appended by ``code``) the outputs of ``result`` and the next count.

        With ``kernel_count`` the count is the kernel's (``In [n]`` as Jupyter numbers the
        cell), and ``None`` when the kernel gave none. A display this execute updated that an
        earlier cell shows is updated there too, as nbclient does.
        """
        if kernel_count:
            count = result.execution_count
        else:
            self._count += 1
            count = self._count
        cell.execution_count = count
        cell.outputs = [_output(o, count, kernel_count) for o in result.outputs]
        if result.execution:
            cell.metadata["execution"] = dict(result.execution)
        if result.truncated:
            cell.metadata.setdefault("praxis", {})["truncated"] = True
        self._update_displays(cell, result)

    def _update_displays(self, cell: NotebookNode, result: ExecResult) -> None:
        for display_id, shown in result.display_updates.items():
            for other, index in self._displays.get(display_id, []):
                if other is not cell and index < len(other.outputs):
                    out = other.outputs[index]
                    out["data"] = bundle(shown.get("data"))
                    out["metadata"] = json_dict(shown.get("metadata"))
        for index, display_id in result.display_ids.items():
            if 0 <= index < len(cell.outputs) and "data" in cell.outputs[index]:
                self._displays.setdefault(display_id, []).append((cell, index))

    def output(self, raw: dict[str, Any]) -> NotebookNode:
        """One output dict (as an ExecResult holds them) as a schema-valid nbformat output."""
        return _output(raw, None)

    def copy(self, cell: NotebookNode) -> NotebookNode:
        """Append a copy of a notebook's cell as it is (markdown, raw, or code not run)."""
        new = _nbformat().from_dict(json.loads(json.dumps(cell)))
        if new.cell_type == "code":
            new.outputs = []
            new.execution_count = None
        new["id"] = _fresh_id()  # ids must be unique in the record, whatever the source had
        self.nb.cells.append(new)
        return new  # type: ignore[no-any-return]

    def adopt(self, metadata: dict[str, Any]) -> None:
        """Keep a source notebook's metadata (kernelspec, language_info, its own keys).

        ``metadata.praxis`` stays the run's.
        """
        for key, value in metadata.items():
            if key != "praxis":
                self.nb.metadata[key] = json.loads(json.dumps(value, default=str))

    def checkpoint(self, path: Path) -> None:
        """Save the record of a phase still running (status ``running``), atomically."""
        self.metadata["status"] = "running"
        self.save(path, quick=True)

    def error(self, text: str) -> None:
        """A failure that did not come from the kernel (timeout, death, a failed check)."""
        self.markdown(f"**Phase failed:** {text}", failure=True)

    def save(self, path: Path, *, quick: bool = False) -> None:
        """Validate and write atomically; a record over MAX_RECORD bytes loses the outputs
        of its largest cells first, each replaced by a marker saying so. ``quick`` (a
        checkpoint while the phase runs) skips the validation and the indentation."""
        self._stamp()
        if not quick:
            _validate(self.nb)
        indent = None if quick else 1
        text = json.dumps(self.nb, ensure_ascii=False, indent=indent) + "\n"
        if len(text) > MAX_RECORD:
            self._shrink(len(text))
            text = json.dumps(self.nb, ensure_ascii=False, indent=indent) + "\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, text.encode("utf-8"), durable=False)

    def _shrink(self, size: int) -> None:
        cells = [c for c in self.nb.cells if c.cell_type == "code" and c.get("outputs")]
        cells.sort(key=lambda c: len(json.dumps(c.outputs, ensure_ascii=False)), reverse=True)
        for cell in cells:
            if size <= MAX_RECORD:
                return
            size -= len(json.dumps(cell.outputs, ensure_ascii=False))
            note = f"[outputs dropped: the record of a phase keeps at most {MAX_RECORD} bytes]\n"
            cell.outputs = [_new_output("stream", name="stderr", text=note)]

    def _stamp(self) -> None:
        """Readable times next to the epoch seconds the runner sets."""
        meta = self.metadata
        for key in ("started", "ended"):
            if isinstance(meta.get(key), int | float):
                meta[f"{key}_at"] = _iso(float(meta[key]))
        if isinstance(meta.get("started"), int | float) and isinstance(
            meta.get("ended"), int | float
        ):
            meta["seconds"] = round(float(meta["ended"]) - float(meta["started"]), 3)


def _label(cell: NotebookNode, tags: list[str] | None, meta: dict[str, Any]) -> None:
    if tags:
        cell.metadata["tags"] = list(tags)
    if meta:
        cell.metadata["praxis"] = json.loads(json.dumps(meta, default=str))


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def _fresh_id() -> str:
    _nbformat()  # the package first (see _IMPORTING)
    from nbformat.corpus.words import generate_corpus_id

    return str(generate_corpus_id())


def _cell(cell_type: str, source: str, **fields: Any) -> NotebookNode:
    """A new cell as nbformat's builders make it, without their validation of each node
    (tens of ms a phase): the record is validated once, as a whole, when it is saved."""
    node = _nbformat().NotebookNode
    return node(  # type: ignore[no-any-return]
        id=_fresh_id(), cell_type=cell_type, metadata=node(), source=source, **fields
    )


def _new_output(output_type: str, **fields: Any) -> NotebookNode:
    """An output node (validated with the record when it is saved)."""
    node: NotebookNode = _nbformat().from_dict({"output_type": output_type, **fields})
    return node


def _output(raw: dict[str, Any], count: int | None, kernel_count: bool = False) -> NotebookNode:
    """One ExecResult output as a schema-valid nbformat output."""
    kind = raw.get("output_type")
    if kind == "stream":
        name = raw.get("name") if raw.get("name") in ("stdout", "stderr") else "stdout"
        return _new_output("stream", name=name, text=text_of(raw.get("text")))
    if kind == "error":
        return _new_output(
            "error",
            ename=text_of(raw.get("ename")),
            evalue=text_of(raw.get("evalue")),
            traceback=[text_of(line) for line in raw.get("traceback") or []],
        )
    meta = json_dict(raw.get("metadata"))
    data = bundle(raw.get("data"))
    if kind == "execute_result":
        own = raw.get("execution_count")
        if kernel_count and isinstance(own, int) and not isinstance(own, bool):
            count = own  # the kernel's, as nbclient keeps it
        return _new_output("execute_result", data=data, metadata=meta, execution_count=count)
    if kind == "display_data":
        return _new_output("display_data", data=data, metadata=meta)
    return _new_output("stream", name="stderr", text=f"[praxis: unknown output {kind!r}]\n")
