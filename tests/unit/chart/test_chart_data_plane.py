"""Tier 1: the chart's least-privileged data plane (elves.data_plane on a cluster): a RabbitMQ
user per service limited to its queues, loaded as definitions, no management plugin; the
registry's PostgreSQL roles created at first start; a Secret per service with its own
credentials only, which its Deployment alone reads; the reset runs as the reset role."""

from __future__ import annotations

import base64
import json
import os
import subprocess

from chart_testkit import CHART, env_of, named, render

from elves.constants import DEPLOYMENTS
from elves.data_plane import (BROKER_USERS, KEDA, KEDA_USER, MIGRATOR, REGISTRY_ROLE, RESET, chart_facts,
                              declare_setting)

RELEASE = "elves"
# The keys each per-service Secret holds, and nothing else.
OWN_KEYS = {"gateway": {"rabbitmq-password"}, "ingestor": {"rabbitmq-password"},
            "registry": {"rabbitmq-password", "postgres-password", "postgres-migrator-password"},
            "reset": {"postgres-reset-password"}, "keda": {"rabbitmq-username", "rabbitmq-password"}}


def pod(helm: str, kind: str, name: str) -> dict:
    return named(render(helm), kind, name)["spec"]["template"]["spec"]


def secret_refs(container: dict) -> dict[str, dict]:
    return {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container.get("env", [])
            if "secretKeyRef" in e.get("valueFrom", {})}


def test_the_charts_data_plane_file_is_the_pythons():
    written = json.loads((CHART / "files" / "data-plane.json").read_text())
    assert written == chart_facts(), "run: python -m elves.data_plane > charts/elves/files/data-plane.json"


def test_each_service_has_a_secret_of_its_own_credentials_and_reads_no_other_services(helm):
    for name, keys in OWN_KEYS.items():
        secret = named(render(helm), "Secret", f"{RELEASE}-{name}")
        assert set(secret["data"]) == keys, name
        assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        assert all(len(base64.b64decode(value)) >= 32 for key, value in secret["data"].items()
                   if key.endswith("-password"))
    shared = named(render(helm), "Secret", RELEASE)
    assert not {key for key in shared["data"] if "rabbitmq" in key}, "no broker password in the shared Secret"
    for name in DEPLOYMENTS:
        refs = secret_refs(pod(helm, "Deployment", name)["containers"][0])
        others = {(r["name"], r["key"]) for r in refs.values() if r["name"] != f"{RELEASE}-{name}"}
        # Besides its own Secret, only the JWT secret and the service key, which are the gateway's and registry's.
        assert {key for _, key in others} <= {"jwt-secret", "service-key"} and {n for n, _ in others} <= {RELEASE}, \
            (name, others)


def test_each_service_connects_as_its_own_broker_user_declaring_only_its_queues(helm):
    for name in DEPLOYMENTS:
        env = env_of(pod(helm, "Deployment", name)["containers"][0])
        assert env["SPRING_RABBITMQ_USERNAME"]["value"] == BROKER_USERS[name].name
        assert env["ELVES_RABBITMQ_DECLARE"]["value"] == declare_setting(name)


def test_the_registry_runs_as_a_role_that_owns_nothing_and_migrates_as_the_owner(helm):
    env = env_of(pod(helm, "Deployment", "registry")["containers"][0])
    assert env["SPRING_DATASOURCE_USERNAME"]["value"] == REGISTRY_ROLE.name
    assert env["ELVES_REGISTRY_MIGRATION_USERNAME"]["value"] == MIGRATOR.name
    assert env["ELVES_REGISTRY_MIGRATION_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": f"{RELEASE}-registry", "key": "postgres-migrator-password"}
    assert env["ELVES_REGISTRY_RESET_ROLE"]["value"] == RESET.name


def test_rabbitmq_loads_a_user_per_service_with_its_permissions_and_no_management(helm, tmp_path):
    config = named(render(helm), "ConfigMap", "rabbitmq-config")["data"]
    assert "rabbitmq_management" not in config["enabled_plugins"]
    assert "load_definitions = /var/lib/rabbitmq-definitions/definitions.json" in config["rabbitmq.conf"]
    assert "management" not in {p["name"] for p in named(render(helm), "Service", "rabbitmq")["spec"]["ports"]}
    spec = pod(helm, "StatefulSet", "rabbitmq")
    assert "RABBITMQ_DEFAULT_USER" not in {e["name"] for e in spec["containers"][0].get("env", [])}
    # The init container's own command, run here on the rendered template with stand-in passwords.
    [init] = spec["initContainers"]
    refs = secret_refs(init)
    broker_users = {name: BROKER_USERS[name] for name in DEPLOYMENTS} | {KEDA: KEDA_USER}
    assert {name: (r["name"], r["key"]) for name, r in refs.items()} == {
        f"PASSWORD_{name.upper()}": (f"{RELEASE}-{name}", "rabbitmq-password") for name in broker_users}
    (tmp_path / "definitions.json.in").write_text(config["definitions.json.in"])
    script = init["command"][-1].replace("/etc/rabbitmq/", f"{tmp_path}/").replace(
        "/var/lib/rabbitmq-definitions/", f"{tmp_path}/")
    passwords = {f"PASSWORD_{name.upper()}": f"pw{name}123" for name in broker_users}
    assert subprocess.run(["sh", "-ec", script], env={**os.environ, **passwords}, timeout=30).returncode == 0
    definitions = json.loads((tmp_path / "definitions.json").read_text())
    users = {user["name"]: user for user in definitions["users"]}
    assert set(users) == {user.name for user in broker_users.values()}
    for name, user in broker_users.items():
        assert users[user.name]["password"] == f"pw{name}123" and users[user.name]["tags"] == ""
        [permission] = [p for p in definitions["permissions"] if p["user"] == user.name]
        assert (permission["configure"], permission["write"], permission["read"]) == (
            user.configure, user.write, user.read)


def test_postgresql_creates_the_registrys_roles_at_first_start_with_passwords_from_their_secrets(helm, tmp_path):
    script = named(render(helm), "ConfigMap", "postgres-init")["data"]["10-elves-roles.sh"]
    spec = pod(helm, "StatefulSet", "postgres")
    refs = secret_refs(spec["containers"][0])
    assert (refs["ELVES_MIGRATOR_PASSWORD"]["name"], refs["ELVES_REGISTRY_PASSWORD"]["name"],
            refs["ELVES_RESET_PASSWORD"]["name"]) == (f"{RELEASE}-registry", f"{RELEASE}-registry", f"{RELEASE}-reset")
    assert {"name": "init", "mountPath": "/docker-entrypoint-initdb.d", "readOnly": True} in \
        spec["containers"][0]["volumeMounts"]
    # The script against a psql that records what it is given: passwords as psql variables,
    # never in the SQL text (or a log line).
    (tmp_path / "psql").write_text(f'#!/bin/sh\necho "$*" >{tmp_path}/args\ncat >{tmp_path}/sql\n')
    (tmp_path / "psql").chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "POSTGRES_USER": "elves",
           "ELVES_MIGRATOR_PASSWORD": "m-pw", "ELVES_REGISTRY_PASSWORD": "r-pw", "ELVES_RESET_PASSWORD": "t-pw"}
    assert subprocess.run(["sh", "-c", script], env=env, timeout=30).returncode == 0
    args, sql = (tmp_path / "args").read_text(), (tmp_path / "sql").read_text()
    assert "migrator_password=m-pw" in args and "registry_password=r-pw" in args and "reset_password=t-pw" in args
    for role in (MIGRATOR, REGISTRY_ROLE, RESET):
        assert f"CREATE ROLE {role.name} LOGIN PASSWORD :'" in sql
    assert f"ALTER DATABASE elves OWNER TO {MIGRATOR.name};" in sql and "-pw" not in sql


def test_the_reset_runs_as_the_reset_role_in_the_postgres_container(helm):
    from elves.k8s.platform import EMPTY_DATABASE_COMMAND

    env = env_of(pod(helm, "StatefulSet", "postgres")["containers"][0])
    assert env["ELVES_RESET_ROLE"]["value"] == RESET.name
    assert env["ELVES_RESET_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": f"{RELEASE}-reset",
                                                                        "key": "postgres-reset-password"}
    assert '-U "$ELVES_RESET_ROLE"' in EMPTY_DATABASE_COMMAND[2]
