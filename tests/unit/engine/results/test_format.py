"""Figures as people read them, the same in the report, `elves run`, `elves compare` and the
results page."""

from __future__ import annotations

import math

from elves.engine.results.format import html_table, observed_text, percent_text, text_table, value_text


def test_each_kind_in_its_unit_and_an_unknown_value_as_a_dash():
    assert [value_text(0.087, "seconds"), value_text(0.005, "percent"), value_text(12.0, "rate"), value_text(0.1, "rate"),
            value_text(179_143_936, "bytes"), value_text(302), value_text(0.123456)] == \
        ["87ms", "0.50 %", "12/s", "6/min", "171 MiB", "302", "0.1235"]
    assert {value_text(None, kind) for kind in ("seconds", "percent", "rate", "bytes", "number")} == {"-"}
    assert {value_text(math.nan, kind) for kind in ("seconds", "percent", "rate", "bytes", "number")} == {"-"}
    assert percent_text(math.nan) == "-"


def test_a_checks_observed_value_speaks_its_metrics_unit():
    assert observed_text("http_req_duration_p99{getData}", 0.25) == "250ms"
    assert observed_text("http_req_failed_rate", 0.012) == "1.20 %"
    assert observed_text("lost_requests", 3.0) == "3"


def test_tables_for_the_page_and_the_terminal():
    assert html_table(["a<b"], [["<i>x</i>"]]) == \
        "<table><thead><tr><th>a&lt;b</th></tr></thead><tbody><tr><td><i>x</i></td></tr></tbody></table>"
    assert text_table(["name", "p99"], [["getData", "87ms"], ["all", "1.2s"]], right=[1]) == [
        "name      p99", "-------  ----", "getData  87ms", "all      1.2s"]
