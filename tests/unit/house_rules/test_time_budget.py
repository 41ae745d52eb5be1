"""The time budget of `make test` and the figures measured against it stay in step (docs/testing.md,
"Budget"). Not a timing assertion: nothing here times anything. What a reader would notice if
they drifted apart: a tier added to `make test` with no budget, tiers' budgets that no longer add
up to the whole's, a figure said to be within its budget when it is over, an undated figure."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
TESTING = REPO / "docs" / "testing.md"
MAKEFILE = REPO / "Makefile"
HEADER = "| run | targets | budget | measured | measured on | within |"
TARGET = re.compile(r"`make (test(?:-[a-z]+)?)`")


def budget_rows() -> list[dict[str, str]]:
    lines = TESTING.read_text().splitlines()
    assert HEADER in lines, f"docs/testing.md has no budget table ({HEADER})"
    rows = []
    for line in lines[lines.index(HEADER) + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append(dict(zip(("run", "targets", "budget", "measured", "on", "within"), cells, strict=True)))
    return rows


def tiers_make_test_runs() -> set[str]:
    """Every test-* target the `test` target's prerequisites and recipe name."""
    text = MAKEFILE.read_text()
    rule = re.search(r"^test:(.*?)(?=^\S)", text, re.MULTILINE | re.DOTALL)
    assert rule, "the Makefile has no `test` target"
    return set(re.findall(r"\b(test-[a-z]+)\b", rule.group(1)))


def minutes(row: dict[str, str], column: str) -> float:
    try:
        return float(row[column])
    except ValueError:
        raise AssertionError(f"{row['run']} {row['targets']}: {column} {row[column]!r} is not a number of minutes") from None


def test_each_figure_is_dated_and_within_says_what_it_and_the_budget_say():
    for row in budget_rows():
        assert row["run"] in ("cold", "warm"), row
        measured_on = date.fromisoformat(row["on"])
        assert measured_on <= date.today(), row
        expected = "yes" if minutes(row, "measured") <= minutes(row, "budget") else "over"
        assert row["within"] == expected, f"{row['run']} {row['targets']} is {expected}, the table says {row['within']}"


def test_every_tier_of_make_test_has_a_cold_budget_and_they_add_up_to_the_whole():
    cold = [row for row in budget_rows() if row["run"] == "cold"]
    (whole,) = [row for row in cold if TARGET.findall(row["targets"]) == ["test"]]
    tiers = [row for row in cold if row is not whole]
    named = [target for row in tiers for target in TARGET.findall(row["targets"])]
    assert sorted(named) == sorted(tiers_make_test_runs()), (named, tiers_make_test_runs())
    assert sum(minutes(row, "budget") for row in tiers) == minutes(whole, "budget")
    # One measurement of the whole: the tiers' figures from the same day add up to it.
    assert {row["on"] for row in tiers} == {whole["on"]}, cold
    assert abs(sum(minutes(row, "measured") for row in tiers) - minutes(whole, "measured")) < 0.15, cold


def test_make_test_has_a_warm_budget_below_the_cold_one():
    rows = budget_rows()
    (cold,) = [r for r in rows if r["run"] == "cold" and TARGET.findall(r["targets"]) == ["test"]]
    (warm,) = [r for r in rows if r["run"] == "warm" and TARGET.findall(r["targets"]) == ["test"]]
    assert minutes(warm, "budget") < minutes(cold, "budget")
