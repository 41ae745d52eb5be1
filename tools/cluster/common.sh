# Shared by tools/cluster/deploy.sh and tools/cluster/cleanup.sh (sourced, not run): the
# settings both read (each script's --help lists them), the kubectl and helm they use,
# logging (tools/lib/log.sh), and the check that the current kube context answers.
# The sourcing script sets SCRIPT_NAME first (the prefix of its messages).

# shellcheck shell=bash disable=SC2034 # the settings are read by the sourcing script
CLUSTER_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "${CLUSTER_DIR}/../.." && pwd)"
readonly CLUSTER_DIR REPO_DIR
# shellcheck source=versions.env
source "${CLUSTER_DIR}/versions.env"
# load_facts: SYSTEM_DEPLOYMENTS and the rest from the Python.
# shellcheck source=../facts.sh
source "${CLUSTER_DIR}/../facts.sh"

readonly NAMESPACE="${ELVES_NAMESPACE:-elves}"
readonly RELEASE="${ELVES_RELEASE:-elves}"
readonly MONITORING_NAMESPACE="${ELVES_MONITORING_NAMESPACE:-monitoring}"
readonly MONITORING_RELEASE="${ELVES_MONITORING_RELEASE:-kube-prometheus-stack}"
readonly K6_OPERATOR_NAMESPACE="${ELVES_K6_OPERATOR_NAMESPACE:-k6-operator-system}"
readonly K6_OPERATOR_RELEASE="${ELVES_K6_OPERATOR_RELEASE:-k6-operator}"
readonly KEDA_NAMESPACE="${ELVES_KEDA_NAMESPACE:-keda}"
readonly KEDA_RELEASE=keda
# metrics-server serves a cluster-wide API: kube-system, as its chart's documentation installs it.
readonly METRICS_SERVER_NAMESPACE=kube-system
readonly METRICS_SERVER_RELEASE=metrics-server
readonly TIMEOUT="${ELVES_TIMEOUT:-10m}"
# shellcheck source=../lib/cache-root.sh
source "${CLUSTER_DIR}/../lib/cache-root.sh"
readonly CACHE="${ELVES_CACHE}"

readonly CRD=loadtests.elves.dev
# Every CRD of charts/elves/crds/ (applied by deploy.sh before the chart, which renders a
# SystemUnderTest; deleted by cleanup.sh, as Helm never deletes them).
readonly CHART_CRDS=("${CRD}" systemundertests.elves.dev)
# Grafana's admin credentials in the monitoring namespace: deploy.sh generates them once and
# kube-prometheus-stack's Grafana reads them (grafana.admin.existingSecret in
# kube-prometheus-stack-values.yaml); the operator gets a copy for its annotations.
readonly GRAFANA_ADMIN_SECRET=elves-grafana-admin
# Helm release label on what deploy.sh installs from upstream, so cleanup.sh removes
# kube-prometheus-stack and k6-operator only when this script put them there.
readonly INSTALLED_BY_KEY=elves.dev/installed-by
readonly INSTALLED_BY_VALUE=deployments.sh

# shellcheck source=../lib/log.sh
source "${CLUSTER_DIR}/../lib/log.sh"

# The header comment of the calling script (its first comment block) as help text.
usage() {
  sed -n '2,/^set -E/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

# Fails with the reason unless ELVES_TIMEOUT is a Go duration (90s, 10m, 1h30m), the
# form helm --timeout and kubectl --timeout both take.
check_timeout() {
  [[ ${TIMEOUT} =~ ^([0-9]+(ms|s|m|h))+$ ]] || die "ELVES_TIMEOUT=${TIMEOUT} is not a duration such as 600s or 10m"
}

# The whole seconds in a Go duration (check_timeout accepted it), rounded up.
seconds_of() {
  local rest="$1" total=0 number
  while [[ ${rest} =~ ^([0-9]+)(ms|s|m|h)(.*)$ ]]; do
    number=$((10#${BASH_REMATCH[1]}))
    case "${BASH_REMATCH[2]}" in
      h) total=$((total + number * 3600)) ;;
      m) total=$((total + number * 60)) ;;
      s) total=$((total + number)) ;;
      ms) total=$((total + (number + 999) / 1000)) ;;
    esac
    rest="${BASH_REMATCH[3]}"
  done
  echo "${total}"
}

# Sets KUBECTL: ELVES_KUBECTL, else kubectl on PATH, else the one tools/build-kubernetes.sh built.
find_kubectl() {
  local built="${CACHE}/kubernetes/${KUBERNETES_VERSION}/bin/kubectl"
  if [[ -n ${ELVES_KUBECTL:-} ]]; then
    KUBECTL="${ELVES_KUBECTL}"
  elif command -v kubectl >/dev/null; then
    KUBECTL=kubectl
  elif [[ -x ${built} ]]; then
    KUBECTL="${built}"
  else
    die "kubectl not found (set ELVES_KUBECTL, put kubectl on PATH, or run tools/build-kubernetes.sh)"
  fi
}

# Sets HELM to the helm tools/which-helm.sh names (the one lookup scripts and tests share:
# ELVES_HELM, else the pinned helm of tools/install-helm.sh, else helm on PATH); returns 1
# when there is none.
find_helm() {
  HELM="$("${REPO_DIR}/tools/which-helm.sh" 2>/dev/null)"
}

kube() { "${KUBECTL}" "$@"; }
helm_() { "${HELM}" "$@"; }

# Fails fast, naming the context and the server, when the current kube context does not
# answer; sets CONTEXT.
check_cluster() {
  local server output
  CONTEXT="$(kube config current-context 2>/dev/null)" \
    || die "no current kube context (KUBECONFIG=${KUBECONFIG:-~/.kube/config}): choose one with \`kubectl config use-context\`, or use the local mode (--local)"
  server="$(kube config view --minify -o jsonpath='{.clusters[0].cluster.server}' 2>/dev/null)" || server="?"
  if ! output="$(kube get --raw=/readyz --request-timeout=10s 2>&1)"; then
    die "cannot reach the Kubernetes API of context '${CONTEXT}' at ${server}: ${output##*$'\n'}"
  fi
}

# True when the release $1 exists in namespace $2 (in any state, failed ones included).
release_exists() {
  [[ -n "$(helm_ list --namespace "$2" --all --short --filter "^$1\$" 2>/dev/null)" ]]
}

# True when the release $1 in namespace $2 carries the label deploy.sh gives its installs.
release_is_ours() {
  [[ -n "$(helm_ list --namespace "$2" --all --short --filter "^$1\$" \
             --selector "${INSTALLED_BY_KEY}=${INSTALLED_BY_VALUE}" 2>/dev/null)" ]]
}

crd_exists() {
  kube get crd "$1" --ignore-not-found -o name 2>/dev/null | grep -q .
}

# True when namespace $1 was created by deploy.sh (it carries the installed-by label).
namespace_is_ours() {
  [[ "$(kube get namespace "$1" --ignore-not-found \
          -o "jsonpath={.metadata.labels.elves\.dev/installed-by}" 2>/dev/null)" == "${INSTALLED_BY_VALUE}" ]]
}
