"""Subcommands of this part (filled in by its owner)."""


def register(subcommands) -> None:
    """Add this part's subcommands; each sets `handler` to a function(args) -> exit code."""
