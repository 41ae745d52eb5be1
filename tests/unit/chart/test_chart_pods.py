"""Tier 1: the pods the chart makes: the restricted Pod Security Standard, requests, limits,
probes, pinned images, and a shutdown that drops no request.

What a user would notice if these broke: a pod refused by a `restricted` namespace, a pod
without limits or probes, an image floating on `latest`, plots starving the HTTP path of
CPU, or a Deployment that fails requests during a rolling restart.
"""

from __future__ import annotations

from chart_testkit import SERVICES, ci_values, env_of, is_hook, named, pod_specs, render


# Volume types the restricted Pod Security Standard allows.
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}


@ci_values
def test_every_pod_meets_the_restricted_profile(helm, values_file):
    problems = []
    for obj, spec in pod_specs(render(helm, values_file)):
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        pod_context = spec.get("securityContext") or {}
        if pod_context.get("runAsNonRoot") is not True:
            problems.append(f"{where}: runAsNonRoot is not true")
        if (pod_context.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
            problems.append(f"{where}: seccompProfile is not RuntimeDefault")
        if pod_context.get("runAsUser") == 0:
            problems.append(f"{where}: runs as root")
        for flag in ("hostNetwork", "hostPID", "hostIPC"):
            if spec.get(flag):
                problems.append(f"{where}: {flag}")
        for volume in spec.get("volumes", []):
            kinds = set(volume) - {"name"}
            if not kinds <= RESTRICTED_VOLUMES:
                problems.append(f"{where}: volume {volume['name']} of type {kinds}")
        for container in spec.get("initContainers", []) + spec["containers"]:
            cwhere = f"{where}/{container['name']}"
            context = container.get("securityContext") or {}
            if context.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{cwhere}: allowPrivilegeEscalation is not false")
            if context.get("privileged"):
                problems.append(f"{cwhere}: privileged")
            if (context.get("capabilities") or {}).get("drop") != ["ALL"]:
                problems.append(f"{cwhere}: capabilities do not drop ALL")
            if set((context.get("capabilities") or {}).get("add") or []) - {"NET_BIND_SERVICE"}:
                problems.append(f"{cwhere}: adds capabilities")
            if context.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{cwhere}: root filesystem is writable")
            if context.get("runAsUser") == 0:
                problems.append(f"{cwhere}: runs as root")
            if any(port.get("hostPort") for port in container.get("ports", [])):
                problems.append(f"{cwhere}: hostPort")
    assert problems == []


def test_the_ingestor_asks_for_less_cpu_than_the_synchronous_services(helm):
    # cpu.weight follows the request: under contention the plots yield to the HTTP path.
    def millicores(quantity: str) -> float:
        return float(quantity[:-1]) if quantity.endswith("m") else 1000 * float(quantity)
    requested = {obj["metadata"]["labels"]["app.kubernetes.io/component"]:
                 millicores(spec["containers"][0]["resources"]["requests"]["cpu"])
                 for obj, spec in pod_specs(render(helm)) if obj["kind"] == "Deployment"}
    assert requested["ingestor"] * 4 <= min(requested["gateway"], requested["registry"]), requested


@ci_values
def test_every_container_has_requests_limits_probes_and_a_pinned_image(helm, values_file):
    problems = []
    for obj, spec in pod_specs(render(helm, values_file)):
        for container in spec.get("initContainers", []) + spec["containers"]:
            where = f"{obj['kind']}/{obj['metadata']['name']}/{container['name']}"
            resources = container.get("resources") or {}
            for section in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    if not (resources.get(section) or {}).get(resource):
                        problems.append(f"{where}: no {section}.{resource}")
            # A helm test pod and an init container run to completion: nothing to probe.
            if not is_hook(obj) and container not in spec.get("initContainers", []):
                for probe in ("readinessProbe", "livenessProbe"):
                    if probe not in container:
                        problems.append(f"{where}: no {probe}")
            image = container["image"]
            tag = image.rsplit("/", 1)[-1].partition(":")[2]
            if not tag or tag == "latest":
                problems.append(f"{where}: image {image} is not pinned to a tag")
            if container.get("imagePullPolicy") != "IfNotPresent":
                problems.append(f"{where}: imagePullPolicy {container.get('imagePullPolicy')}")
    assert problems == []


def test_services_shut_down_gracefully_within_their_grace_period(helm):
    objects = render(helm)
    for name in SERVICES:
        spec = named(objects, "Deployment", name)["spec"]["template"]["spec"]
        container = spec["containers"][0]
        pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        env = env_of(container)
        assert env["SERVER_SHUTDOWN"]["value"] == "graceful"
        spring_budget = int(env["SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE"]["value"].rstrip("s"))
        drain = int(env.get("ELVES_SHUTDOWN_DRAIN", {"value": "0s"})["value"].rstrip("s"))
        assert spec["terminationGracePeriodSeconds"] > pre_stop + drain + spring_budget, name
        for probe, path in (("readinessProbe", "/actuator/health/readiness"),
                            ("livenessProbe", "/actuator/health/liveness")):
            assert container[probe]["httpGet"] == {"path": path, "port": "management"}, (name, probe)
    for name in ("gateway", "registry"):
        # Clients keep their connections to a pod after it leaves the endpoints, and a paused
        # Tomcat answers 503 on them: during the preStop sleep Tomcat ends each busy one after
        # so many requests (Connection: close), so a rolling restart fails no request. No idle
        # timeout below Tomcat's own: closing an idle connection races with the next request.
        container = named(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]
        env = env_of(container)
        assert "SERVER_TOMCAT_KEEPALIVETIMEOUT" not in env, name
        requests = int(env["SERVER_TOMCAT_MAXKEEPALIVEREQUESTS"]["value"])
        pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        assert requests / pre_stop <= 0.5, (name, requests, pre_stop)  # connections busier than this move
        assert env["ELVES_SHUTDOWN_DRAIN"]["value"] == "5s", name  # and quieter ones after SIGTERM
    # Values of a release made before the setting (helm upgrade --reuse-values) still render: Tomcat's own.
    older = render(helm, None, *(f"services.{name}.shutdown.keepAliveRequests=null" for name in SERVICES))
    for name in SERVICES:
        container = named(older, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]
        assert "SERVER_TOMCAT_MAXKEEPALIVEREQUESTS" not in env_of(container), name
    for name in ("rabbitmq", "postgres"):
        assert named(objects, "StatefulSet", name)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 30
    assert "pg_ctl stop" in " ".join(
        named(objects, "StatefulSet", "postgres")["spec"]["template"]["spec"]["containers"][0]
        ["lifecycle"]["preStop"]["exec"]["command"])
