"""Prints, as bash assignments, what operator/Dockerfile's final stage sets: ENV, USER,
WORKDIR, ENTRYPOINT, CMD and the files it copies from the repository (COPIES, as
"source:destination"), so that the recipe without Docker (image.conf) builds the image that
file describes instead of restating it. Standard library only. Usage: dockerfile.py DOCKERFILE
"""

import json
import shlex
import sys


def instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) of each instruction, continuation lines joined, comments left out."""
    found, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        keyword, _, args = (pending + line).strip().partition(" ")
        found.append((keyword.upper(), args.strip()))
        pending = ""
    return found


def final_stage(text: str) -> list[tuple[str, str]]:
    steps = instructions(text)
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from + 1:]


def facts(text: str) -> dict[str, list[str] | str]:
    result: dict[str, list[str] | str] = {"ENV": [], "COPIES": [], "ENTRYPOINT": [], "CMD": []}
    for keyword, args in final_stage(text):
        if keyword == "ENV":
            result["ENV"] += shlex.split(args)  # type: ignore[operator]
        elif keyword == "USER":
            result["IMAGE_USER"] = args
        elif keyword == "WORKDIR":
            result["WORKDIR"] = args
        elif keyword in ("ENTRYPOINT", "CMD"):
            result[keyword] = json.loads(args)
        elif keyword == "COPY" and not args.startswith("--"):
            *sources, destination = shlex.split(args)
            result["COPIES"] += [f"{source}:{destination}" for source in sources]  # type: ignore[operator]
    return result


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        for name, value in facts(handle.read()).items():
            if isinstance(value, list):
                print(f"{name}=({' '.join(shlex.quote(v) for v in value)})")
            else:
                print(f"{name}={shlex.quote(value)}")


if __name__ == "__main__":
    main()
