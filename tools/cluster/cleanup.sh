#!/usr/bin/env bash
# Removes from the current kube context what tools/cluster/deploy.sh installed (what
# `./cleanup.sh` runs).
#
#   tools/cluster/cleanup.sh [options]
#
# In order, each step skipped when there is nothing to remove (so a second run, or a run
# on a cluster without Elves, does nothing and exits 0):
#   1. every LoadTest in every namespace, waiting until the operator has let each one go:
#      its finalizer aborts the test and restores the replicas the test changed;
#   2. the elves release, then the LoadTest and SystemUnderTest CRDs (Helm never deletes CRDs from crds/), then
#      the elves namespace (with the Secret and the volumes Helm keeps);
#   3. the KEDA and metrics-server releases (deploy.sh --with-keda, --with-metrics-server),
#      the k6-operator and kube-prometheus-stack releases, their namespaces (never
#      kube-system) and the prometheus-operator CRDs, but only those deploy.sh installed (they
#      carry the label elves.dev/installed-by=deployments.sh); anything else is left as it is.
#
# Options:
#   --skip-monitoring    keep kube-prometheus-stack even if deploy.sh installed it
#   --skip-k6-operator   keep k6-operator even if deploy.sh installed it
#   --force              do not wait for the operator (it is gone or stuck): the LoadTests
#                        lose their finalizers at once; what they changed is not restored
#   -h, --help           this text
#
# Settings (environment):
#   ELVES_NAMESPACE              namespace of the elves release (default: elves)
#   ELVES_RELEASE                name of the elves release (default: elves)
#   ELVES_TIMEOUT                deadline of each wait (default: 10m)
#   ELVES_SKIP_MONITORING        1: as --skip-monitoring (default: 0)
#   ELVES_SKIP_K6_OPERATOR       1: as --skip-k6-operator (default: 0)
#   ELVES_MONITORING_NAMESPACE   namespace of kube-prometheus-stack (default: monitoring)
#   ELVES_MONITORING_RELEASE     its Helm release (default: kube-prometheus-stack)
#   ELVES_K6_OPERATOR_NAMESPACE  namespace of k6-operator (default: k6-operator-system)
#   ELVES_K6_OPERATOR_RELEASE    its Helm release (default: k6-operator)
#   ELVES_KEDA_NAMESPACE         namespace of KEDA (default: keda)
#   ELVES_CACHE                  built tools (default: $HOME/.cache/elves)
#   ELVES_HELM                   helm binary (default: $ELVES_CACHE/bin/helm, else helm on PATH)
#   ELVES_KUBECTL                kubectl binary (default: kubectl on PATH)
#   KUBECONFIG                   as for kubectl: the cluster is its current context
set -Eeuo pipefail

# shellcheck disable=SC2034 # read by common.sh
readonly SCRIPT_NAME=cleanup
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Namespaces that are never deleted, even when the release was installed there.
readonly SYSTEM_NAMESPACES=" default kube-system kube-public kube-node-lease "

SKIP_MONITORING="${ELVES_SKIP_MONITORING:-0}"
SKIP_K6_OPERATOR="${ELVES_SKIP_K6_OPERATOR:-0}"
FORCE=0
# Set once something was removed; a run that removed nothing says so in one line.
REMOVED=0

parse_args() {
  while (($#)); do
    case "$1" in
      --skip-monitoring) SKIP_MONITORING=1 ;;
      --skip-k6-operator) SKIP_K6_OPERATOR=1 ;;
      --force) FORCE=1 ;;
      -h|--help) usage; exit 0 ;;
      *) die "unknown argument: $1 (see --help)" ;;
    esac
    shift
  done
}

# LoadTests left in the cluster, as namespace/name lines.
remaining_loadtests() {
  kube get "${CRD}" --all-namespaces --ignore-not-found \
    -o 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}'
}

# Drops the finalizers of LoadTests $@ (--force) and waits until they are gone.
release_loadtests() {
  local loadtest
  for loadtest in "$@"; do
    warn "removing the finalizers of LoadTest ${loadtest}: what it changed is not restored"
    kube patch "${CRD}" "${loadtest#*/}" --namespace "${loadtest%%/*}" --type=merge \
      -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
  done
  kube wait --for=delete "${CRD}" --all --all-namespaces --timeout="${TIMEOUT}" >/dev/null 2>&1 || true
}

delete_loadtests() {
  local -a loadtests
  crd_exists "${CRD}" || return 0
  mapfile -t loadtests < <(remaining_loadtests)
  ((${#loadtests[@]})) || return 0
  REMOVED=1
  log "deleting ${#loadtests[@]} LoadTest(s); the operator aborts them and restores what they changed"
  kube delete "${CRD}" --all --all-namespaces --wait=false >/dev/null
  if [[ ${FORCE} != 1 ]]; then
    # `kubectl wait` fails when they are all gone before it starts: the list below decides.
    kube wait --for=delete "${CRD}" --all --all-namespaces --timeout="${TIMEOUT}" >/dev/null 2>&1 || true
  fi
  mapfile -t loadtests < <(remaining_loadtests)
  ((${#loadtests[@]})) || return 0
  if [[ ${FORCE} == 1 ]]; then
    release_loadtests "${loadtests[@]}"
    return
  fi
  die "LoadTests still held by their finalizer after ${TIMEOUT}: ${loadtests[*]}. The operator lets them go once it has restored what they changed: is it running? (kubectl -n ${NAMESPACE} get pods). Run again with --force to drop the finalizers (changed replicas are then not restored)"
}

# Uninstalls release $1 from namespace $2 when it exists.
uninstall() {
  release_exists "$1" "$2" || return 0
  REMOVED=1
  log "uninstalling release $2/$1"
  helm_ uninstall "$1" --namespace "$2" --wait --timeout "${TIMEOUT}" >/dev/null
}

# Deletes namespace $1 when it exists, waiting until it is gone.
delete_namespace() {
  kube get namespace "$1" >/dev/null 2>&1 || return 0
  REMOVED=1
  log "deleting namespace $1"
  kube delete namespace "$1" --timeout="${TIMEOUT}" >/dev/null \
    || die "namespace $1 is not gone after ${TIMEOUT}: kubectl get namespace $1 -o yaml (status.conditions) says what holds it"
}

remove_elves() {
  uninstall "${RELEASE}" "${NAMESPACE}"
  local crd
  for crd in "${CHART_CRDS[@]}"; do
    crd_exists "${crd}" || continue
    REMOVED=1
    log "deleting the CRD ${crd}"
    kube delete crd "${crd}" --timeout="${TIMEOUT}" >/dev/null
  done
  if [[ ${SYSTEM_NAMESPACES} == *" ${NAMESPACE} "* ]]; then
    kube get namespace "${NAMESPACE}" >/dev/null 2>&1 && log "namespace ${NAMESPACE} is a system namespace: kept"
    return 0
  fi
  delete_namespace "${NAMESPACE}"
}

# Removes upstream release $1 from namespace $2 (and the namespace) if deploy.sh installed it.
remove_upstream() {
  local release="$1" namespace="$2"
  if release_exists "${release}" "${namespace}"; then
    if ! release_is_ours "${release}" "${namespace}"; then
      log "release ${namespace}/${release} was not installed by deployments.sh: left as it is"
      return
    fi
    uninstall "${release}" "${namespace}"
  fi
  if namespace_is_ours "${namespace}"; then
    delete_namespace "${namespace}"
  fi
}

# The prometheus-operator CRDs deploy.sh's kube-prometheus-stack install brought.
remove_labelled_crds() {
  local crds
  crds="$(kube get crds --selector "${INSTALLED_BY_KEY}=${INSTALLED_BY_VALUE}" --output name)"
  [[ -n ${crds} ]] || return 0
  REMOVED=1
  log "deleting the CRDs kube-prometheus-stack brought: ${crds//customresourcedefinition.apiextensions.k8s.io\//}"
  # shellcheck disable=SC2086 # one name per word
  kube delete ${crds} --timeout="${TIMEOUT}" >/dev/null
}

main() {
  parse_args "$@"
  check_timeout
  find_kubectl
  check_cluster
  find_helm || die "helm not found (set ELVES_HELM, put helm on PATH, or run tools/install-helm.sh)"
  delete_loadtests
  remove_elves
  # After the elves release: its ScaledObjects need KEDA to let their finalizers go.
  remove_upstream "${KEDA_RELEASE}" "${KEDA_NAMESPACE}"
  remove_upstream "${METRICS_SERVER_RELEASE}" "${METRICS_SERVER_NAMESPACE}"
  if [[ ${SKIP_K6_OPERATOR} != 1 ]]; then
    remove_upstream "${K6_OPERATOR_RELEASE}" "${K6_OPERATOR_NAMESPACE}"
  fi
  if [[ ${SKIP_MONITORING} != 1 ]]; then
    remove_upstream "${MONITORING_RELEASE}" "${MONITORING_NAMESPACE}"
    # Left behind when the monitoring namespace was there before deploy.sh.
    kube delete secret --namespace "${MONITORING_NAMESPACE}" --ignore-not-found \
      --field-selector "metadata.name=${GRAFANA_ADMIN_SECRET}" \
      --selector "${INSTALLED_BY_KEY}=${INSTALLED_BY_VALUE}" >/dev/null 2>&1 || true
    remove_labelled_crds
  fi
  if [[ ${REMOVED} == 0 ]]; then
    log "nothing of Elves is installed in context ${CONTEXT}"
  else
    log "done"
  fi
}

main "$@"
