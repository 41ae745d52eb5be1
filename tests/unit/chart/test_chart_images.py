"""Tier 1: every image the chart runs, lists or defaults to is pinned to a patch release.

What a user would notice if one floated: two installs of the same chart version running
different brokers or databases (a `3.13-management` or `15` tag moves with every upstream
release), so a result cannot be reproduced and a fix cannot be told from a drift.
"""

from __future__ import annotations

import re

import pytest
import yaml

from chart_testkit import CHART, CI_VALUES, pod_specs, render

# A full version at the start of the tag (a flavour may follow: -management, -bookworm).
# PostgreSQL numbers its patch releases major.minor since version 10.
PATCH_TAG = re.compile(r"^v?\d+\.\d+\.\d+(?![.\d])")
TWO_PART_VERSIONS = {"postgres": re.compile(r"^\d+\.\d+(?![.\d])")}
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def floating(image: str) -> bool:
    """Whether an image reference names no exact release: neither a digest nor a patch-level tag."""
    if DIGEST.search(image):
        return False
    name, _, tag = image.rpartition("/")[2].partition(":")
    return not (PATCH_TAG.match(tag) or (name in TWO_PART_VERSIONS and TWO_PART_VERSIONS[name].match(tag)))


@pytest.mark.parametrize("image", ["rabbitmq:3.13-management", "postgres:15", "postgres:latest", "elves-gateway",
                                   "grafana/k6:1.8", "registry.example/team/tool:v2.1"])
def test_floating_references_are_told_apart(image):
    assert floating(image)


@pytest.mark.parametrize("image", ["rabbitmq:3.13.7-management", "postgres:15.14-bookworm", "grafana/k6:1.8.1",
                                   "registry.example/team/tool:v2.1.0", "tool@sha256:" + "a" * 64])
def test_pinned_references_are_told_apart(image):
    assert not floating(image)


@pytest.mark.parametrize("values_file", [None, *CI_VALUES], ids=lambda p: p.stem if p else "defaults")
def test_every_rendered_image_is_pinned(helm, values_file):
    images = {c["image"] for _, spec in pod_specs(render(helm, values_file))
              for c in spec.get("initContainers", []) + spec["containers"]}
    assert images and {i for i in images if floating(i)} == set()


def test_every_image_the_chart_lists_or_defaults_to_is_pinned():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    listed = {i["image"] for i in yaml.safe_load(chart["annotations"]["artifacthub.io/images"])}
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    maps = [values["rabbitmq"]["image"], values["postgresql"]["image"], values["operator"]["image"],
            *(service["image"] for service in values["services"].values())]
    defaults = {f"{m['repository']}:{m['tag'] or chart['appVersion']}" for m in maps}
    from elves.k8s.settings import DEFAULT_K6_IMAGE  # what the operator gives TestRuns' runners
    assert {i for i in listed | defaults | {DEFAULT_K6_IMAGE} if floating(i)} == set()
