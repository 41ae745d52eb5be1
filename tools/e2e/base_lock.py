#!/usr/bin/env python3
"""Checks a Debian base's packages against its lock, telling updates from upgrades.

    tools/e2e/base_lock.py --base NAME --lock FILE --now FILE [--principal PACKAGE ...]

Debian's mirror serves only the newest version of each package within a release, so a lock
of exact versions breaks every fresh build the day Debian publishes a security update. What
the lock protects against is a change of behaviour, and within a stable release that comes
only with a new upstream version of a package the image exists for (RabbitMQ, PostgreSQL,
the services' fonts, Python, curl: each base's PRINCIPAL in images/bases/<base>.conf). So:

- a principal package whose upstream version differs from the lock fails the build (exit 1),
  naming the package and the one command that accepts it;
- every other difference (a Debian revision such as +deb12u3, a library's point release, a
  package added or gone) is reported, not fatal: the build records the versions it used.

Both FILEs hold "package version" lines (the lock may have # comments). build-images.sh
runs this after each base's build; tests/unit/tools/test_base_lock.py runs it on recorded
package lists.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# A Debian stable update's suffix on a version: 1.5.2-6+deb12u3, 17.0.13+11-1~deb12u1, and on
# a native package's version with no revision: base-files 12.4+deb12u15.
_STABLE_UPDATE = re.compile(r"[+~]deb\d+u\d+$")


def upstream_version(version: str) -> str:
    """The upstream part of a Debian version: epoch kept, Debian revision and update dropped.

    >>> upstream_version("1:25.2.3+dfsg-1+deb12u4")
    '1:25.2.3+dfsg'
    >>> upstream_version("12.4+deb12u15")
    '12.4'
    """
    if "-" in version:
        version = version.rsplit("-", 1)[0]
    return _STABLE_UPDATE.sub("", version)


def read_packages(path: Path) -> dict[str, str]:
    """package -> version from a file of "package version" lines."""
    packages = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{path}:{number}: expected 'package version', got {line!r}")
        packages[parts[0]] = parts[1]
    return packages


@dataclass(frozen=True)
class Change:
    package: str
    locked: str | None  # None: not in the lock
    now: str | None  # None: no longer installed

    @property
    def upstream_moved(self) -> bool:
        if self.locked is None or self.now is None:
            return True
        return upstream_version(self.locked) != upstream_version(self.now)

    def __str__(self) -> str:
        return f"{self.package} {self.locked or '(not locked)'} -> {self.now or '(gone)'}"


def changes(locked: dict[str, str], now: dict[str, str]) -> list[Change]:
    names = sorted(set(locked) | set(now))
    return [
        Change(name, locked.get(name), now.get(name))
        for name in names
        if locked.get(name) != now.get(name)
    ]


def check(base: str, locked: dict[str, str], now: dict[str, str], principal: list[str],
          relock_command: str) -> tuple[list[str], list[str]]:
    """(report lines, error lines) for a base's packages against its lock."""
    found = changes(locked, now)
    errors = [
        f"{change.package}: a new upstream version ({change}), which may change what the "
        f"image does"
        for change in found
        if change.package in principal and change.upstream_moved
    ]
    missing = [name for name in principal if name not in now]
    errors += [f"{name}: not installed in the base, though its .conf names it principal"
               for name in missing if name not in locked]
    if errors:
        errors.append(f"accept it: {relock_command}, then commit images/bases/{base}.lock")
        return [], [f"base {base} differs from its lock in a principal package:"] + [
            f"  {line}" for line in errors]
    if not found:
        return [f"base {base}: {len(now)} packages, as locked"], []
    report = [f"base {base}: {len(now)} packages, {len(found)} differ from the lock "
              f"(Debian updates within the release; reported, not fatal):"]
    report += [f"  {change}" for change in found]
    return report, []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--lock", type=Path, required=True)
    parser.add_argument("--now", type=Path, required=True)
    parser.add_argument("--principal", nargs="*", default=[])
    parser.add_argument("--relock-command", default="tools/e2e/build-images.sh --relock")
    args = parser.parse_args(argv)
    try:
        locked, now = read_packages(args.lock), read_packages(args.now)
    except (OSError, ValueError) as error:
        print(f"base {args.base}: {error}", file=sys.stderr)
        return 2
    report, errors = check(args.base, locked, now, args.principal, args.relock_command)
    for line in report + errors:
        print(line, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
