"""The page's decisions in the run's trace.jsonl (``PRAXIS_TRACE=1``), as the command line's
and MCP's are: a line as the action starts and one as it ends, with its exit code and the
route after it, so ``praxis replay`` tells what a reviewer did in the page.

An action is traced as ``PROGRAM web VERB {fields}``: the verb is the form's route (approve,
reject, rerun, cancel, advance, save, approval), the fields the few that say what was decided
(never a note's or a draft's text). A trace that cannot be written never changes the outcome.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from praxis.argv import program_argv
from praxis.errors import EXIT, PraxisError, exit_code_of
from praxis.flows.report import trace
from praxis.service import authority
from praxis.service.principals import CURRENT

from . import catalog

ACTOR = "person"  # the page's reviewer, when no one is signed in
FIELDS = ("gate", "phase", "reopen", "revision", "edits", "name", "answer")
MAX_FIELD = 200


def traced(root: Path, ref: str, run_id: str, verb: str, form: Any, code: int | None) -> None:
    """Trace the page's action ``verb`` on the run: as it starts (``code`` None) or ends."""
    if not trace.enabled():
        return
    try:
        run = catalog.open_run(root, ref, run_id)
        fields = {k: str(form.get(k))[:MAX_FIELD] for k in FIELDS if form.get(k)}
        argv = [*program_argv(), "web", verb, json.dumps(fields, sort_keys=True)]
        who = CURRENT.get()  # the signed-in person
        actor = who.label if who is not None else ACTOR
        if code is None:
            trace.start(run, argv, actor)
        else:
            trace.record(run, argv, actor, code, authority.standing(who, run) if who else None)
    except Exception:  # a trace that cannot be written never changes the outcome
        return


def code_of(exc: BaseException) -> int:
    """The exit code the command line gives for what the page refused."""
    return exit_code_of(exc) if isinstance(exc, PraxisError) else EXIT["refused"]
