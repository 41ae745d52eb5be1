"""Tests mirror the modules they test: tests/unit/engine/ has one folder per floor of the engine
(models/, planning/, results/, runner/), each test file sits under the floor of a module it
imports, and a file that imports one engine module is named after it (test_<module>*.py). What a
reader would notice otherwise: the tests of a module they change are not where they look.
Files at tests/unit/engine/ itself test the engine as a whole or its top (elves.cli, drive,
commands), never one floor alone."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
ENGINE = REPO / "operator" / "elves" / "engine"
TESTS = REPO / "tests" / "unit" / "engine"
FLOORS = sorted(p.name for p in ENGINE.iterdir() if (p / "__init__.py").is_file())
# elves.engine.<floor>[.<module>...] as imported, in either spelling (`from a.b import c` too).
IMPORTED = re.compile(r"^\s*(?:from\s+elves\.engine\.([\w.]+)\s+import|import\s+elves\.engine\.([\w.]+)"
                      r"|from\s+elves\.engine\s+import\s+([\w, ]+))", re.MULTILINE)
TOP = re.compile(r"^\s*from\s+elves(?:\.cli|\.engine\.drive|\.engine\.commands)\s+import", re.MULTILINE)


def engine_imports(path: Path) -> set[str]:
    """The dotted engine modules (below elves.engine) a test file imports."""
    found = set()
    for dotted, plain, names in IMPORTED.findall(path.read_text(encoding="utf-8")):
        if names:
            found.update(name.strip() for name in names.split(","))
        else:
            found.add(dotted or plain)
    return found


def test_the_floors_are_known() -> None:
    assert FLOORS == ["models", "planning", "results", "runner"], "a new floor: give it a test folder"


def test_every_test_folder_is_a_floor() -> None:
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert folders <= set(FLOORS), f"test folders that are no floor of the engine: {sorted(folders - set(FLOORS))}"


def test_each_test_file_sits_under_the_floor_of_a_module_it_imports() -> None:
    misplaced = []
    for path in sorted(TESTS.rglob("test_*.py")):
        floors = {module.split(".")[0] for module in engine_imports(path)} & set(FLOORS)
        where = path.parent.name if path.parent != TESTS else None
        if where is None and floors and not TOP.search(path.read_text(encoding="utf-8")):
            misplaced.append(f"{path.relative_to(REPO)}: tests {sorted(floors)} only; move it under one")
        elif where is not None and where not in floors:
            misplaced.append(f"{path.relative_to(REPO)}: imports no elves.engine.{where} (it imports {sorted(floors)})")
    assert not misplaced, "\n".join(misplaced)


def test_a_file_testing_one_module_is_named_after_it() -> None:
    misnamed = []
    for floor in FLOORS:
        for path in sorted((TESTS / floor).glob("test_*.py")):
            modules = engine_imports(path)
            if len(modules) != 1:
                continue
            [module] = modules
            name = module.split(".")[-1]
            if (ENGINE / (module.replace(".", "/") + ".py")).is_file() and not path.stem.startswith(f"test_{name}"):
                misnamed.append(f"{path.relative_to(REPO)} tests only elves.engine.{module}: name it test_{name}*.py")
    assert not misnamed, "\n".join(misnamed)
