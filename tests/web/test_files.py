"""Files of a run served so nothing runs in the page: images as images, text-like files
(HTML too) as plain text, anything else as a download with a safe name; a CSP sandbox
on each; nothing outside the run folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from praxis.web.files import file_response


@pytest.fixture
def run_root(tmp_path: Path) -> Path:
    root = tmp_path / "runs" / "r1"
    (root / "output").mkdir(parents=True)
    return root


@pytest.mark.parametrize(
    ("name", "media"),
    [
        ("output/chart.PNG", "image/png"),
        ("output/logo.svg", "image/svg+xml"),
        ("output/page.html", "text/plain; charset=utf-8"),
        ("output/clean.csv", "text/plain; charset=utf-8"),
        ("output/model.pkl", "application/octet-stream"),
    ],
)
def test_each_kind_is_served_with_a_type_that_cannot_run(
    run_root: Path, name: str, media: str
) -> None:
    (run_root / name).write_bytes(b"data")
    r = file_response(run_root, name)
    assert r.status_code == 200 and r.media_type == media
    assert r.headers["content-security-policy"] == "sandbox; default-src 'none'"
    assert r.headers["x-content-type-options"] == "nosniff"
    download = "content-disposition" in r.headers
    assert download == (media == "application/octet-stream")


def test_a_download_name_is_ascii_without_quotes(run_root: Path) -> None:
    name = 'output/ré"port\t1.bin'
    (run_root / name).write_bytes(b"x")
    r = file_response(run_root, name)
    assert r.headers["content-disposition"] == 'attachment; filename="r__port_1.bin"'


def test_outside_the_run_folder_is_refused_and_missing_is_not_found(
    run_root: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret.txt").write_text("host")
    os.symlink(tmp_path / "secret.txt", run_root / "output" / "link.txt")
    for name in ("../../secret.txt", "/etc/passwd", "output/link.txt"):
        r = file_response(run_root, name)
        assert r.status_code == 403, name
        assert b"only record files of the run folder are served" in r.body
    assert file_response(run_root, "output/missing.csv").status_code == 404
