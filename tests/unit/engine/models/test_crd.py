"""The generated CRD: structural, with the models' rules, and the committed file is current."""

from __future__ import annotations

from typing import Any

import pytest

from elves.engine.models.crd import CRD_PATH, RESOURCES, crd_manifest, crd_yaml


def walk(schema: Any, path: str = ""):
    if isinstance(schema, dict):
        yield path, schema
        for key, value in schema.items():
            yield from walk(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from walk(value, f"{path}[{index}]")


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.kind)
def test_committed_crd_equals_the_generated_one(resource):
    command = f".venv/bin/elves crd --kind {resource.kind} --output {resource.path}"
    assert resource.path.exists(), f"{resource.path} is missing: run `{command}`"
    assert resource.path.read_text(encoding="utf-8") == crd_yaml(resource), \
        f"{resource.path} is stale: run `{command}` and commit it"


def test_the_chart_ships_exactly_the_generated_crds():
    assert sorted(p.name for p in CRD_PATH.parent.glob("*.yaml")) == sorted(r.path.name for r in RESOURCES)


def test_a_system_under_test_names_scope_and_no_status():
    crd = crd_manifest(RESOURCES[1])
    assert crd["metadata"]["name"] == "systemundertests.elves.dev"
    assert (crd["spec"]["names"]["kind"], crd["spec"]["names"]["shortNames"]) == ("SystemUnderTest", ["sut"])
    assert crd["spec"]["scope"] == "Namespaced"
    (version,) = crd["spec"]["versions"]
    assert "subresources" not in version and "status" not in version["schema"]["openAPIV3Schema"]["properties"]


def test_names_scope_and_subresources():
    crd = crd_manifest()
    assert crd["metadata"]["name"] == "loadtests.elves.dev"
    assert crd["spec"]["names"]["shortNames"] == ["lt"]
    assert crd["spec"]["scope"] == "Namespaced"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Phase", "Verdict", "Rate", "P99", "Deepest Queue", "Lost", "Restarts", "Age"]


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.kind)
def test_schema_is_structural(resource):
    schema = crd_manifest(resource)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path, node in walk(schema):
        assert not {"$ref", "anyOf", "patternProperties", "propertyNames"} & set(node), path
        assert node.get("additionalProperties") is not False, path
        assert "title" not in node and "default" not in node, path
        if "exclusiveMinimum" in node:
            assert node["exclusiveMinimum"] is True, path
        is_property_map = path.endswith(".properties")
        if not is_property_map and not path.endswith("x-kubernetes-validations") and node and "rule" not in node:
            assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields") \
                or node.get("x-kubernetes-int-or-string"), f"untyped schema at {path}"


def test_constraints_become_patterns_enums_minimums_and_cel():
    spec = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    load = spec["properties"]["load"]
    assert load["properties"]["rate"]["pattern"].startswith("^")
    assert load["properties"]["scenario"]["enum"] == ["system-mix", "registry-mix", "ingestor", "journeys"]
    assert load["properties"]["parallelism"]["minimum"] == 1
    rules = [r["rule"] for r in load["x-kubernetes-validations"]]
    assert "has(self.scenario) != has(self.script)" in rules
    fault = spec["properties"]["faults"]["items"]
    assert "exactly one action" in fault["x-kubernetes-validations"][0]["message"]
    # A number or a duration: left untyped (int-or-string would refuse 0.01), and CEL
    # cannot compile rules over untyped fields, so no rule may mention it.
    objective = spec["properties"]["slo"]["items"]
    assert objective["properties"]["value"]["x-kubernetes-preserve-unknown-fields"] is True
    assert not any("self.value" in r["rule"] for r in objective["x-kubernetes-validations"])
    sweep = spec["properties"]["sweep"]["additionalProperties"]["items"]
    assert sweep == {"x-kubernetes-int-or-string": True}


def test_a_baseline_file_is_refused_by_the_crd_alone_naming_the_field():
    """The local mode reads the same models and a file path (test_models); kube-apiserver
    refuses one, naming spec.baseline.report (tests/apiserver/test_loadtest_crd.py)."""
    spec = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    baseline = spec["properties"]["baseline"]
    refusals = [r for r in baseline["x-kubernetes-validations"] if r.get("fieldPath") == ".report"]
    assert [(r["rule"], r["reason"]) for r in refusals] == [("!has(self.report)", "FieldValueForbidden")]
    assert "loadTest" in refusals[0]["message"]
    assert baseline["properties"]["pick"]["enum"] == ["lastPassed"]


def not_in_schema(schema: dict[str, Any], value: Any, path: str = "status") -> list[str]:
    """Where `value` has a field the schema does not declare (the API server would drop it from
    the stored status) or a value outside its enum."""
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path} = {value!r} not in {schema['enum']}"]
    if isinstance(value, dict) and "properties" in schema:
        return [problem for key, item in value.items()
                for problem in (not_in_schema(schema["properties"][key], item, f"{path}.{key}")
                                if key in schema["properties"] else [f"{path}.{key} undeclared"])]
    if isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        return [p for key, item in value.items() for p in not_in_schema(schema["additionalProperties"], item, path)]
    if isinstance(value, list) and "items" in schema:
        return [p for index, item in enumerate(value) for p in not_in_schema(schema["items"], item, f"{path}[{index}]")]
    return []


def test_a_limited_tests_status_is_stored_whole_and_shown_by_kubectl_get():
    from datetime import datetime, timezone

    from elves.engine.models.status import GeneratorCpu, LoadTestStatus, RunResults, RunStatus, Summary, Verdict, Window

    now = datetime(2026, 11, 26, tzinfo=timezone.utc)
    results = RunResults(window=Window(start=now, end=now), load_seconds=60, dropped_iterations=4, vus_max=40,
                         vus_ceiling=40, generator_cpu=GeneratorCpu(cores_used=0.95, cores=1))
    verdict = Verdict(passed=False, limited_by=["k6 dropped 4 iterations"])
    status = LoadTestStatus(phase="Limited", runs=[RunStatus(index=0, test_id="t/x/0", phase="Limited", results=results,
                                                             verdict=verdict)],
                            results=results, verdict=verdict, summary=Summary(verdict="Limited 3/3"))
    written = status.model_dump(mode="json", by_alias=True, exclude_none=True)
    version = crd_manifest()["spec"]["versions"][0]
    assert not_in_schema(version["schema"]["openAPIV3Schema"]["properties"]["status"], written) == []
    assert written["verdict"]["limitedBy"] and written["results"]["generatorCpu"] and written["results"]["vusCeiling"]
    # `kubectl get lt` shows the phase and the verdict's words.
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert (columns["Phase"], columns["Verdict"]) == (".status.phase", ".status.summary.verdict")
