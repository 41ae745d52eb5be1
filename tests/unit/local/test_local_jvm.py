"""The local replicas' JVM: the heap cap a memory limit gives."""

from __future__ import annotations

import pytest

from elves.local.jvm import java_tool_options, memory_limit_bytes


def test_heap_cap_is_three_quarters_of_the_memory_limit():
    assert java_tool_options(memory_limit_bytes("512Mi")) == "-Xmx384m -XX:+ExitOnOutOfMemoryError"
    assert java_tool_options(None) == "-XX:+ExitOnOutOfMemoryError"
    with pytest.raises(ValueError, match="too small"):
        memory_limit_bytes("1Mi")
    with pytest.raises(ValueError):
        memory_limit_bytes("lots")
