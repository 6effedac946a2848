"""The chat's system prompt names exactly the keys the contract accepts."""

from __future__ import annotations

from praxis.chat.chat import CHECK_HELP, KEY_HELP, system_prompt
from praxis.flows.definition import contract, kinds
from praxis.flows.model.check_spec import CHECK_KEYS
from praxis.flows.model.flow import REVIEW_MODES


def prompt_keys(text: str) -> dict[str, tuple[str, ...]]:
    """The keys a system prompt lists, by place."""
    found: dict[str, list[str]] = {}
    place = None
    for line in text.splitlines():
        if line.startswith("Keys of ") and line.endswith(":"):
            place = line[len("Keys of ") : -1]
            found[place] = []
        elif place and line.startswith("- `") and "`" in line[3:]:
            found[place].append(line[3 : line.index("`", 3)])
        elif not line.strip():
            place = None
    return {k: tuple(v) for k, v in found.items()}


def test_the_prompt_lists_the_contracts_keys() -> None:
    assert prompt_keys(system_prompt()) == {
        "top level": tuple(contract.TOP_KEYS),
        "a phase": tuple(contract.PHASE_KEYS),
        "a phase's inputs": tuple(contract.INPUT_KEYS),
        "a table's checks": tuple(CHECK_KEYS),
    }


def test_every_key_the_contract_knows_is_explained() -> None:
    known = {*contract.TOP_KEYS, *contract.PHASE_KEYS, *contract.INPUT_KEYS}
    assert sorted(k for k in known if k not in KEY_HELP) == []
    assert sorted(k for k in CHECK_KEYS if k not in CHECK_HELP) == []
    assert "key" in CHECK_HELP and "--keep-edits" in CHECK_HELP["key"]


def test_the_prompt_names_the_phase_kinds_review_modes_and_tools() -> None:
    text = system_prompt()
    for word in (
        *kinds.names(),
        *REVIEW_MODES,
        "Gate",
        "try_phase(phase)",
        "write_file(path, text)",
    ):
        assert word in text
