"""The shell scripts take their facts from the Python (elves/shell_env.py) instead of
restating them: the service list, the local mode's paths and URLs."""

import os
import re
import subprocess
import sys
from pathlib import Path

from elves.constants import DEPLOYMENTS
from elves.local.layout import Layout
from elves.local.ports import Ports
from elves.local.settings import Settings

REPO = Path(__file__).resolve().parents[3]
SCRIPTS = [REPO / "deployments.sh", REPO / "cleanup.sh", *sorted((REPO / "tools" / "cluster").glob("*.sh"))]


def shell_facts(env: dict[str, str], *names: str) -> list[str]:
    """The values bash sees after `load_facts` (tools/facts.sh), one per name."""
    script = (f'REPO_DIR={REPO}; die() {{ echo "$*" >&2; exit 1; }}; source tools/facts.sh; load_facts; '
              + "; ".join(f'echo "${{{name}[*]}}"' for name in names))
    # -S: no site-packages, as with a system python3 and no virtualenv.
    result = subprocess.run(["bash", "-c", script.replace("python3 -m", f"{sys.executable} -S -m")],
                            cwd=REPO, capture_output=True, text=True, timeout=60, env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_facts_match_the_python_with_awkward_paths(tmp_path):
    state = tmp_path / "a dir with 'quotes' and $dollars"
    env = {"ELVES_STATE_DIR": str(state), "ELVES_LOCAL_PORT_OFFSET": "2000"}
    layout, ports = Layout(state), Ports(2000)
    settings = Settings.from_env({**os.environ, **env})
    assert shell_facts(env, "SYSTEM_DEPLOYMENTS", "LOCAL_STATE_DIR", "LOCAL_SUPERVISOR_PID_FILE",
                       "LOCAL_CHILDREN", "LOCAL_SUPERVISOR_LOG", "LOCAL_GATEWAY_URL",
                       "LOCAL_SUPERVISOR_URL", "LOCAL_JARS") == [
        " ".join(DEPLOYMENTS), str(state), str(layout.supervisor_pid), str(layout.children),
        str(layout.supervisor_log), ports.url(ports.gateway), ports.url(ports.supervisor),
        " ".join(str(settings.service_jar(name)) for name in DEPLOYMENTS)]


def test_the_cli_prints_the_same_facts():
    env = {**os.environ, "ELVES_LOCAL_PORT_OFFSET": "7"}
    cli = subprocess.run([sys.executable, "-m", "elves.cli", "local", "env"], env=env,
                         capture_output=True, text=True, timeout=60)
    module = subprocess.run([sys.executable, "-S", "-m", "elves.shell_env"], env=env, cwd=REPO / "operator",
                            capture_output=True, text=True, timeout=60)
    assert cli.returncode == module.returncode == 0
    assert cli.stdout == module.stdout and "LOCAL_GATEWAY_URL=http://127.0.0.1:8087" in cli.stdout


def test_the_scripts_do_not_restate_what_the_python_owns():
    restated = re.compile(r"supervisor\.pid|children\.json|supervisor\.log|jwt-secret|rabbitmq-password"
                          r"|postgres-password|gateway registry ingestor|127\.0\.0\.1:\$\(\(|\.elves\}")
    found = [f"{path.relative_to(REPO)}:{n}: {line.strip()}" for path in SCRIPTS
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if restated.search(line) and not line.lstrip().startswith("#")]
    assert not found, "\n".join(found)


def test_install_local_deps_creates_the_service_users_the_supervisor_runs_them_as():
    from elves.local.os_users import SERVICE_USERS

    script = (REPO / "tools" / "install-local-deps.sh").read_text()
    declared = re.search(r"^readonly SERVICE_USERS=\(([^)]*)\)", script, re.MULTILINE)
    assert declared and tuple(declared.group(1).split()) == SERVICE_USERS
