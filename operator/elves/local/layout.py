"""Where the local mode keeps its state under `.elves/` (docs/architecture.md).

Also its creation: the directory with its marker (the proof, for ./cleanup.sh, that the
local mode created it and may delete it) and the generated secrets.
"""

from __future__ import annotations

import os
from secrets import token_hex
from dataclasses import dataclass
from pathlib import Path

from elves.data_plane import SECRET_NAMES as DATA_PLANE_SECRETS

# Generated once; a broker and a database password per user and role (elves.data_plane).
SECRET_NAMES = ("jwt-secret", "service-key", "control-token", *DATA_PLANE_SECRETS)
SECRET_BYTES = 32
# The file that says "the local mode created this directory": ./cleanup.sh removes a state
# directory only when it holds this file, never an arbitrary path from the environment.
MARKER = ".elves-state"


class MissingSecret(RuntimeError):
    pass


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def secrets(self) -> Path:
        return self.root / "secrets"

    @property
    def own_system_secrets(self) -> Path:
        """A SystemUnderTest's Secrets, as a cluster would mount them: <name>/<key>, one file each,
        written by the user (elves.local.platform.LocalPlatform.target_secret)."""
        return self.secrets / "own-system"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def rabbitmq(self) -> Path:
        return self.root / "rabbitmq"

    @property
    def marker(self) -> Path:
        return self.root / MARKER

    @property
    def enabled_plugins(self) -> Path:
        return self.rabbitmq / "enabled_plugins"

    @property
    def postgres(self) -> Path:
        return self.root / "postgres"

    @property
    def prometheus(self) -> Path:
        return self.root / "prometheus"

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    @property
    def supervisor_pid(self) -> Path:
        return self.run / "supervisor.pid"

    @property
    def supervisor_lock(self) -> Path:
        return self.run / "supervisor.lock"

    @property
    def supervisor_log(self) -> Path:
        return self.logs / "supervisor.log"

    @property
    def children(self) -> Path:
        """The processes the supervisor started (pid + start time), for cleanup and reaping."""
        return self.run / "children.json"

    @property
    def children_at_stop(self) -> Path:
        """children.json as it was when ./cleanup.sh asked the supervisor to stop."""
        return self.run / "children-at-stop.json"

    @property
    def loadtest_lock(self) -> Path:
        return self.run / "loadtest.lock"

    def secret(self, name: str) -> str:
        path = self.secrets / name
        try:
            value = path.read_text().strip()
        except FileNotFoundError:
            raise MissingSecret(
                f"secret {path} is missing: run ./deployments.sh --local to generate it"
            ) from None
        if not value:
            raise MissingSecret(f"secret {path} is empty: remove it and run ./deployments.sh --local")
        return value


def create(layout: Layout) -> bool:
    """Create the state directory with its marker, unless it exists (then it is left
    unmarked: a directory the local mode did not create is never the local mode's to
    delete). Returns whether it was created."""
    try:
        layout.root.mkdir(parents=True)
    except FileExistsError:
        return False
    layout.marker.write_text(f"created by the Elves local mode for {layout.root.resolve()}\n")
    return True


def generate_secrets(layout: Layout) -> list[str]:
    """Write every missing or empty secret (hex: safe in URLs, config files and SQL
    literals), readable by the owner only; returns the names written."""
    layout.secrets.mkdir(parents=True, exist_ok=True)
    layout.secrets.chmod(0o700)
    written = []
    for name in SECRET_NAMES:
        path = layout.secrets / name
        if path.exists() and path.read_text().strip():
            continue
        partial = path.with_suffix(".tmp")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(token_hex(SECRET_BYTES))
        partial.replace(path)
        written.append(name)
    return written
