"""The kill matrix and the rolling restart against the real local stack, run from the
example files themselves (shortened with the suite's scaling, faults where the examples put
them): every part of the system dies under load and nothing is lost or persisted twice;
each service restarted on purpose under load costs not one failed request.

Each test asserts the example's own objectives (the verdict a user of the example gets) and
the ledger's equalities behind "0 lost, 0 duplicated" (the same as tier 4's)."""

from __future__ import annotations

from ledger_checks import assert_nothing_lost_or_persisted_twice
from test_harness_kit import ElvesRun, example, run_elves

# Two minutes of the examples' four: the same faults in the same order, closer together.
LOAD = "2m"


def missed(run: ElvesRun) -> list[str]:
    return [f"{c['name']} observed {c['observed']} (wanted {c['target']}) {c.get('detail') or ''}".strip()
            for c in run.status["verdict"]["checks"] if not c["ok"]]


def test_the_kill_matrix_loses_nothing_and_every_replica_is_back_within_a_minute(local_stack, tmp_path):
    local_stack.wait_ready()
    document = example("kill-matrix.yaml", LOAD)
    run = run_elves(tmp_path, document)
    assert run.report_dir is not None, run.output
    # The example's objectives: lost 0 both ways, each service's replicas killed twice and
    # restarted, no deployment below its desired ready replicas for 60 s, drained in 2 min.
    assert missed(run) == [], run.output
    assert_nothing_lost_or_persisted_twice(run.run_results())
    fired = [f["label"] for f in run.status["runs"][0]["faults"]]
    assert len(fired) == len(document["spec"]["faults"]) == 8, fired
    results = run.run_results()
    # Back to baseline: every queue empty, the dead-letter queues too (reset emptied them first).
    assert {q: v["final"] for q, v in results["queues"].items() if v["final"]} == {}, results["queues"]


def test_a_rolling_restart_of_every_service_fails_not_one_request(local_stack, tmp_path):
    local_stack.wait_ready()
    generations = {name: d["generation"] for name, d in local_stack.supervisor.state()["deployments"].items()}
    run = run_elves(tmp_path, example("rolling-restart.yaml", LOAD))
    assert run.report_dir is not None, run.output
    after = {name: d["generation"] for name, d in local_stack.supervisor.state()["deployments"].items()}
    assert all(after[name] > generations[name] for name in generations), (generations, after)  # all rolled
    # The example's objectives: http_req_failed_rate == 0, lost 0 both ways, drained.
    assert missed(run) == [], run.output
    assert_nothing_lost_or_persisted_twice(run.run_results())
    ledger = run.run_results()["ledger"]
    # Not one failure, so not one row beyond what k6 was answered.
    assert run.run_results()["total"]["failed"] == 0, run.output
    assert (ledger["requestsPersisted"], ledger["logsPersisted"]) == (ledger["requestsAccepted"], ledger["logsExpected"])
