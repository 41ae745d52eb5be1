"""k6's exit codes in words, and which of them mean the load ran to its end."""

from __future__ import annotations

from elves.engine.planning.k6 import FINISHED_CODES, describe_exit


def test_k6_exit_codes_in_words():
    assert describe_exit(107) == "k6 exited with code 107 (script error)"
    assert 99 in FINISHED_CODES and 107 not in FINISHED_CODES
