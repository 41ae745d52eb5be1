"""Tier 1: the cluster-mode scripts (tools/cluster/) and the image Dockerfiles.

What a user would notice if these broke: `./deployments.sh` with a syntax error, `--help`
not saying which settings exist, a deployment into an unreachable or missing kube context
that hangs or fails with a cryptic message, and images that cannot be built (a COPY of a
file the build context leaves out), run as root, float on `:latest`, or are not the names
and tags the chart deploys.

No Docker engine runs on the development machines, so the Dockerfiles are checked here by
reading them; tools/cluster/deploy.sh builds them where an engine runs. The scripts run
against a real API server in tests/apiserver/test_cluster_scripts.py.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from elves.constants import DEPLOYMENTS

REPO = Path(__file__).resolve().parents[3]
CLUSTER = REPO / "tools" / "cluster"
SCRIPTS = {"deploy": CLUSTER / "deploy.sh", "cleanup": CLUSTER / "cleanup.sh"}
COMMON = CLUSTER / "common.sh"
# The one helm lookup common.sh's find_helm asks (it reads ELVES_HELM and ELVES_CACHE).
WHICH_HELM = REPO / "tools" / "which-helm.sh"
BUILD_IMAGES = CLUSTER / "build-images.sh"
# Every shell script of the install, the local mode, the benches and the test cluster, for
# bash -n and shellcheck.
SHELL_SCRIPTS = sorted({REPO / "deployments.sh", REPO / "cleanup.sh", *(REPO / "tools").glob("*.sh"),
                        *CLUSTER.glob("*.sh"), *(REPO / "bench").glob("*.sh"), *(REPO / "tools" / "e2e").glob("*.sh")})
SERVICES = DEPLOYMENTS
# One Dockerfile builds every service (--build-arg SERVICE=<name>).
SERVICE_DOCKERFILE = REPO / "services" / "Dockerfile"
DOCKERFILES = {**{name: SERVICE_DOCKERFILE for name in SERVICES},
               "operator": REPO / "operator" / "Dockerfile"}
# The uid the chart runs every Elves pod as (values.yaml runAsUser).
POD_UID = "10001"
# Tags that name an exact release: a version with at least three numbers.
PINNED_TAG = re.compile(r"\d+\.\d+\.\d+")


def _missing(reason: str) -> None:
    """Skip for a missing prerequisite, or fail under CI=true (the tier rule)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: prerequisites must be present)")
    pytest.skip(reason)


def pinned_versions() -> dict[str, str]:
    pinned = {}
    for line in (REPO / "tools" / "versions.env").read_text().splitlines():
        if re.match(r"^[A-Z0-9_]+=", line):
            key, value = line.split("=", 1)
            pinned[key] = value.strip()
    return pinned


def run_script(name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # The timeout only keeps a hung script from hanging the suite; nothing here is timed.
    return subprocess.run([str(SCRIPTS[name]), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


# --------------------------------------------------------------------------- the scripts


@pytest.mark.parametrize("path", SHELL_SCRIPTS, ids=lambda p: str(p.relative_to(REPO)))
def test_scripts_parse(path: Path) -> None:
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_scripts_pass_shellcheck() -> None:
    # tools/install-local-deps.sh installs shellcheck (make test-unit runs it first).
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        _missing("shellcheck is not installed: run tools/install-local-deps.sh")
    result = subprocess.run([shellcheck, "--external-sources", "--source-path=SCRIPTDIR",
                             *map(str, SHELL_SCRIPTS)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


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
    if found is None:
        _missing("kubectl is not on PATH")
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


# --------------------------------------------------------------------------- the images


@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Dockerfile:
    path: Path
    first_line: str
    global_args: dict[str, str]
    stages: list[Stage]

    def instructions(self, keyword: str) -> list[str]:
        return [args for stage in self.stages for kw, args in stage.instructions if kw == keyword]

    @property
    def final(self) -> Stage:
        return self.stages[-1]


def parse_dockerfile(path: Path) -> Dockerfile:
    """Instructions with their continuation lines joined, comments dropped, grouped by stage."""
    text = path.read_text()
    logical, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    global_args, stages = {}, []
    for line in logical:
        keyword, _, args = line.strip().partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            words = args.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name))
        elif not stages and keyword == "ARG":
            key, _, default = args.partition("=")
            global_args[key] = default
        else:
            stages[-1].instructions.append((keyword, args))
    return Dockerfile(path, text.splitlines()[0], global_args, stages)


def copy_sources(args: str) -> tuple[dict[str, str], list[str], str]:
    """The flags, sources and destination of a COPY."""
    words = shlex.split(args)
    flags = dict(w[2:].split("=", 1) for w in words if w.startswith("--"))
    paths = [w for w in words if not w.startswith("--")]
    return flags, paths[:-1], paths[-1]


def dockerignore_rules() -> list[tuple[bool, re.Pattern]]:
    """.dockerignore as (is_exception, regex) in file order (Docker's syntax: `**` any
    number of directories, `*` within one, the last matching rule wins)."""
    rules = []
    for line in (REPO / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        regex = ""
        for part in re.split(r"(\*\*/?|\*|\?)", pattern):
            if part.startswith("**"):
                regex += "(.*/)?" if part.endswith("/") else ".*"
            elif part == "*":
                regex += "[^/]*"
            elif part == "?":
                regex += "[^/]"
            else:
                regex += re.escape(part)
        rules.append((exception, re.compile(regex + "$")))
    return rules


def in_build_context(relative: str) -> bool:
    """Whether the build context (the repository root) keeps this path: a rule that
    matches the path or one of its parent directories decides; the last one wins."""
    parts = relative.strip("/").split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    kept = True
    for exception, regex in dockerignore_rules():
        if any(regex.match(prefix) for prefix in prefixes):
            kept = exception
    return kept


@pytest.fixture(scope="module", params=sorted(DOCKERFILES))
def dockerfile(request) -> tuple[str, Dockerfile]:
    return request.param, parse_dockerfile(DOCKERFILES[request.param])


def test_dockerfile_enables_buildkit_syntax(dockerfile) -> None:
    # RUN --mount=type=cache and COPY --chmod need the Dockerfile 1.x frontend.
    _, parsed = dockerfile
    assert parsed.first_line == "# syntax=docker/dockerfile:1"


def test_base_images_are_pinned(dockerfile) -> None:
    _, parsed = dockerfile
    stage_names = {stage.name for stage in parsed.stages if stage.name}
    for stage in parsed.stages:
        if stage.image in stage_names:
            continue
        image, _, tag = stage.image.partition(":")
        assert tag and tag != "latest" and "$" not in stage.image, f"{parsed.path}: FROM {stage.image} is not pinned"
        assert PINNED_TAG.search(tag), f"{parsed.path}: FROM {stage.image} names no exact version"


def test_runs_as_the_charts_non_root_user(dockerfile) -> None:
    _, parsed = dockerfile
    users = [args for kw, args in parsed.final.instructions if kw == "USER"]
    assert users and users[-1] in (POD_UID, f"{POD_UID}:{POD_UID}"), f"{parsed.path}: last USER is {users}"


def test_entrypoint_is_exec_form(dockerfile) -> None:
    _, parsed = dockerfile
    entrypoints = [args for kw, args in parsed.final.instructions if kw == "ENTRYPOINT"]
    assert len(entrypoints) == 1
    command = json.loads(entrypoints[0])
    assert isinstance(command, list) and all(isinstance(word, str) for word in command)


def test_copy_sources_are_in_the_build_context(dockerfile) -> None:
    _, parsed = dockerfile
    stage_names = {stage.name for stage in parsed.stages if stage.name}
    assert not parsed.instructions("ADD"), "use COPY: ADD fetches URLs and unpacks archives"
    for args in parsed.instructions("COPY"):
        flags, sources, _ = copy_sources(args)
        if "from" in flags:
            assert flags["from"] in stage_names, f"COPY --from={flags['from']}: no such stage"
            continue
        for source in sources:
            matches = [p for p in REPO.glob(source.rstrip("/"))]
            assert matches, f"{parsed.path}: COPY {source}: not in the repository"
            assert in_build_context(source), f"{parsed.path}: COPY {source}: .dockerignore leaves it out"


def test_dockerignore_leaves_out_local_build_output() -> None:
    for path in (".venv/bin/python", ".elves/secrets/jwt-secret", ".git/HEAD",
                 "services/gateway/target/gateway.jar", "operator/elves/__pycache__/x.pyc",
                 "operator/build/lib/elves/cli.py", "charts/elves/values.yaml"):
        assert not in_build_context(path), f"{path} would be sent to the image build"
    for path in ("services/pom.xml", "services/gateway/src/main/resources/application.yml",
                 "operator/elves/cli.py", "loadtests/scenarios/system-mix.js"):
        assert in_build_context(path), f"{path} is left out of the image build"


def final_env(parsed: Dockerfile) -> dict[str, str]:
    env = {}
    for kw, args in parsed.final.instructions:
        if kw == "ENV":
            for word in shlex.split(args):
                key, _, value = word.partition("=")
                env[key] = value
    return env


def final_copies(parsed: Dockerfile) -> list[tuple[dict[str, str], list[str], str]]:
    return [copy_sources(args) for kw, args in parsed.final.instructions if kw == "COPY"]


@pytest.mark.parametrize("service", SERVICES)
def test_service_image_runs_its_jar_with_container_aware_memory(service: str) -> None:
    parsed = parse_dockerfile(DOCKERFILES[service])
    # The jar is copied from /src/<SERVICE>/target/<SERVICE>.jar: each module's jar has its name.
    final_name = re.search(r"<finalName>([^<]+)</finalName>",
                           (REPO / "services" / service / "pom.xml").read_text()).group(1)
    assert final_name == service
    jars = [(flags, sources, dest) for flags, sources, dest in final_copies(parsed)
            if flags.get("from") == "build"]
    assert [(sources, dest) for _, sources, dest in jars] == \
        [(["/src/${SERVICE}/target/${SERVICE}.jar"], "/app/service.jar")]
    # Owned by root, readable by everyone: uid 10001 reads it and cannot change it.
    assert jars[0][0].get("chmod") in ("0644", "0444", "644", "444")
    entrypoint = json.loads(next(a for kw, a in parsed.final.instructions if kw == "ENTRYPOINT"))
    assert entrypoint == ["java", "-jar", "/app/service.jar"]
    options = final_env(parsed)["JAVA_TOOL_OPTIONS"]
    assert "-XX:MaxRAMPercentage=" in options and "-XX:+ExitOnOutOfMemoryError" in options
    build = parsed.stages[0]
    assert build.image.startswith("maven:") and build.image.endswith("-eclipse-temurin-17")
    assert parsed.final.image.startswith("eclipse-temurin:17.") and "-jre" in parsed.final.image
    assert any('--projects "${SERVICE}" --also-make package' in args
               for kw, args in build.instructions if kw == "RUN")


def test_one_dockerfile_builds_exactly_the_services_build_images_builds() -> None:
    parsed = parse_dockerfile(SERVICE_DOCKERFILE)
    # Both stages read the build argument; a missing or unknown one fails the build, naming it.
    assert all(("ARG", "SERVICE") in stage.instructions for stage in parsed.stages)
    accepted = re.search(r'case "\$\{SERVICE\}" in ([a-z|]+)\)', "\n".join(parsed.instructions("RUN")))
    assert accepted and set(accepted.group(1).split("|")) == set(SERVICES)
    build = BUILD_IMAGES.read_text()
    assert 'echo "${REPO_DIR}/services/Dockerfile"' in build
    assert 'build_args=(--build-arg "SERVICE=${name}")' in build
    assert 'IMAGES=("${SYSTEM_DEPLOYMENTS[@]}" operator)' in build


def test_operator_image_has_k6_at_the_pinned_version_and_the_scenarios() -> None:
    parsed = parse_dockerfile(DOCKERFILES["operator"])
    assert parsed.global_args["K6_VERSION"] == pinned_versions()["K6_VERSION"]
    k6_stage = next(stage for stage in parsed.stages if stage.name == "k6")
    assert k6_stage.image.startswith("golang:")
    assert any('go install -trimpath "go.k6.io/k6@${K6_VERSION}"' in args
               for kw, args in k6_stage.instructions if kw == "RUN")
    assert parsed.final.image.startswith("python:3.11.") and "slim" in parsed.final.image
    copies = {sources[0]: (flags, dest) for flags, sources, dest in final_copies(parsed)}
    env = final_env(parsed)
    assert copies["/out/k6"] == ({"from": "k6"}, env["ELVES_K6"])
    assert copies["loadtests/scenarios"][1] == env["ELVES_SCENARIOS_DIR"]
    # The scenarios import from ../lib/, which must sit beside them.
    assert copies["loadtests/lib"][1] == str(Path(env["ELVES_SCENARIOS_DIR"]).parent / "lib")
    assert {"operator/pyproject.toml", "operator/elves"} <= set(copies)
    # The chart gives the command (`kopf run ...`, `python3 -c ...`): both on PATH.
    assert json.loads(next(a for kw, a in parsed.final.instructions if kw == "ENTRYPOINT")) == ["kopf"]


def test_images_are_the_ones_the_chart_deploys() -> None:
    values = yaml.safe_load((REPO / "charts" / "elves" / "values.yaml").read_text())
    repositories = {name: values["services"][name]["image"]["repository"] for name in SERVICES}
    repositories["operator"] = values["operator"]["image"]["repository"]
    # build-images.sh builds one image per deployment (from elves.constants) and the operator's.
    assert sorted((*SERVICES, "operator")) == sorted(DOCKERFILES)
    # It tags elves-<name>:<the chart's appVersion>, what the chart pulls by default.
    assert 'echo "${IMAGE_REGISTRY:+${IMAGE_REGISTRY%/}/}elves-$1:${IMAGE_TAG}"' in BUILD_IMAGES.read_text()
    assert repositories == {name: f"elves-{name}" for name in DOCKERFILES}
    assert all(values["services"][name]["image"]["tag"] == "" for name in SERVICES)
    assert all(values["services"][name]["runAsUser"] == int(POD_UID) for name in SERVICES)
    assert values["operator"]["runAsUser"] == int(POD_UID)
