"""How an invalid spec reads: one line per problem, each starting with the field's path."""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

from pydantic import ValidationError

from elves.engine.models.modelbase import SpecModel


class SpecError(ValueError):
    """An invalid LoadTest (or other resource of Elves: `kind`); each line names the field at fault."""

    def __init__(self, source: str, problems: list[str], kind: str = "LoadTest"):
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: invalid {kind}\n" + "\n".join(f"  {p}" for p in problems))


def _location(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


def message(error: dict[str, Any], root: type[SpecModel] | None = None) -> str:
    """What is wrong, in words; for an unknown field, the fields `root` accepts there."""
    text = error["msg"]
    if text.startswith("Value error, "):
        text = text[len("Value error, "):]
    if error["type"] == "extra_forbidden":
        allowed = _allowed_fields(root, error["loc"][:-1]) if root is not None else []
        text = "unknown field" + (f" (allowed here: {', '.join(allowed)})" if allowed else "")
    elif error["type"] == "missing":
        text = "required field is missing"
    return text


def _allowed_fields(root: type[SpecModel], loc: tuple[Any, ...]) -> list[str]:
    """The YAML names a model accepts at `loc`, found by walking the models from `root`."""
    def unwrap(annotation: Any) -> Any:
        while True:
            origin = get_origin(annotation)
            if origin is Annotated:
                annotation = get_args(annotation)[0]
            elif origin in (list, dict):
                annotation = get_args(annotation)[-1]
            elif origin is not None and type(None) in get_args(annotation):
                annotation = next(a for a in get_args(annotation) if a is not type(None))
            else:
                return annotation

    model: Any = root
    for part in loc:
        if isinstance(part, int) or not (isinstance(model, type) and issubclass(model, SpecModel)):
            continue
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return []
        model = unwrap(field.annotation)
    if isinstance(model, type) and issubclass(model, SpecModel):
        return [f.alias or n for n, f in model.model_fields.items()]
    return []


def problems(exc: ValidationError, root: type[SpecModel], prefix: tuple[Any, ...] = ()) -> list[str]:
    """One line per pydantic error of validating `root`: `spec.load.rate: '12/minute' is not a rate: ...`."""
    return [f"{_location(prefix + tuple(e['loc'])) or '(document)'}: {message(e, root)}" for e in exc.errors()]
