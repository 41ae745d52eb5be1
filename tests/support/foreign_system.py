"""A SystemUnderTest that is not Elves (an orders service and its queue), valid in every field:
the model's tests (tier 1) and the CRD's (tier 3) change one field of it at a time."""

from __future__ import annotations

import copy
from typing import Any

FOREIGN_SPEC: dict[str, Any] = {
    "workloads": [{"name": "orders-api"}, {"name": "orders-db", "kind": "StatefulSet"},
                  {"selector": {"matchLabels": {"app.kubernetes.io/part-of": "orders"}}}],
    "queues": {"rabbitmq": ["orders.in"]},
    "testIdHeader": "X-Test-Id",
    "ledger": {"accepted": {"endpoint": "placeOrder"},
               "persisted": {"promql": 'sum(orders_saved_total{test_id="$TEST_ID"})'}},
    "drained": {"ledgerComplete": False},
}


def foreign_system(name: str = "orders", namespace: str | None = "shop", **spec: Any) -> dict[str, Any]:
    """The SystemUnderTest document, with `spec` fields replacing the valid ones."""
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "elves.dev/v1alpha1", "kind": "SystemUnderTest", "metadata": metadata,
            "spec": {**copy.deepcopy(FOREIGN_SPEC), **spec}}
