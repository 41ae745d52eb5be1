"""Scaling a deployment shows in the kube-state series Prometheus keeps."""


def test_scale_one_two_one_shows_in_kube_deployment_status_replicas(exclusive_stack, restore_replicas):
    stack = exclusive_stack
    stack.supervisor.scale("ingestor", 1)
    stack.wait_ready()
    replicas = 'kube_deployment_status_replicas{namespace="elves",deployment="ingestor"}'
    ready = 'kube_deployment_status_replicas_ready{namespace="elves",deployment="ingestor"}'
    stack.wait_for(lambda: stack.value(replicas) == 1, f"{replicas} == 1", 30)

    stack.supervisor.scale("ingestor", 2)
    stack.wait_for(lambda: stack.value(replicas) == 2, f"{replicas} == 2", 30)
    stack.wait_for(lambda: stack.value(ready) == 2, f"{ready} == 2 (the new JVM started)", 240)
    targets = 'up{job="ingestor"}'
    stack.wait_for(lambda: len(stack.query(targets)) == 2, "Prometheus to scrape both ingestors", 30)

    stack.supervisor.scale("ingestor", 1)
    stack.wait_for(lambda: stack.value(replicas) == 1, f"{replicas} back to 1", 60)
    stack.wait_for(lambda: len(stack.pods("ingestor")) == 1, "the second ingestor to stop", 60)
