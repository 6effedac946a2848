"""praxis/web/refusals.py: the status and the sentence a form's error gets, by its branch."""

from __future__ import annotations

from pathlib import Path

from praxis.errors import PraxisError, Refused
from praxis.flows.store.layout import NotWritable
from praxis.flows.store.lock import Busy
from praxis.web.catalog import NotFound
from praxis.web.drafts import Unreadable
from praxis.web.refusals import RequestRefused, TokenRefused, sentence, status_of
from praxis.web.tables import BadEdit
from sandbox.errors import PathRefused


def test_each_branch_has_its_status() -> None:
    assert status_of(TokenRefused("reload the page")) == 403
    assert status_of(NotFound("no run")) == 404
    assert status_of(Unreadable("not JSON")) == 400
    assert status_of(Busy(Path("/f/run.lock"), 12)) == 409
    for exc in (Refused("stale"), NotWritable("a.csv", "not at a Gate"), BadEdit("no row 9")):
        assert status_of(exc) == 409
    assert status_of(RequestRefused("Nothing saved")) == 409
    assert status_of(PathRefused("../x", "escapes")) == 409
    assert status_of(PraxisError("a bug's words")) == 500


def test_the_sentence_says_what_to_do() -> None:
    assert sentence(RequestRefused("Nothing saved: no cell changed."), 3) == (
        "Nothing saved: no cell changed."
    )
    assert sentence(NotWritable("a.csv", "not at a Gate"), 3) == "Not done: a.csv: not at a Gate"
    assert sentence(PathRefused("../x", "escapes the run"), None) == "Not done: escapes the run"
    assert "Try again soon" in sentence(Busy(Path("/f/run.lock"), 12), None)
    stale = sentence(Refused("stale", revision=5), 3)
    assert "the page showed revision 3, the run is now at revision 5" in stale
    assert sentence(Refused("stale", revision=3), 3) == "Not done: stale"
