"""Who the tests act as: the autouse ``person`` fixture (tests/conftest.py) makes every test
``person:tester``, by token; these helpers give an agent its account, token and grant."""

from __future__ import annotations

import os
from pathlib import Path

from praxis.service import acting
from praxis.service.accounts import Accounts
from praxis.service.reading import open_run

PERSON = "person:tester"


def agent_token(name: str = "bot") -> str:
    """A new token of agent ``name`` (its account made if need be), in the test's accounts."""
    accounts = Accounts()
    if accounts.get("agent", name) is None:
        accounts.add("agent", name)
    return accounts.issue("agent", name)


def grant(flow: Path | str, run: str | None, agent: str = "tester", duration: str = "2h") -> None:
    """A grant of the test's person to ``agent`` on ``run`` (None: the newest run;
    ``tester``: the person's own ``--as agent``), its account made if need be."""
    accounts = Accounts()
    if accounts.get("agent", agent) is None:
        accounts.add("agent", agent)
    assert os.environ.get("PRAXIS_TOKEN", "").startswith("pxp_")  # granted by a person
    rid = run if run is not None else open_run(flow).id  # None: the newest run
    acting.manage(flow, rid, agent=agent, duration=duration)
