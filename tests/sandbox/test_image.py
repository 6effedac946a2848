"""The sandbox image's tag is a content hash; ensure_image finds an unchanged image at once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sandbox.image.build import DOCKERFILE, REQUIREMENTS, ensure_image, image_tag


def test_image_tag_is_stable_for_unchanged_inputs() -> None:
    tag = image_tag()
    assert re.fullmatch(r"praxis-sandbox:[0-9a-f]{12}", tag)
    assert image_tag() == tag


def test_image_tag_changes_with_the_dockerfile_and_requirements(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    requirements = tmp_path / "requirements.txt"
    dockerfile.write_bytes(DOCKERFILE.read_bytes())
    requirements.write_bytes(REQUIREMENTS.read_bytes())
    same = image_tag(dockerfile, requirements)
    assert same == image_tag()
    dockerfile.write_bytes(DOCKERFILE.read_bytes() + b"\nRUN true\n")
    changed = image_tag(dockerfile, requirements)
    assert changed != same
    dockerfile.write_bytes(DOCKERFILE.read_bytes())
    requirements.write_text(REQUIREMENTS.read_text().replace("pandas==", "pandas>="))
    assert image_tag(dockerfile, requirements) not in (same, changed)


@pytest.mark.docker
def test_ensure_image_twice_returns_the_same_tag(docker_image: str) -> None:
    lines: list[str] = []
    assert ensure_image(progress=lines.append) == docker_image == image_tag()
    assert lines == []  # found, not rebuilt
