"""Scaling a deployment shows in the kube-state series Prometheus keeps."""


def test_scale_one_two_one_shows_in_kube_deployment_status_replicas(local_stack, restore_replicas):
    local_stack.supervisor.scale("ingestor", 1)
    local_stack.wait_ready()
    replicas = 'kube_deployment_status_replicas{namespace="elves",deployment="ingestor"}'
    ready = 'kube_deployment_status_replicas_ready{namespace="elves",deployment="ingestor"}'
    local_stack.wait_for(lambda: local_stack.value(replicas) == 1, 30, f"{replicas} == 1")

    local_stack.supervisor.scale("ingestor", 2)
    local_stack.wait_for(lambda: local_stack.value(replicas) == 2, 30, f"{replicas} == 2")
    local_stack.wait_for(lambda: local_stack.value(ready) == 2, 240, f"{ready} == 2 (the new JVM started)")
    targets = 'up{job="ingestor"}'
    local_stack.wait_for(lambda: len(local_stack.query(targets)) == 2, 30, "Prometheus to scrape both ingestors")

    local_stack.supervisor.scale("ingestor", 1)
    local_stack.wait_for(lambda: local_stack.value(replicas) == 1, 60, f"{replicas} back to 1")
    local_stack.wait_for(lambda: len(local_stack.pods("ingestor")) == 1, 60, "the second ingestor to stop")
