"""Records: records/<phase>.ipynb for every attempt, valid nbformat v4, with the real outputs."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from praxis.agent.scripted import ScriptedChatModel
from praxis.flows.engine import runner
from praxis.flows.model.flow import Flow
from praxis.flows.store import record as record_module
from praxis.flows.store.handle import RunHandle
from praxis.flows.store.record import Record
from praxis.llm.given import given_to
from sandbox import ExecResult, Sandbox, open_sandbox

# A 1x1 PNG.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
    )
).decode()


def local(flow: Flow, run: RunHandle) -> Sandbox:
    return open_sandbox({"backend": "local"}, workspace=run.paths.workspace, name=run.id)


def plain(lines: list[str]) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(lines))


def read(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return nb


# -- the Record itself ---------------------------------------------------------------------


def test_a_record_is_validated_when_saved_with_the_validator_built_aside(tmp_path: Path) -> None:
    record = Record({"phase": "p"})
    assert record_module._validator is not None  # building while the phase runs
    record.code("x = 1")
    record.save(tmp_path / "ok.ipynb")
    read(tmp_path / "ok.ipynb")
    record.cells[0]["cell_type"] = "spreadsheet"  # what no notebook may hold
    with pytest.raises(nbformat.ValidationError):
        record.save(tmp_path / "bad.ipynb")
    assert not (tmp_path / "bad.ipynb").exists()


def test_record_keeps_every_kind_of_output_and_validates(tmp_path: Path) -> None:
    record = Record({"flow": "f", "run": "r", "started": 1000.0})
    record.markdown("## Prompt", role="prompt")
    result = ExecResult(
        status="error",
        outputs=[
            {"output_type": "stream", "name": "stdout", "text": ["a", "b\n"]},
            {"output_type": "display_data", "data": {"text/html": ["<b>", "x</b>"]}},
            {"output_type": "display_data", "data": {"image/png": PNG}, "metadata": None},
            {"output_type": "execute_result", "data": {"text/plain": "42"}, "execution_count": 7},
            {"output_type": "display_data", "data": {"application/json": {"k": [1, 2]}}},
            {"output_type": "error", "ename": "E", "evalue": "bad", "traceback": ["t1", 2]},
            {"output_type": "weird"},
        ],
        ename="E",
        evalue="bad",
    )
    record.code("print('ab')", result, tool="run_python")
    record.code("not run")
    record.metadata.update(status="failed", ended=1002.5)
    record.save(tmp_path / "r.ipynb")

    nb = read(tmp_path / "r.ipynb")
    meta = nb.metadata["praxis"]
    assert meta["started_at"] == "1970-01-01T00:16:40.000+00:00"
    assert meta["seconds"] == 2.5 and meta["status"] == "failed"
    prompt, ran, not_run = nb.cells
    assert prompt.metadata["praxis"] == {"role": "prompt"}
    assert ran.execution_count == 1 and ran.metadata["praxis"] == {"tool": "run_python"}
    out = ran.outputs
    assert out[0].text == "ab\n"
    assert out[1].data["text/html"] == "<b>x</b>"
    assert out[2].data["image/png"] == PNG
    assert out[3].execution_count == 1 and out[3].data["text/plain"] == "42"
    assert out[4].data["application/json"] == {"k": [1, 2]}
    assert out[5].traceback == ["t1", "2"]
    assert out[6].name == "stderr" and "unknown output" in out[6].text
    assert not_run.outputs == [] and not_run.execution_count is None


def test_copied_cells_get_fresh_ids_and_lose_outputs() -> None:
    record = Record()
    source = v4.new_code_cell("x", outputs=[v4.new_output("stream", text="old")])
    source.execution_count = 3
    first, second = record.copy(source), record.copy(source)
    assert first.id != second.id != source.id
    assert first.outputs == [] and first.execution_count is None
    nbformat.validate(record.nb)


# -- records written by the runner ---------------------------------------------------------

SHOW = """\
import pandas as pd
from IPython.display import Image, display
import base64
print("hello from show")
display(Image(data=base64.b64decode(PNG)))
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import io
fig, ax = plt.subplots()
ax.plot([1, 2, 3])
buf = io.BytesIO()
fig.savefig(buf, format="png")
plt.close(fig)
display(Image(data=buf.getvalue()))
df = pd.DataFrame({"region": ["North", "South"], "amount": [1, 2]})
df.to_csv("a.csv", index=False)
df
"""

BOOM = """\
print("about to fail")
raise ValueError("no good")
"""


def script_flow(root: Path) -> Path:
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "show.py").write_text(SHOW.replace("PNG", repr(PNG)))
    (root / "scripts" / "boom.py").write_text(BOOM)
    (root / "flow.yaml").write_text(
        "flow: records\n"
        "sandbox: {backend: local, timeout: 60}\n"
        "phases:\n"
        "  - {id: show, kind: script, script: scripts/show.py, outputs: [a.csv]}\n"
        "  - {id: boom, kind: script, script: scripts/boom.py, outputs: [b.csv]}\n"
    )
    return root


def test_script_records_show_outputs_and_failures_and_attempts_are_kept(tmp_path: Path) -> None:
    root = script_flow(tmp_path / "flow")
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    assert state.status == "failed"
    paths = run.paths

    show = read(paths.record("show"))
    meta = show.metadata["praxis"]
    assert {k: meta[k] for k in ("flow", "run", "phase", "kind", "attempt", "status")} == {
        "flow": "records",
        "run": run.id,
        "phase": "show",
        "kind": "script",
        "attempt": 1,
        "status": "done",
    }
    assert meta["backend"] == "local" and meta["isolated"] is False
    assert meta["ended"] >= meta["started"] and meta["started_at"].endswith("+00:00")
    (cell,) = show.cells
    assert cell.source.startswith("import pandas as pd")
    streams = [o.text for o in cell.outputs if o.output_type == "stream"]
    assert "hello from show\n" in streams
    images = [o.data["image/png"] for o in cell.outputs if "image/png" in o.get("data", {})]
    assert images[0] == PNG and len(images) == 2 and len(images[1]) > 1000  # matplotlib
    (table,) = [o for o in cell.outputs if o.output_type == "execute_result"]
    assert "<table" in table.data["text/html"] and "North" in table.data["text/html"]

    boom = read(paths.record("boom"))
    assert boom.metadata["praxis"]["status"] == "failed"
    code, note = boom.cells
    assert [o.output_type for o in code.outputs] == ["stream", "error"]
    assert code.outputs[0].text == "about to fail\n"
    traceback = plain(code.outputs[1].traceback)
    assert "ValueError" in traceback and 'raise ValueError("no good")' in traceback
    assert note.cell_type == "markdown" and "ValueError: no good" in note.source

    runner.rerun(root, "boom", run.id)
    runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    kept = read(paths.attempt("boom", 1) / "record.ipynb")
    assert kept.metadata["praxis"]["attempt"] == 1
    assert read(paths.record("boom")).metadata["praxis"]["attempt"] == 2


def test_agent_records_hold_model_messages_and_code_outputs(tmp_path: Path) -> None:
    root = tmp_path / "flow"
    (root / "prompts").mkdir(parents=True)
    (root / "prompts" / "task.md").write_text("Count to three and write n.csv.\n")
    (root / "flow.yaml").write_text(
        "flow: agentrec\n"
        "sandbox: {backend: local, timeout: 60}\n"
        "model: praxis.agent.scripted:ScriptedChatModel\n"
        "phases:\n"
        "  - {id: count, kind: agent, prompt: prompts/task.md, outputs: [n.csv]}\n"
    )
    code = (
        "import pandas as pd\nprint('counting')\n"
        "pd.DataFrame({'n': [1, 2, 3]}).to_csv('n.csv', index=False)\npd.read_csv('n.csv')"
    )
    model = ScriptedChatModel(
        replies=[
            {
                "text": "I will write the table.",
                "tool_calls": [{"name": "run_python", "args": {"code": code}}],
            },
            {"text": "Done: n.csv holds 1 to 3.", "tool_calls": []},
        ]
    )
    run = runner.begin(root)
    given = given_to("agent", model, lambda phase, code: True)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local, given=given))
    assert state.status == "done", state.error
    nb = read(run.paths.record("count"))
    assert nb.metadata["praxis"]["kind"] == "agent"
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert markdown[0].startswith("## Prompt") and "Count to three" in markdown[0]
    assert "I will write the table." in markdown and "Done: n.csv holds 1 to 3." in markdown
    (ran,) = [c for c in nb.cells if c.cell_type == "code"]
    assert ran.source == code
    assert [o.text for o in ran.outputs if o.output_type == "stream"] == ["counting\n"]
    (table,) = [o for o in ran.outputs if o.output_type == "execute_result"]
    assert "<table" in table.data["text/html"]
