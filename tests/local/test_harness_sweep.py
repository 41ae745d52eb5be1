"""A sweep over the ingestor's replicas, [1, 2], against the real local stack: two runs,
each with its own test id and results, and the sweep table with the scaling figures."""

from __future__ import annotations

from test_harness_kit import loadtest, run_elves


def test_a_sweep_over_ingestor_replicas_gives_two_runs_and_the_table(local_stack, tmp_path):
    local_stack.wait_ready()
    before = local_stack.supervisor.state()["deployments"]["ingestor"]["replicas"]
    run = run_elves(tmp_path, loadtest("sweep-ingestors", {
        "load": {"scenario": "system-mix", "rate": "90/min", "duration": "30s", "users": 3},
        "sweep": {"system.replicas.ingestor": [1, 2]},
        "drain": {"timeout": "2m"},
    }))
    assert run.exit_code == 0, run.output
    runs = run.status["runs"]
    assert [r["testId"] for r in runs] == ["local/sweep-ingestors/0", "local/sweep-ingestors/1"]
    assert [r["point"] for r in runs] == [{"system.replicas.ingestor": 1}, {"system.replicas.ingestor": 2}]
    # Each run ran with the replicas of its point.
    assert [r["results"]["deployments"]["ingestor"]["replicasMax"] for r in runs] == [1, 2]
    table = run.status["sweep"]
    assert [row["point"]["system.replicas.ingestor"] for row in table] == [1, 2]
    assert table[0]["speedup"] == 1 and table[0]["efficiency"] == 1
    assert table[1]["throughput"] > 0 and table[1]["efficiency"] is not None
    assert "efficiency" in run.output and "Sweep" in (run.report_dir / "report.html").read_text()
    # The system is back as it was.
    local_stack.wait_ready()
    assert local_stack.supervisor.state()["deployments"]["ingestor"]["replicas"] == before
