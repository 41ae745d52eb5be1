"""Memory limits as JVM heap caps: the local stand-in for a container memory limit."""

from __future__ import annotations

from elves.engine.models.units import parse_memory

# The heap gets this share of the limit; the rest is metaspace, threads and native
# memory, as a container's limit would have to cover them too.
HEAP_SHARE = 0.75
MIN_HEAP_BYTES = 16 * 1024**2


def memory_limit_bytes(text: str) -> int:
    """A memory limit ("512Mi", "2Gi") in bytes, refused when a JVM could not run in it; the
    quantity is read by elves.engine.models.units.parse_memory, the one parser of memory quantities."""
    value = parse_memory(text)
    if value < MIN_HEAP_BYTES / HEAP_SHARE:
        raise ValueError(f"{text!r} is too small for a JVM (at least 22Mi)")
    return value


def java_tool_options(memory_bytes: int | None) -> str:
    """JAVA_TOOL_OPTIONS for a replica: exit on OutOfMemoryError (code 3, reported as
    OOMKilled), and a heap cap when a memory limit is set."""
    options = ["-XX:+ExitOnOutOfMemoryError"]
    if memory_bytes is not None:
        heap_mib = max(MIN_HEAP_BYTES, int(memory_bytes * HEAP_SHARE)) // 1024**2
        options.insert(0, f"-Xmx{heap_mib}m")
    return " ".join(options)
