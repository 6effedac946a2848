"""The fix a phase's error calls for: a missing module names sandbox.packages (pure)."""

from __future__ import annotations

import pytest

from praxis.flows.model.hints import missing_package, with_hint


@pytest.mark.parametrize(
    ("error", "package"),
    [
        ("go.py line 1: ModuleNotFoundError: No module named 'seaborn'", "seaborn"),
        ("ModuleNotFoundError: No module named 'sklearn.linear_model'", "scikit-learn"),
        (
            "ImportError: Missing optional dependency 'tabulate'.  Use pip or conda to install "
            "tabulate.",
            "tabulate",
        ),
        ("ValueError: column 'amount' is missing", None),
    ],
)
def test_the_missing_package_is_named(error: str, package: str | None) -> None:
    assert missing_package(error) == package


def test_the_hint_says_where_the_package_goes_on_an_isolated_backend() -> None:
    text = "go.py line 1: ModuleNotFoundError: No module named 'seaborn'"
    assert with_hint(text, isolated=True) == (
        f"{text}: add 'seaborn' to sandbox.packages in flow.yaml (or requirements.txt beside "
        "it), then `praxis sandbox build FLOW`"
    )
    assert with_hint(text, isolated=False) == text  # local: the host's own environment
