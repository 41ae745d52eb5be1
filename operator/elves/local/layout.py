"""Where the local mode keeps its state under `.elves/` (docs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SECRET_NAMES = ("jwt-secret", "postgres-password", "rabbitmq-password")


class MissingSecret(RuntimeError):
    pass


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def secrets(self) -> Path:
        return self.root / "secrets"

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
    def enabled_plugins(self) -> Path:
        # Written by tools/install-local-deps.sh (rabbitmq-plugins --offline).
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
    def children(self) -> Path:
        """The processes the supervisor started (pid + start time), for cleanup and reaping."""
        return self.run / "children.json"

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
