"""One k6 run's figures and the CPU each process of the stack used during it, as one JSON line,
for the bench scripts that run k6 themselves (bench/local-proxy.sh, bench/registry-reads.sh).

    python3 bench/k6_run_figures.py SUMMARY.json BEFORE AFTER
    {"p50": 0.4, "p99": 1.9, "requests": 9001, "failed": 0.0, "dropped": 0, "failures": {"503": 12},
     "cpu": {"registry": 2.7, ...}}

SUMMARY is k6's --summary-export (with --summary-trend-stats "p(50),p(99),max"); BEFORE and
AFTER are bench/proc_cpu.py's readings around the run.
"""

import json
import sys


def figures(summary: dict, before: dict, after: dict) -> dict:
    metrics = summary["metrics"]
    duration = metrics["http_req_duration"]
    return {"p50": duration["p(50)"], "p99": duration["p(99)"], "requests": metrics["http_reqs"]["count"],
            "failed": metrics["http_req_failed"].get("value", 0),
            "dropped": metrics.get("dropped_iterations", {}).get("count", 0),
            # bench/k6/steady-rate.js counts each failed answer by its status (0: none came).
            "failures": {name.removeprefix("failed_status_"): m["count"] for name, m in sorted(metrics.items())
                         if name.startswith("failed_status_") and m.get("count")},
            "cpu": {name: after[name] - before[name] for name in after if name in before}}


if __name__ == "__main__":
    with open(sys.argv[1]) as summary:
        print(json.dumps(figures(json.load(summary), json.loads(sys.argv[2]), json.loads(sys.argv[3]))))
