"""How long each wait of a run may last: the runner's deadlines, and the credentials' lifetime
that is worked out from them before anything starts."""

from __future__ import annotations

from dataclasses import dataclass

# A run's credentials live at most this long unless the installation says otherwise
# (planning.credentials reads the setting).
DEFAULT_MAX_SECONDS = 2 * 3600


@dataclass(frozen=True)
class Timeouts:
    """How long each wait may last (seconds) before the test ends in Error."""

    lock: float = 300.0  # another test holds the system
    system_ready: float = 300.0  # replicas up and ready after a reset or a change
    prometheus: float = 60.0  # Prometheus answering
    load_start: float = 60.0  # k6 running after start_load
    load_setup: float = 180.0  # k6's setup() (seeding requests, waiting for their plots)
    # Beyond the planned duration: k6's gracefulStop (30 s), and setup() when the platform
    # cannot tell it apart from the load (see LoadState).
    load_grace: float = 180.0
    load_stop: float = 120.0  # a stopped k6 gone (an auto warm-up's, before the load starts); locally k6 gets 30 s
    run_credential_max: float = DEFAULT_MAX_SECONDS  # the longest a run's credentials may live (planning.credentials)
