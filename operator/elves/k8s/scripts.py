"""What a cluster's k6 runners run: the key of the LoadTest's ConfigMap as it is, or a built-in
scenario packed with its lib into a `k6 archive` ConfigMap of the run (elves.k8s.archive); and
that script's content, for the plan a report records (Platform.script_content)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from elves.engine.planning.k6 import RunnerValues
from elves.engine.planning.platform import LoadRun, RunScript, ScriptConfigMap, file_content
from elves.k8s import archive, manifests, names
from elves.k8s.kube import Kube, NotOurs


class LoadError(RuntimeError):
    """The load cannot be started; the message says what to fix."""


def _keys(configmap: dict[str, Any]) -> dict[str, str]:
    """A ConfigMap's keys: text ones as they are, binary ones base64-encoded."""
    return {**(configmap.get("binaryData") or {}), **(configmap.get("data") or {})}


def runner_script(kube: Kube, k6_binary: str, owner: names.Owner, run: LoadRun,
                  values: RunnerValues) -> tuple[str, str]:
    """(ConfigMap, key) holding what the runners execute; a built-in scenario's archive ConfigMap
    is made here, with the run's archived variables baked in."""
    if isinstance(run.script, ScriptConfigMap):
        name, key = run.script.name, run.script.file
        configmap = kube.configmap(owner.namespace, name)
        if configmap is None:
            raise LoadError(f"spec.load.script.configMap: ConfigMap {name} not found in namespace {owner.namespace}")
        if key not in (keys := _keys(configmap)):
            raise LoadError(f"spec.load.script.configMap.file: ConfigMap {name} has no key {key} "
                            f"(it has: {', '.join(sorted(keys)) or 'nothing'})")
        return name, key
    try:
        packed = archive.pack(k6_binary, Path(run.script.path), values.archived())
    except archive.ArchiveError as exc:
        raise LoadError(str(exc)) from None
    try:
        kube.apply_configmap(manifests.script_configmap(owner, run.index, packed, run.part))
    except NotOurs as exc:
        raise LoadError(str(exc)) from None
    return names.script_configmap_name(owner.name, run.index, run.part), names.SCRIPT_KEY


def script_content(kube: Kube, namespace: str, script: RunScript) -> tuple[str, bytes] | None:
    """A built-in scenario from the operator's image (the runners run the same), or the key of
    the LoadTest's ConfigMap in `namespace` as it is now (None: not there)."""
    if not isinstance(script, ScriptConfigMap):
        return file_content(script)
    configmap = kube.configmap(namespace, script.name) or {}
    text = (configmap.get("data") or {}).get(script.file)
    packed = (configmap.get("binaryData") or {}).get(script.file)
    content = text.encode() if text is not None else base64.b64decode(packed) if packed is not None else None
    return (script.file, content) if content is not None else None
