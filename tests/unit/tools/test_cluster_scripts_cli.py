"""Tier 1: the cluster-mode scripts' command lines (tools/cluster/deploy.sh, cleanup.sh and
build-images.sh: what `./deployments.sh` and `./cleanup.sh` run in cluster mode).

What a user would notice if these broke: `--help` not saying which settings exist, a bad
argument or timeout not named, or a deployment into an unreachable or missing kube context
that hangs or fails with a cryptic message. The scripts install and clean up against a real
API server in tests/apiserver/test_cluster_deploy_and_cleanup.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prerequisites import require

REPO = Path(__file__).resolve().parents[3]
CLUSTER = REPO / "tools" / "cluster"
SCRIPTS = {"deploy": CLUSTER / "deploy.sh", "cleanup": CLUSTER / "cleanup.sh"}
COMMON = CLUSTER / "common.sh"
# The one helm lookup common.sh's find_helm asks (it reads ELVES_HELM and ELVES_CACHE).
WHICH_HELM = REPO / "tools" / "which-helm.sh"
BUILD_IMAGES = CLUSTER / "build-images.sh"


def run_script(name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # The timeout only keeps a hung script from hanging the suite; nothing here is timed.
    return subprocess.run([str(SCRIPTS[name]), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def settings_read(*paths: Path) -> set[str]:
    return {name for path in paths for name in re.findall(r"\$\{(ELVES_[A-Z0-9_]+)", path.read_text())}


def options_parsed(path: Path) -> set[str]:
    text = path.read_text()
    body = text[text.index("parse_args() {"):text.index("\n}\n", text.index("parse_args() {"))]
    return {option for case in re.findall(r"^\s*([-a-z|]+)\)", body, re.M) for option in case.split("|")}


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_lists_every_setting_and_option(name: str) -> None:
    result = run_script(name, "--help")
    assert result.returncode == 0, result.stderr
    help_text = result.stdout
    settings = settings_read(SCRIPTS[name], COMMON, WHICH_HELM)
    assert {"ELVES_NAMESPACE", "ELVES_TIMEOUT", "ELVES_HELM", "ELVES_KUBECTL"} <= settings
    undocumented = sorted(s for s in settings if not re.search(rf"^\s+{s}\b", help_text, re.M))
    assert not undocumented, f"{name}.sh --help does not document {undocumented}"
    options = options_parsed(SCRIPTS[name])
    assert "--skip-monitoring" in options
    missing = sorted(o for o in options if o not in help_text)
    assert not missing, f"{name}.sh --help does not mention {missing}"


def test_build_images_help_lists_its_settings_and_options() -> None:
    result = subprocess.run([str(BUILD_IMAGES), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    settings = settings_read(BUILD_IMAGES)
    assert {"ELVES_IMAGE_BUILDER", "ELVES_IMAGE_REGISTRY", "ELVES_IMAGE_TAG"} <= settings
    assert not [s for s in settings if not re.search(rf"^\s+{s}\b", result.stdout, re.M)]
    assert not [o for o in options_parsed(BUILD_IMAGES) if o not in result.stdout]
    # deploy.sh passes the image settings on: its --help names them too.
    assert not [s for s in settings if s not in run_script("deploy", "--help").stdout]


def test_build_images_names_a_missing_builder() -> None:
    result = subprocess.run([str(BUILD_IMAGES), "--build-only"], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "ELVES_IMAGE_BUILDER": "no-such-engine"})
    assert result.returncode == 1
    assert "no container engine answers (tried: no-such-engine)" in result.stderr


@pytest.mark.parametrize("name", SCRIPTS)
def test_unknown_argument_is_named(name: str) -> None:
    result = run_script(name, "--bogus")
    assert result.returncode == 1
    assert "unknown argument: --bogus" in result.stderr


@pytest.mark.parametrize("name", SCRIPTS)
def test_bad_timeout_is_named(name: str) -> None:
    result = run_script(name, env={"ELVES_TIMEOUT": "ten minutes"})
    assert result.returncode == 1
    assert "ELVES_TIMEOUT=ten minutes is not a duration" in result.stderr


@pytest.mark.parametrize("duration, seconds", [("10m", 600), ("1h30m", 5400), ("2m5s", 125), ("1500ms", 2)])
def test_deadlines_follow_the_timeout(duration: str, seconds: int) -> None:
    # ELVES_TIMEOUT is a Go duration (helm, kubectl); the scripts' own polls count seconds.
    result = subprocess.run(["bash", "-c", f'source "{COMMON}"; seconds_of {duration}'],
                            capture_output=True, text=True)
    assert result.stdout.strip() == str(seconds), result.stderr


def test_deploy_names_a_missing_values_file(tmp_path: Path) -> None:
    result = run_script("deploy", "--values", str(tmp_path / "nope.yaml"))
    assert result.returncode == 1
    assert f"--values {tmp_path / 'nope.yaml'}: no such file" in result.stderr


@pytest.fixture
def kubectl() -> str:
    found = shutil.which("kubectl")
    require(found, "kubectl is missing from PATH (tools/build-kubernetes.sh builds the pinned one)")
    return found


def write_kubeconfig(path: Path, server: str | None) -> Path:
    config = {"apiVersion": "v1", "kind": "Config", "clusters": [], "contexts": [], "users": []}
    if server:
        config.update({
            "current-context": "nowhere",
            "clusters": [{"name": "nowhere", "cluster": {"server": server}}],
            "users": [{"name": "nobody", "user": {"token": "not-a-token"}}],
            "contexts": [{"name": "nowhere", "context": {"cluster": "nowhere", "user": "nobody"}}],
        })
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("name", SCRIPTS)
def test_unreachable_context_fails_fast_naming_it(name: str, kubectl: str, tmp_path: Path) -> None:
    # Port 1 on loopback: nothing listens, so the connection is refused at once.
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    result = run_script(name, "--skip-images" if name == "deploy" else "--skip-monitoring",
                        env={"KUBECONFIG": str(kubeconfig), "ELVES_KUBECTL": kubectl})
    assert result.returncode == 1
    assert "cannot reach the Kubernetes API of context 'nowhere' at https://127.0.0.1:1" in result.stderr
    # Nothing past the check ran: no helm build, no install.
    assert "helm" not in result.stderr and "installing" not in result.stderr


@pytest.mark.parametrize("name", SCRIPTS)
def test_missing_context_is_named(name: str, kubectl: str, tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", None)
    result = run_script(name, env={"KUBECONFIG": str(kubeconfig), "ELVES_KUBECTL": kubectl})
    assert result.returncode == 1
    assert "no current kube context" in result.stderr
