"""One etcd + kube-apiserver per test session, with the upstream CRDs installed.

A missing prerequisite (binaries not built, etcd not installed, CRDs not fetched) skips
the tier with the reason and the command that fixes it, or fails it under CI=true.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import control_plane as cp


def require(missing: list[str]) -> None:
    """Skips (or, under CI=true, fails) when anything is missing."""
    if not missing:
        return
    reason = "; ".join(missing)
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and a prerequisite is missing: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cp.ControlPlane]:
    """A running control plane with the prometheus-operator and k6-operator CRDs."""
    require(cp.missing_prerequisites())
    workdir = tmp_path_factory.mktemp("control-plane")
    began = time.monotonic()
    plane = cp.start(workdir, tie_to_parent=True)
    try:
        ready = time.monotonic()
        plane.install_crds(*cp.upstream_crd_files())
        # Shown with `pytest -s` or in the report of a failing test.
        print(f"control plane ready in {ready - began:.1f} s, upstream CRDs in "
              f"{time.monotonic() - ready:.1f} s ({workdir})")
        yield plane
    finally:
        cp.stop(workdir)


@pytest.fixture(scope="session")
def kubeconfig(control_plane: cp.ControlPlane) -> Path:
    """The admin kubeconfig of the session's control plane."""
    return Path(control_plane.kubeconfig)
