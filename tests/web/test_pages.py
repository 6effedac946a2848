"""Pages and actions of the reviewer UI over a sales-report run waiting at its Gate."""

from __future__ import annotations

import csv
import html
import io
import re

from praxis.flows.engine.runner import load_flow
from praxis.flows.model.events import ArtifactEdited
from praxis.flows.model.state import RunState
from praxis.flows.store.event_log import EventLog
from praxis.flows.store.handle import RunHandle

from .conftest import Served
from .test_security import csrf_of


def state_of(served: Served) -> RunState:
    return RunHandle.open(load_flow(served.gated.flow), served.gated.run_id).state


def review_csv(served: Served) -> str:
    path = served.gated.flow / "runs" / served.gated.run_id / "output" / "review.csv"
    return path.read_text()


def form(served: Served, **fields: str) -> dict[str, str]:
    base = {
        "flow": served.gated.ref,
        "run": served.gated.run_id,
        "revision": str(state_of(served).revision),
        "csrf": csrf_of(served),
    }
    return {**base, **fields}


def test_the_runs_page_lists_the_flow_and_its_run_at_the_gate(served: Served) -> None:
    served.login()
    page = served.client.get("/").text
    assert "sales-report" in page
    assert served.gated.run_id in page
    assert "at Gate after flag" in page


def test_the_run_page_shows_timeline_records_and_the_gate(served: Served) -> None:
    served.login()
    page = served.client.get(served.run_url()).text
    assert page.count('class="bar ') == 4
    assert "Review at the Gate after flag" in page
    assert 'value="O0151"' in page
    assert f'name="revision" value="{state_of(served).revision}"' in page
    assert "phase=clean" in page and "phase=flag" in page  # record links
    assert "gate_waiting" in page  # events
    record = served.client.get(
        f"/record?flow={served.gated.ref}&run={served.gated.run_id}&phase=flag"
    ).text
    assert "flagged for review" in record  # the script's stdout
    source = re.sub(r"<[^>]+>", "", record)  # the source, highlighted: tags around tokens
    assert "unit_price = clean[" in html.unescape(source)
    assert '<span class="n">unit_price</span>' in record
    frames = re.findall(r'<iframe class="out html" sandbox [^>]*src="([^"]+)"', record)
    assert frames  # the DataFrame the script left as its result
    frame = served.client.get(html.unescape(frames[0]))
    assert frame.status_code == 200 and "<table" in frame.text
    assert frame.headers["content-security-policy"].startswith("sandbox; default-src 'none'")
    assert frame.headers["x-frame-options"] == "SAMEORIGIN"


def test_a_cell_edit_changes_only_that_cell_and_is_recorded(served: Served) -> None:
    served.login()
    before_text = review_csv(served)
    before = state_of(served).revision
    row = next(
        i
        for i, r in enumerate(csv.DictReader(io.StringIO(before_text)))
        if r["order_id"] == "O0151"
    )
    r = served.client.post(
        "/save", data=form(served, name="review.csv", **{f"cell.{row}.6": "keep"})
    )
    assert r.status_code == 200 and "Saved." in r.text
    after_text = review_csv(served)
    changed = [
        (a, b)
        for a, b in zip(before_text.splitlines(), after_text.splitlines(), strict=True)
        if a != b
    ]
    assert changed == [(changed[0][0], changed[0][0][: -len("drop")] + "keep")]
    assert changed[0][0].startswith("O0151,")
    assert state_of(served).revision == before + 1
    edits = [
        e
        for e in EventLog(served.gated.flow / "runs" / served.gated.run_id / "events.jsonl").read()
        if isinstance(e, ArtifactEdited)
    ]
    assert [(e.name, e.by) for e in edits] == [("review.csv", "web")]


def test_a_save_at_a_stale_revision_is_refused_and_shown(served: Served) -> None:
    served.login()
    stale = form(served, name="review.csv", text="order_id,action\nO0151,keep\n")
    stale["revision"] = str(int(stale["revision"]) - 1)
    before_text = review_csv(served)
    before = state_of(served).revision
    r = served.client.post("/save", data=stale)
    assert r.status_code == 409
    assert "changed since this page was shown" in r.text
    assert f"the run is now at revision {before}" in r.text
    assert "O0151,keep" in r.text  # the reviewer's draft is kept in the textarea
    assert review_csv(served) == before_text
    assert state_of(served).revision == before


def test_a_file_that_is_not_writable_at_the_gate_is_refused(served: Served) -> None:
    served.login()
    clean = served.gated.flow / "runs" / served.gated.run_id / "output" / "clean.csv"
    before = clean.read_bytes()
    r = served.client.post("/save", data=form(served, name="clean.csv", text="x\n1\n"))
    assert r.status_code == 409
    assert "only the outputs of phase" in r.text
    assert clean.read_bytes() == before


def test_approve_continues_the_run_and_a_second_approve_is_refused(served: Served) -> None:
    served.login()
    stale = form(served)
    r = served.client.post("/approve", data=stale)
    assert r.status_code == 200 and "Approved." in r.text
    served.advancer.wait(120)
    state = state_of(served)
    assert state.status == "done", state.error
    assert [p.status for p in state.phases] == ["done"] * 4
    again = served.client.post("/approve", data=stale)
    assert again.status_code == 409
    assert "changed since this page was shown" in again.text
    assert state_of(served).revision == state.revision


def test_reject_needs_a_note_and_reopens_the_phase(served: Served) -> None:
    served.login()
    r = served.client.post("/reject", data=form(served, reopen="flag", note="  "))
    assert r.status_code == 409 and "write a note" in r.text
    assert state_of(served).waiting == "gate"
    r = served.client.post("/reject", data=form(served, reopen="flag", note="flag less"))
    assert r.status_code == 200
    served.advancer.wait(120)
    state = state_of(served)
    assert state.waiting == "gate" and state.phase("flag").attempt == 2


def test_the_decision_forms_send_the_gate_and_its_attempt_and_a_late_one_is_refused(
    served: Served,
) -> None:
    served.login()
    page = served.client.get(served.run_url()).text
    approve = page[
        page.index('action="/approve"') : page.index("</form>", page.index('action="/approve"'))
    ]
    reject = page[
        page.index('action="/reject"') : page.index("</form>", page.index('action="/reject"'))
    ]
    for form_html in (approve, reject):
        assert 'name="gate" value="flag"' in form_html and 'name="attempt" value="1"' in form_html
    seen = form(served, gate="flag", attempt="1")  # the page as shown at attempt 1
    r = served.client.post("/reject", data=form(served, reopen="flag", note="flag less",
                                                gate="flag", attempt="1"))  # fmt: skip
    assert r.status_code == 200, r.text
    served.advancer.wait(120)
    now = state_of(served)
    assert (now.waiting, now.gate, now.phase("flag").attempt) == ("gate", "flag", 2)
    late = served.client.post("/approve", data={**seen, "revision": str(now.revision)})
    assert late.status_code == 409  # meant for attempt 1: never lands on attempt 2
    assert "attempt 1" in html.unescape(late.text) and "attempt 2" in html.unescape(late.text)
    after = state_of(served)
    assert (after.waiting, after.revision) == ("gate", now.revision)
    ok = served.client.post("/approve", data=form(served, gate="flag", attempt="2"))
    assert ok.status_code == 200 and "Approved." in ok.text


def test_a_file_to_review_read_on_the_page_records_the_persons_receipt(served: Served) -> None:
    served.login()
    q = f"flow={served.gated.ref}&run={served.gated.run_id}"
    before = state_of(served).revision
    r = served.client.get(f"/file?{q}&path=output/review.csv")
    assert r.status_code == 200
    run = RunHandle.open(load_flow(served.gated.flow), served.gated.run_id)
    read = [e for e in EventLog(run.paths.events).read() if e.kind == "file_read"]
    assert [(e.path, e.reader, e.name) for e in read] == [  # type: ignore[attr-defined]
        ("output/review.csv", "person:tester", "review.csv")  # the page's caller
    ]
    assert state_of(served).revision == before  # a read changes nothing of the run


def test_pending_approvals_are_listed_and_answered(served: Served) -> None:
    import threading

    served.login()
    flow = served.gated.flow.resolve()
    queue = served.advancer.queue_for(flow, served.gated.run_id)
    answers: list[bool] = []
    asker = threading.Thread(target=lambda: answers.append(queue("summarise", "import os")))
    asker.start()
    try:
        page = served.client.get(served.run_url()).text
        assert "Code waiting for your approval" in page and "import os" in page
        request_id = queue.pending()[0].id
        r = served.client.post("/approval", data=form(served, request=request_id, answer="approve"))
        assert r.status_code == 200 and "Answer sent" in r.text
        asker.join(10)
        assert answers == [True]
        late = served.client.post("/approval", data=form(served, request=request_id, answer="deny"))
        assert late.status_code == 409 and "already answered" in late.text
    finally:
        queue.close()
        asker.join(10)


def test_sizes_on_the_run_page_read_in_human_units(served: Served) -> None:
    output = served.gated.flow / "runs" / served.gated.run_id / "output"
    review = output / "review.csv"
    served.login()
    with open(review, "ab") as fh:  # a file of MiB reads in MiB, not a count of bytes
        fh.write(b"\n" * (3 << 20))
    page = served.client.get(served.run_url()).text
    assert f"{review.stat().st_size} B" not in page
    assert "3.0 MiB" in page
