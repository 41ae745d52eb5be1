"""The operator image has one recipe, operator/Dockerfile: the build without Docker (tier 4,
images/operator/image.conf) reads its final stage instead of restating it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RECIPE = REPO / "images" / "operator"


def sourced(tmp_path: Path) -> dict[str, str]:
    """What image.conf sets, as tools/e2e/build-images.sh's load_recipe sources it."""
    script = (f'set -Eeuo pipefail; die() {{ echo "$*" >&2; exit 1; }}; REPO={REPO} RECIPE_DIR={RECIPE}'
              f' ELVES_VERSION=0.0.0 ELVES_CACHE={tmp_path}; source {RECIPE}/image.conf;'
              ' printf "%s\\n" "USER=$IMAGE_USER" "WORKDIR=$WORKDIR" "ENTRYPOINT=${ENTRYPOINT[*]}" "CMD=${CMD[*]}"'
              ' "ENV=${ENV[*]}"; kept_copies | sed "s/^/COPY=/"')
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    facts: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition("=")
        facts[key] = f"{facts[key]} {value}" if key in facts else value
    return facts


def test_the_recipe_without_docker_takes_the_dockerfiles_settings(tmp_path):
    dockerfile = (REPO / "operator" / "Dockerfile").read_text()
    facts = sourced(tmp_path)
    assert facts["USER"] == "10001:10001" and "USER 10001:10001" in dockerfile
    assert facts["WORKDIR"] == "/opt/elves" and "WORKDIR /opt/elves" in dockerfile
    assert facts["ENTRYPOINT"] == "kopf" and facts["CMD"].startswith("run --module=elves.k8s.handlers")
    env = dict(item.split("=", 1) for item in facts["ENV"].split())
    assert env["ELVES_K6"] == "/usr/local/bin/k6" and env["HOME"] == "/tmp"
    # The scenarios the operator packs, where ELVES_SCENARIOS_DIR says, their lib/ beside them.
    copies = dict(copy.split(":", 1) for copy in facts["COPY"].split())
    assert copies["loadtests/scenarios"] == env["ELVES_SCENARIOS_DIR"]
    assert copies["loadtests/lib"] == str(Path(env["ELVES_SCENARIOS_DIR"]).parent / "lib")
    assert not any(dest.startswith("/tmp/") for dest in copies.values())


def test_image_conf_restates_nothing_the_dockerfile_says():
    conf = (RECIPE / "image.conf").read_text()
    assert not re.search(r"^\s*(ENV|IMAGE_USER|WORKDIR|CMD|ENTRYPOINT)=", conf, re.M)
    assert "loadtests/" not in conf.split("add_files()")[1]
    # Both builds take the pinned dependencies from pyproject.toml the same way.
    assert "dependencies.py" in (REPO / "operator" / "Dockerfile").read_text()
    assert "!images/operator/dependencies.py" in (REPO / ".dockerignore").read_text().splitlines()
