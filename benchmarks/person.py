"""The benchmarks act as a person, as the reviewer at a Gate is: an account of their own in a
data folder of their own (``PRAXIS_DATA``), its token in ``PRAXIS_TOKEN`` for this process
and every ``praxis`` it starts. Without one, a process with no terminal is an agent, and a
Gate a person decides refuses its save and its approve."""

from __future__ import annotations

import os
from pathlib import Path


def act_as_person(folder: Path, name: str = "analyst") -> str:
    """Make ``folder`` the data folder with a person ``name`` and act as them; returns the
    token (set in the environment)."""
    from praxis.service.accounts import Accounts

    folder.mkdir(parents=True, exist_ok=True)
    accounts = Accounts(folder)
    if accounts.get("person", name) is None:
        accounts.add("person", name)
    token = accounts.issue("person", name)
    os.environ["PRAXIS_DATA"] = str(folder)
    os.environ["PRAXIS_TOKEN"] = token
    os.environ.pop("PRAXIS_ACTOR", None)
    return token
