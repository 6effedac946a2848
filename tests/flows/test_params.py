"""Run parameters: ``-p name=value`` typed by the flow's default, unknown names refused."""

from __future__ import annotations

import pytest

from praxis.flows.model.params import BadParam, parse_pairs, resolve

DEFAULTS = {"region": "north", "limit": 10, "rate": 0.5, "dry": False}


def test_pairs_split_at_the_first_equals_sign() -> None:
    assert parse_pairs(None) == {}
    assert parse_pairs(["a=1", " b =x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}


@pytest.mark.parametrize("pair", ["novalue", "=1", " =1"])
def test_a_pair_without_a_name_or_equals_sign_is_refused(pair: str) -> None:
    with pytest.raises(BadParam, match="write it as name=value"):
        parse_pairs([pair])


def test_a_value_takes_the_type_of_its_default() -> None:
    given = {"limit": "8", "rate": "1.25", "dry": "Yes", "region": "south"}
    assert resolve(DEFAULTS, given) == {"region": "south", "limit": 8, "rate": 1.25, "dry": True}
    assert resolve(DEFAULTS, {"dry": "off"})["dry"] is False
    assert resolve(DEFAULTS, {}) == DEFAULTS


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"limit": "eight"}, "-p limit=eight: expected int"),
        ({"rate": "fast"}, "-p rate=fast: expected float"),
        ({"dry": "maybe"}, "-p dry=maybe: expected true or false"),
    ],
)
def test_a_value_its_default_refuses_names_the_type(given: dict[str, str], message: str) -> None:
    with pytest.raises(BadParam) as caught:
        resolve(DEFAULTS, given)
    assert str(caught.value) == message


def test_an_undeclared_name_is_refused_naming_the_declared_and_the_near_one() -> None:
    with pytest.raises(BadParam) as caught:
        resolve(DEFAULTS, {"regoin": "x"})
    assert str(caught.value) == (
        "-p regoin: not a parameter of this flow (params: dry, limit, rate, region); "
        "did you mean 'region'?"
    )
    with pytest.raises(BadParam, match=r"\(params: none\)$"):
        resolve({}, {"x": "1"})
