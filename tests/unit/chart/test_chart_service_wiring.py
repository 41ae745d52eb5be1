"""Tier 1: how the chart wires the three services: their ports, their environment (broker,
database, registry, secrets), external RabbitMQ and PostgreSQL, the generated or an existing
Secret, and the images they run.

What a user would notice if these broke: a service that cannot reach its broker or
database, a secret regenerated on upgrade, or an image pulled from the wrong registry.
"""

from __future__ import annotations

import base64

from chart_testkit import (CHART, NAMESPACE, SERVICES, env_of, named, of_kind, pod_specs, render, rules_of,
                           template_error)


def test_services_expose_the_documented_ports(helm):
    objects = render(helm)
    ports = {name: {p["name"]: p["port"] for p in named(objects, "Service", name)["spec"]["ports"]}
             for name in SERVICES}
    assert ports == {"gateway": {"http": 8080, "management": 9090},
                     "registry": {"http": 8081, "management": 9090},
                     "ingestor": {"management": 9090}}
    assert all(named(objects, "Service", n)["spec"]["type"] == "ClusterIP" for n in SERVICES)


def test_services_get_the_environment_of_the_architecture(helm):
    objects = render(helm)
    env = {name: env_of(named(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0])
           for name in SERVICES}
    for name in SERVICES:
        assert env[name]["SPRING_RABBITMQ_HOST"]["value"] == f"rabbitmq.{NAMESPACE}.svc"
        assert env[name]["SPRING_RABBITMQ_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
            "name": f"elves-{name}", "key": "rabbitmq-password"}
        assert "-XX:+ExitOnOutOfMemoryError" in env[name]["JAVA_TOOL_OPTIONS"]["value"]
    assert env["gateway"]["ELVES_JWT_SECRET"]["valueFrom"]["secretKeyRef"] == {"name": "elves", "key": "jwt-secret"}
    assert env["gateway"]["ELVES_REGISTRY_URL"]["value"] == f"http://registry.{NAMESPACE}.svc:8081"
    assert env["registry"]["SPRING_DATASOURCE_URL"]["value"] == f"jdbc:postgresql://postgres.{NAMESPACE}.svc:5432/elves"
    assert env["registry"]["SPRING_DATASOURCE_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "postgres-password"
    assert "SPRING_DATASOURCE_URL" not in env["gateway"] and "ELVES_JWT_SECRET" not in env["registry"]
    ingestor = named(objects, "Deployment", "ingestor")["spec"]["template"]["spec"]
    assert env["ingestor"]["ELVES_INGESTOR_SCRATCH_DIR"]["value"] == "/scratch"
    assert {"name": "scratch", "mountPath": "/scratch"} in ingestor["containers"][0]["volumeMounts"]
    assert "emptyDir" in next(v for v in ingestor["volumes"] if v["name"] == "scratch")


def test_service_settings_from_values_reach_the_container(helm):
    objects = render(helm, CHART / "ci" / "all-features-values.yaml")
    env = env_of(named(objects, "Deployment", "ingestor")["spec"]["template"]["spec"]["containers"][0])
    assert env["ELVES_INGESTOR_CONCURRENCY"]["value"] == "4"
    assert named(objects, "Deployment", "ingestor")["spec"]["replicas"] == 3


def test_external_rabbitmq_and_postgresql_replace_the_statefulsets(helm):
    objects = render(helm, CHART / "ci" / "external-rabbitmq-postgres-values.yaml")
    assert of_kind(objects, "StatefulSet") == []
    registry = env_of(named(objects, "Deployment", "registry")["spec"]["template"]["spec"]["containers"][0])
    assert registry["SPRING_RABBITMQ_HOST"]["value"] == "rabbitmq.shared-infra.svc"
    assert registry["SPRING_RABBITMQ_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "shared-rabbitmq",
                                                                                   "key": "password"}
    assert registry["SPRING_DATASOURCE_URL"]["value"] == "jdbc:postgresql://postgres.shared-infra.svc:5432/elves_bench"
    assert registry["SPRING_DATASOURCE_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "elves-registry",
                                                                                     "key": "postgres-password"}
    assert set(named(objects, "Secret", "elves")["data"]) == {"jwt-secret", "service-key"}
    assert set(named(objects, "Secret", "elves-registry")["data"]) == {"postgres-password"}


def test_generated_secret_is_kept_and_explicit_values_win(helm):
    objects = render(helm)
    secret = named(objects, "Secret", "elves")
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert set(secret["data"]) == {"jwt-secret", "service-key"}
    assert all(len(base64.b64decode(v)) >= 32 for v in secret["data"].values())
    given = render(helm, None, "postgresql.auth.password=a-fixed-postgres-password")
    superuser = named(given, "Secret", "elves-postgres")
    assert base64.b64decode(superuser["data"]["postgres-password"]).decode() == "a-fixed-postgres-password"
    # The superuser's password given is the superuser's only, not the registry role's.
    registry = named(given, "Secret", "elves-registry")
    assert base64.b64decode(registry["data"]["postgres-password"]).decode() != "a-fixed-postgres-password"
    for name in ("gateway", "registry"):
        env = env_of(named(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0])
        assert env["ELVES_SERVICE_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "elves", "key": "service-key"}


def test_an_existing_secret_replaces_the_generated_one_everywhere(helm):
    objects = render(helm, None, "secrets.existingSecret=gitops-secrets")
    assert not of_kind(objects, "Secret"), "no Secret is rendered: nothing new on a render"
    refs = [e["valueFrom"]["secretKeyRef"] for _, spec in pod_specs(objects) for c in spec["containers"]
            for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})]
    assert refs and {r["name"] for r in refs} == {"gitops-secrets"}
    assert {r["key"] for r in refs} >= {"jwt-secret", "service-key", "rabbitmq-gateway-password",
                                        "postgres-registry-password", "postgres-migrator-password"}
    secret_rules = [rule for _, rule in rules_of(objects, "Role") if "secrets" in rule["resources"]]
    assert [rule["resourceNames"] for rule in secret_rules] == [["gitops-secrets"]]
    error = template_error(helm, "secrets.existingSecret=gitops-secrets", "secrets.jwtSecret=" + "x" * 40)
    assert "secrets.jwtSecret is set, but secrets.existingSecret is used instead" in error


def test_images_follow_app_version_and_registry(helm):
    objects = render(helm, CHART / "ci" / "all-features-values.yaml")
    images = {c["image"] for _, spec in pod_specs(objects) for c in spec["containers"]}
    assert "registry.example.internal:5000/elves-gateway:0.1.0" in images
    assert "registry.example.internal:5000/elves-ingestor:0.1.0-rc1" in images
    assert all(i.startswith("registry.example.internal:5000/") for i in images)
