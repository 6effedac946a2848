"""`praxis upgrade`: the flow's runs from before its content store moved into it, once."""

from __future__ import annotations

import argparse

from ..errors import EXIT
from ..flows.store.upgrade import upgrade
from ..service.reading import load


def cmd_upgrade(args: argparse.Namespace) -> int:
    done = upgrade(load(args.flow))
    if done.runs:
        print(f"moved {done.objects} object(s) of {done.runs} run(s) into the flow's store")
    else:
        print("every run already uses the flow's store: nothing to upgrade")
    return EXIT["ok"]
