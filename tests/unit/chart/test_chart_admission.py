"""Tier 1: writing SystemUnderTests is a privilege. The chart's admission policy
checks every Secret a SystemUnderTest can name (the paths come from the engine's model, and the
chart's copy of them is never stale), and the roles it ships let anyone who may view a namespace
read SystemUnderTests but write them only where a RoleBinding grants the edit role.

What a user would notice if these broke: a new secretRef in the model that the policy does not
check (its author could have the operator read a Secret they may not), or every namespace editor
able to write SystemUnderTests. The policy itself, on a real API server:
tests/apiserver/test_system_under_test_admission.py.
"""

from __future__ import annotations

from chart_testkit import named, of_kind, render

from elves.k8s.admission import REFERENCES_PATH, references_json, secret_references

AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"


def test_the_charts_secret_references_are_the_models():
    assert REFERENCES_PATH.read_text(encoding="utf-8") == references_json(), \
        f"{REFERENCES_PATH} is stale: run `.venv/bin/python -m elves.k8s.admission > {REFERENCES_PATH}` and commit it"
    assert secret_references() == [["ledger", "persisted", "sql", "secretRef"], ["reset", "sql", "secretRef"]]


def test_the_policy_checks_get_on_every_secret_a_system_under_test_names(helm):
    objects = render(helm)
    (policy,) = of_kind(objects, "ValidatingAdmissionPolicy")
    (binding,) = of_kind(objects, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    assert policy["spec"]["failurePolicy"] == "Fail"
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert (rule["resources"], rule["operations"]) == (["systemundertests"], ["CREATE", "UPDATE"])
    checks = policy["spec"]["validations"]
    assert len(checks) == len(secret_references())
    for check, path in zip(checks, secret_references()):
        name = "object.spec." + ".".join(path) + ".name"
        assert f".name({name}).check('get').allowed()" in check["expression"]
        assert check["messageExpression"].startswith(f"'spec.{'.'.join(path)}.name: you may not get Secret '")


def test_reading_system_under_tests_aggregates_into_view_and_writing_them_into_nothing(helm):
    objects = render(helm)
    view = named(objects, "ClusterRole", "elves-elves-systemundertests-view")
    assert {k.removeprefix(AGGREGATE) for k, v in view["metadata"]["labels"].items() if k.startswith(AGGREGATE)
            and v == "true"} == {"view", "edit", "admin"}
    assert [r["verbs"] for r in view["rules"]] == [["get", "list", "watch"]]
    edit = named(objects, "ClusterRole", "elves-elves-systemundertests-edit")
    assert not [k for k in edit["metadata"]["labels"] if k.startswith(AGGREGATE)]
    assert {"create", "update", "patch"} <= set(edit["rules"][0]["verbs"])
    # No other role the chart ships writes them.
    writers = [o["metadata"]["name"] for o in of_kind(objects, "ClusterRole") + of_kind(objects, "Role")
               for r in o["rules"] if "systemundertests" in r["resources"] and set(r["verbs"]) - {"get", "list", "watch"}]
    assert writers == [edit["metadata"]["name"]]


def test_the_notes_say_how_to_grant_writing_system_under_tests(helm, tmp_path):
    from test_chart_notes_and_helm_test import render_notes

    notes = render_notes(helm, tmp_path)
    assert "--clusterrole=elves-elves-systemundertests-edit --user=NAME" in notes
