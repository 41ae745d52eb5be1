"""Least power for a SystemUnderTest's author, on a real kube-apiserver: the chart's
ValidatingAdmissionPolicy refuses a SystemUnderTest whose author may not `get` a Secret it names
(the operator would read it for them), and admits one naming a Secret they may read; the write
role the chart ships is what a RoleBinding grants them.

The user `alice` is impersonated (`kubectl --as`): she may write SystemUnderTests in the namespace
(the chart's `...-systemundertests-edit` ClusterRole, bound there) and get one Secret, not the
other.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from foreign_system import foreign_system
from polling import wait_for

from . import control_plane as cp
from .chart_rbac import CHART, RELEASE

CRDS = cp.REPO / "charts" / "elves" / "crds"
NAMESPACE, RELEASE_NAMESPACE = "sut-authors", "sut-authors-release"
READABLE, UNREADABLE = "orders-ledger-db", "admin-db"
USER = "alice"
QUERY = "SELECT count(*) FROM orders WHERE test_id = $TEST_ID"


def render(release_namespace: str, template: str) -> list[dict[str, Any]]:
    result = subprocess.run([cp.helm_binary() or "helm", "template", RELEASE, str(CHART), "--namespace",
                             release_namespace, "--show-only", template], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def sql_system(name: str, count_secret: str, reset_secret: str | None = None) -> str:
    spec: dict[str, Any] = {"ledger": {"accepted": {"endpoint": "placeOrder"}, "persisted": {"sql": {
        "secretRef": {"name": count_secret, "key": "url"}, "query": QUERY}}}}
    if reset_secret:
        spec["reset"] = {"sql": {"secretRef": {"name": reset_secret, "key": "url"}, "statements": ["TRUNCATE orders"]}}
    return json.dumps(foreign_system(name, NAMESPACE, **spec))


@pytest.fixture(scope="module")
def authors(control_plane: cp.ControlPlane) -> cp.ControlPlane:
    """The CRDs, the chart's admission policy and SystemUnderTest roles, two Secrets, and alice:
    may write SystemUnderTests in NAMESPACE and get READABLE, not UNREADABLE."""
    control_plane.install_crds(*sorted(CRDS.glob("*.yaml")))
    for namespace in (NAMESPACE, RELEASE_NAMESPACE):
        control_plane.kubectl("create", "namespace", namespace)
    objects = render(RELEASE_NAMESPACE, "templates/systemundertest-admission.yaml")
    control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    (edit,) = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole"
               and o["metadata"]["name"].endswith("-systemundertests-edit")]
    for name in (READABLE, UNREADABLE):
        control_plane.kubectl("create", "secret", "generic", name, "-n", NAMESPACE,
                              "--from-literal=url=postgresql://u:p@db:5432/orders")
    control_plane.kubectl("-n", NAMESPACE, "create", "rolebinding", "sut-authors", f"--clusterrole={edit}",
                          f"--user={USER}")
    control_plane.kubectl("-n", NAMESPACE, "create", "role", "orders-db-reader", "--verb=get", "--resource=secrets",
                          f"--resource-name={READABLE}")
    control_plane.kubectl("-n", NAMESPACE, "create", "rolebinding", "orders-db-reader", "--role=orders-db-reader",
                          f"--user={USER}")
    # The API server loads a new policy and its binding in the background: wait (with a deadline)
    # until a SystemUnderTest naming a Secret alice may not get is refused.
    wait_for(lambda: "you may not get Secret" in as_alice(control_plane, "apply", "--dry-run=server",
                                                          stdin=sql_system("probe", UNREADABLE)).stderr,
             "the admission policy to take effect")
    return control_plane


def as_alice(plane: cp.ControlPlane, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return plane.kubectl(*args, "-f", "-", f"--as={USER}", stdin=stdin, check=False)


def test_alice_may_get_only_the_secret_the_namespace_gives_her(authors: cp.ControlPlane) -> None:
    can = {name: authors.kubectl("auth", "can-i", "get", f"secret/{name}", "-n", NAMESPACE, f"--as={USER}",
                                 check=False).stdout.strip() for name in (READABLE, UNREADABLE)}
    assert can == {READABLE: "yes", UNREADABLE: "no"}
    assert authors.kubectl("auth", "can-i", "create", "systemundertests.elves.dev", "-n", NAMESPACE,
                           f"--as={USER}", check=False).stdout.strip() == "yes"


@pytest.mark.parametrize("count, reset, field", [
    (UNREADABLE, None, "spec.ledger.persisted.sql.secretRef.name"),
    (READABLE, UNREADABLE, "spec.reset.sql.secretRef.name"),
])
def test_a_system_under_test_naming_a_secret_its_author_may_not_get_is_refused(
        authors: cp.ControlPlane, count: str, reset: str | None, field: str) -> None:
    result = as_alice(authors, "create", stdin=sql_system("deputy", count, reset))
    assert result.returncode != 0
    assert f"{field}: you may not get Secret {NAMESPACE}/{UNREADABLE}" in result.stderr, result.stderr
    assert authors.kubectl("get", "sut", "deputy", "-n", NAMESPACE, check=False).returncode != 0


def test_one_naming_secrets_she_may_get_is_admitted_and_cannot_be_edited_to_another(authors: cp.ControlPlane) -> None:
    created = as_alice(authors, "create", stdin=sql_system("orders", READABLE))
    assert created.returncode == 0, created.stderr
    edited = as_alice(authors, "apply", stdin=sql_system("orders", UNREADABLE))
    assert edited.returncode != 0 and "you may not get Secret" in edited.stderr, edited.stderr
    stored = json.loads(authors.kubectl("get", "sut", "orders", "-n", NAMESPACE, "-o", "json").stdout)
    assert stored["spec"]["ledger"]["persisted"]["sql"]["secretRef"]["name"] == READABLE
    # Whoever may get the Secret (here the admin) may name it.
    admin = authors.kubectl("apply", "-f", "-", stdin=sql_system("admins", UNREADABLE, UNREADABLE), check=False)
    assert admin.returncode == 0, admin.stderr
