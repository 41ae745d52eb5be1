"""The e2e PostgreSQL image's entrypoint runs the chart's init script at the first start, as
the official image does: the registry's roles exist before the registry connects. Proven with
Debian's PostgreSQL 15 (the image's own server) and the script the chart renders."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from chart_testkit import REPO, named, render
from engine_testkit import free_port
from polling import wait_for
from prerequisites import require

ENTRYPOINT = REPO / "images" / "postgres" / "docker-entrypoint.sh"
POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")
START_SECONDS = 60
RUNUSER = shutil.which("runuser") or "runuser"


def postgres_user_can_run_the_server() -> bool:
    return os.geteuid() == 0 and (POSTGRES_BIN / "postgres").exists() and Path(RUNUSER).is_file()


@pytest.fixture
def postgres_dir():
    """A directory the postgres user owns (pytest's tmp_path is root's alone)."""
    require(postgres_user_can_run_the_server(),
            f"root and Debian's PostgreSQL 15 in {POSTGRES_BIN} (tools/install-local-deps.sh)")
    path = Path(tempfile.mkdtemp(prefix="elves-postgres-first-start-"))
    shutil.chown(path, "postgres", "postgres")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_first_start_creates_the_registrys_roles_from_the_charts_script(helm, postgres_dir):
    tmp_path = postgres_dir
    init = tmp_path / "initdb.d"
    init.mkdir()
    script = named(render(helm), "ConfigMap", "postgres-init")["data"]["10-elves-roles.sh"]
    (init / "10-elves-roles.sh").write_text(script)  # mounted 0644 by the chart: sourced, not executed
    port = free_port()
    env = {"PATH": f"{POSTGRES_BIN}:/usr/bin:/bin", "PGDATA": str(tmp_path / "data"), "PGPORT": str(port),
           "POSTGRES_USER": "elves", "POSTGRES_PASSWORD": "super", "POSTGRES_DB": "elves",
           "ELVES_MIGRATOR_PASSWORD": "m-pw", "ELVES_REGISTRY_PASSWORD": "r-pw", "ELVES_RESET_PASSWORD": "t-pw",
           "ELVES_INITDB_DIR": str(init)}
    log = (tmp_path / "entrypoint.log").open("w")
    server = subprocess.Popen([RUNUSER, "-u", "postgres", "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
                               "sh", str(ENTRYPOINT), "postgres", "-c", "listen_addresses=127.0.0.1"],
                              stdout=log, stderr=subprocess.STDOUT)

    def query(sql: str) -> str:
        answer = subprocess.run([RUNUSER, "-u", "postgres", "--", f"{POSTGRES_BIN}/psql", "-p", str(port),
                                 "-h", "127.0.0.1", "-U", "elves", "-d", "elves", "-At", "-c", sql],
                                env={"PGPASSWORD": "super", "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                                timeout=30)
        return answer.stdout.strip() if answer.returncode == 0 else ""

    try:
        wait_for(lambda: server.poll() is None and query("select 1") == "1",
                 f"PostgreSQL to answer after its first start ({tmp_path / 'entrypoint.log'})", START_SECONDS)
        roles = query("select string_agg(rolname, ',' order by rolname) from pg_roles where rolname like 'elves_%'")
        assert roles == "elves_migrator,elves_registry,elves_reset"
        assert query("select pg_get_userbyid(datdba) from pg_database where datname = 'elves'") == "elves_migrator"
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
