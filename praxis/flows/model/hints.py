"""The fix a phase's error calls for, added to its message where praxis knows it.

A module the sandbox image lacks (``ModuleNotFoundError: No module named 'seaborn'``, or
pandas' ``Missing optional dependency 'tabulate'``) is fixed in flow.yaml, not with pip on the
host: the isolated backends run the image, and a flow's packages are an image layer.
"""

from __future__ import annotations

import re

_MISSING = (
    re.compile(r"ModuleNotFoundError: No module named '([A-Za-z0-9_.]+)'"),
    re.compile(r"Missing optional dependency '([A-Za-z0-9_.-]+)'"),
)
# import names whose package on PyPI is called otherwise
PACKAGE_OF = {
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "cv2": "opencv-python-headless",
    "PIL": "pillow",
    "yaml": "PyYAML",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "docx": "python-docx",
    "Bio": "biopython",
    "dotenv": "python-dotenv",
}


def missing_package(text: str) -> str | None:
    """The package to add for the module ``text`` (an error's words) says is missing."""
    for pattern in _MISSING:
        found = pattern.search(text)
        if found:
            module = found.group(1).split(".")[0]
            return PACKAGE_OF.get(module, module)
    return None


def with_hint(text: str, *, isolated: bool) -> str:
    """``text`` with the fix for a missing module, on a backend that runs the sandbox image."""
    package = missing_package(text) if isolated else None
    if package is None:
        return text
    return (
        f"{text}: add {package!r} to sandbox.packages in flow.yaml (or requirements.txt beside "
        "it), then `praxis sandbox build FLOW`"
    )
