"""The layers import in one direction: the engine knows no platform, and the two platforms
do not know each other (docs/architecture.md, "Layers")."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "operator" / "elves"
# package -> the packages it must not import
FORBIDDEN = {
    "elves.engine": ("elves.local", "elves.k8s"),
    "elves.local": ("elves.k8s",),
    "elves.k8s": ("elves.local",),
    # Both platforms run RabbitMQ's tools, each where its broker runs.
    "elves.rabbitmq": ("elves.engine", "elves.local", "elves.k8s"),
}


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, also those inside functions
    (`from elves import local` counts as elves.local)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "elves":
                found += [(node.lineno, f"elves.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def offending_imports() -> list[str]:
    problems = []
    for package, forbidden in FORBIDDEN.items():
        directory = PACKAGE / package.split(".", 1)[1]
        for path in sorted(directory.rglob("*.py")):
            for line, module in imports(path):
                if any(module == f or module.startswith(f + ".") for f in forbidden):
                    problems.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
                                    f" ({package} must not import {' or '.join(forbidden)})")
    return sorted(set(problems))


def test_the_engine_imports_no_platform_and_the_platforms_not_each_other():
    assert offending_imports() == []


def test_an_offending_import_is_named(tmp_path, monkeypatch):
    engine = tmp_path / "elves" / "engine"
    engine.mkdir(parents=True)
    (tmp_path / "elves" / "local").mkdir()
    (tmp_path / "elves" / "k8s").mkdir()
    (engine / "bad.py").write_text("def f():\n    from elves.local.platform import LocalPlatform\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "elves")
    assert offending_imports() == [
        "elves/engine/bad.py:2 imports elves.local.platform (elves.engine must not import elves.local or elves.k8s)"]
