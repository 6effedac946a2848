"""A phase's definition as one sha256: what, besides its inputs, decides what it computes.

Its flow.yaml entry, the files it runs or reads as instructions (script or notebook, prompt,
prepared scripts and queries, reference inputs that are flow files) and the run's parameters.
Equal digests and equal pre-states mean a deterministic phase would compute the same again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from ..model.flow import Flow, Phase
from . import kinds
from .digest import sha256_of


def of_flow(flow: Flow) -> dict[str, Any]:
    """What a run records of its flow at begin: flow.yaml's sha256 and the phase ids."""
    try:
        text = flow.definition.read_bytes()
    except OSError:
        text = b""
    return {"sha256": hashlib.sha256(text).hexdigest(), "phases": [p.id for p in flow.phases]}


def digest_of(flow: Flow, phase: Phase, params: dict[str, Any]) -> str:
    return digests_of(flow, phase, params)["definition"]


def digests_of(flow: Flow, phase: Phase, params: dict[str, Any]) -> dict[str, str]:
    files = {}
    for name in kinds.get(phase.kind).files(flow, phase):
        try:
            files[name] = sha256_of(flow.root / name)  # a link is not followed: "missing"
        except OSError:
            files[name] = "missing"
    entry = entry_of(phase)
    data = {"entry": entry, "files": files, "params": params}
    code = {"entry": entry, "files": files}
    return {"definition": _sha(data), "code": _sha(code)}


# Every phase's entry held these keys before a kind kept its own keys in its spec, at these
# values when its kind does not take them: with them, the digests of settled work (a script
# phase's, a notebook's, an agent's) are what they were, and it is found again.
UNIFORM: dict[str, Any] = {
    "script": None, "prompt": None, "scripts": (), "queries": (),
    "limits": {"model_calls": 20, "run_python": 8}, "allow_errors": False,
}  # fmt: skip


def entry_of(phase: Phase) -> dict[str, Any]:
    """The phase's flow.yaml entry as a digest hashes it: every key, the kind's spec's
    among them, except ``reuse``, ``fresh``, ``retries`` and ``form`` (whether it may be
    reused or tried again, what its Gate asks: not what it computes; the reuse key holds
    ``fresh`` itself), and a Gate's ``deadline``, ``escalate`` and ``approvers`` (who is
    told when, who decides)."""
    entry = dataclasses.asdict(phase)
    for key in ("reuse", "fresh", "retries", "form", "deadline", "escalate", "approvers"):
        del entry[key]
    fanout = entry.pop("fanout")  # absent unless given: settled work is found again
    if fanout is not None:  # the partitions, not how many run at once
        entry["foreach"] = fanout["written"]
    spec = entry.pop("spec")  # a dataclass, as a dict; anything else, as itself
    own = spec if isinstance(spec, dict) else {} if spec is None else {"spec": spec}
    return {**UNIFORM, **entry, **own}


def _sha(data: dict[str, Any]) -> str:
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()
