"""Tier 1 runs on every core (make test-unit, pytest-xdist); a test that reads a real process's nice
value or CPU time must not share the machine with other tests, nor run under nice: such files are
marked serial, which make test-unit runs alone after the rest. What a user would notice if a mark
went missing: a tier 1 that fails now and then on a busy machine, for nothing the code did."""

from __future__ import annotations

import re
from pathlib import Path

UNIT = Path(__file__).resolve().parents[1]
# What reads a live process's nice value or CPU time (elves.local.processes).
MEASURES = re.compile(r"\b(niceness_of|cpu_seconds_of)\(")
SERIAL = "pytestmark = pytest.mark.serial"


def test_each_file_measuring_a_real_processes_nice_value_or_cpu_is_marked_serial():
    unmarked = [str(path.relative_to(UNIT)) for path in sorted(UNIT.rglob("test_*.py"))
                if MEASURES.search(text := path.read_text()) and SERIAL not in text]
    assert not unmarked, f"read a real process's nice value or CPU time without `{SERIAL}`: {unmarked}"


def test_the_serial_mark_is_declared_for_make_test_unit():
    makefile = (UNIT.parents[1] / "Makefile").read_text()
    assert '-m "not serial"' in makefile and "-m serial" in makefile, "make test-unit no longer runs serial tests apart"
