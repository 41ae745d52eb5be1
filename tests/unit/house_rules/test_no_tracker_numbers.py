"""No tracker numbers in code or docs: the word issue followed by a number means nothing to a reader
without the tracker, and goes stale when the issue closes. Say what the thing is instead. (Raw benchmark
files under bench/results are records of their day and stay as they were written.)"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
TRACKER_NUMBER = re.compile(r"\b[Ii]ssue #?\d+(\.\d+)?\b")


def test_no_code_or_doc_names_a_tracker_number():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    found = []
    for name in files:
        path = REPO / name
        if path.suffix not in {".py", ".sh", ".md", ".java", ".js", ".yaml", ".tpl"} and path.name != "Makefile":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if TRACKER_NUMBER.search(line):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert not found, "tracker numbers:\n" + "\n".join(found)
