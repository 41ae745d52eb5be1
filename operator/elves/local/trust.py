"""Whether the state directory can be trusted with the stack's secrets.

Whoever can write to the state directory, or to a directory above it, can replace what is in
it: plant the control token, the Erlang cookie or a database password that the stack would
then use, or swap the whole directory for their own. So the local mode uses a state
directory only when it and every directory above it are owned by the user running it (or by
root) and writable by nobody else; a directory others may write to is accepted only when its
sticky bit keeps them from renaming or deleting what they do not own (/tmp), and then the
directory below it must be ours. The secrets must be the user's and private too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from elves.local.layout import Layout


class UntrustedStateDir(RuntimeError):
    """The state directory or one above it could be changed by another user; the message names
    the path and the fix."""


def _owners() -> set[int]:
    return {os.geteuid(), 0}


def _check_directory(path: Path, below_sticky: bool) -> bool:
    """Checks one directory; returns whether it is sticky and open to others (so the next one
    down must be the user's own)."""
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        info = path.stat()  # the resolved chain is checked too; a link's own mode means nothing
    mode = stat.S_IMODE(info.st_mode)
    owners = {os.geteuid()} if below_sticky else _owners()
    if info.st_uid not in owners:
        raise UntrustedStateDir(
            f"{path} belongs to uid {info.st_uid}, not to you (uid {os.geteuid()}) or root: another user could "
            f"change the local stack's state under it. Use an ELVES_STATE_DIR of your own, or `chown` it")
    open_to_others = bool(mode & (stat.S_IWGRP | stat.S_IWOTH))
    if open_to_others and not mode & stat.S_ISVTX:
        raise UntrustedStateDir(
            f"{path} is writable by others (mode {mode:o}): they could replace the local stack's state and secrets. "
            f"Run `chmod go-w {path}` or use an ELVES_STATE_DIR under directories only you may write to")
    return open_to_others


def check_path(directory: Path) -> None:
    """Refuses `directory` (which need not exist yet) when it or a directory above it could be
    changed by another user."""
    absolute = Path(os.path.abspath(directory))
    chain = [p for p in reversed(absolute.parents)] + [absolute]
    below_sticky = False
    for path in chain:
        if not path.exists():
            break  # created by us, with our own mode
        below_sticky = _check_directory(path, below_sticky)
    # The directory as the kernel will resolve it: a link among them leads elsewhere.
    resolved = absolute.resolve()
    if resolved != absolute:
        check_path(resolved)


def check_secrets(layout: Layout) -> None:
    """Refuses secrets another user could have written or can read: never used, whoever seeded them."""
    if not layout.secrets.exists():
        return
    for path in [layout.secrets, *sorted(layout.secrets.iterdir())]:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077:
            raise UntrustedStateDir(
                f"{path} is not a private file or directory of yours (uid {info.st_uid}, mode "
                f"{stat.S_IMODE(info.st_mode):o}{', a symbolic link' if stat.S_ISLNK(info.st_mode) else ''}): "
                f"a secret someone else could have planted is never used. Remove {layout.secrets} and run "
                "./deployments.sh --local to generate new ones")


def check_state_dir(layout: Layout) -> None:
    check_path(layout.root)
    check_secrets(layout)
