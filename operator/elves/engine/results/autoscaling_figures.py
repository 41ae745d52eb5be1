"""What autoscaling did in a run, from sampled replica and queue series.

Per deployment, over the load and the drain: replica-seconds (the integral of the ready
replicas: the cost), how often the desired count changed (flapping), the scale-up lag and
the scale-down time. Pure functions over (seconds since the load's start, value) samples,
each sample holding until the next, so they are testable from series alone;
elves.engine.results.analysis reads the series from Prometheus and calls `scaling_figures`.

The scale-up lag runs from what should make the autoscaler act to the first replica it
added being Ready: for a deployment KEDA scales on its work queue (constants.SCALED_ON_QUEUE),
the queue's first sustained rise past KEDA's trigger (its messages per replica times the
replicas it had at the load's start: KEDA asks for ceil(ready messages / target) replicas);
for one the HPA scales on CPU, the load's start (the CPU it reacts to is the load's).
"""

from __future__ import annotations

from collections.abc import Sequence

from elves.engine.models.status import ScalingFigures

Points = Sequence[tuple[float, float | None]]  # (seconds since the load's start, value); None: no sample

# A rise past the trigger counts once the queue stays past it this long: a burst KEDA's
# polling may never see is not what the autoscaler should have answered.
RISE_SUSTAIN_SECONDS = 10.0
KEDA, HPA = "keda", "hpa"


def _known(points: Points) -> list[tuple[float, float]]:
    return [(t, v) for t, v in points if v is not None]


def value_at(points: Points, t: float) -> float | None:
    """The value held at `t`: the last sample at or before it (the first sample before any)."""
    known = _known(points)
    held = [v for at, v in known if at <= t]
    return held[-1] if held else (known[0][1] if known else None)


def replica_seconds(ready: Points, end: float) -> float | None:
    """The ready replicas integrated from the first sample to `end` (seconds since the load's
    start), each sample holding until the next: 1 replica for 60 s then 2 for 30 s is 120."""
    known = [(t, v) for t, v in _known(ready) if t <= end]
    if not known:
        return None
    total = 0.0
    for (t, value), (after, _) in zip(known, known[1:] + [(end, 0.0)]):
        total += value * (after - t)
    return total


def replica_changes(desired: Points) -> int:
    """How many times the desired count changed (up or down): an autoscaler that flaps changes it often."""
    values = [v for _, v in _known(desired)]
    return sum(1 for before, after in zip(values, values[1:]) if after != before)


def first_sustained_rise(depth: Points, threshold: float, sustain: float = RISE_SUSTAIN_SECONDS) -> float | None:
    """When `depth` first went above `threshold` and stayed above it for `sustain` seconds (to
    the series' end counts too: a queue still piling up when the samples stop did rise)."""
    known = _known(depth)
    since = None
    for t, value in known:
        if value <= threshold:
            since = None
            continue
        since = t if since is None else since
        if t - since >= sustain:
            return since
    return since  # above the threshold to the last sample


def first_added_ready(ready: Points, since: float) -> float | None:
    """When a replica beyond those ready at `since` first became Ready (None: none was added).
    A replica that crashed and came back is not an added one."""
    before = value_at(ready, since)
    if before is None:
        return None
    for t, value in _known(ready):
        if t >= since and value > before:
            return t
    return None


def scale_down_seconds(desired: Points, load_end: float, minimum: float) -> float | None:
    """From the load's end until the desired count was back at `minimum` (0 when it already was);
    None when it never went above `minimum` (it did not scale) or was still above it at the
    last sample (the end of the drain came first)."""
    known = _known(desired)
    if not known or max(v for _, v in known) <= minimum:
        return None
    at_end = value_at(desired, load_end)
    if at_end is not None and at_end <= minimum:
        return 0.0
    for t, value in known:
        if t > load_end and value <= minimum:
            return t - load_end
    return None


def scaling_figures(desired: Points, ready: Points, load_end: float, end: float, autoscaler: str = "",
                    minimum: float | None = None, queue: str | None = None, depth: Points = (),
                    messages_per_replica: float | None = None) -> ScalingFigures:
    """One deployment's figures. `autoscaler`: KEDA, HPA or "" (its replicas changed otherwise:
    a fault, a person); `minimum`: the fewest replicas its autoscaler may keep (without one, the
    desired count at the load's start); `queue`, `depth` and `messages_per_replica`: KEDA's queue,
    its ready messages and its target."""
    start_desired = value_at(desired, 0.0)
    floor = minimum if minimum is not None else start_desired
    figures = ScalingFigures(autoscaler=autoscaler, replica_seconds=replica_seconds(ready, end),
                             replica_changes=replica_changes(desired), minimum=floor)
    if floor is not None:
        figures.scale_down_seconds = scale_down_seconds(desired, load_end, floor)
    if autoscaler == KEDA and queue and messages_per_replica:
        threshold = messages_per_replica * max(start_desired or 0.0, 1.0)
        figures.trigger = f"{queue} above {threshold:g} ready messages"
        figures.triggered_at = first_sustained_rise(depth, threshold)
    elif autoscaler:
        figures.trigger, figures.triggered_at = "the load's start", 0.0
    if figures.triggered_at is not None:
        added = first_added_ready(ready, figures.triggered_at)
        figures.scale_up_lag_seconds = None if added is None else round(added - figures.triggered_at, 3)
    return figures


def scaled(desired: Points) -> bool:
    """Whether the deployment's desired replicas changed in the run (a crash changes only the ready ones)."""
    return replica_changes(desired) > 0
