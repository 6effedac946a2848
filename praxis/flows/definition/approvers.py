"""flow.yaml's Gate approvers, ``review: {required: true, approvers: [finance]}``: the roles
of the people who may decide the Gate (none listed: any person). A role is named as the
accounts name it (``praxis users add NAME --role ROLE``)."""

from __future__ import annotations

import re
from typing import Any

from .yaml_values import ValueReader

ROLE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
MAX_ROLES = 16


def read(reader: ValueReader, review: Any, loc: str) -> tuple[str, ...]:
    """The roles of ``review`` (a phase's ``review:`` value) at ``loc``; () when none."""
    roles = review.get("approvers", []) if isinstance(review, dict) else []
    if (
        not isinstance(roles, list)
        or len(roles) > MAX_ROLES
        or not all(isinstance(r, str) and ROLE.fullmatch(r) for r in roles)
    ):
        reader.error(
            f"{loc}.review.approvers",
            f"expected a list of up to {MAX_ROLES} role names (a-z, 0-9, _ or -)",
        )
        return ()
    return tuple(roles)
