"""What every LoadTest model shares: camelCase names, no unknown fields, and its rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from pydantic.alias_generators import to_camel


@dataclass(frozen=True)
class Rule:
    """One cross-field rule of the spec, stated once.

    kube-apiserver checks `cel` (the CRD's x-kubernetes-validations, with `message`); the
    model checks `broken` with the same meaning, so `elves validate` and `kubectl apply`
    reject the same specs. `say` words the model's error with the values at fault (default:
    `message`). A rule without `cel` is one CEL cannot state (an untyped field): the model
    alone checks it. `field_path` (".report") is the field kube-apiserver names in its error
    when the rule is about one field of the object it is stated on."""

    cel: str | None
    message: str
    broken: Callable[[Any], bool]
    say: Callable[[Any], str] | None = None
    field_path: str | None = None

    def stated(self, **extra: str) -> dict[str, str]:
        """The rule as one of the CRD's x-kubernetes-validations."""
        assert self.cel is not None
        return {"rule": self.cel, "message": self.message, **extra,
                **({"fieldPath": self.field_path} if self.field_path else {})}

    def check(self, subject: Any) -> None:
        """ValueError with the rule's words when `subject` breaks it."""
        if self.broken(subject):
            raise ValueError(self.say(subject) if self.say else self.message)


class SpecModel(BaseModel):
    """A part of the spec: camelCase in YAML, unknown fields rejected, `rules` checked in order."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, validate_by_name=False)
    # Checked on the whole model, after its fields.
    rules: ClassVar[tuple[Rule, ...]] = ()
    # Checked by one field's own validator (so the error names that field); in the CRD too.
    field_rules: ClassVar[tuple[Rule, ...]] = ()
    # What the local mode can do and a cluster cannot (a file on the machine that runs the
    # test): refused at admission by the CRD and by the operator (cluster_breaches), never by
    # the model itself, which the local mode reads the same file with.
    cluster_rules: ClassVar[tuple[Rule, ...]] = ()

    @model_validator(mode="after")
    def _check_rules(self) -> Any:
        for rule in self.rules:
            rule.check(self)
        return self

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        """The rules as the CRD states them (x-kubernetes-validations); a cluster rule's error
        says Forbidden: the value is valid, only not on a cluster."""
        return ([r.stated() for r in cls.rules + cls.field_rules if r.cel is not None]
                + [r.stated(reason="FieldValueForbidden") for r in cls.cluster_rules if r.cel is not None])


def field_rules_of(name: str) -> Any:
    """A field validator of `name` that checks the model's field_rules on its value (so an error
    names that field): in the class body, `_checked = field_rules_of("workloads")`."""
    def check(cls: type[SpecModel], value: Any) -> Any:
        for rule in cls.field_rules:
            rule.check(value)
        return value
    return field_validator(name)(classmethod(check))  # type: ignore[arg-type]


class StatusModel(BaseModel):
    """A part of the status: camelCase in YAML; written by the engine, read by people."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, validate_by_name=True)


def cluster_breaches(model: BaseModel, path: str) -> list[str]:
    """`<field>: <message>` for each cluster rule that `model` (found at `path`, e.g. "spec")
    or any part of it breaks: what the operator refuses should the CRD in the cluster be
    older than its rules (Helm installs crds/ once and never upgrades them)."""
    found: list[str] = []
    if isinstance(model, SpecModel):
        found = [f"{path}{rule.field_path or ''}: {rule.message}" for rule in model.cluster_rules if rule.broken(model)]
    for name, info in type(model).model_fields.items():
        found += _breaches_in(getattr(model, name), f"{path}.{info.alias or name}")
    return found


def _breaches_in(value: Any, path: str) -> list[str]:
    if isinstance(value, BaseModel):
        return cluster_breaches(value, path)
    if isinstance(value, list):
        return [b for index, item in enumerate(value) for b in _breaches_in(item, f"{path}[{index}]")]
    if isinstance(value, dict):
        return [b for key, item in value.items() for b in _breaches_in(item, f"{path}.{key}")]
    return []
