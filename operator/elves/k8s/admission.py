"""Where a SystemUnderTest names a Secret, found in its model, for the chart's admission policy.

The operator reads the Secrets a SystemUnderTest names with its own rights, so whoever writes a
SystemUnderTest must not be able to name a Secret they may not read themselves (a confused
deputy). The chart's ValidatingAdmissionPolicy (templates/systemundertest-admission.yaml) asks
the API server's authorizer, for the requesting user, `get` on each Secret the object names; the
places it looks are these paths, written to charts/elves/files/secret-references.json so a new
secretRef in the model cannot be missed (a tier-1 test fails while the file is stale):

    .venv/bin/python -m elves.k8s.admission > charts/elves/files/secret-references.json
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path

from pydantic import BaseModel

from elves.engine.models.target import SecretKeyRef, SystemUnderTestSpec

REFERENCES_PATH = Path(__file__).resolve().parents[3] / "charts" / "elves" / "files" / "secret-references.json"


def _models_in(annotation: object, many: bool = False) -> list[tuple[type[BaseModel], bool]]:
    """The models an annotation holds (Optional[X] -> X), each with whether it sits in a collection."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg, many)]
    if origin in (list, tuple, dict, set):
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg, True)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, many)]
    return []


def secret_references(model: type[BaseModel] = SystemUnderTestSpec,
                      prefix: tuple[str, ...] = ()) -> list[list[str]]:
    """Each path (camelCase field names under spec) to a SecretKeyRef in `model`. One Secret per
    path: a SecretKeyRef inside a list would need the policy to range over it, so it is refused
    here until the policy learns to."""
    paths = []
    for name, info in model.model_fields.items():
        path = (*prefix, info.alias or name)
        for sub, many in _models_in(info.annotation):
            found = [list(path)] if sub is SecretKeyRef else secret_references(sub, path)
            if found and many:
                raise TypeError(f"spec.{'.'.join(path)}: Secrets named in a list; the admission policy checks one"
                                " Secret per path")
            paths += found
    return paths


def references_json() -> str:
    return json.dumps({"secretRefs": secret_references()}, indent=2) + "\n"


if __name__ == "__main__":
    print(references_json(), end="")
