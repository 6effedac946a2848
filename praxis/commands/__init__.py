"""The commands of `praxis`, one module per command or group of commands (``cli.HOME``).

``praxis.cli`` parses the command line and imports the module of the command it runs, and only
that one: each module's imports are what its commands need, so `praxis status` never loads the
runner and `praxis --help` loads none of them. ``cmd_<name>(args) -> int`` runs a command.
"""

from __future__ import annotations

from ..errors import UsageError


class Usage(UsageError):
    """Raised for a command line that cannot be acted on."""
