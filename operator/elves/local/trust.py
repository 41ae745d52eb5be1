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

from elves.local import nofollow
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


def private_file_problem(path: Path, info: os.stat_result) -> str:
    """Why the regular file `path` (its own status, no link followed) cannot hold a secret, with the
    one command that fixes it; "" when it can: the user's (or root's), read by nobody else."""
    if info.st_uid not in _owners():
        return (f"{path} belongs to uid {info.st_uid}, not to you (uid {os.geteuid()}) or root: a secret "
                f"someone else could have planted is never used. Remove it (`rm {path}`) and write it again "
                "yourself (./deployments.sh --local generates the stack's own)")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        return (f"{path} may be read by others (mode {mode:o}): run `chmod 600 {path}` (and if someone else "
                "may have read it already, change that secret too)")
    return ""


def _check_secret_directory(fd: int, shown: Path) -> None:
    info = os.fstat(fd)
    if info.st_uid not in _owners():
        raise UntrustedStateDir(
            f"{shown} belongs to uid {info.st_uid}, not to you (uid {os.geteuid()}) or root: a secret someone "
            f"else could have planted is never used. Remove it (`rm -r {shown}`) and write what it held yourself")
    if stat.S_IMODE(info.st_mode) & 0o077:
        # What `mkdir -p` makes under the usual umask (022), as the guide's steps do: closed here, since
        # each file in it is checked on its own (so nothing others could have read is ever used).
        if info.st_uid != os.geteuid():
            raise UntrustedStateDir(f"{shown} may be entered by others: run `chmod 700 {shown}` as its owner")
        os.fchmod(fd, 0o700)
    for name in sorted(os.listdir(fd)):
        path = shown / name
        entry = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISLNK(entry.st_mode):
            raise UntrustedStateDir(
                f"{path} is a symbolic link: a secret is never read through one (its target may be anyone's). "
                f"Remove it (`rm {path}`) and put the file itself there")
        if stat.S_ISDIR(entry.st_mode):
            below = nofollow.open_directory(fd, name, path)
            try:
                _check_secret_directory(below, path)
            finally:
                os.close(below)
        elif not stat.S_ISREG(entry.st_mode):
            raise UntrustedStateDir(f"{path} is not a regular file: remove it (`rm {path}`)")
        elif problem := private_file_problem(path, entry):
            raise UntrustedStateDir(problem)


def check_secrets(layout: Layout) -> None:
    """Refuses secrets another user could have written or can read, or that lie behind a link:
    never used, whoever seeded them; each refusal names the one file and the command that mends it.
    Directories of the user's that others may enter are closed (chmod 700)."""
    try:
        with nofollow.directory(layout.root, layout.secrets) as fd:
            _check_secret_directory(fd, layout.secrets)
    except FileNotFoundError:
        return
    except nofollow.LinkRefused as error:
        raise UntrustedStateDir(str(error)) from None


def check_state_dir(layout: Layout) -> None:
    check_path(layout.root)
    check_secrets(layout)
