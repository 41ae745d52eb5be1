"""File operations that follow no symbolic link below the state directory.

Under a root supervisor the directories of RabbitMQ, PostgreSQL, Prometheus, HAProxy and the
services under the state directory belong to their OS users (elves.local.os_users), who may put
a symbolic link where the supervisor expects a file or a directory. Followed by root, such a
link would hand /etc to that user, or truncate or overwrite a file of root's. So every path
below a trusted base (the state directory, whose own chain elves.local.trust checks) is reached
one component at a time from a descriptor of the base, each opened with O_NOFOLLOW: a link
anywhere below the base is refused (LinkRefused) before anything is changed. What is changed is
changed through a descriptor (fchown, fchmod) or by a name relative to one (a rename replaces a
link, never follows it; an entry is chowned with follow_symlinks=False).
"""

from __future__ import annotations

import errno
import os
import pwd
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from secrets import token_hex

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class LinkRefused(OSError):
    """A symbolic link (or another file) stands where the supervisor expects its own file or
    directory; the message names it, who may write where it lies, and the fix. An OSError, so
    whatever handles a file operation that failed handles this one too."""


def _owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _refuse_link(parent_fd: int, name: str, shown: Path) -> None:
    """Raises LinkRefused when `name` in `parent_fd` is a symbolic link; returns otherwise."""
    try:
        info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(name, dir_fd=parent_fd)
        writer = _owner_name(os.fstat(parent_fd).st_uid)
        raise LinkRefused(
            f"{shown} is a symbolic link (to {target}) in a directory {writer} may write: the local stack "
            f"follows no link under its state directory, so it changed nothing there. Remove the link "
            f"(`rm {shown}`) and start the local stack again")


def _components(base: Path, path: Path) -> tuple[str, ...]:
    parts = Path(path).relative_to(base).parts
    bad = [p for p in parts if p in (".", "..")]
    if bad:
        raise ValueError(f"{path}: no {bad[0]!r} below {base}")
    return parts


def open_directory(parent_fd: int, name: str, shown: Path, create_mode: int | None = None) -> int:
    """A descriptor of the directory `name` in `parent_fd` (`shown` names it in errors), never
    through a link; created with `create_mode` if missing (None: FileNotFoundError)."""
    for _ in range(2):  # a second try after creating it (or losing a race to whoever did)
        try:
            return os.open(name, _DIRECTORY, dir_fd=parent_fd)
        except FileNotFoundError:
            if create_mode is None:
                raise
            try:
                os.mkdir(name, create_mode, dir_fd=parent_fd)
            except FileExistsError:
                pass
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR):
                _refuse_link(parent_fd, name, shown)
            raise
    return os.open(name, _DIRECTORY, dir_fd=parent_fd)


@contextmanager
def directory(base: Path, path: Path, create_mode: int | None = None) -> Iterator[int]:
    """A descriptor of the directory `path` (`base` or below it), no link followed below `base`;
    missing directories are created with `create_mode` (None: FileNotFoundError)."""
    fd = os.open(os.path.realpath(base), _DIRECTORY)
    shown = Path(base)
    try:
        for name in _components(base, path):
            shown = shown / name
            parent, fd = fd, -1
            try:
                fd = open_directory(parent, name, shown, create_mode)
            finally:
                os.close(parent)
        yield fd
    finally:
        if fd >= 0:
            os.close(fd)


def _ids(user: str | None) -> tuple[int, int] | None:
    if not user:
        return None
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


def make_directory(base: Path, path: Path, user: str | None = None, mode: int = 0o700) -> None:
    """Create `path` if needed (and the directories above it, up to `base`, root's with mode 755),
    then give it to `user` (None: leave the owner) with `mode`, through its descriptor."""
    with directory(base, path.parent, create_mode=0o755) as parent:
        fd = open_directory(parent, path.name, path, mode)
    try:
        ids = _ids(user)
        if ids:
            os.fchown(fd, *ids)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def write_file(base: Path, path: Path, data: str | bytes, mode: int = 0o644, user: str | None = None) -> None:
    """Write `path` whole (a new file renamed over the old name, so a link there is replaced,
    never written through; one there is refused), with `mode` from its first byte and owned by `user` (None: the caller)."""
    raw = data.encode() if isinstance(data, str) else data
    with directory(base, path.parent, create_mode=0o755) as parent:
        _refuse_link(parent, path.name, path)  # replaced safely, but a planted link is worth a stop
        partial = f".{path.name}.{token_hex(6)}.partial"
        fd = os.open(partial, _NEW_FILE, mode & 0o600, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(raw)
                ids = _ids(user)
                if ids:
                    os.fchown(out.fileno(), *ids)
                os.fchmod(out.fileno(), mode)
            os.replace(partial, path.name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            try:
                os.unlink(partial, dir_fd=parent)
            except FileNotFoundError:
                pass
            raise


def exists(base: Path, path: Path) -> bool:
    """Whether `path` exists (a link counts: it is never followed to see)."""
    try:
        with directory(base, path.parent) as parent:
            os.stat(path.name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def give_tree(base: Path, path: Path, user: str | None) -> None:
    """Give `path` and everything under it to `user` (what an earlier run as another user left):
    directories through their descriptors, other entries by name with follow_symlinks=False.
    A hard link to a file of someone else's (its link count above 1) is refused, not given away."""
    ids = _ids(user)
    if not ids:
        return
    with directory(base, path.parent) as parent:
        try:
            os.stat(path.name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        _refuse_link(parent, path.name, path)
        for top, directories, names, fd in os.fwalk(path.name, dir_fd=parent, follow_symlinks=False):
            os.fchown(fd, *ids)
            for name in (*directories, *names):  # fwalk lists a link to a directory among the directories
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) or (info.st_uid, info.st_gid) == ids:
                    continue  # walked (fchowned) on its own, or already theirs
                if not stat.S_ISLNK(info.st_mode) and info.st_nlink > 1:
                    raise LinkRefused(
                        f"{path.parent / top / name} has {info.st_nlink} "
                        f"hard links and belongs to {_owner_name(info.st_uid)}: the local stack gives it to "
                        f"{user} only when it is the one name of that file. Remove it and start again")
                os.chown(name, *ids, dir_fd=fd, follow_symlinks=False)


def remove_tree(base: Path, path: Path) -> None:
    """Delete the directory `path` and what is in it; a link there is refused, not followed."""
    with directory(base, path.parent) as parent:
        _refuse_link(parent, path.name, path)
        shutil.rmtree(path.name, dir_fd=parent)


def read_file(base: Path, path: Path) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file `path` and its own status (owner, mode), read through one
    descriptor opened with no link followed."""
    with directory(base, path.parent) as parent:
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
        except OSError as error:
            if error.errno == errno.ELOOP:
                _refuse_link(parent, path.name, path)
            raise
    with os.fdopen(fd, "rb") as source:
        info = os.fstat(source.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise LinkRefused(f"{path} is not a regular file")
        return source.read(), info
