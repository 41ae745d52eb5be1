"""A module's private names (a leading underscore) stay in their module: what two modules
share is public in one of them (the report, `elves compare` and the results page write
figures through elves.engine.results.format, not through each other's helpers)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "operator" / "elves"


def private_imports(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith("elves")):
                found += [f"{path.relative_to(package.parent)}:{node.lineno} imports {alias.name} from {node.module}"
                          for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_no_module_imports_another_modules_private_names():
    assert private_imports(PACKAGE) == []


def test_a_private_import_is_named(tmp_path):
    (tmp_path / "elves").mkdir()
    (tmp_path / "elves" / "page.py").write_text("from elves.engine.results.report.html import _table as table\n")
    assert private_imports(tmp_path / "elves") == [
        "elves/page.py:1 imports _table from elves.engine.results.report.html"]
