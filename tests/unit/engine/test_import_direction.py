"""The layers import in one direction: the engine knows no platform nor the study that stands on
it, and the two platforms do not know each other; inside the engine each floor imports only the
floors below it, and no module imports itself back through others (docs/architecture.md,
"Layers"). Every import counts: at the top, inside a function, or for type annotations only."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "operator" / "elves"
# package -> the packages it must not import
FORBIDDEN = {
    # The study (the suite, the results page) stands on the engine, never under it.
    "elves.engine": ("elves.local", "elves.k8s", "elves.study"),
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


# The engine's floors, bottom first; the package's own modules (drive, commands) stand above them all.
FLOORS = ("elves.engine.models", "elves.engine.planning", "elves.engine.results", "elves.engine.runner")
ENTRY = ("elves.engine", "elves.engine.drive", "elves.engine.commands")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def engine_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted((PACKAGE / "engine").rglob("*.py"))}


def floor(module: str) -> int | None:
    """The floor a module of the engine stands on (0 the bottom), len(FLOORS) for the entry
    points, None for a module outside every floor."""
    if module in ENTRY:
        return len(FLOORS)
    return next((i for i, f in enumerate(FLOORS) if module == f or module.startswith(f + ".")), None)


def engine_imports(path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, module) of the engine modules a file imports: `from elves.engine.results import
    promql` is elves.engine.results.promql, a name of a package is the package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name in modules]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module in modules:
            found += [(node.lineno, f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                       else node.module) for alias in node.names]
    return found


def floor_problems() -> list[str]:
    modules = engine_modules()
    problems = [f"{name} stands on no floor: put it in one of {', '.join(FLOORS)}"
                for name in modules if floor(name) is None]
    for name, path in modules.items():
        for line, module in engine_imports(path, modules):
            if (floor(module) or 0) > (floor(name) or 0):
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}, a floor above")
    return sorted(set(problems))


def cycles() -> list[list[str]]:
    """Every import cycle among the engine's modules (each as the modules on it, once)."""
    modules = engine_modules()
    graph = {name: sorted({m for _, m in engine_imports(path, modules) if m != name})
             for name, path in modules.items()}
    found, done = [], set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            ring = trail[trail.index(name):]
            found.append(ring[ring.index(min(ring)):] + ring[:ring.index(min(ring))])
            return
        if name in done:
            return
        for nxt in graph[name]:
            visit(nxt, trail + [name])
        done.add(name)

    for name in graph:
        visit(name, [])
    return sorted({tuple(c): c for c in found}.values())


def test_each_floor_of_the_engine_imports_only_the_floors_below():
    assert floor_problems() == []


def test_no_module_of_the_engine_imports_itself_back():
    assert cycles() == []


def test_an_import_up_a_floor_and_a_cycle_are_named(tmp_path, monkeypatch):
    engine = tmp_path / "elves" / "engine"
    for package in ("models", "runner"):
        (engine / package).mkdir(parents=True)
        (engine / package / "__init__.py").write_text("")
    (engine / "__init__.py").write_text("")
    (engine / "models" / "spec.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from elves.engine.runner import machine\n")
    (engine / "runner" / "machine.py").write_text("from elves.engine.models import spec\n")
    (engine / "loose.py").write_text("")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "elves")
    assert floor_problems() == [
        "elves.engine.loose stands on no floor: put it in one of " + ", ".join(FLOORS),
        "elves/engine/models/spec.py:3 imports elves.engine.runner.machine, a floor above"]
    assert cycles() == [["elves.engine.models.spec", "elves.engine.runner.machine"]]


def test_an_offending_import_is_named(tmp_path, monkeypatch):
    engine = tmp_path / "elves" / "engine"
    engine.mkdir(parents=True)
    (tmp_path / "elves" / "local").mkdir()
    (tmp_path / "elves" / "k8s").mkdir()
    (engine / "bad.py").write_text("def f():\n    from elves.local.platform import LocalPlatform\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "elves")
    assert offending_imports() == [
        "elves/engine/bad.py:2 imports elves.local.platform (elves.engine must not import elves.local or elves.k8s or elves.study)"]
