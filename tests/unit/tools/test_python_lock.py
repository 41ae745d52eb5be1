"""Tier 1: the hashed Python locks stay in step with operator/pyproject.toml.

`make venv` installs operator/requirements-test.txt and the operator images install
operator/requirements.txt, both with `pip install --require-hashes`: every package, the
transitive and the build dependencies included, must be there with a sha256, at the
version pyproject.toml pins. What a user would notice if they drifted: a `make venv` or an
image build that stops at a missing hash, or an image whose kopf is not the one tested.
`make lock` regenerates both files.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[3]
PYPROJECT = tomllib.loads((REPO / "operator" / "pyproject.toml").read_text())
RUNTIME_LOCK = REPO / "operator" / "requirements.txt"
TEST_LOCK = REPO / "operator" / "requirements-test.txt"
ENTRY = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)")
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


def locked(path: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of sha256 hashes) of each entry of a pip-compile lock."""
    entries: dict[str, tuple[str, int]] = {}
    # An entry is `name==version \` and its `--hash=...` continuation lines.
    for block in re.split(r"\n(?=\S)", path.read_text()):
        if block.startswith("#") or not block.strip():
            continue
        match = ENTRY.match(block)
        assert match, f"{path.name}: not a pinned entry: {block.splitlines()[0]!r}"
        entries[canonicalize_name(match["name"])] = (match["version"], len(HASH.findall(block)))
    return entries


def pins(requirements: list[str]) -> dict[str, str]:
    """name -> version of pyproject.toml requirements, each of which must be `==`."""
    result = {}
    for text in requirements:
        requirement = Requirement(text)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"pyproject.toml: {text} is not pinned to one version"
        result[canonicalize_name(requirement.name)] = specifier.version
    return result


RUNTIME = pins(PYPROJECT["project"]["dependencies"])
TEST = pins(PYPROJECT["project"]["optional-dependencies"]["test"])
BUILD = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]


@pytest.mark.parametrize("lock", [RUNTIME_LOCK, TEST_LOCK], ids=lambda p: p.name)
def test_every_locked_package_has_a_hash(lock: Path) -> None:
    entries = locked(lock)
    assert entries
    assert not [name for name, (_, hashes) in entries.items() if hashes == 0]
    # pip-compile writes no index or links: where pip looks is the user's business, what it installs is not.
    assert not re.search(r"^--(index-url|extra-index-url|find-links)", lock.read_text(), re.M)


@pytest.mark.parametrize(("lock", "wanted"), [(RUNTIME_LOCK, RUNTIME), (TEST_LOCK, RUNTIME | TEST)],
                         ids=["runtime", "test"])
def test_the_lock_has_every_pinned_dependency_at_its_version(lock: Path, wanted: dict[str, str]) -> None:
    entries = locked(lock)
    assert {name: entries.get(name, ("missing", 0))[0] for name in wanted} == wanted


@pytest.mark.parametrize("lock", [RUNTIME_LOCK, TEST_LOCK], ids=lambda p: p.name)
def test_the_lock_has_the_build_backend(lock: Path) -> None:
    # `pip install --no-build-isolation` builds the elves package with the locked setuptools.
    entries = locked(lock)
    for requirement in BUILD:
        version, _ = entries[canonicalize_name(requirement.name)]
        assert requirement.specifier.contains(version), f"{lock.name}: {requirement.name}=={version} is not {requirement}"


def test_both_locks_agree_on_every_shared_package() -> None:
    runtime, test = locked(RUNTIME_LOCK), locked(TEST_LOCK)
    assert runtime.keys() <= test.keys()
    assert {name: test[name] for name in runtime} == runtime


def closure(roots: list[Requirement]) -> set[str]:
    """Every distribution the roots need in this interpreter, from the installed metadata
    (the venv is installed from the test lock), with the extras each parent asks for."""
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        extras = requirement.extras or {""}
        if name in seen and not requirement.extras:
            continue
        seen.add(name)
        for text in metadata.requires(name) or []:
            child = Requirement(text)
            if child.marker is None or any(child.marker.evaluate({"extra": e}) for e in extras):
                pending.append(child)
    return seen


@pytest.mark.parametrize(("lock", "groups"), [(RUNTIME_LOCK, ("dependencies",)), (TEST_LOCK, ("dependencies", "test"))],
                         ids=["runtime", "test"])
def test_the_lock_holds_the_transitive_dependencies_and_nothing_else(lock: Path, groups: tuple[str, ...]) -> None:
    project = PYPROJECT["project"]
    roots = [Requirement(r) for g in groups
             for r in (project["dependencies"] if g == "dependencies" else project["optional-dependencies"][g])]
    needed = closure(roots) | {canonicalize_name(r.name) for r in BUILD}
    assert set(locked(lock)) == needed
