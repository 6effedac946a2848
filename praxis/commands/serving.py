"""The commands that serve: serve (the web UI), mcp, chat."""

from __future__ import annotations

import argparse
import errno
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from ..command_line import typed
from ..errors import EXIT, PraxisError
from . import Usage

if TYPE_CHECKING:
    from ..mcp_server import BearerAgents


class PortBusy(PraxisError):
    """Raised by `praxis serve` when its port is taken, before any URL is printed."""

    exit_code = EXIT["port"]

    def __init__(self, host: str, port: int) -> None:
        super().__init__(f"port {port} on {host} is in use by another program")
        self.port = port

    def next(self, flow: str) -> str:
        return typed("serve", port=self.port + 1)


def _check_port(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortBusy(host, port) from None
            raise Usage(f"cannot serve on {host}:{port} ({exc.strerror})") from None


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from ..mcp_server import serve  # the MCP SDK loads only for `praxis mcp`
    except ImportError as exc:
        raise Usage(f"praxis mcp needs the MCP SDK ({exc}): pip install 'praxis[mcp]'") from None
    return serve(Path(args.root))


def cmd_serve(args: argparse.Namespace) -> int:
    from ..web.app import serve  # the web stack loads only for `praxis serve`
    from ..web.background import MAX_RUNS_LIMIT

    if not 1 <= args.max_runs <= MAX_RUNS_LIMIT:
        raise Usage(f"--max-runs takes a number of runs from 1 to {MAX_RUNS_LIMIT}")
    _check_port("127.0.0.1", args.port)
    return int(
        serve(
            Path(args.root),
            port=args.port,
            max_runs=args.max_runs,
            notify_command=args.notify_command,
            mcp=_mcp_over_http(Path(args.root)),
        )
        or 0
    )


def _mcp_over_http(root: Path) -> BearerAgents | None:
    """``/mcp`` of ``praxis serve``: MCP over streamable HTTP for agents with a token (none
    when the MCP SDK is not installed: the page is served all the same)."""
    try:
        from ..mcp_server import BearerAgents  # the MCP SDK loads only when installed
    except ImportError:
        return None
    return BearerAgents(root.resolve())


def cmd_chat(args: argparse.Namespace) -> int:
    from ..chat.terminal import main as chat_main  # langchain loads only for `praxis chat`

    return chat_main(args.flow, message=args.message, resume=args.resume, max_calls=args.max_calls)
