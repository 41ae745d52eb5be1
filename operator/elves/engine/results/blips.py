"""Blips: a dependency that fails for a moment (an API server answering 503, Prometheus not
answering within its timeout) is waited out, not taken for the end of the test.

A platform or client raises a `TransientError` for a failure that may pass by itself; the
phase machine keeps the test where it was, tries the same step again later and, only when
the failure has lasted `RIDE_OUT_SECONDS`, ends the test in Error naming the cause. The
time the failure began is kept in the status (`progress.retryingSince`), so the deadline
holds across operator restarts and is counted on the status's clock, like every wait.
"""

from __future__ import annotations

from datetime import datetime, timezone

from elves.engine.models.status import LoadTestStatus
from elves.engine.models.units import format_duration

# How long one failure may last before the test ends in Error.
RIDE_OUT_SECONDS = 120.0
# Backoff between tries: from the first, doubling, never more than the last.
FIRST_RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 15.0


class TransientError(Exception):
    """A failure that may pass by itself. `harness_reason` is the Error reason should it last."""

    harness_reason = "Unavailable"


def ride_out(status: LoadTestStatus, exc: TransientError, now: float,
             deadline: float = RIDE_OUT_SECONDS) -> float | None:
    """Record the failure in `status`; the seconds to wait before the next try, or None
    when it has lasted past `deadline` (then `gave_up` says why)."""
    progress = status.progress
    if progress.retrying_since is None:
        progress.retrying_since = datetime.fromtimestamp(now, tz=timezone.utc)
    progress.retrying = str(exc)
    lasted = now - progress.retrying_since.timestamp()
    if lasted > deadline:
        return None
    # Each wait as long as the failure has lasted so far: the tries double their spacing.
    return min(MAX_RETRY_SECONDS, max(FIRST_RETRY_SECONDS, lasted))


def gave_up(status: LoadTestStatus, now: float) -> str:
    """The Error message once a failure has lasted too long."""
    since = status.progress.retrying_since
    lasted = format_duration(now - since.timestamp()) if since else "too long"
    return f"still failing after {lasted} of retries: {status.progress.retrying}"


def recovered(status: LoadTestStatus, now: float) -> str | None:
    """Forget a failure that has passed; what to tell people about it (None when there was none)."""
    progress = status.progress
    if progress.retrying_since is None:
        return None
    message = (f"recovered after {format_duration(now - progress.retrying_since.timestamp())}: "
               f"{progress.retrying}")
    progress.retrying_since, progress.retrying = None, ""
    return message
