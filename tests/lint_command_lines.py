"""One builder of command lines (``praxis.command_line``), held by a check ``make lint`` runs
(``python -m tests.lint_command_lines``) and ``tests/test_command_line.py`` tests.

Outside the builder, no module of praxis may

- spell an option the builder writes as a string of its own (``"--expect-revision"``,
  ``"--gate"``, ...): an argv being built by hand. The CLI's parser is the one exception: it
  reads the options the builder writes (a test parses every rendering of the builder with it);
- assemble a command line in an f-string (``f"praxis rerun {flow} --from {phase}"``): a
  literal part ending in ``praxis VERB ...`` right before a value; nor may a page's template
  (``praxis run {{ f.ref }}``: the pages call ``typed``).

Prose naming a command (a docstring, ``see: praxis status``) is not a command line.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from praxis import command_line

BUILDER = "command_line.py"
PARSER = "cli_parser.py"  # reads the options; builds none
OPTIONS = frozenset(
    o
    for o in (
        *command_line.OPTIONS.values(),
        *command_line.EDITS.values(),
        *command_line.FLAGS.values(),
    )
    if o
)
# A literal part of an f-string that ends in a command being written: ``praxis VERB`` and
# words up to the value that follows it (no closing of a parenthesis, sentence or quote).
COMMAND_BEFORE_VALUE = re.compile(r"\bpraxis [a-z]+[^()`:;,.]*$")


def problems_in(source: str, name: str) -> list[str]:
    """Each hand-built command line of module ``name`` (its path), as ``path:line: why``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in OPTIONS
            and not name.endswith(PARSER)
        ):
            found.append(
                f"{name}:{node.lineno}: spells {node.value} (build the command with "
                "praxis.command_line.Command, or name the option by command_line.OPTIONS)"
            )
        if isinstance(node, ast.JoinedStr):
            for part, after in zip(node.values, node.values[1:], strict=False):
                if (
                    isinstance(part, ast.Constant)
                    and isinstance(after, ast.FormattedValue)
                    and isinstance(part.value, str)
                    and COMMAND_BEFORE_VALUE.search(part.value)
                ):
                    found.append(
                        f"{name}:{node.lineno}: builds a command line in an f-string "
                        f"({part.value.strip()!r} ...): use praxis.command_line.typed"
                    )
    return found


TEMPLATE_COMMAND = re.compile(r"\bpraxis [a-z]+[^()`:;,.<]*\{\{")


def problems(root: Path) -> list[str]:
    """The hand-built command lines of every module and template below ``root`` (praxis/)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == BUILDER and path.parent == root:
            continue
        found += problems_in(path.read_text(encoding="utf-8"), str(path))
    for path in sorted(root.rglob("*.html")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if TEMPLATE_COMMAND.search(line):
                found.append(f"{path}:{number}: builds a command line: use typed(...)")
    return found


def main() -> int:
    root = Path(command_line.__file__).parent
    found = problems(root)
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
