"""The built-in scenarios' facts reach the k6 scripts from one home: the module generated from
elves.engine.models.scenarios (the scripts' side is in tests/unit/loadtests/test_k6_scripts.py)."""

from __future__ import annotations

import re

from elves.engine.models.scenarios import BUILTIN_SCENARIOS, FACTS_PATH, facts_module

REGENERATE = f"run `.venv/bin/elves scenarios --output {FACTS_PATH}` and commit it"


def test_committed_facts_equal_the_generated_ones():
    assert FACTS_PATH.exists(), f"{FACTS_PATH} is missing: {REGENERATE}"
    assert FACTS_PATH.read_text(encoding="utf-8") == facts_module(), f"{FACTS_PATH} is stale: {REGENERATE}"


def test_the_scripts_state_no_mix_or_exec_list_of_their_own():
    """Each built-in script takes its execs, mix and iteration times from the facts by its own
    name; a list or a mix written into a script again would drift from them."""
    scripts = FACTS_PATH.parents[1] / "scenarios"
    for name in BUILTIN_SCENARIOS:
        text = (scripts / f"{name}.js").read_text(encoding="utf-8")
        assert f"elvesOptions(builtinScenario('{name}'))" in text, name
        assert not re.search(r"defaultMix|iterationSeconds|const EXECS", text), name
