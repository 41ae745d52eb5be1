"""The objects the operator creates, read as data: names, the TestRun, the ConfigMaps."""

from __future__ import annotations

import base64
import json
import re
from datetime import datetime, timezone

import pytest
from prerequisites import require

from elves.cache import cache_root
from elves.engine.models.status import LoadTestStatus
from elves.engine.planning.k6 import RUNNER_VARIABLES, RunnerValues, Targets
from elves.engine.planning.platform import LoadRun, ScriptFile
from elves.k8s import manifests, names

LOADTEST = {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest",
            "metadata": {"name": "case-3", "namespace": "team-a", "uid": "1234-abcd"}}
OWNER = names.Owner.of(LOADTEST)
TARGETS = Targets("http://p", "http://g", "http://r")
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def a_run(**changes) -> LoadRun:
    fields = dict(index=2, test_id="team-a/case-3/2", script=ScriptFile("/scenarios/system-mix.js"),
                  scenarios={"getData": {"exec": "getData"}}, parallelism=3, duration_seconds=60,
                  tokens=["t1", "t2"], admin_token="admin", run_credential="the-run-credential")
    fields.update(changes)
    return LoadRun(**fields)


def test_the_testrun_runs_the_archive_with_remote_write_and_the_test_id_tag():
    env = manifests.runner_pod_env(RunnerValues.of(a_run(), Targets("http://prometheus:9090/",
                                                                     "http://gateway.elves.svc:8080",
                                                                     "http://registry.elves.svc:8081")),
                                   "elves-case-3-2-runner")
    testrun = manifests.testrun(OWNER, a_run(), ("elves-case-3-2-script", "archive.tar"), "grafana/k6:1.8.1", env)
    assert (testrun["apiVersion"], testrun["kind"]) == ("k6.io/v1alpha1", "TestRun")
    spec = testrun["spec"]
    assert spec["parallelism"] == 3
    assert spec["arguments"] == "--out experimental-prometheus-rw --tag testid=team-a/case-3/2"
    assert spec["script"] == {"configMap": {"name": "elves-case-3-2-script", "file": "archive.tar"}}
    assert spec["runner"]["image"] == "grafana/k6:1.8.1"
    variables = {e["name"]: e["value"] for e in spec["runner"]["env"] if "value" in e}
    assert variables["K6_PROMETHEUS_RW_SERVER_URL"] == "http://prometheus:9090/api/v1/write"
    assert variables["K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM"] == "true"
    assert variables["K6_PROMETHEUS_RW_STALE_MARKERS"] == "true"
    assert (variables["ELVES_BASE_URL"], variables["ELVES_REGISTRY_URL"]) == \
        ("http://gateway.elves.svc:8080", "http://registry.elves.svc:8081")
    assert variables["ELVES_TEST_ID"] == "team-a/case-3/2"
    assert json.loads(variables["ELVES_K6_SCENARIOS"]) == {"getData": {"exec": "getData"}}


def test_spec_runner_places_and_sizes_the_runner_pods():
    from elves.engine.models.spec import Runner
    runner = Runner.model_validate({
        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
        "nodeSelector": {"pool": "load"}, "tolerations": [{"key": "load", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"podAntiAffinity": {}}, "separate": True, "envFromSecrets": ["k6-script-secrets"]})
    testrun = manifests.testrun(OWNER, a_run(runner=runner), ("cm", "archive.tar"), "k6", [])
    spec = testrun["spec"]
    assert spec["separate"] is True
    assert spec["runner"]["resources"] == {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}
    assert spec["runner"]["nodeSelector"] == {"pool": "load"}
    assert spec["runner"]["tolerations"] == [{"key": "load", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["runner"]["affinity"] == {"podAntiAffinity": {}}
    assert spec["runner"]["envFrom"] == [{"secretRef": {"name": "k6-script-secrets"}}]
    # Without spec.runner: the default resources, runners may share a node.
    plain = manifests.testrun(OWNER, a_run(), ("cm", "archive.tar"), "k6", [])["spec"]
    assert plain["separate"] is False and plain["runner"]["resources"] == manifests.RUNNER_RESOURCES
    assert not {"nodeSelector", "envFrom"} & set(plain["runner"])


def test_the_testrun_fits_k6_operators_crd():
    """Every field written is one k6-operator v0.0.19's TestRun schema has (it would drop the others)."""
    import glob

    import yaml
    cache = cache_root()
    crds = glob.glob(f"{cache}/crds/k6-operator-*/k6.io_testruns.yaml")
    require(crds, "k6-operator's CRDs are not fetched (tools/fetch-crds.sh)")
    schema = yaml.safe_load(open(crds[0]))["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    from elves.engine.models.spec import Runner
    runner = Runner.model_validate({"resources": {"limits": {"memory": "1Gi"}}, "nodeSelector": {"a": "b"},
                                    "tolerations": [{}], "affinity": {}, "separate": True, "envFromSecrets": ["s"]})
    spec = manifests.testrun(OWNER, a_run(runner=runner), ("cm", "archive.tar"), "k6", [])["spec"]
    assert set(spec) <= set(schema["properties"])
    assert set(spec["runner"]) <= set(schema["properties"]["runner"]["properties"])


def test_credentials_reach_the_runners_only_through_the_runs_secret():
    run = a_run()
    secret = manifests.runner_secret(OWNER, run, RunnerValues.of(run, TARGETS))
    assert secret["metadata"]["name"] == "elves-case-3-2-runner" and secret["type"] == "Opaque"
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "1234-abcd", "deleted with the LoadTest"
    decoded = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert decoded == {"ELVES_TOKENS": "t1,t2", "ELVES_ADMIN_TOKEN": "admin", "ELVES_RUN_CREDENTIAL": "the-run-credential"}
    env = manifests.runner_pod_env(RunnerValues.of(run, TARGETS), secret["metadata"]["name"])
    testrun = manifests.testrun(OWNER, run, ("cm", "archive.tar"), "k6", env)
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in testrun["spec"]["runner"]["env"] if "valueFrom" in e}
    assert refs == {name: {"name": "elves-case-3-2-runner", "key": name} for name in decoded}
    text = json.dumps(testrun)
    assert "t1,t2" not in text and "the-service-key" not in text and "admin\"" not in text
    assert testrun["spec"]["arguments"].count("t1") == 0


def test_runner_pods_are_restricted_and_bounded():
    env = manifests.runner_pod_env(RunnerValues.of(a_run(), TARGETS), "s")
    runner = manifests.testrun(OWNER, a_run(), ("cm", "archive.tar"), "k6", env)["spec"]["runner"]
    assert runner["securityContext"]["runAsNonRoot"] is True
    assert runner["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = runner["containerSecurityContext"]
    assert container["allowPrivilegeEscalation"] is False and container["capabilities"] == {"drop": ["ALL"]}
    assert container["readOnlyRootFilesystem"] is True and runner["automountServiceAccountToken"] == "false"
    assert set(runner["resources"]) == {"requests", "limits"}
    # k6-operator's initializer takes these settings and writes /tmp/k6logs: /tmp is an emptyDir.
    tmp, = [m for m in runner["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert {"name": tmp["name"], "emptyDir": {"sizeLimit": "64Mi"}} in runner["volumes"]


def test_arguments_survive_k6_operators_split_on_single_spaces():
    for run in (a_run(), a_run(part="warmup")):
        arguments = manifests.k6_arguments(run)
        assert "  " not in arguments and all(arguments.split(" "))


def test_an_auto_warmup_is_a_testrun_of_its_own_with_its_own_secret_script_and_tag():
    warmup = a_run(part="warmup")
    env = manifests.runner_pod_env(RunnerValues.of(warmup, TARGETS), "s")
    testrun = manifests.testrun(OWNER, warmup, ("cm", "archive.tar"), "k6", env)
    load = manifests.testrun(OWNER, a_run(), ("cm", "archive.tar"), "k6", env)
    # The load's TestRun is created as soon as the warm-up's is deleted: never the same name.
    assert testrun["metadata"]["name"] == "elves-case-3-2-warmup" != load["metadata"]["name"]
    assert manifests.runner_secret(OWNER, warmup, RunnerValues.of(warmup, TARGETS))["metadata"]["name"] == "elves-case-3-2-warmup-runner"
    assert manifests.script_configmap(OWNER, 2, b"tar", "warmup")["metadata"]["name"] == "elves-case-3-2-warmup-script"
    # Its runners' counters start from 0 again: a tag keeps their series apart from the load's.
    assert testrun["spec"]["arguments"].endswith("--tag testid=team-a/case-3/2 --tag part=warmup")
    assert "part=" not in load["spec"]["arguments"]


def test_children_are_owned_by_the_loadtest_and_labelled_with_it():
    env = manifests.runner_pod_env(RunnerValues.of(a_run(), TARGETS), "s")
    for child in (manifests.testrun(OWNER, a_run(), ("cm", "archive.tar"), "k6", env),
                  manifests.runner_secret(OWNER, a_run(), RunnerValues.of(a_run(), TARGETS)),
                  manifests.script_configmap(OWNER, 2, b"tar")):
        meta = child["metadata"]
        assert meta["namespace"] == "team-a"
        assert meta["ownerReferences"] == [{"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "name": "case-3",
                                            "uid": "1234-abcd", "controller": True, "blockOwnerDeletion": True}]
        assert meta["labels"]["elves.dev/loadtest"] == "case-3"
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "elves-operator"
    testrun = manifests.testrun(OWNER, a_run(), ("cm", "archive.tar"), "k6", env)
    assert testrun["metadata"]["labels"]["elves.dev/run"] == "2"
    assert testrun["spec"]["runner"]["metadata"]["labels"]["elves.dev/loadtest"] == "case-3"
    assert testrun["metadata"]["annotations"]["elves.dev/test-id"] == "team-a/case-3/2"


def test_the_script_configmap_holds_the_archive_as_binary_data():
    configmap = manifests.script_configmap(OWNER, 2, b"\x00archive bytes\xff")
    assert configmap["metadata"]["name"] == "elves-case-3-2-script"
    assert base64.b64decode(configmap["binaryData"]["archive.tar"]) == b"\x00archive bytes\xff"


FINISHED = datetime(2026, 11, 23, 23, 30, 5, tzinfo=timezone.utc)


def test_the_report_configmap_holds_the_page_and_the_summary_and_outlives_the_loadtest():
    status = LoadTestStatus(phase="Failed", started_at=FINISHED, finished_at=FINISHED)
    status.summary.verdict = "Failed 3/4"
    configmap = manifests.report_configmap(LOADTEST, status, "<html>page</html>", json.dumps({"status": {}}))
    meta = configmap["metadata"]
    # Named by when the test ended: a LoadTest run again adds a report.
    assert meta["name"] == "elves-case-3-report-20261123-233005"
    assert configmap["data"] == {"report.html": "<html>page</html>", "summary.json": '{"status": {}}'}
    assert "ownerReferences" not in meta
    assert meta["labels"] == {"app.kubernetes.io/managed-by": "elves-operator", "elves.dev/loadtest": "case-3",
                              "elves.dev/report": "true"}
    assert meta["annotations"] == {"elves.dev/phase": "Failed", "elves.dev/verdict": "Failed 3/4",
                                   "elves.dev/finished-at": "2026-11-23T23:30:05+00:00"}


class ReportsKube:
    """The two calls report pruning makes, over a dict of ConfigMaps."""

    def __init__(self, configmaps):
        self.items = {c["metadata"]["name"]: c for c in configmaps}

    def configmaps(self, namespace, selector):
        wanted = dict(part.split("=") for part in selector.split(","))
        return [c for c in self.items.values() if all(c["metadata"]["labels"].get(k) == v for k, v in wanted.items())]

    def delete_configmap(self, namespace, name):
        return self.items.pop(name, None) is not None


def test_reports_are_pruned_to_the_newest_few_of_each_loadtest():
    from datetime import timedelta

    from elves.k8s.report import prune_reports, reports
    made = []
    for minutes in range(5):
        status = LoadTestStatus(phase="Succeeded", started_at=FINISHED, finished_at=FINISHED + timedelta(minutes=minutes))
        made.append(manifests.report_configmap(LOADTEST, status, "", "{}"))
    other = manifests.report_configmap({**LOADTEST, "metadata": {**LOADTEST["metadata"], "name": "other"}},
                                       LoadTestStatus(phase="Failed", started_at=FINISHED, finished_at=FINISHED), "", "{}")
    kube = ReportsKube([*made, other])
    deleted = prune_reports(kube, "team-a", "case-3", keep=2)
    assert deleted == [m["metadata"]["name"] for m in reversed(made[:3])]
    assert [c["metadata"]["name"] for c in reports(kube, "team-a", "case-3")] == \
        [m["metadata"]["name"] for m in reversed(made[3:])]
    assert other["metadata"]["name"] in kube.items  # another LoadTest's reports are its own


@pytest.mark.parametrize("loadtest", ["a", "9-starts-with-a-digit", "x" * 63, "case-" + "y" * 58])
def test_names_stay_valid_for_the_jobs_and_services_k6_operator_derives_from_them(loadtest):
    testrun = names.testrun_name(loadtest, 12)
    for derived in (f"{testrun}-initializer", f"{testrun}-starter", f"{testrun}-11", f"{testrun}-service-11"):
        assert len(derived) <= 63 and DNS_1035.match(derived), derived
    assert len(names.script_configmap_name(loadtest, 12)) <= 253
    assert len(names.report_configmap_name(loadtest, FINISHED)) <= 63
    assert names.testrun_name(loadtest, 12) == testrun  # deterministic: a retried create finds it
    warmup = names.testrun_name(loadtest, 12, "warmup")
    assert warmup != testrun and len(f"{warmup}-service-11") <= 63 and DNS_1035.match(f"{warmup}-service-11")


def test_long_names_keep_apart_when_their_prefixes_agree():
    first, second = "p" * 60 + "-a", "p" * 60 + "-b"
    assert names.testrun_name(first, 0) != names.testrun_name(second, 0)


def test_the_runner_variables_table_decides_what_the_secret_holds_and_what_the_testrun_shows():
    run = a_run()
    secret = manifests.runner_secret(OWNER, run, RunnerValues.of(run, TARGETS))
    env = manifests.runner_pod_env(RunnerValues.of(run, TARGETS), secret["metadata"]["name"])
    by_reference = {e["name"] for e in env if "valueFrom" in e}
    plain = {e["name"] for e in env if "value" in e}
    assert by_reference == set(secret["data"]) == {v.name for v in RUNNER_VARIABLES if v.secret}
    assert plain == {v.name for v in RUNNER_VARIABLES if not v.secret}
    assert [e["name"] for e in env] == [v.name for v in RUNNER_VARIABLES]


def test_a_runs_objects_are_named_by_its_index():
    testrun = manifests.testrun(OWNER, a_run(index=7, test_id="team-a/case-3/7"), ("cm", "archive.tar"), "k6", [])
    assert testrun["metadata"]["name"] == "elves-case-3-7"
    assert manifests.runner_secret(OWNER, a_run(index=7), RunnerValues.of(a_run(index=7), TARGETS))["metadata"]["name"] == "elves-case-3-7-runner"
