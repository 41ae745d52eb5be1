"""Copies KEDA's Go module with only the scalers the cluster tier uses, for
tools/e2e/build-go-binaries.sh: the test cluster's KEDA is built from this copy.

    python3 tools/e2e/trim_keda.py MODULE_DIR DEST TRIGGER[,TRIGGER...]

KEDA compiles every scaler it knows (74 of them, with the AWS, Azure, GCP, database and
message-broker clients they need) into one package, pkg/scalers, which its operator imports
whole. Tier 4's ScaledObjects use one trigger (rabbitmq; the chart's and the engine's), so
the copy keeps pkg/scalers/scaler.go (what the scalers share) and the kept triggers' files,
and pkg/scaling/scalers_builder.go's switch (between KEDA's `// TRIGGERS-START` and
`// TRIGGERS-END` markers) keeps only their cases: what the Go compiler is given falls from
171 MB of source to 71 MB (KEDA v2.21.0). A ScaledObject of another trigger gets KEDA's own
error, "no scaler found for type: ...". The same cut Prometheus' plugins.yml makes for custom
builds of its service discovery (build-go-binaries.sh does that one too).

Each change is checked: a KEDA version whose files or markers moved fails here, naming what,
rather than building something else.
"""

from __future__ import annotations

import re
import shutil
import stat
import sys
from pathlib import Path

# The scaler file each trigger type needs, besides scaler.go.
SCALER_FILES = {"rabbitmq": "rabbitmq_scaler.go", "cpu": "cpu_memory_scaler.go", "memory": "cpu_memory_scaler.go"}
SHARED = "scaler.go"
BUILDER = Path("pkg/scaling/scalers_builder.go")
START, END, SWITCH = "\t// TRIGGERS-START\n", "\t// TRIGGERS-END\n", "\tswitch triggerType {\n"
# A case of the switch: `case "a", "b":` or `default:`, up to the next one.
CASE = re.compile(r"(?m)^(?=\tcase |\tdefault:)")


class TrimError(Exception):
    pass


def keep_cases(builder: str, triggers: set[str]) -> str:
    """The builder's source with only the switch cases naming one of `triggers` (and the default)."""
    if builder.count(START) != 1 or builder.count(END) != 1:
        raise TrimError(f"{BUILDER} has not exactly one TRIGGERS-START and one TRIGGERS-END marker")
    start, end = builder.index(START), builder.index(END)
    head, switch, cases = builder[start:end].partition(SWITCH)
    if not switch:
        raise TrimError(f"no `switch triggerType {{` between the markers of {BUILDER}")
    kept, found = [], set()
    for case in CASE.split(cases):
        if case.startswith("\tcase "):
            labels = set(re.findall(r'"([^"]+)"', case.splitlines()[0]))
            if not labels & triggers:
                continue
            found |= labels & triggers
        kept.append(case)
    if missing := triggers - found:
        raise TrimError(f"{BUILDER} has no case for {', '.join(sorted(missing))}")
    if not any(case.startswith("\tdefault:") for case in kept):
        raise TrimError(f"{BUILDER}'s switch has no default case")
    return builder[:start] + head + switch + "".join(kept) + builder[end:]


def trim(module: Path, dest: Path, triggers: set[str]) -> None:
    unknown = triggers - SCALER_FILES.keys()
    if unknown:
        raise TrimError(f"no scaler file known for {', '.join(sorted(unknown))} (known: {', '.join(SCALER_FILES)})")
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(module, dest)
    for path in [dest, *dest.rglob("*")]:  # the module cache's files are read-only
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    scalers = dest / "pkg" / "scalers"
    keep = {SHARED, *(SCALER_FILES[t] for t in triggers)}
    if missing := sorted(name for name in keep if not (scalers / name).is_file()):
        raise TrimError(f"{module} has no pkg/scalers/{', '.join(missing)}")
    for path in scalers.glob("*.go"):
        if path.name not in keep:
            path.unlink()
    builder = dest / BUILDER
    builder.write_text(keep_cases(builder.read_text(), triggers))


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        trim(Path(argv[1]), Path(argv[2]), set(argv[3].split(",")))
    except (TrimError, OSError) as error:
        print(f"trim_keda: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
