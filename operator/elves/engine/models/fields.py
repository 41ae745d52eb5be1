"""Field types several parts of the spec share: names, patterns, env values."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from elves.constants import DEPLOYMENTS
from elves.engine.models.scenarios import EXEC_NAME_PATTERN

Deployment = Literal[DEPLOYMENTS]  # type: ignore[valid-type]

ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
QUEUE_NAME_PATTERN = r"^[A-Za-z0-9_.:-]+$"
# A Kafka topic's or consumer group's name as both Kafka and a PromQL label value may hold it safely.
KAFKA_NAME_PATTERN = r"^[A-Za-z0-9._-]+$"


def _env_value(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} must be a string: quote it (\"{value}\"), as Kubernetes env values are strings")
    return value


EnvValue = Annotated[str, BeforeValidator(_env_value)]
EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]
ExecName = Annotated[str, Field(pattern=EXEC_NAME_PATTERN)]
