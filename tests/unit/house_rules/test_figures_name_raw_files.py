"""Every figure in README.md and docs/ traces to a raw file that exists: each raw file the prose
names (a dated bench output under bench/results/, or a path under bench/results/ or docs/results/)
is there, and every row of a table of figures with a "raw file" column names one. What a reader
would notice otherwise: a figure whose source was renamed, never committed, or only shorthand."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
RESULTS = REPO / "bench" / "results"
# A dated bench output, alone (it lives in bench/results/) or as a path; or a committed study result.
DATED = re.compile(r"(?<![\w/.-])(20\d\d-\d\d-\d\d-[\w.-]+\.(?:txt|json|csv))")
PATHS = re.compile(r"((?:bench/results|docs/results)/[\w./-]+\.(?:txt|json|csv))")
SAME_FILE = "the same file"


def named_raw_files(text: str) -> set[Path]:
    files = {RESULTS / name for name in DATED.findall(text)}
    return files | {REPO / path for path in PATHS.findall(text) if "*" not in path and "<" not in path}


def test_every_raw_file_the_docs_name_exists():
    missing = [f"{doc.relative_to(REPO)}: {path.relative_to(REPO)}" for doc in DOCS
               for path in sorted(named_raw_files(doc.read_text(encoding="utf-8"))) if not path.is_file()]
    assert not missing, "raw files named but not committed:\n" + "\n".join(missing)


def test_the_docs_name_raw_files_at_all():
    # The check above must have something to check: the figures' page names dozens.
    assert len(named_raw_files((REPO / "docs" / "figures.md").read_text(encoding="utf-8"))) >= 20


def test_every_row_of_a_table_of_figures_names_its_raw_file():
    bare = []
    for doc in DOCS:
        header: list[str] | None = None
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            if not line.startswith("|"):
                header = None
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells
            elif header[0] == "raw file" and not set(line) <= set("|-: "):
                if not (named_raw_files(cells[0]) or cells[0] == SAME_FILE):
                    bare.append(f"{doc.relative_to(REPO)}:{number}: {cells[0]!r}")
    assert not bare, "rows of a table of figures with no raw file:\n" + "\n".join(bare)
