"""The facts the shell scripts need, as shell assignments they `eval`.

    eval "$(PYTHONPATH=operator python3 -m elves.shell_env)"     # or: elves local env

deployments.sh, cleanup.sh and tools/cluster/{deploy,build-images}.sh read the service
list, the local mode's paths and URLs from here instead of restating them. Standard library only
(with the system's python3 and no virtualenv it still runs), like every module it imports.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence

from elves.constants import DEPLOYMENTS
from elves.local.layout import Layout
from elves.local.ports import Ports
from elves.local.settings import Settings

def facts(settings: Settings) -> dict[str, str | Sequence[str]]:
    layout, ports = Layout(settings.state_dir.absolute()), Ports(settings.port_offset)
    return {
        "SYSTEM_DEPLOYMENTS": DEPLOYMENTS,
        "LOCAL_JARS": [str(settings.service_jar(name)) for name in DEPLOYMENTS],
        "LOCAL_STATE_DIR": str(layout.root),
        "LOCAL_STATE_MARKER": str(layout.marker),
        "LOCAL_LOGS_DIR": str(layout.logs),
        "LOCAL_SUPERVISOR_PID_FILE": str(layout.supervisor_pid),
        "LOCAL_SUPERVISOR_LOG": str(layout.supervisor_log),
        "LOCAL_CHILDREN": str(layout.children),
        "LOCAL_CHILDREN_AT_STOP": str(layout.children_at_stop),
        "LOCAL_GATEWAY_URL": ports.url(ports.gateway),
        "LOCAL_REGISTRY_URL": ports.url(ports.registry),
        "LOCAL_PROMETHEUS_URL": ports.url(ports.prometheus),
        "LOCAL_SUPERVISOR_URL": ports.url(ports.supervisor),
    }


def render(values: dict[str, str | Sequence[str]]) -> str:
    """Bash assignments (a sequence becomes an array), every value quoted."""
    lines = []
    for name, value in values.items():
        if isinstance(value, str):
            lines.append(f"{name}={shlex.quote(value)}")
        else:
            lines.append(f"{name}=({' '.join(shlex.quote(item) for item in value)})")
    return "\n".join(lines) + "\n"


def main() -> int:
    try:
        sys.stdout.write(render(facts(Settings.from_env())))
    except ValueError as error:  # a bad ELVES_* setting, named
        print(f"elves env: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
