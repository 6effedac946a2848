"""recheck: the checks of an edited table from those of the version before it give exactly
what a whole pass gives, or None (then the whole pass runs)."""

from __future__ import annotations

import random

import pytest

from praxis.flows.engine import checks, recheck

SPEC = {
    "columns": ["id", "region", "amount", "action"],
    "unique": ["id"],
    "not_null": ["region"],
    "values": {"action": ["keep", "drop"]},
    "dtype": {"amount": "number"},
    "min_rows": 1,
    "key": ["id"],
}
CELLS = {
    1: ["North", "", " ", "South", '"North, east"'],
    2: ["1.5", "x", "", "7"],
    3: ["keep", "drop", "maybe"],
}


def table(rows: list[list[str]]) -> bytes:
    lines = ["id,region,amount,action"] + [",".join(r) for r in rows]
    return ("\n".join(lines) + "\n").encode()


def rows_of(n: int, rnd: random.Random) -> list[list[str]]:
    return [[f"o{i}", *(rnd.choice(CELLS[c]) for c in (1, 2, 3))] for i in range(n)]


@pytest.mark.parametrize("seed", [43, 44])
def test_cell_edits_give_what_a_whole_pass_gives(seed: int) -> None:
    rnd = random.Random(seed)
    updated = 0
    for _ in range(300):
        rows = rows_of(rnd.randint(1, 40), rnd)
        old = table(rows)
        for _ in range(rnd.randint(1, 3)):  # edit a few cells outside the key
            r, c = rnd.randrange(len(rows)), rnd.choice((1, 2, 3))
            rows[r][c] = rnd.choice(CELLS[c])
        new = table(rows)
        found = recheck.updated("t.csv", SPEC, old, new, checks.evaluate("t.csv", SPEC, old))
        if found is not None:
            updated += 1
            assert found == checks.evaluate("t.csv", SPEC, new), (old, new)
    assert updated > 200  # most edits are updated, not passed on to the whole pass


def test_edits_that_move_rows_or_touch_a_unique_column_need_the_whole_pass() -> None:
    old = table([["o1", "North", "1", "keep"], ["o2", "South", "2", "drop"]])
    before = checks.evaluate("t.csv", SPEC, old)
    for new in (
        table([["o1", "North", "1", "keep"]]),  # a row removed
        table([["o1", "North", "1", "keep"], ["o1", "South", "2", "drop"]]),  # the key
        table([["o1", '"Nor\nth"', "1", "keep"], ["o2", "South", "2", "drop"]]),  # lines move
        old.replace(b"id,region", b"ID,region"),  # the header
    ):
        assert recheck.updated("t.csv", SPEC, old, new, before) is None


def test_the_first_rows_past_those_shown_are_not_guessed() -> None:
    rows = [[f"o{i}", "North", "1", "maybe"] for i in range(12)]  # every row fails values
    old = table(rows)
    before = checks.evaluate("t.csv", SPEC, old)
    rows[2][3] = "keep"  # a shown row mended: the sixth failing row is not known
    assert recheck.updated("t.csv", SPEC, old, table(rows), before) is None
    rows[2][3], rows[9][3] = "maybe", "keep"  # a row past those shown: known
    found = recheck.updated("t.csv", SPEC, old, table(rows), before)
    assert found == checks.evaluate("t.csv", SPEC, table(rows))
