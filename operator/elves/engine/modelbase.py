"""What every LoadTest model shares: camelCase names, no unknown fields, CEL rules for the CRD."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


@dataclass(frozen=True)
class CelRule:
    """A cross-field rule as kube-apiserver checks it (x-kubernetes-validations).

    The Python side checks the same rule in a model validator, with the same message,
    so `elves validate` and `kubectl apply` reject the same specs with the same words."""

    rule: str
    message: str


class SpecModel(BaseModel):
    """A part of the spec: camelCase in YAML, unknown fields rejected."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, validate_by_name=False)
    cel_rules: ClassVar[tuple[CelRule, ...]] = ()


class StatusModel(BaseModel):
    """A part of the status: camelCase in YAML; written by the engine, read by people."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, validate_by_name=True)
    cel_rules: ClassVar[tuple[CelRule, ...]] = ()
