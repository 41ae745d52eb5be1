"""Tier 1: the image Dockerfiles (services/Dockerfile, operator/Dockerfile), checked by reading
them: no Docker engine runs on the development machines; tools/cluster/deploy.sh builds them
where an engine runs.

What a user would notice if these broke: images that cannot be built (a COPY of a file the
build context leaves out), run as root, float on `:latest`, or are not the names and tags the
chart deploys.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

# The reader the Docker-less operator build uses: one parser of Dockerfile instructions.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "images" / "operator"))
import dockerfile as dockerfile_recipe  # noqa: E402

from elves.constants import DEPLOYMENTS

REPO = Path(__file__).resolve().parents[3]
CLUSTER = REPO / "tools" / "cluster"
BUILD_IMAGES = CLUSTER / "build-images.sh"
SERVICES = DEPLOYMENTS
# One Dockerfile builds every service (--build-arg SERVICE=<name>).
SERVICE_DOCKERFILE = REPO / "services" / "Dockerfile"
DOCKERFILES = {**{name: SERVICE_DOCKERFILE for name in SERVICES},
               "operator": REPO / "operator" / "Dockerfile"}
# The uid the chart runs every Elves pod as (values.yaml runAsUser).
POD_UID = "10001"
# Tags that name an exact release: a version with at least three numbers.
PINNED_TAG = re.compile(r"\d+\.\d+\.\d+")


def pinned_versions() -> dict[str, str]:
    pinned = {}
    for line in (REPO / "tools" / "versions.env").read_text().splitlines():
        if re.match(r"^[A-Z0-9_]+=", line):
            key, value = line.split("=", 1)
            pinned[key] = value.strip()
    return pinned


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
    global_args, stages = {}, []
    for keyword, args in dockerfile_recipe.instructions(text):
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
    # RUN --mount=type=cache and COPY --chmod need the Dockerfile 1.x frontend, an image
    # BuildKit pulls: pinned to a release like every base image.
    _, parsed = dockerfile
    assert re.fullmatch(r"# syntax=docker/dockerfile:1\.\d+\.\d+", parsed.first_line)


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
