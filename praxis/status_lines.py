"""What `praxis status` prints in words: the phases on the run's clock, the route, the receipt.

Text that came from a phase (errors, file names, problems) is escaped.
"""

from __future__ import annotations

import shlex
import time
from typing import Any

from .flows.model.retry_policy import words as retry_words
from .flows.model.state import RunState
from .terminal import command, escape
from .units import duration

MARKS = {"done": "✓", "failed": "✗", "running": "▶", "stale": "~", "pending": "·"}


def timeline(state: RunState, width: int = 30, now: float | None = None) -> str:
    """The phases as rows of bars placed on the run's clock, for `praxis status`; a running
    phase's bar reaches ``now`` and its row says how long it has been running."""
    now = time.time() if now is None else now
    spans = [(p.started, p.ended or now) for p in state.phases if p.started is not None]
    spans += [
        (q["started"], q.get("ended") or now)
        for p in state.phases
        for q in p.partitions.values()
        if q.get("started") is not None
    ]
    t0 = min((a for a, _ in spans), default=0.0)
    total = max((b for _, b in spans), default=t0) - t0 or 1.0
    rows = []
    for p in state.phases:
        bar = ""
        if p.started is not None:
            start = int((p.started - t0) / total * width)
            end = max(start + 1, int(((p.ended or now) - t0) / total * width))
            bar = " " * start + "█" * (end - start)
        secs = f"{p.seconds:.1f} s" if p.seconds is not None else ""
        note = escape(p.error or (f"attempt {p.attempt}" if p.attempt > 1 else ""))
        if p.status == "running" and p.started is not None and p.ended is None:
            secs = duration(max(now - p.started, 0.0))
            note = f"running for {secs}" + (f", {note}" if note else "")
        if p.retry and state.status == "running" and p.status in ("pending", "running"):
            note = retry_words(p.retry, now) + (f", {note}" if note else "")
        if p.reused and p.status == "done":
            note = f"reused (attempt {p.attempt}: nothing it reads changed)"
            if p.reused_from:
                source, _, attempt = p.reused_from.rpartition("/")
                note = f"reused from {source} (attempt {attempt}: nothing it reads changed)"
        mark = "↺" if p.reused and p.status == "done" else MARKS.get(p.status, "?")
        word = "reused" if p.reused and p.status == "done" else p.status
        rows.append(f"  {mark} {word:<8} {p.id:<18} {secs:>8}  {bar:<{width}}  {note}".rstrip())
        rows += [_partition_row(n, q, t0, total, width, now) for n, q in p.partitions.items()]
    if state.waiting == "gate":
        rows.append(f"  ⏸ waiting at the Gate after {state.gate}")
    return "\n".join(rows)


def _partition_row(
    name: str, q: dict[str, Any], t0: float, total: float, width: int, now: float
) -> str:
    """A fan-out's partition under its phase: its bar on the run's clock, where it ran."""
    status = str(q.get("status", "pending"))
    started, ended = q.get("started"), q.get("ended")
    bar = secs = ""
    if started is not None:
        start = int((started - t0) / total * width)
        end = max(start + 1, int(((ended or now) - t0) / total * width))
        bar = " " * start + "█" * (end - start)
        secs = f"{(ended or now) - started:.1f} s"
    notes = [f"attempt {q['attempt']}"] if q.get("attempt", 0) > 1 else []
    if q.get("source"):
        notes.append(f"reused from {str(q['source']).split('/')[0]}")
    if q.get("node"):
        notes.append(f"node {str(q['node'])[:12]}")
    if q.get("error"):
        notes.append(escape(str(q["error"]).splitlines()[0]))
    mark = MARKS.get(status, "?")
    label = escape(name)[:16]
    return f"      {mark} {label:<16} {secs:>10}  {bar:<{width}}  {', '.join(notes)}".rstrip()


WHO = {
    "anyone": "anyone may take it (a person or an agent)",
    "agent": "an agent may take it (or a person)",
    "person": "only a person may take it",
}


def route_lines(route: dict[str, Any]) -> list[str]:
    """The route in words: the step, who takes it and why, what to read, the commands."""
    lines = [f"route: {route['step']} ({route['reason']}): {route['why']}; {WHO[route['who']]}"]
    gate = route.get("gate")
    if gate:
        kind = "delegatable" if gate["delegatable"] else "not delegatable"
        mode = "managed run" if gate["managed"] else "run not managed"
        lines.append(f"  Gate after {gate['phase']}: {kind}, {mode}")
    if route.get("caller"):  # the caller's route: who may take its step, and who asks
        lines.append(f"  who may: {route['who_may']} (you: {route['caller']})")
    for item in route.get("read", []):
        lines.append(f"  read: {escape(item['path'])}")
    for problem in route.get("problems", []):
        lines.append(f"  problem: {escape(problem)}")
    for argv in route.get("commands", []):
        lines.append(f"  do: {command(' '.join(shlex.quote(a) for a in argv))}")
    return lines


def receipt_lines(receipt: dict[str, Any], managed: bool) -> list[str]:
    """The receipt in words: one line per phase, its decisions and edits."""
    ok = "ok" if receipt["ok"] else "not ok"
    mode = ", managed" if managed else ""
    lines = [f"receipt: {ok}, {receipt['done']}/{receipt['total']} phases done{mode}"]
    for item in receipt["ledger"]:
        seconds = "" if item["seconds"] is None else f", {item['seconds']:.1f} s"
        reused = ", reused" if item["reused"] else ""
        if item.get("reused_from"):
            reused = f", reused from {item['reused_from'].rpartition('/')[0]}"
        lines.append(
            f"  {item['phase']}: {item['status']}, {item['attempts']} attempt(s){reused}{seconds}"
        )
        for d in item["decisions"]:
            extra = f", reopened {d['reopen']}" if d["decision"] == "rejected" else ""
            lines.append(f"    {d['decision']} by {d['actor']} at revision {d['revision']}{extra}")
        for e in item["edits"]:
            mark = ""
            if e.get("superseded"):
                to = e.get("carried_to")
                mark = f" (attempt {e['attempt']}, superseded: " + (
                    f"re-applied to attempt {to})" if to else "discarded)"
                )
            lines.append(f"    {escape(e['name'])} edited by {e['by']}{mark}: {escape(e['diff'])}")
        for c in item.get("carried", []):
            for why in c["skipped"]:
                lines.append(f"    kept edit not applied: {escape(why)}")
    for name in receipt.get("changed_outside", []):
        lines.append(f"  changed outside praxis: {escape(name)}")
    return lines
