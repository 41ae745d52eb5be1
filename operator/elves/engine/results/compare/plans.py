"""Like with like: the plan of a run (what it asked of the load, the system and the platform)
read from its summary, and the differences between two plans.

Two runs are compared only when they asked the same: the same load (scenario or script and its
content, rate or stages, duration, mix, users, warm-up, runners), the same system (replicas,
resources, settings, autoscaling, target, faults, reset), on the same platform and machine. A
difference makes the comparison refused (exit 2) naming each one, unless the user says the
change is the point (`--allow-plan-change PATH`; `spec.baseline` never allows one). What is not
part of the plan: the objectives (slo), the baseline itself, deadlines (drain timeout, TTL) and
the LoadTest's name: one LoadTest can be the baseline of another that asks the same.

`plan_record` is what a report adds to its summary for this (summary.json's "plan"): the
platform, and the script's digest (its content, which the spec only names).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from elves.constants import LOCAL_TEST_NAMESPACE
from elves.engine.models.status import ScriptDigest
from elves.engine.models.thresholds import CompareError
from elves.engine.models.units import parse_cpu, parse_duration, parse_memory, parse_rate
from elves.engine.results.compare.summaries import RUN_RECORD, known_fields

PLAN = "plan"  # summary.json's key for plan_record
NOT_PLAN = ("slo", "baseline", "ttlSecondsAfterFinished", "drain")  # spec fields that ask nothing of the run
NOT_PLAN_FIELDS = {"slo", "baseline", "ttl_seconds_after_finished", "drain"}  # the same, as the model names them
PLATFORM, MACHINE, SCRIPT_CONTENT = "platform", "machine", "load.script content"
LOCAL_PLATFORM = "local"
ALLOW_HELP = ("PATHS: the plan fields the new run may change, comma-separated, each a field or a dotted prefix"
              " as the refusal names them: load.stages, load.rate, load.mix, load (all of the load),"
              " system.replicas.ingestor, system, faults, target, platform, machine")

# Quantities by the name of their field: compared by value (2Gi is 2048Mi, 120/min is 2/s).
_PARSERS = {"duration": parse_duration, "at": parse_duration, "warmupTimeout": parse_duration,
            "for": parse_duration, "rate": parse_rate, "target": parse_rate, "memory": parse_memory,
            "cpu": parse_cpu}


@dataclass(frozen=True)
class Leaf:
    key: Any  # what is compared
    text: str  # what the reader is told
    inferred: bool = False  # read from other fields, not recorded: compared only with another inferred


@dataclass(frozen=True)
class Difference:
    path: str
    baseline: str
    new: str

    def text(self, new_role: str = "the new run") -> str:
        return f"{self.path}: {self.baseline} in the baseline, {self.new} in {new_role}"


def _quantity(name: str, value: Any) -> Any:
    parse = _PARSERS.get(name)
    if parse is None or not isinstance(value, str):
        return value
    try:
        return round(parse(value), 9)
    except ValueError:
        return value


def _canonical(name: str, value: Any) -> Any:
    """`value` with every quantity by value, for comparing lists and objects as a whole."""
    if isinstance(value, dict):
        return tuple(sorted((k, _canonical(k, v)) for k, v in value.items() if v is not None))
    if isinstance(value, list):
        return tuple(_canonical(name, v) for v in value)
    return _quantity(name, value)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]" if value else "none"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_text(v)}" for k, v in value.items() if v is not None) + "}"
    return json.dumps(value) if isinstance(value, bool) or value is None else str(value)


def _flatten(prefix: str, value: Any, into: dict[str, Leaf]) -> None:
    """Objects by field; a list (stages, faults, sweep values) is one leaf, in its order."""
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else key, inner, into)
        return
    if value is None or value == {}:
        return
    name = prefix.rsplit(".", 1)[-1]
    into[prefix] = Leaf(_canonical(name, value), _text(value))


def _spec(summary: dict[str, Any]) -> tuple[dict[str, Any], dict[str, float] | None]:
    """The summary's spec with its defaults filled in (read as the model reads it), and the mix
    as the run used it; the spec as written when the model cannot read it (another version's)."""
    from elves.engine.models.spec import LoadTestSpec  # the spec models import this package

    written = ((summary.get("loadtest") or {}).get("spec")) or {}
    if not isinstance(written, dict):
        raise CompareError("the summary's loadtest.spec is not an object: its plan cannot be read")
    asked = {k: v for k, v in written.items() if k not in NOT_PLAN}
    try:
        spec = LoadTestSpec.model_validate(known_fields(LoadTestSpec, asked))
    except ValueError:
        return asked, None
    return spec.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=NOT_PLAN_FIELDS), \
        spec.load.effective_mix


def platform_of(summary: dict[str, Any]) -> Leaf | None:
    """Where it ran: recorded in the summary's plan, else read from the LoadTest (a local run's
    has no namespace, or the local one; an older summary records none); None when it cannot be told."""
    recorded = (summary.get(PLAN) or {}).get(PLATFORM)
    if recorded:
        return Leaf(str(recorded), str(recorded))
    meta = (summary.get("loadtest") or {}).get("metadata")
    if not isinstance(meta, dict):
        return None
    read = LOCAL_PLATFORM if meta.get("namespace") in (None, LOCAL_TEST_NAMESPACE) else "a cluster"
    return Leaf(read, read, inferred=True)


def plan_of(summary: dict[str, Any]) -> dict[str, Leaf]:
    """The plan of a summary, by dotted path."""
    spec, mix = _spec(summary)
    leaves: dict[str, Leaf] = {}
    _flatten("", spec, leaves)
    if mix is not None:  # weights in proportion: {a: 3, b: 1} asks what {a: 0.75, b: 0.25} does
        leaves = {path: leaf for path, leaf in leaves.items() if not path.startswith("load.mix.")}
        total = sum(mix.values()) or 1.0
        leaves["load.mix"] = Leaf(tuple(sorted((k, round(w / total, 6)) for k, w in mix.items())),
                                  ", ".join(f"{k} {w:g}" for k, w in mix.items()))
    script = (summary.get(PLAN) or {}).get("script") or {}
    if script.get("sha256"):
        leaves[SCRIPT_CONTENT] = Leaf(script["sha256"], f"{script.get('file', 'the script')} sha256"
                                                         f" {script['sha256'][:12]}")
    platform = platform_of(summary)
    if platform:
        leaves[PLATFORM] = platform
    record = summary.get(RUN_RECORD) or {}
    if record.get("cpu") and record.get("cores"):
        leaves[MACHINE] = Leaf((record["cpu"], record["cores"]), f"{record['cpu']}, {record['cores']} cores")
    return leaves


def plan_differences(baseline: dict[str, Any], new: dict[str, Any]) -> list[Difference]:
    """Every field whose value the two plans do not share, in the baseline's order. A field only
    one side records (a script's digest, the machine: older summaries lack them) is no
    difference: it cannot be told; nor is a platform recorded on one side and read from the
    LoadTest on the other."""
    before, after = plan_of(baseline), plan_of(new)
    optional = (SCRIPT_CONTENT, MACHINE, PLATFORM)
    paths = list(before) + [p for p in after if p not in before]
    found = []
    for path in paths:
        b, a = before.get(path), after.get(path)
        if path in optional and (b is None or a is None or b.inferred != a.inferred):
            continue
        if b is None or a is None or b.key != a.key:
            found.append(Difference(path, b.text if b else "not set", a.text if a else "not set"))
    return found


def parse_allowed(text: str | None) -> list[str]:
    """The paths of --allow-plan-change; CompareError for an empty entry."""
    if not text:
        return []
    parts = [p.strip() for p in text.split(",")]
    if any(not p for p in parts):
        raise CompareError(f"--allow-plan-change {text!r}: an empty entry ({ALLOW_HELP})")
    return parts


def allows(allowed: list[str], path: str) -> bool:
    """Whether an allowed entry names `path` or a dotted prefix of it."""
    return any(path == entry or path.startswith(entry + ".") or path.startswith(entry + " ") for entry in allowed)


def unknown_allowed(allowed: list[str], baseline: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Allowed entries that name no field of either plan (a typo must not pass silently)."""
    paths = set(plan_of(baseline)) | set(plan_of(new)) | {PLATFORM, MACHINE, SCRIPT_CONTENT}
    return [entry for entry in allowed if not any(allows([entry], path) for path in paths)]


def plan_record(platform: str, script: ScriptDigest | None) -> dict[str, Any]:
    """summary.json's "plan": where the run ran, and the content of the script it ran as the
    platform read it when the test started (status.script; none when it could not)."""
    record: dict[str, Any] = {PLATFORM: platform}
    if script is not None:
        record["script"] = script.model_dump()
    return record
