"""Tier 1: the chart's values: a strict schema that names the wrong field, and every value
documented (## @param), typed and listed in the chart's README.

What a user would notice if these broke: a typo in values silently ignored, an error that
does not say which field is wrong, several mistakes reported one `helm install` at a time,
or a value nobody can find in the documentation.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from chart_testkit import CHART, template_error


@pytest.mark.parametrize("setting, named_path", [
    ("services.gateway.replicas=three", "/services/gateway/replicas"),
    ("services.registry.resources.limits.memory=lots", "/services/registry/resources/limits/memory"),
    ("rabbitmq.persistence.enabled=maybe", "/rabbitmq/persistence/enabled"),
    ("monitoring.serviceMonitors.interval=often", "/monitoring/serviceMonitors/interval"),
    ("services.ingestor.image.pullPolicy=Sometimes", "/services/ingestor/image/pullPolicy"),
])
def test_schema_rejects_a_wrong_type_naming_the_field(helm, setting, named_path):
    assert named_path in template_error(helm, setting)


@pytest.mark.parametrize("setting, named_path, key", [
    ("services.gateway.replicaz=3", "/services/gateway", "replicaz"),
    ("services.frontend.replicas=1", "/services", "frontend"),
    ("postgresql.auth.pasword=x", "/postgresql/auth", "pasword"),
    ("unknownTopLevel=1", "", "unknownTopLevel"),
])
def test_schema_rejects_an_unknown_key(helm, setting, named_path, key):
    error = template_error(helm, setting)
    assert f"at '{named_path}'" in error and key in error, error


def test_schema_requires_limits(helm):
    error = template_error(helm, "services.gateway.resources.limits=null")
    assert "/services/gateway/resources" in error and "limits" in error, error


def test_validation_collects_every_mistake_in_one_message(helm):
    error = template_error(helm, "services.gateway.image.tag=latest", "rabbitmq.enabled=false",
                           "postgresql.enabled=false", "secrets.jwtSecret=short",
                           "services.ingestor.env.SPRING_RABBITMQ_HOST=elsewhere")
    for expected in ("services.gateway.image.tag: `latest`", "externalRabbitmq.host", "externalRabbitmq.password",
                     "externalPostgresql.host", "secrets.jwtSecret: 5 characters",
                     "services.ingestor.env.SPRING_RABBITMQ_HOST is set by the chart"):
        assert expected in error, f"{expected!r} missing from:\n{error}"


def _documented_params() -> list[str]:
    text = (CHART / "values.yaml").read_text()
    return re.findall(r"^\s*## @param (\S+) ", text, re.MULTILINE)


def _leaf_paths(tree: dict, documented: set[str], prefix: str = "") -> set[str]:
    """Paths of values: a documented path stops the descent (maps like `resources` are documented whole)."""
    paths = set()
    for key, value in tree.items():
        path = prefix + key
        if path in documented or not isinstance(value, dict) or not value:
            paths.add(path)
        else:
            paths |= _leaf_paths(value, documented, path + ".")
    return paths


def _schema_paths(node: dict, definitions: dict, documented: set[str], prefix: str = "") -> set[str]:
    paths = set()
    for key, sub in node.get("properties", {}).items():
        while "$ref" in sub:
            sub = definitions[sub["$ref"].rsplit("/", 1)[1]]
        path = prefix + key
        if path in documented or "properties" not in sub:
            paths.add(path)
        else:
            paths |= _schema_paths(sub, definitions, documented, path + ".")
    return paths


def test_every_value_is_documented_and_typed_and_nothing_else():
    params = _documented_params()
    assert len(params) == len(set(params)), "a value is documented twice"
    documented = set(params)
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    in_values = _leaf_paths(values, documented)
    in_schema = _schema_paths(schema, schema.get("definitions", {}), documented)
    assert sorted(in_values - documented) == [], "values without an ## @param line"
    assert sorted(documented - in_values) == [], "## @param lines for values that do not exist"
    assert sorted(in_schema - documented) == [], "schema properties that values.yaml does not have"
    assert sorted(documented - in_schema) == [], "values the schema does not type"


def test_schema_is_strict_everywhere():
    schema = json.loads((CHART / "values.schema.json").read_text())
    loose = []

    def walk(node, where):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node and node.get("additionalProperties") is not False:
                loose.append(where)
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}/{index}")

    walk(schema, "")
    assert loose == [], "objects that accept unknown keys"


def test_readme_lists_every_value():
    readme = (CHART / "README.md").read_text()
    missing = [p for p in _documented_params() if f"`{p}`" not in readme]
    assert missing == [], "values missing from charts/elves/README.md"
