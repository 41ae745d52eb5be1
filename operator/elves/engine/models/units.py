"""Quantities as people write them in a LoadTest: durations, arrival rates, memory, CPU.

Each kind has one regular expression (also put into the CRD, so kube-apiserver rejects a
bad value with the same rule), a parser to a plain number, and a formatter back.
`Duration`, `Rate`, `Memory` and `Cpu` are the typed values the spec models hold: parsed
once, when the spec is read, keeping the text as written (YAML and the CRD see the text;
the engine reads `.seconds`, `.per_second`, `.bytes`, `.cores`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic_core import core_schema

# "90s", "5m", "1h", "100ms", "1.5s", and k6/Go-style sequences such as "1m30s".
DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
# A warm-up: "auto" (measured: until the JVMs have compiled and the latency has settled) or a duration.
WARMUP_AUTO = "auto"
WARMUP_PATTERN = rf"^({WARMUP_AUTO}|{DURATION_PATTERN[1:-1]})$"
# "120/min", "2/s", "7200/h", "0.5/s".
RATE_PATTERN = r"^[0-9]+(\.[0-9]+)?/(s|min|h)$"
# Kubernetes memory quantities: "512Mi", "2Gi", "1G", "1048576".
MEMORY_PATTERN = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|K|M|G|T)?$"
# Kubernetes CPU quantities: "500m", "2", "0.5".
CPU_PATTERN = r"^[0-9]+(\.[0-9]+)?m?$"

_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_RATE_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}
_MEMORY_UNITS = {
    "": 1, "k": 1000, "K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4,
    "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4,
}


def parse_duration(text: str) -> float:
    """Seconds in a duration string; ValueError with an example when it is not one."""
    if not isinstance(text, str) or not re.fullmatch(DURATION_PATTERN, text):
        raise ValueError(f"{text!r} is not a duration: write a number with ms, s, m or h (90s, 5m, 1h, 1m30s)")
    return sum(float(n) * _DURATION_UNITS[u] for n, _, u in re.findall(r"([0-9]+(\.[0-9]+)?)(ms|s|m|h)", text))


def parse_warmup(text: str) -> float | None:
    """Seconds of a warm-up duration, None for "auto"; ValueError naming both forms otherwise."""
    if text == WARMUP_AUTO:
        return None
    try:
        return parse_duration(text)
    except ValueError:
        raise ValueError(f"{text!r} is neither auto nor a duration (90s, 5m, 1m30s)") from None


def format_duration(seconds: float) -> str:
    """A short human form: 0.25 -> "250ms", 90 -> "1m30s", 3600 -> "1h"."""
    if seconds < 1 and seconds != 0:
        return f"{round(seconds * 1000)}ms"
    whole = int(seconds)
    if whole != seconds:
        return f"{seconds:.1f}s" if seconds < 60 else format_duration(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return "".join(parts) or "0s"


def k6_duration(seconds: float) -> str:
    """A duration k6 parses exactly: whole seconds as "12s", anything finer in milliseconds."""
    millis = round(seconds * 1000)
    return f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis}ms"


def parse_rate(text: str) -> float:
    """Arrivals per second in a rate string such as "120/min"."""
    if not isinstance(text, str) or not re.fullmatch(RATE_PATTERN, text):
        raise ValueError(f"{text!r} is not a rate: write a number per s, min or h (2/s, 120/min, 7200/h)")
    number, unit = text.split("/")
    return float(number) / _RATE_UNITS[unit]


def format_rate(per_second: float | None) -> str:
    """Per minute below 10/s (how the study talks), per second above."""
    if per_second is None or math.isnan(per_second):
        return "-"
    if per_second < 10:
        per_minute = per_second * 60
        return f"{per_minute:.0f}/min" if per_minute >= 10 else f"{per_minute:.2g}/min"
    return f"{per_second:.0f}/s"


def parse_memory(text: str) -> int:
    """Bytes in a Kubernetes memory quantity."""
    if not isinstance(text, str) or not re.fullmatch(MEMORY_PATTERN, text):
        raise ValueError(f"{text!r} is not a memory quantity: write bytes or a number with Ki, Mi, Gi, M, G (512Mi, 2Gi)")
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", text)
    assert match is not None  # the pattern above guarantees it
    return int(float(match.group(1)) * _MEMORY_UNITS[match.group(2)])


def parse_cpu(text: str) -> float:
    """Cores in a Kubernetes CPU quantity ("500m" -> 0.5)."""
    if not isinstance(text, str) or not re.fullmatch(CPU_PATTERN, text):
        raise ValueError(f"{text!r} is not a CPU quantity: write cores or millicores (2, 0.5, 500m)")
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def format_seconds(seconds: float | None) -> str:
    """Latencies and times for tables: "87ms", "1.42s", "-" when unknown."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    if seconds == 0:
        return "0"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms" if seconds >= 0.01 else f"{seconds * 1000:.2f}ms"
    return f"{seconds:.2f}s" if seconds < 60 else format_duration(round(seconds))


@dataclass(frozen=True)
class Quantity:
    """A quantity as written (`text`) and its value; each kind adds its value field and names
    its pattern and parser: `class Duration(Quantity, pattern=..., parser=parse_duration)`."""

    text: str
    PATTERN: ClassVar[str]
    _parser: ClassVar[Any]

    def __init_subclass__(cls, pattern: str, parser: Any, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.PATTERN, cls._parser = pattern, staticmethod(parser)

    @classmethod
    def parse(cls, value: Any) -> Any:
        """The typed value of `value` (text, or already typed); ValueError with an example otherwise."""
        if isinstance(value, cls):
            return value
        return cls(value, cls._parser(value))  # type: ignore[call-arg]

    def __str__(self) -> str:
        return self.text

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls.parse, serialization=core_schema.plain_serializer_function_ser_schema(str))

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> dict[str, Any]:
        return {"type": "string", "pattern": cls.PATTERN}


@dataclass(frozen=True)
class Duration(Quantity, pattern=DURATION_PATTERN, parser=parse_duration):
    seconds: float


@dataclass(frozen=True)
class Warmup(Quantity, pattern=WARMUP_PATTERN, parser=parse_warmup):
    seconds: float | None  # None: auto, measured (elves.engine.results.warmup)

    @property
    def auto(self) -> bool:
        return self.seconds is None


@dataclass(frozen=True)
class Rate(Quantity, pattern=RATE_PATTERN, parser=parse_rate):
    per_second: float


@dataclass(frozen=True)
class Memory(Quantity, pattern=MEMORY_PATTERN, parser=parse_memory):
    bytes: int


@dataclass(frozen=True)
class Cpu(Quantity, pattern=CPU_PATTERN, parser=parse_cpu):
    cores: float
