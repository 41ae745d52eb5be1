"""Elves' CustomResourceDefinitions (LoadTest, SystemUnderTest), generated from the models
(never written by hand).

Pydantic gives JSON Schema; kube-apiserver wants a *structural* OpenAPI v3 schema: no
$ref, no anyOf carrying types, `nullable` instead of a null type, boolean
`exclusiveMinimum`, no `patternProperties`, no `additionalProperties: false` (unknown
fields are caught by kubectl's strict field validation instead). This module does that
translation and turns every cross-field rule of the models into x-kubernetes-validations,
so `kubectl apply` rejects what `elves validate` rejects, naming the field.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from elves.constants import API_GROUP, API_VERSION, KIND, PLURAL, SHORT_NAME, SUT_KIND, SUT_PLURAL, SUT_SHORT_NAME
from elves.engine.models.modelbase import SpecModel, StatusModel
from elves.engine.models.spec import LoadTestSpec
from elves.engine.models.status import LoadTestStatus
from elves.engine.models.target import SystemUnderTestSpec

# Where the chart ships the CRDs; a unit test keeps each file equal to crd_yaml() of its resource.
CRDS_DIR = Path(__file__).resolve().parents[4] / "charts" / "elves" / "crds"

LOADTEST_COLUMNS = [
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Verdict", "type": "string", "jsonPath": ".status.summary.verdict"},
    {"name": "Rate", "type": "string", "jsonPath": ".status.summary.rate"},
    {"name": "P99", "type": "string", "jsonPath": ".status.summary.p99"},
    {"name": "Deepest Queue", "type": "string", "jsonPath": ".status.summary.deepestQueue"},
    {"name": "Lost", "type": "string", "jsonPath": ".status.summary.lost"},
    {"name": "Restarts", "type": "integer", "jsonPath": ".status.summary.restarts"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]

_DROPPED_KEYS = {"title", "default", "examples"}


def _model_classes() -> dict[str, type]:
    """Every model by class name, as pydantic names its $defs."""
    found: dict[str, type] = {}
    pending: list[type] = [SpecModel, StatusModel]
    while pending:
        for sub in pending.pop().__subclasses__():
            found[sub.__name__] = sub
            pending.append(sub)
    return found


def _quote(pattern: str) -> str:
    """A regular expression as a CEL single-quoted string literal."""
    return "'" + pattern.replace("\\", "\\\\").replace("'", "\\'") + "'"


class _Structural:
    def __init__(self, defs: dict[str, Any]):
        self.defs = defs
        self.classes = _model_classes()

    def convert(self, schema: dict[str, Any]) -> dict[str, Any]:
        schema = copy.deepcopy(schema)
        description = schema.pop("description", None)
        result = self._convert(schema)
        if description and "description" not in result:
            result["description"] = description
        return result

    def _convert(self, schema: dict[str, Any]) -> dict[str, Any]:
        if "$ref" in schema:
            name = schema.pop("$ref").split("/")[-1]
            merged = {**self.defs[name], **{k: v for k, v in schema.items() if k not in _DROPPED_KEYS}}
            out = self.convert(merged)
            model = self.classes.get(name)
            rules = model.cel_rules() if isinstance(model, type) and issubclass(model, SpecModel) else []
            if rules:
                out["x-kubernetes-validations"] = rules
            return out

        if "x-elves-number-or-duration" in schema:
            # Untyped: CEL cannot compile rules over such a field, so none is attached.
            return {"description": schema.get("description", "A number, or a duration for time metrics (100ms)."),
                    "x-kubernetes-preserve-unknown-fields": True}

        if "anyOf" in schema:
            options = schema.pop("anyOf")
            variants = [v for v in options if v.get("type") != "null"]
            if len(variants) == 1:
                inner = self.convert({**variants[0], **{k: v for k, v in schema.items() if k not in _DROPPED_KEYS}})
                if len(variants) < len(options):
                    inner["nullable"] = True
                return inner
            # Several scalar types (int | float | str): structural schemas cannot say that.
            out = {"x-kubernetes-preserve-unknown-fields": True}
            if "description" in schema:
                out["description"] = schema["description"]
            return out

        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _DROPPED_KEYS:
                continue
            if key == "const":
                out["enum"] = [value]
            elif key == "exclusiveMinimum":
                out["minimum"] = value
                out["exclusiveMinimum"] = True
            elif key == "exclusiveMaximum":
                out["maximum"] = value
                out["exclusiveMaximum"] = True
            elif key == "properties":
                out["properties"] = {name: self.convert(prop) for name, prop in value.items()}
            elif key == "items":
                out["items"] = self.convert(value)
            elif key == "additionalProperties":
                if value is False:
                    continue  # strict field validation in kubectl reports unknown fields
                if value is True or value == {}:
                    out["x-kubernetes-preserve-unknown-fields"] = True
                else:
                    out["additionalProperties"] = self.convert(value)
            elif key == "patternProperties":
                (pattern, item), = value.items()
                out["additionalProperties"] = self.convert(item)
                out.setdefault("x-kubernetes-validations", []).append({
                    "rule": f"self.all(k, k.matches({_quote(pattern)}))",
                    "message": f"keys must match {pattern}",
                })
            elif key == "propertyNames":
                # Constrained keys (a pattern and a length): a structural schema states them as a rule.
                checks = ([f"k.matches({_quote(value['pattern'])})"] if "pattern" in value else []) + (
                    [f"size(k) <= {value['maxLength']}"] if "maxLength" in value else [])
                out.setdefault("x-kubernetes-validations", []).append({
                    "rule": f"self.all(k, {' && '.join(checks)})",
                    "message": " and ".join(([f"keys must match {value['pattern']}"] if "pattern" in value else [])
                                            + ([f"keys have at most {value['maxLength']} characters"]
                                               if "maxLength" in value else [])),
                })
            else:
                out[key] = value
        if "properties" in out and "additionalProperties" in out:
            # Typed fields beside keys of any name (spec.system.autoscaling: Elves' deployments and
            # other systems' workloads): a structural schema cannot say both, so the other keys are
            # kept as written and the operator reads them (elves.engine.models.workload_autoscaler).
            del out["additionalProperties"]
            out["x-kubernetes-preserve-unknown-fields"] = True
        if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out


_KEY_ORDER = ("description", "type", "format", "enum", "pattern", "minLength", "maxLength", "minimum",
              "exclusiveMinimum", "maximum", "exclusiveMaximum", "minItems", "maxItems", "maxProperties",
              "nullable", "required", "properties", "additionalProperties", "items")


def _ordered(schema: Any) -> Any:
    """Keys in the order people read a schema in: what it is, then its rules, then its parts."""
    if isinstance(schema, list):
        return [_ordered(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    rank = {key: index for index, key in enumerate(_KEY_ORDER)}
    keys = sorted(schema, key=lambda k: rank.get(k, len(rank)))
    return {k: schema[k] if k in ("enum", "required") else _ordered(schema[k]) for k in keys}


def _schema_of(model: type) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")  # type: ignore[attr-defined]
    defs = raw.pop("$defs", {})
    defs[model.__name__] = raw
    return _ordered(_Structural(defs).convert({"$ref": f"#/$defs/{model.__name__}"}))


# The phases in which a test is under way: its spec may not change (a CEL transition rule).
RUNNING_PHASES = ("Preparing", "Running", "Draining", "Analyzing")
IMMUTABLE_WHILE_RUNNING = {
    "rule": ("!has(oldSelf.status) || !has(oldSelf.status.phase) || !(oldSelf.status.phase in ["
             + ", ".join(f"'{p}'" for p in RUNNING_PHASES) + "]) || self.spec == oldSelf.spec"),
    "message": ("spec cannot change while the test runs (phase Preparing, Running, Draining or Analyzing): "
                "wait until it ends, or delete the LoadTest to stop it and apply the new spec"),
    "reason": "FieldValueForbidden",
    "fieldPath": ".spec",
}


@dataclass(frozen=True)
class Resource:
    """One of Elves' custom resources: its names and the models its schema comes from."""

    kind: str
    plural: str
    short_name: str
    description: str
    spec_model: type[SpecModel]
    spec_description: str
    status_model: type[StatusModel] | None = None
    status_description: str = ""
    columns: list[dict[str, str]] = field(default_factory=list)
    validations: list[dict[str, str]] = field(default_factory=list)

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{API_GROUP}"

    @property
    def path(self) -> Path:
        return CRDS_DIR / f"{self.crd_name}.yaml"


LOADTEST = Resource(
    KIND, PLURAL, SHORT_NAME, "A load test of the Elves system: one file for the cluster and the local mode.",
    LoadTestSpec, "What to run: the system, the load, faults, sweep, drain and objectives.",
    LoadTestStatus, "Written by the engine: phase, conditions, runs, results, verdict, report.",
    columns=LOADTEST_COLUMNS, validations=[IMMUTABLE_WHILE_RUNNING])
SYSTEM_UNDER_TEST = Resource(
    SUT_KIND, SUT_PLURAL, SUT_SHORT_NAME,
    "An event-driven system a LoadTest judges (spec.target.systemUnderTest): its workloads, queues,"
    " test-id header and ledger. The chart ships Elves' own system as the SystemUnderTest elves.",
    SystemUnderTestSpec, "The workloads the harness may act on, the queues that must drain, the test-id header,"
                         " the ledger's two counts and what drained means.",
    columns=[{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}])
RESOURCES = (LOADTEST, SYSTEM_UNDER_TEST)
# The LoadTest's, as most callers want it.
CRD_PATH = LOADTEST.path


def crd_manifest(resource: Resource = LOADTEST) -> dict[str, Any]:
    """The CRD as a dict, ready for yaml or the Kubernetes API."""
    spec_schema = _schema_of(resource.spec_model)
    spec_schema["description"] = resource.spec_description
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": _ordered(spec_schema),
    }
    if resource.status_model is not None:
        status_schema = _schema_of(resource.status_model)
        # Conditions are a map keyed by type (as in every Kubernetes API), so server-side apply
        # and strategic tools merge them by type instead of replacing the list.
        status_schema["properties"]["conditions"].update({
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]})
        status_schema["description"] = resource.status_description
        properties["status"] = _ordered(status_schema)
    root: dict[str, Any] = {"description": resource.description, "type": "object", "required": ["spec"]}
    if resource.validations:
        root["x-kubernetes-validations"] = resource.validations
    root["properties"] = properties
    version: dict[str, Any] = {"name": API_VERSION, "served": True, "storage": True}
    if resource.status_model is not None:
        version["subresources"] = {"status": {}}
    version["additionalPrinterColumns"] = resource.columns
    version["schema"] = {"openAPIV3Schema": root}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": resource.crd_name},
        "spec": {
            "group": API_GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": resource.kind,
                "listKind": f"{resource.kind}List",
                "plural": resource.plural,
                "singular": resource.kind.lower(),
                "shortNames": [resource.short_name],
                "categories": ["elves"],
            },
            "versions": [version],
        },
    }


def crd_yaml(resource: Resource = LOADTEST) -> str:
    header = "# Generated by `elves crd` from operator/elves/engine/models/; do not edit.\n"
    return header + yaml.safe_dump(crd_manifest(resource), sort_keys=False, width=120)


def write_crd(path: Path | None = None, resource: Resource = LOADTEST) -> Path:
    path = path or resource.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(crd_yaml(resource), encoding="utf-8")
    return path
