"""A stand-in for a Maven-built service jar: a complete zip file whose content names the build."""

from __future__ import annotations

import zipfile
from pathlib import Path


def write_jar(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("BOOT-INF/x.class", content)
