"""Prints the runtime dependencies pinned in a pyproject.toml, one per line (for pip)."""
import sys
import tomllib

with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["dependencies"]))
