"""The OS users the local stack's processes run as when the supervisor runs as root.

Nothing but the supervisor keeps root: PostgreSQL, RabbitMQ with its epmd, Prometheus and
HAProxy run as the users their Debian packages create (`postgres`, `rabbitmq`, `prometheus`,
`haproxy`); each service as a user of its own (`elves-gateway`...), created by
tools/install-local-deps.sh, so that none can read another's environment (its credentials)
through /proc or its files. Started by an unprivileged user, everything runs as that user.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from elves.constants import DEPLOYMENTS
from elves.local.nofollow import make_directory

SERVICE_USER_PREFIX = "elves-"
SERVICE_USERS = tuple(SERVICE_USER_PREFIX + name for name in DEPLOYMENTS)


class MissingUser(RuntimeError):
    pass


def unprivileged(user: str) -> str | None:
    """`user` when the supervisor is root (it must then exist), else None: run as the caller."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(user)
    except KeyError:
        raise MissingUser(f"OS user {user} does not exist: run tools/install-local-deps.sh, which creates "
                          "the local stack's users") from None
    return user


def service_user(deployment: str) -> str:
    return SERVICE_USER_PREFIX + deployment


def own(path: Path, user: str | None, mode: int = 0o700, base: Path | None = None) -> None:
    """Create `path` (a directory) if needed, private to `user` (None: to the caller), who
    must be able to reach it. No link below `base` (default: the directory above `path`) is
    followed: a directory `user` could write may hold one (elves.local.nofollow)."""
    base = path.parent if base is None else base
    make_directory(base, path, None, mode)
    if user:
        check_reachable(path, user, f"what uses {path}")
        make_directory(base, path, user, mode)


def let_pass(*directories: Path) -> None:
    """Let the other users pass (not list, not write) the directories above their own."""
    for directory in directories:
        directory.chmod(directory.stat().st_mode | 0o111)


def _may_pass(directory: Path, entry: pwd.struct_passwd) -> bool:
    info = directory.stat()
    if info.st_uid == entry.pw_uid:
        return bool(info.st_mode & 0o100)
    if info.st_gid in os.getgrouplist(entry.pw_name, entry.pw_gid):
        return bool(info.st_mode & 0o010)
    return bool(info.st_mode & 0o001)


def check_reachable(directory: Path, user: str, what: str) -> None:
    """A process running as `user` must be able to pass every directory above `directory`."""
    entry = pwd.getpwnam(user)
    for parent in directory.resolve().parents:
        if not _may_pass(parent, entry):
            raise MissingUser(
                f"{what} runs as user {user} and cannot pass {parent} (mode {parent.stat().st_mode & 0o777:o}): "
                "put the state directory (ELVES_STATE_DIR) under directories others may enter")
