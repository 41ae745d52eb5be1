"""The LoadTest resource and how it is read from YAML."""

from __future__ import annotations

from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError

from elves.constants import API_GROUP, API_VERSION, KIND, SUT_KIND
from elves.engine.models.errors import SpecError, problems
from elves.engine.models.fields import DNS_LABEL_PATTERN
from elves.engine.models.modelbase import SpecModel
from elves.engine.models.spec import LoadTestSpec
from elves.engine.models.status import LoadTestStatus
from elves.engine.models.target import SystemUnderTest, parse_system_under_test


class Metadata(SpecModel):
    model_config = {**SpecModel.model_config, "extra": "allow"}  # labels, annotations, uid, ... pass through

    name: str = Field(pattern=DNS_LABEL_PATTERN, max_length=63, description="The test's name (a DNS label).")
    namespace: str | None = Field(None, pattern=DNS_LABEL_PATTERN, max_length=63)


class LoadTest(SpecModel):
    api_version: Literal[f"{API_GROUP}/{API_VERSION}"]  # type: ignore[valid-type]
    kind: Literal[KIND]  # type: ignore[valid-type]
    metadata: Metadata
    spec: LoadTestSpec
    status: LoadTestStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name


def spec_problems(exc: ValidationError, prefix: tuple[Any, ...] = ()) -> list[str]:
    """One line per pydantic error: `spec.load.rate: '12/minute' is not a rate: ...`."""
    return problems(exc, LoadTest, prefix)


def parse_loadtest(document: Any, source: str = "LoadTest") -> LoadTest:
    """A LoadTest from a parsed YAML/JSON document, or SpecError naming every bad field."""
    if not isinstance(document, dict):
        raise SpecError(source, [f"(document): expected a LoadTest mapping, got {type(document).__name__}"])
    try:
        return LoadTest.model_validate(document)
    except ValidationError as exc:
        raise SpecError(source, spec_problems(exc)) from None


def _documents(path: str) -> list[Any]:
    """The YAML documents of a file; SpecError when it cannot be read or parsed, or holds none."""
    try:
        with open(path, encoding="utf-8") as handle:
            documents = [d for d in yaml.safe_load_all(handle) if d is not None]
    except OSError as exc:
        raise SpecError(path, [f"(file): cannot read: {exc.strerror}"]) from None
    except yaml.YAMLError as exc:
        raise SpecError(path, [f"(file): not valid YAML: {exc}".replace("\n", " ")]) from None
    if not documents:
        raise SpecError(path, ["(file): no LoadTest in this file"])
    return documents


def _sources(path: str, documents: list[Any]) -> list[str]:
    return [path if len(documents) == 1 else f"{path} (document {index + 1})" for index in range(len(documents))]


def load_resources(path: str) -> list[LoadTest | SystemUnderTest]:
    """Every LoadTest and SystemUnderTest in a YAML file, each read by its kind (`elves validate`, `elves run`);
    SpecError on the first bad one."""
    documents = _documents(path)
    return [parse_system_under_test(document, source)
            if isinstance(document, dict) and document.get("kind") == SUT_KIND else parse_loadtest(document, source)
            for document, source in zip(documents, _sources(path, documents))]
