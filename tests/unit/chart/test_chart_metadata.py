"""Tier 1: Chart.yaml's metadata (Artifact Hub): home, sources, licence, the CRD and its
example, and every image the chart runs.
"""

from __future__ import annotations

import yaml

from chart_testkit import CHART, REPO, pod_specs, render


def _chart_metadata() -> dict:
    return yaml.safe_load((CHART / "Chart.yaml").read_text())


def test_chart_names_its_home_sources_and_licence():
    chart = _chart_metadata()
    assert chart["home"].startswith("https://") and chart["home"] in chart["sources"]
    assert chart["annotations"]["artifacthub.io/license"] == "Apache-2.0"
    assert "Apache License" in (REPO / "LICENSE").read_text() and "Version 2.0" in (REPO / "LICENSE").read_text()
    for key in ("crds", "crdsExamples", "images", "license", "links", "changes"):
        assert f"artifacthub.io/{key}" in chart["annotations"], key
    links = yaml.safe_load(chart["annotations"]["artifacthub.io/links"])
    changes = yaml.safe_load(chart["annotations"]["artifacthub.io/changes"])
    assert all(link["url"].startswith("https://") for link in links)
    assert changes and all(c["kind"] in {"added", "changed", "deprecated", "removed", "fixed", "security"}
                           for c in changes)


def test_chart_crd_annotations_match_the_crd_and_the_quickstart():
    annotations = _chart_metadata()["annotations"]
    crds = yaml.safe_load(annotations["artifacthub.io/crds"])
    shipped = [yaml.safe_load(p.read_text()) for p in sorted((CHART / "crds").glob("*.yaml"))]
    assert [(c["name"], c["kind"], c["version"]) for c in crds] == [
        (d["metadata"]["name"], d["spec"]["names"]["kind"], v["name"])
        for d in shipped for v in d["spec"]["versions"] if v.get("storage")]
    examples = yaml.safe_load(annotations["artifacthub.io/crdsExamples"])
    assert examples == [yaml.safe_load((REPO / "loadtests" / "examples" / "quickstart.yaml").read_text())]


def test_chart_image_annotation_lists_every_image_it_runs(helm):
    listed = {i["image"] for i in yaml.safe_load(_chart_metadata()["annotations"]["artifacthub.io/images"])}
    rendered = {c["image"] for _, spec in pod_specs(render(helm))
                for c in spec.get("initContainers", []) + spec["containers"]}
    from elves.k8s.settings import DEFAULT_K6_IMAGE  # what the operator gives TestRuns' runners
    assert listed == rendered | {DEFAULT_K6_IMAGE}
