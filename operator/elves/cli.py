"""The `elves` command line: one dispatcher; each part registers its own subcommands."""

from __future__ import annotations

import argparse
import sys

# Old names of renamed commands, kept working but out of --help: each prints its new name.
RENAMED = {"profile": "builtin-system"}  # `profile` means spec.load.profile to users


def build_parser() -> argparse.ArgumentParser:
    # Imported here so that `elves --help` names every part, and a part's import error
    # surfaces as a clear traceback instead of a missing subcommand.
    from elves.engine import commands as engine_commands
    from elves.k8s import commands as k8s_commands
    from elves.local import commands as local_commands
    from elves.study import commands as study_commands

    parser = argparse.ArgumentParser(prog="elves", description=__doc__)
    subcommands = parser.add_subparsers(dest="command", required=True)
    engine_commands.register(subcommands)
    local_commands.register(subcommands)
    study_commands.register(subcommands)
    k8s_commands.register(subcommands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in RENAMED:
        print(f"elves: `elves {argv[0]}` is now `elves {RENAMED[argv[0]]}`", file=sys.stderr)
        argv[0] = RENAMED[argv[0]]
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
