"""One etcd + kube-apiserver per test session, with the upstream CRDs installed.

A missing prerequisite (binaries not built, etcd not installed, CRDs not fetched) skips
the tier with the reason and the command that fixes it, or fails it under CI=true.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prerequisites import require

from . import control_plane as cp


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cp.ControlPlane]:
    """A running control plane with the prometheus-operator and k6-operator CRDs."""
    missing = cp.missing_prerequisites()
    require(not missing, "; ".join(missing))
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
