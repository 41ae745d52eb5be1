"""What every LoadTest model shares: camelCase names, no unknown fields, and its rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel


@dataclass(frozen=True)
class Rule:
    """One cross-field rule of the spec, stated once.

    kube-apiserver checks `cel` (the CRD's x-kubernetes-validations, with `message`); the
    model checks `broken` with the same meaning, so `elves validate` and `kubectl apply`
    reject the same specs. `say` words the model's error with the values at fault (default:
    `message`). A rule without `cel` is one CEL cannot state (an untyped field): the model
    alone checks it."""

    cel: str | None
    message: str
    broken: Callable[[Any], bool]
    say: Callable[[Any], str] | None = None

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

    @model_validator(mode="after")
    def _check_rules(self) -> Any:
        for rule in self.rules:
            rule.check(self)
        return self

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        """The rules as the CRD states them (x-kubernetes-validations)."""
        return [{"rule": r.cel, "message": r.message} for r in cls.rules + cls.field_rules if r.cel is not None]


class StatusModel(BaseModel):
    """A part of the status: camelCase in YAML; written by the engine, read by people."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, validate_by_name=True)
