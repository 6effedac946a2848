"""Serving a file of a run folder with a content type that cannot run in the reviewer's page.

Only record files are served: the path is confined to the record folders of the run folder
(``RECORD``: never the workspace, its disk image, the content store or the snapshots; no
``..``, no symlinks, regular files only). Images
(SVG included: the page shows it only through ``<img>``, where it runs no script) are served
as images; every text-like file, HTML included, as ``text/plain`` so it is shown,
never executed; anything else as a download. Each response also carries a CSP ``sandbox``.
"""

from __future__ import annotations

from pathlib import Path

from starlette.responses import FileResponse, PlainTextResponse, Response

from praxis.flows.store.layout import RunPaths
from sandbox.errors import PathRefused
from sandbox.files import confined

IMAGES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",  # shown only as <img> (no scripts); opened alone, CSP sandbox
}
TEXT = {
    ".csv",
    ".tsv",
    ".md",
    ".txt",
    ".json",
    ".jsonl",
    ".ipynb",
    ".py",
    ".sql",
    ".yaml",
    ".yml",
    ".log",
    ".html",
    ".htm",
    ".xml",
}
# The folders of a run a reviewer reads (views.run_files lists the same) and praxis's own
# account beside them; the live workspace and the rest of the run folder are not served.
RECORD = RunPaths.READ
RECORD_FILES = RunPaths.ACCOUNT
HEADERS = {
    "Content-Security-Policy": "sandbox; default-src 'none'",
    "X-Content-Type-Options": "nosniff",
}


def record_file(run_root: Path, name: str) -> Path:
    """The record file ``name`` of the run folder ``run_root``; PathRefused for a path
    outside ``RECORD`` and ``RECORD_FILES`` (the workspace, ``workspace.img``, objects,
    snapshots) or outside the run folder."""
    top = name.replace("\\", "/").split("/", 1)[0]
    if name in RECORD_FILES:
        return confined(run_root, name)
    if top not in RECORD or "/" not in name:
        raise PathRefused(name, f"is not a record file (served: {', '.join(RECORD)})")
    return confined(run_root, name)


def file_response(run_root: Path, name: str) -> Response:
    try:
        path = record_file(run_root, name)
    except PathRefused as exc:
        return PlainTextResponse(
            f"praxis: refused: {name!r} {exc.reason}; only record files of the run folder "
            "are served\n",
            status_code=403 if "does not exist" not in exc.reason else 404,
        )
    suffix = path.suffix.lower()
    headers = dict(HEADERS)
    if suffix in IMAGES:
        media = IMAGES[suffix]
    elif suffix in TEXT:
        media = "text/plain; charset=utf-8"
    else:
        media = "application/octet-stream"
        headers["Content-Disposition"] = f'attachment; filename="{_ascii(path.name)}"'
    return FileResponse(path, media_type=media, headers=headers)


def _ascii(name: str) -> str:
    return "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name)
