"""The one way tests wait, in every tier, and the benches and the test cluster's Python with
them: poll a condition until it holds, with a deadline that names what was awaited. Tests never
sleep for something asynchronous to happen. Standard library only; pytest.ini puts tools/lib on
the path."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], what: str, timeout: float = 30.0, *, interval: float = 0.2,
             ignore: tuple[type[BaseException], ...] = ()) -> T:
    """Call `condition` every `interval` seconds until it returns something truthy, and
    return that. Exceptions of the `ignore` types count as "not yet". At the deadline, fail
    naming `what`, the seconds waited and the last value or error seen."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = condition()
            if value:
                return value
            last = value
        except ignore as error:
            last = error
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what} (last: {last!r})")
        time.sleep(interval)  # the pause between polls; the deadline above bounds the wait
