"""Quantities as people write them: durations, rates, memory, CPU."""

from __future__ import annotations

import pytest

from elves.engine.models.units import (format_duration, format_rate, format_seconds, k6_duration, parse_cpu,
                                       parse_duration, parse_memory, parse_rate)


@pytest.mark.parametrize("text, seconds", [
    ("90s", 90), ("5m", 300), ("1h", 3600), ("100ms", 0.1), ("1.5s", 1.5), ("1m30s", 90), ("1h0m5s", 3605),
])
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["90", "5 m", "1d", "-1s", "", "1.s", 90])
def test_bad_durations_say_how_to_write_one(bad):
    with pytest.raises(ValueError, match="is not a duration: write a number with ms, s, m or h"):
        parse_duration(bad)


def test_rates_memory_cpu():
    assert parse_rate("120/min") == 2 and parse_rate("2/s") == 2 and parse_rate("7200/h") == 2
    assert parse_memory("2Gi") == 2 * 2**30 and parse_memory("512Mi") == 512 * 2**20 and parse_memory("1G") == 10**9
    assert parse_cpu("500m") == 0.5 and parse_cpu("2") == 2
    for parse, bad in ((parse_rate, "120/minute"), (parse_memory, "2GB"), (parse_cpu, "2 cores")):
        with pytest.raises(ValueError, match="is not a"):
            parse(bad)


def test_formats():
    assert [format_duration(s) for s in (0, 0.25, 90, 3600, 3725, 12.5)] == ["0s", "250ms", "1m30s", "1h", "1h2m5s", "12.5s"]
    assert [k6_duration(s) for s in (600, 12.5, 0.001)] == ["600s", "12500ms", "1ms"]
    assert [format_rate(r) for r in (2, 0.01, 50, None)] == ["120/min", "0.6/min", "50/s", "-"]
    assert [format_seconds(s) for s in (0, 0.0871, 0.004, 1.234, 95, None)] == ["0", "87ms", "4.00ms", "1.23s", "1m35s", "-"]
