#!/usr/bin/env bash
# A throwaway Kubernetes API server (etcd + kube-apiserver on 127.0.0.1) for people, the
# same one the API-server test tier starts, with the upstream CRDs the project uses
# installed (ServiceMonitor, PodMonitor, PrometheusRule, TestRun, PrivateLoadZone).
#
#   tools/apiserver.sh start     start it (builds nothing: run tools/build-kubernetes.sh
#                                and tools/fetch-crds.sh first); prints `export KUBECONFIG=...`
#   eval "$(tools/apiserver.sh env)"   point kubectl at it
#   tools/apiserver.sh stop      stop it (by the PIDs it recorded)
#
# Settings (environment):
#   ELVES_APISERVER_DIR   state directory: certificates, logs, kubeconfig, PIDs
#                         (default /tmp/elves-apiserver)
#   ELVES_CACHE           where the built binaries and CRDs are (default $HOME/.cache/elves)
set -Eeuo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=$repo/.venv/bin/python
[[ -x $python ]] || python=python3

exec "$python" "$repo/tests/apiserver/control_plane.py" "$@"
