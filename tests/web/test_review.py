"""The reviewer's tools without a browser: drafts with Approve, lossless text saves, paging,
live output, rendered files, Changes, events."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from praxis.flows.engine import runner
from praxis.flows.engine.runner import load_flow
from praxis.flows.store import live
from praxis.flows.store.handle import RunHandle
from praxis.web import changes, csvedit, render

from .conftest import Served
from .test_csvedit import CORPUS, rows_of
from .test_pages import form, state_of


def out(served: Served, name: str) -> Path:
    return served.gated.flow / "runs" / served.gated.run_id / "output" / name


def handle(served: Served) -> RunHandle:
    return RunHandle.open(load_flow(served.gated.flow), served.gated.run_id)


def replace_output(served: Served, data: bytes) -> None:
    """review.csv as another tool left it, recorded through the API (as a hand edit would be
    once a command reconciles the run), before the page is shown."""
    runner.edit(served.gated.flow, "review.csv", data, served.gated.run_id, by="hand")


def o0151_row(served: Served) -> int:
    lines = out(served, "review.csv").read_text().splitlines()[1:]
    return next(i for i, line in enumerate(lines) if line.startswith("O0151,"))


def test_approve_saves_the_drafts_it_carries_then_approves(served: Served) -> None:
    served.login()
    row = o0151_row(served)
    drafts = {"review.csv": {"cells": {f"{row}.6": "keep"}, "version": ""}}
    r = served.client.post("/approve", data=form(served, drafts=json.dumps(drafts)))
    assert r.status_code == 200, r.text
    assert "Your unsaved edits were saved, then the Gate was approved" in r.text
    served.advancer.wait(120)
    assert state_of(served).status == "done"
    assert (
        "O0151,North,doohickey,32,-1760.0,negative amount,keep"
        in out(served, "review.csv").read_text()
    )


def test_approve_with_a_draft_that_fails_its_check_changes_nothing(served: Served) -> None:
    served.login()
    before, revision = out(served, "review.csv").read_bytes(), state_of(served).revision
    drafts = {"review.csv": {"text": "order_id,action\nO0151,keep\n"}}
    r = served.client.post("/approve", data=form(served, drafts=json.dumps(drafts)))
    assert r.status_code == 409
    assert "keep the header as it is" in r.text
    assert "O0151,keep" in r.text  # the draft is back in the text box
    assert out(served, "review.csv").read_bytes() == before
    assert state_of(served).revision == revision and state_of(served).waiting == "gate"


def test_a_text_save_keeps_the_files_encoding_and_line_endings(served: Served) -> None:
    served.login()
    path = out(served, "review.csv")
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"product median", b"Caf\xe9")
    replace_output(served, b"\r\n".join(lines))
    text = path.read_bytes().decode("latin-1").replace("\r\n", "\n").replace("Café", "Caf\u00e9!")
    r = served.client.post("/save", data=form(served, name="review.csv", text=text))
    assert r.status_code == 200, r.text
    data = path.read_bytes()
    assert b"Caf\xe9!" in data and b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    refused = served.client.post(
        "/save", data=form(served, name="review.csv", text=text.replace("Café!", "日本"))
    )
    assert refused.status_code == 409 and "latin-1" in refused.text


def test_a_file_that_would_not_round_trip_is_offered_as_text_only(served: Served) -> None:
    served.login()
    path = out(served, "review.csv")
    replace_output(served, path.read_bytes().replace(b",drop\n", b', "drop"\n', 1))
    page = served.client.get(served.run_url()).text
    assert "Offered as text only" in page and "byte for byte" in page
    r = served.client.post(
        "/save", data=form(served, name="review.csv", version="", **{"cell.1.6": "keep"})
    )
    assert r.status_code == 409 and "can only be edited as text" in r.text


def test_rows_are_served_by_offset(served: Served) -> None:
    served.login()
    path = out(served, "review.csv")
    head = path.read_text().splitlines()[0]
    path.write_text(head + "\n" + "".join(f"O{i},N,w,1,{i},r,drop\n" for i in range(2345)))
    q = f"flow={served.gated.ref}&run={served.gated.run_id}&name=review.csv"
    data = served.client.get(f"/rows?{q}&start=2300&n=100").json()
    assert data["total"] == 2345
    assert [r[0] for r in data["rows"]] == list(range(2300, 2345))
    assert data["rows"][0][1][:2] == ["O2300", "N"]
    assert served.client.get(f"/rows?{q.replace('review.csv', '../run.json')}").status_code == 404


def test_live_output_is_read_from_an_offset(served: Served) -> None:
    served.login()
    log = live.path(handle(served).root, "flag")
    log.parent.mkdir(exist_ok=True)
    log.unlink(missing_ok=True)  # the fixture's run left the flag phase's own log here
    q = f"/run/live?flow={served.gated.ref}&run={served.gated.run_id}&phase=flag"
    with log.open("ab") as fh:
        fh.write("<script>x</script> tick 1\né".encode()[:-1])  # a character cut in half
    first = served.client.get(q + "&offset=0").json()
    assert first["text"] == "<script>x</script> tick 1\n"
    with log.open("ab") as fh:
        fh.write("é".encode()[-1:] + b"tick 2\n")
    second = served.client.get(q + f"&offset={first['offset']}").json()
    assert second["text"] == "étick 2\n"
    assert served.client.get(q.replace("phase=flag", "phase=nope")).status_code == 404
    page = served.client.get(served.run_url()).text
    assert "<script>x</script>" not in page  # the log reaches the page only as text, by script


def test_files_are_viewed_rendered(served: Served) -> None:
    served.login()
    run = handle(served)
    (run.paths.output / "notes.md").write_text(
        "# Notes\n\n<img src=x onerror=alert(1)>\n\n![c](c.svg) [x](javascript:alert(1))\n"
    )
    (run.paths.output / "c.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    base = f"/view?flow={served.gated.ref}&run={served.gated.run_id}&path="
    md = served.client.get(base + "output/notes.md").text
    assert "<h1>Notes</h1>" in md and "&lt;img src=x onerror=alert(1)&gt;" in md
    assert 'src="/file?flow=' in md and "path=output%2Fc.svg" in md
    assert 'href="javascript' not in md  # not a link: shown as the text it is
    nb = served.client.get(base + "records/flag.ipynb").text
    assert 'class="cell code' in nb and "flagged for review" in nb and "\\n" not in nb
    svg = served.client.get(
        f"/file?flow={served.gated.ref}&run={served.gated.run_id}&path=output/c.svg"
    )
    assert svg.headers["content-type"] == "image/svg+xml"
    assert "sandbox" in svg.headers["content-security-policy"]
    table = served.client.get(base + "output/review.csv").text
    assert "O0151" in table and "<input" not in table.split("<main>")[1]


def test_events_round_seconds_and_shorten_hashes(served: Served) -> None:
    served.login()
    page = served.client.get(served.run_url()).text
    events = page.split("<h2>Events</h2>")[1]
    digest = next(iter(state_of(served).phase("flag").hashes.values()))
    assert f"review.csv: {digest}" in events  # in full on hover
    assert digest[:12] + "…" in events
    assert not any(len(part) > 10 for part in _numbers(events))
    assert render.short(1.23456789) == ("1.23", "1.23456789")


def _numbers(html: str) -> list[str]:
    import re

    return re.findall(r">\d+\.\d+<", html)


def test_cancel_is_offered_only_when_it_applies(served: Served) -> None:
    served.login()
    page = served.client.get(served.run_url()).text
    assert 'action="/cancel"' in page and "data-confirm=" in page
    r = served.client.post("/cancel", data=form(served))
    assert r.status_code == 200 and state_of(served).status == "cancelled"
    assert 'action="/cancel"' not in r.text


def test_changes_show_the_edit_and_what_a_rerun_changed(served: Served) -> None:
    served.login()
    row = o0151_row(served)
    served.client.post("/save", data=form(served, name="review.csv", **{f"cell.{row}.6": "keep"}))
    run = handle(served)
    kept = changes.phase_version(run, "flag", 1, "review.csv")
    assert kept is not None and os.stat(kept).st_mode & 0o222 == 0
    assert b",drop\n" in kept.read_bytes() and b"keep" not in kept.read_bytes()
    page = served.client.get(f"/changes?flow={served.gated.ref}&run={served.gated.run_id}").text
    assert "1 row changed" in page and "<td>action</td>" in page
    r = served.client.post("/reject", data=form(served, reopen="flag", note="again"))
    assert r.status_code == 409  # it would replace the edit: the page asks keep or discard
    assert "would replace review.csv" in r.text and 'name="edits" value="keep"' in r.text
    r = served.client.post(
        "/reject", data=form(served, reopen="flag", note="again", edits="discard")
    )
    assert r.status_code == 200
    served.advancer.wait(120)
    found = changes.run_changes(handle(served))
    (rerun,) = [d for d in found.reruns if d.name == "review.csv"]
    assert rerun.table is not None and rerun.table.counts["changed"] == 1
    assert rerun.table.changed[0].cells == [("action", "keep", "drop")]


def test_runner_edit_keeps_the_mode(served: Served) -> None:
    path = out(served, "review.csv")
    path.chmod(0o640)
    runner.edit(served.gated.flow, "review.csv", path.read_bytes(), served.gated.run_id)
    assert path.stat().st_mode & 0o777 == 0o640


def test_an_edit_from_the_command_line_shows_in_changes_too(served: Served) -> None:
    path = out(served, "review.csv")
    runner.edit(
        served.gated.flow, "review.csv", path.read_bytes().replace(b",drop\n", b",keep\n", 1)
    )
    (d,) = changes.run_changes(handle(served)).edits
    assert d.table is not None and d.table.changed[0].cells == [("action", "drop", "keep")]


def test_without_a_content_store_the_page_keeps_the_phase_version(served: Served) -> None:
    import shutil

    served.login()
    run = handle(served)
    shutil.rmtree(run.paths.objects, ignore_errors=True)  # the flow's store
    row = o0151_row(served)
    served.client.post("/save", data=form(served, name="review.csv", **{f"cell.{row}.6": "keep"}))
    kept = changes.edits_dir(run, "flag", 1) / "review.csv"
    assert kept.is_file() and os.stat(kept).st_mode & 0o222 == 0
    (d,) = changes.run_changes(handle(served)).edits
    assert d.table is not None and d.table.changed[0].cells == [("action", "drop", "keep")]


def test_a_huge_cell_is_shown_clipped_and_not_editable_in_the_grid(served: Served) -> None:
    served.login()
    path = out(served, "review.csv")
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace(",drop\n", ',"' + "x" * 300_000 + '"\n')
    path.write_text("".join(lines))
    page = served.client.get(served.run_url()).text
    assert len(page) < 200_000
    assert "[... 290000 more characters]" in page
    assert 'name="cell.0.6"' not in page and 'name="cell.1.6"' in page
    q = f"flow={served.gated.ref}&run={served.gated.run_id}&name=review.csv"
    data = served.client.get(f"/rows?{q}&start=0&n=2").json()
    assert data["clipped"] == [[0, 6]] and len(data["rows"][0][1][6]) < 10_100


def test_a_large_text_box_is_filled_on_demand(served: Served) -> None:
    served.login()
    path = out(served, "review.csv")
    head, rest = path.read_bytes().split(b"\n", 1)
    path.write_bytes(head + b"\n" + rest * 2000)  # about 500 KB
    page = served.client.get(served.run_url()).text
    assert len(page) < 200_000 and 'data-src="/text?' in page  # one page of rows, no text
    q = f"flow={served.gated.ref}&run={served.gated.run_id}&name=review.csv"
    text = served.client.get(f"/text?{q}").json()["text"]
    assert text.encode() == path.read_bytes()
    assert served.client.get(f"/text?{q.replace('review.csv', '../run.json')}").status_code == 404


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_corpus_saved_through_the_page_keeps_every_other_byte_and_the_mode(
    served: Served, name: str
) -> None:
    flow_yaml = served.gated.flow / "flow.yaml"  # the corpus is not the flow's review table
    text = flow_yaml.read_text()
    start = text.index("    checks:\n      review.csv:")
    flow_yaml.write_text(text[:start] + text[text.index("  - id: summarise") :])
    served.login()
    path = out(served, "review.csv")
    path.chmod(0o644)
    replace_output(served, CORPUS[name])
    r = served.client.post("/save", data=form(served, name="review.csv", **{"cell.1.1": "new"}))
    assert r.status_code == 200, r.text
    idx = csvedit.index(path)
    before, after = rows_of(CORPUS[name], idx.dialect), rows_of(path.read_bytes(), idx.dialect)
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [2]
    assert path.read_bytes()[:3] == CORPUS[name][:3]
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_broken_table_can_be_mended_as_text(served: Served) -> None:
    served.login()
    path = out(served, "review.csv")
    good = path.read_bytes()
    replace_output(served, good.replace(b"order_id,", b'"order_id,', 1))  # quote never closed
    assert "Offered as text only" in served.client.get(served.run_url()).text
    r = served.client.post("/save", data=form(served, name="review.csv", text=good.decode()))
    assert r.status_code == 200, r.text
    assert path.read_bytes() == good


def test_a_save_that_breaks_a_declared_check_is_refused_with_its_message(served: Served) -> None:
    served.login()
    before = out(served, "review.csv").read_bytes()
    row = o0151_row(served)
    r = served.client.post(
        "/save", data=form(served, name="review.csv", **{f"cell.{row}.6": "maybe"})
    )
    assert r.status_code == 409
    assert "breaks the checks flow.yaml declares" in r.text and "action" in r.text
    assert out(served, "review.csv").read_bytes() == before
    drafts = {"review.csv": {"cells": {f"{row}.6": "maybe"}, "version": ""}}
    r = served.client.post("/approve", data=form(served, drafts=json.dumps(drafts)))
    assert r.status_code == 409 and state_of(served).waiting == "gate"


def test_a_hand_edit_made_before_the_page_is_shown_does_not_make_its_save_stale(
    served: Served,
) -> None:
    served.login()
    path = out(served, "review.csv")
    path.write_bytes(path.read_bytes().replace(b"product median,drop", b"product median,keep", 1))
    page = served.client.get(served.run_url()).text  # records the hand edit first
    revision = page.split('name="revision" value="', 1)[1].split('"', 1)[0]
    assert int(revision) == state_of(served).revision
    row = o0151_row(served)
    data = {**form(served, name="review.csv", **{f"cell.{row}.6": "keep"}), "revision": revision}
    r = served.client.post("/save", data=data)
    assert r.status_code == 200, r.text
    assert path.read_text().count(",keep\n") == 2


def test_keep_edits_is_not_offered_for_a_table_that_repeats_a_column_name(served: Served) -> None:
    served.login()
    path = out(served, "review.csv")
    header, _, rest = path.read_bytes().partition(b"\n")
    rows = [line + b",x" for line in rest.splitlines()]
    repeated = b"\n".join([header + b",action", *rows]) + b"\n"  # a second `action`
    runner.edit(served.gated.flow, "review.csv", repeated, served.gated.run_id)
    r = served.client.post("/reject", data=form(served, reopen="flag", note="again"))
    assert r.status_code == 409  # it would replace the edit: the page asks keep or discard
    assert (
        '<input type="radio" name="edits" value="keep" required disabled title="review.csv: its '
        "header repeats the column &#39;action&#39; and --keep-edits matches edits to columns by "
        "name: choose --discard-edits, or give the columns distinct names in the phase"
    ) in r.text
    r = served.client.post("/reject", data=form(served, reopen="flag", note="again", edits="keep"))
    assert r.status_code == 409 and "its header repeats the column" in r.text
    assert state_of(served).waiting == "gate"  # nothing changed
