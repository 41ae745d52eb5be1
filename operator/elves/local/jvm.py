"""Memory limits as JVM heap caps: the local stand-in for a container memory limit."""

from __future__ import annotations

import re

_QUANTITY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(Ki|Mi|Gi|Ti|k|K|M|G|T)?\s*$")
_FACTORS = {
    None: 1, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4,
    "k": 1000, "K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4,
}
# The heap gets this share of the limit; the rest is metaspace, threads and native
# memory, as a container's limit would have to cover them too.
HEAP_SHARE = 0.75
MIN_HEAP_BYTES = 16 * 1024**2


def parse_memory(text: str | int) -> int:
    """A Kubernetes memory quantity ("512Mi", "2Gi", "1000000") in bytes."""
    if isinstance(text, int):
        value = text
    else:
        match = _QUANTITY.match(str(text))
        if not match:
            raise ValueError(f"memory {text!r}: expected a quantity such as 512Mi or 2Gi")
        value = int(float(match.group(1)) * _FACTORS[match.group(2)])
    if value < MIN_HEAP_BYTES / HEAP_SHARE:
        raise ValueError(f"memory {text!r}: too small for a JVM (at least 22Mi)")
    return value


def java_tool_options(memory_bytes: int | None) -> str:
    """JAVA_TOOL_OPTIONS for a replica: exit on OutOfMemoryError (code 3, reported as
    OOMKilled), and a heap cap when a memory limit is set."""
    options = ["-XX:+ExitOnOutOfMemoryError"]
    if memory_bytes is not None:
        heap_mib = max(MIN_HEAP_BYTES, int(memory_bytes * HEAP_SHARE)) // 1024**2
        options.insert(0, f"-Xmx{heap_mib}m")
    return " ".join(options)
