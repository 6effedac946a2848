"""A chat's transcript: ``<flow>/.chat/<session>.jsonl``, one message per line, appended as
the conversation goes, so a chat that stops for any reason can be resumed where it was."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from praxis.errors import UsageError
from sandbox.files import open_nofollow

SESSION = re.compile(r"^[0-9]{8}-[0-9]{6}(-[0-9]+)?$")
MAX_TRANSCRIPT_BYTES = 32 * 1024 * 1024


class TranscriptError(UsageError):
    """Raised when a transcript cannot be read (corrupt, too large) or a session is unknown."""

    def next(self, flow: str) -> str:
        return f"praxis chat {flow}"


def new_session(chat_dir: Path, now: float | None = None) -> str:
    """A fresh session name that sorts by time (``20261130-151500``)."""
    base = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    name, n = base, 1
    while (chat_dir / f"{name}.jsonl").exists():
        n += 1
        name = f"{base}-{n}"
    return name


def sessions(chat_dir: Path) -> list[str]:
    """The sessions with a transcript, oldest first."""
    if not chat_dir.is_dir():
        return []
    names = [p.stem for p in chat_dir.glob("*.jsonl") if SESSION.match(p.stem)]
    return sorted(names, key=lambda s: (s[:15], int(s[16:] or 0)))


def latest(chat_dir: Path) -> str | None:
    found = sessions(chat_dir)
    return found[-1] if found else None


class Transcript:
    def __init__(self, chat_dir: Path, session: str) -> None:
        if not SESSION.match(session):
            raise TranscriptError(f"{session!r} is not a chat session name")
        self.path = chat_dir / f"{session}.jsonl"

    def load(self) -> list[BaseMessage]:
        if not self.path.exists():
            return []
        if self.path.is_symlink() or not self.path.is_file():
            raise TranscriptError(f"{self.path} is not a regular file")
        if self.path.stat().st_size > MAX_TRANSCRIPT_BYTES:
            raise TranscriptError(
                f"{self.path} is over {MAX_TRANSCRIPT_BYTES:,} bytes; start a new chat"
            )
        records = []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                if number == len(lines):
                    break  # a line cut short by a crash: the rest stands
                raise TranscriptError(f"{self.path}:{number}: not JSON") from None
        try:
            return list(messages_from_dict(records))
        except (KeyError, TypeError, ValueError) as exc:
            raise TranscriptError(f"{self.path}: not a chat transcript ({exc})") from exc

    def append(self, message: BaseMessage) -> None:
        line = json.dumps(message_to_dict(message), ensure_ascii=False)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        try:
            fd = open_nofollow(self.path, flags, 0o600)
        except OSError as exc:
            raise TranscriptError(f"{self.path} cannot be written ({exc.strerror})") from None
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            out.write(line + "\n")
