"""The CPU split between the load generator and the system under test (ELVES_LOCAL_LOAD_CPUS)."""

import os
import subprocess

import pytest

from elves.local import cpus
from elves.local.settings import Settings


@pytest.mark.parametrize("text, expected", [
    ("", set()), ("0", {0}), ("0-1", {0, 1}), ("1, 3-4", {1, 3, 4}), ("2,2", {2}),
])
def test_the_load_cpus_are_read_as_taskset_writes_them(text, expected):
    assert Settings.from_env({"ELVES_LOCAL_LOAD_CPUS": text}).load_cpus == expected


@pytest.mark.parametrize("text, wrong", [("a", "'a'"), ("2-1", "'2-1'"), ("0-", "'0-'"), ("-1", "'-1'")])
def test_a_bad_cpu_list_is_refused_naming_the_setting_and_the_item(text, wrong):
    with pytest.raises(ValueError, match=f"ELVES_LOCAL_LOAD_CPUS: {wrong} is not a CPU number or range"):
        Settings.from_env({"ELVES_LOCAL_LOAD_CPUS": text})


def test_the_system_gets_every_cpu_but_the_loads():
    split = cpus.split(frozenset({0}), available={0, 1, 2, 3})
    assert split.to_json() == {"system": "1-3", "load": "0"}
    assert cpus.split(frozenset(), available={0, 1}) is None


def test_a_split_that_leaves_the_system_nothing_or_names_unknown_cpus_is_refused():
    with pytest.raises(ValueError, match=r"0-1 leaves no CPU for the system under test \(this process may use 0-1\)"):
        cpus.split(frozenset({0, 1}), available={0, 1})
    with pytest.raises(ValueError, match=r"5,7 not among the CPUs this process may use \(0-3\)"):
        cpus.split(frozenset({0, 5, 7}), available={0, 1, 2, 3})


def test_k6_runs_on_the_loads_cpus():
    assert cpus.on_cpus(["k6", "run"], None) == ["k6", "run"]
    available = sorted(os.sched_getaffinity(0))
    argv = cpus.on_cpus(["grep", "Cpus_allowed_list", "/proc/self/status"], str(available[-1]))
    assert subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split() == \
        ["Cpus_allowed_list:", str(available[-1])]
