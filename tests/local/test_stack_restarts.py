"""A replica killed with SIGKILL comes back, and Prometheus shows the restart and its reason."""


def test_sigkilled_replica_is_restarted_and_prometheus_counts_it(exclusive_stack):
    stack = exclusive_stack
    pod = stack.pods("ingestor")[0]["pod"]
    restarts = f'kube_pod_container_status_restarts_total{{namespace="elves",pod="{pod}"}}'
    stack.wait_for(lambda: stack.value(restarts) is not None, f"Prometheus to scrape {restarts}", 30)
    before = stack.value(restarts)

    killed = stack.supervisor.kill("ingestor", pod)

    stack.wait_for(lambda: stack.value(restarts) == before + 1, f"{restarts} to reach {before + 1:g}", 60)
    reason = (f'kube_pod_container_status_last_terminated_reason'
              f'{{namespace="elves",pod="{pod}",container="ingestor",reason="Error"}}')
    stack.wait_for(lambda: stack.value(reason) == 1, f"{reason} in Prometheus", 30)
    back = stack.wait_for(lambda: [p for p in stack.pods("ingestor") if p["pod"] == pod and p["ready"]],
                    f"{pod} to be ready again", 180)[0]
    assert back["pid"] != killed["pid"]
    assert back["lastExitCode"] == 137  # 128 + SIGKILL, as a container runtime reports it
