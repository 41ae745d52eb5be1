#!/usr/bin/env bash
# Installs Elves into the current kube context (what `./deployments.sh` runs).
#
#   tools/cluster/deploy.sh [options]
#
# In order, each step idempotent (running it twice upgrades in place):
#   1. kube-prometheus-stack from its upstream chart into ELVES_MONITORING_NAMESPACE, with
#      the remote-write receiver and native histograms on and every ServiceMonitor and
#      rule selected (tools/cluster/kube-prometheus-stack-values.yaml), and Grafana's admin
#      credentials generated once into the Secret elves-grafana-admin; the operator gets a
#      copy (Secret <release>-grafana) to post LoadTest phases and faults as annotations;
#   2. k6-operator from its upstream chart (the TestRun CRD and its controller); and, only
#      when asked (--with-keda, --with-metrics-server), KEDA and metrics-server from theirs:
#      the autoscalers of a LoadTest's spec.system.autoscaling (KEDA on the ingestor's queue,
#      the HPA on CPU, which reads metrics-server); installed before the chart, which renders
#      its KEDA objects only where the cluster serves KEDA's API;
#   3. the elves-gateway, elves-registry, elves-ingestor and elves-operator images:
#      tools/cluster/build-images.sh builds them with docker, podman or nerdctl and loads
#      them into kind or minikube when the context is one of those (or pushes them to
#      ELVES_IMAGE_REGISTRY);
#   4. the LoadTest CRD (kubectl apply: Helm never upgrades CRDs), then the elves chart
#      into ELVES_NAMESPACE, waiting until every Deployment and StatefulSet is rolled out;
#      with --harness-only, the chart without Elves' own system (system.enabled: false: the
#      operator, the CRDs, the runner RBAC, the load dashboard), to judge other teams' systems.
# Upstream chart versions are pinned in tools/cluster/versions.env. A release that exists
# but was not installed by this script is left as it is.
#
# Options:
#   --skip-monitoring    the cluster has Prometheus already (say where: ELVES_PROMETHEUS_URL)
#   --skip-k6-operator   the cluster has k6-operator already
#   --skip-images        the images are on the nodes (or in the registry) already
#   --harness-only       the harness alone, without Elves' system (charts/elves README: The
#                        harness alone); only the elves-operator image is built and used
#   --with-keda          install KEDA (into ELVES_KEDA_NAMESPACE) for spec.system.autoscaling
#   --with-metrics-server  install metrics-server (into kube-system): the HPA's CPU metrics
#   --no-wait            do not wait for the pods (same as ELVES_HELM_WAIT=0)
#   -f, --values FILE    more values for the elves chart (repeatable; after this script's)
#   --set KEY=VALUE      a value for the elves chart (repeatable; wins over every file)
#   -h, --help           this text
#
# Settings (environment):
#   ELVES_NAMESPACE              namespace of the elves release (default: elves)
#   ELVES_RELEASE                name of the elves release (default: elves)
#   ELVES_TIMEOUT                deadline of each install and rollout wait (default: 10m)
#   ELVES_HELM_WAIT              0: do not wait for pods to be ready (default: 1)
#   ELVES_SKIP_MONITORING        1: as --skip-monitoring (default: 0)
#   ELVES_SKIP_K6_OPERATOR       1: as --skip-k6-operator (default: 0)
#   ELVES_SKIP_IMAGES            1: as --skip-images (default: 0)
#   ELVES_HARNESS_ONLY           1: as --harness-only (default: 0)
#   ELVES_WITH_KEDA              1: as --with-keda (default: 0)
#   ELVES_WITH_METRICS_SERVER    1: as --with-metrics-server (default: 0)
#   ELVES_MONITORING_NAMESPACE   namespace of Prometheus (default: monitoring)
#   ELVES_MONITORING_RELEASE     its Helm release, the `release` label it selects by
#                                (default: kube-prometheus-stack)
#   ELVES_PROMETHEUS_URL         Prometheus the operator queries and k6 writes to (default:
#                                http://<monitoring release>-prometheus.<namespace>.svc:9090)
#   ELVES_MONITORING_CHART_REPO  chart repository of kube-prometheus-stack, e.g. a mirror
#                                (default: prometheus-community's, see versions.env)
#   ELVES_K6_OPERATOR_NAMESPACE  namespace of k6-operator (default: k6-operator-system)
#   ELVES_K6_OPERATOR_RELEASE    its Helm release (default: k6-operator)
#   ELVES_K6_OPERATOR_CHART_REPO chart repository of k6-operator (default: grafana's)
#   ELVES_KEDA_NAMESPACE         namespace of KEDA (default: keda); the chart lets it through
#                                to RabbitMQ (networkPolicy.keda.namespace)
#   ELVES_KEDA_CHART_REPO        chart repository of KEDA (default: kedacore's)
#   ELVES_METRICS_SERVER_CHART_REPO  chart repository of metrics-server (default: kubernetes-sigs')
#   ELVES_IMAGE_BUILDER          docker, podman or nerdctl (default: the first that answers;
#                                read by tools/cluster/build-images.sh)
#   ELVES_IMAGE_REGISTRY         push the images there and pull them from there (default: none)
#   ELVES_IMAGE_TAG              tag of the four images (default: the chart's appVersion)
#   ELVES_CACHE                  built tools (default: $HOME/.cache/elves)
#   ELVES_HELM                   helm binary (default: $ELVES_CACHE/bin/helm, else helm on
#                                PATH, else built by tools/install-helm.sh)
#   ELVES_KUBECTL                kubectl binary (default: kubectl on PATH)
#   KUBECONFIG                   as for kubectl: the cluster is its current context
set -Eeuo pipefail

# shellcheck disable=SC2034 # read by common.sh
readonly SCRIPT_NAME=deployments
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

readonly CHART_DIR="${REPO_DIR}/charts/elves"
readonly IMAGE_TAG="${ELVES_IMAGE_TAG:-}"  # empty: the chart's appVersion
readonly IMAGE_REGISTRY="${ELVES_IMAGE_REGISTRY:-}"
readonly PROMETHEUS_URL="${ELVES_PROMETHEUS_URL:-http://${MONITORING_RELEASE}-prometheus.${MONITORING_NAMESPACE}.svc:9090}"
readonly MONITORING_CHART_REPO="${ELVES_MONITORING_CHART_REPO:-${KUBE_PROMETHEUS_STACK_CHART_REPO}}"
readonly K6_OPERATOR_CHART_REPO_URL="${ELVES_K6_OPERATOR_CHART_REPO:-${K6_OPERATOR_CHART_REPO}}"
readonly KEDA_CHART_REPO_URL="${ELVES_KEDA_CHART_REPO:-${KEDA_CHART_REPO}}"
readonly METRICS_SERVER_CHART_REPO_URL="${ELVES_METRICS_SERVER_CHART_REPO:-${METRICS_SERVER_CHART_REPO}}"

SKIP_MONITORING="${ELVES_SKIP_MONITORING:-0}"
SKIP_K6_OPERATOR="${ELVES_SKIP_K6_OPERATOR:-0}"
SKIP_IMAGES="${ELVES_SKIP_IMAGES:-0}"
HARNESS_ONLY="${ELVES_HARNESS_ONLY:-0}"
WITH_KEDA="${ELVES_WITH_KEDA:-0}"
WITH_METRICS_SERVER="${ELVES_WITH_METRICS_SERVER:-0}"
HELM_WAIT="${ELVES_HELM_WAIT:-1}"
# 1 when this script installs kube-prometheus-stack: its Grafana gets the LoadTests'
# annotations (set by install_monitoring).
GRAFANA_FROM_STACK=0
readonly GRAFANA_URL="http://${MONITORING_RELEASE}-grafana.${MONITORING_NAMESPACE}.svc:80"
# The operator's copy of Grafana's credentials, in the elves namespace (operator.grafanaSecret).
readonly OPERATOR_GRAFANA_SECRET="${RELEASE}-grafana"
USER_VALUES=()
# --wait for every helm install, or nothing with ELVES_HELM_WAIT=0 / --no-wait (set by main).
HELM_WAIT_FLAGS=()
# Scratch files (generated values), removed on exit.
WORK_DIR=""
trap 'if [[ -n ${WORK_DIR} ]]; then rm -rf "${WORK_DIR}"; fi' EXIT

parse_args() {
  while (($#)); do
    case "$1" in
      --skip-monitoring) SKIP_MONITORING=1 ;;
      --skip-k6-operator) SKIP_K6_OPERATOR=1 ;;
      --skip-images) SKIP_IMAGES=1 ;;
      --harness-only) HARNESS_ONLY=1 ;;
      --with-keda) WITH_KEDA=1 ;;
      --with-metrics-server) WITH_METRICS_SERVER=1 ;;
      --no-wait) HELM_WAIT=0 ;;
      -f|--values)
        (($# >= 2)) || die "$1 needs a file"
        [[ -r $2 ]] || die "$1 $2: no such file"
        USER_VALUES+=(--values "$2")
        shift ;;
      --set)
        (($# >= 2)) || die "--set needs KEY=VALUE"
        [[ $2 == ?*=* ]] || die "--set $2: expected KEY=VALUE"
        USER_VALUES+=(--set "$2")
        shift ;;
      -h|--help) usage; exit 0 ;;
      *) die "unknown argument: $1 (see --help)" ;;
    esac
    shift
  done
}

# ---- 1. monitoring and 2. k6-operator from their upstream charts ------------------------

# Creates namespace $1 unless it exists, labelled so that cleanup.sh knows it may delete it.
ensure_namespace() {
  if kube get namespace "$1" >/dev/null 2>&1; then
    return
  fi
  kube create namespace "$1" >/dev/null
  kube label namespace "$1" "${INSTALLED_BY_KEY}=${INSTALLED_BY_VALUE}" >/dev/null
}

# Installs or upgrades upstream chart $1 as release $2 in namespace $3 from repository $4
# at version $5 with values file $6 (empty: the chart's defaults), unless someone else
# installed that release; $7 is what to do about a failure; more helm arguments (--set ...)
# may follow.
install_upstream() {
  local chart="$1" release="$2" namespace="$3" repo="$4" version="$5" values="$6" hint="$7" output
  local -a more=("${@:8}")
  if [[ -n ${values} ]]; then
    more=(--values "${values}" "${more[@]}")
  fi
  if release_exists "${release}" "${namespace}" && ! release_is_ours "${release}" "${namespace}"; then
    log "${chart}: release ${namespace}/${release} exists and was not installed by this script: left as it is"
    return
  fi
  log "${chart} ${version}: installing release ${namespace}/${release} from ${repo}"
  ensure_namespace "${namespace}"
  if ! output="$(helm_ upgrade --install "${release}" "${chart}" --repo "${repo}" --version "${version}" \
      --namespace "${namespace}" "${more[@]}" \
      --labels "${INSTALLED_BY_KEY}=${INSTALLED_BY_VALUE}" \
      "${HELM_WAIT_FLAGS[@]}" --timeout "${TIMEOUT}" 2>&1)"; then
    echo "${output}" >&2
    die "could not install ${chart} ${version} from ${repo} (see above); ${hint}"
  fi
}

# The prometheus-operator CRDs in the cluster, one name a line.
monitoring_crds() {
  kube get crds --output name | sed -n 's|^customresourcedefinition.apiextensions.k8s.io/\(.*\.monitoring\.coreos\.com\)$|\1|p'
}

# A random password (letters and digits, 32 characters).
random_password() {
  LC_ALL=C tr -dc 'A-Za-z0-9' </dev/urandom | head -c 32 || true
}

# Grafana's admin credentials, generated once (kept across runs, so the operator's copy and
# Grafana's own password agree after every upgrade).
ensure_grafana_admin_secret() {
  kube get secret "${GRAFANA_ADMIN_SECRET}" --namespace "${MONITORING_NAMESPACE}" >/dev/null 2>&1 && return
  kube create secret generic "${GRAFANA_ADMIN_SECRET}" --namespace "${MONITORING_NAMESPACE}" \
    --from-literal=admin-user=admin --from-literal="admin-password=$(random_password)" >/dev/null
  kube label secret "${GRAFANA_ADMIN_SECRET}" --namespace "${MONITORING_NAMESPACE}" \
    "${INSTALLED_BY_KEY}=${INSTALLED_BY_VALUE}" >/dev/null
}

install_monitoring() {
  local before crd
  if [[ ${SKIP_MONITORING} == 1 ]]; then
    log "monitoring: skipped; the operator will query ${PROMETHEUS_URL}"
    return
  fi
  if ! release_exists "${MONITORING_RELEASE}" "${MONITORING_NAMESPACE}" \
      || release_is_ours "${MONITORING_RELEASE}" "${MONITORING_NAMESPACE}"; then
    ensure_namespace "${MONITORING_NAMESPACE}"
    ensure_grafana_admin_secret
    GRAFANA_FROM_STACK=1
  fi
  before="$(monitoring_crds)"
  install_upstream kube-prometheus-stack "${MONITORING_RELEASE}" "${MONITORING_NAMESPACE}" \
    "${MONITORING_CHART_REPO}" "${KUBE_PROMETHEUS_STACK_CHART_VERSION}" \
    "${CLUSTER_DIR}/kube-prometheus-stack-values.yaml" "if the cluster has it already, pass --skip-monitoring" \
    --set "grafana.admin.existingSecret=${GRAFANA_ADMIN_SECRET}" \
    --set grafana.admin.userKey=admin-user --set grafana.admin.passwordKey=admin-password
  # Helm leaves a chart's crds/ behind on uninstall: label the ones this install brought, so
  # cleanup.sh removes those and never CRDs the cluster had before.
  for crd in $(monitoring_crds); do
    if ! grep -qxF "${crd}" <<<"${before}"; then
      kube label crd "${crd}" "${INSTALLED_BY_KEY}=${INSTALLED_BY_VALUE}" --overwrite >/dev/null
    fi
  done
}

install_k6_operator() {
  if [[ ${SKIP_K6_OPERATOR} == 1 ]]; then
    log "k6-operator: skipped"
  else
    install_upstream k6-operator "${K6_OPERATOR_RELEASE}" "${K6_OPERATOR_NAMESPACE}" \
      "${K6_OPERATOR_CHART_REPO_URL}" "${K6_OPERATOR_CHART_VERSION}" \
      "${CLUSTER_DIR}/k6-operator-values.yaml" "if the cluster has it already, pass --skip-k6-operator"
  fi
  if ! crd_exists testruns.k6.io; then
    warn "the cluster has no testruns.k6.io CRD: LoadTests will end in Error until k6-operator is installed"
  fi
}

# KEDA and metrics-server, only when asked: a LoadTest's spec.system.autoscaling needs KEDA
# for the ingestor and the HPA's CPU metrics (metrics-server) for the gateway and registry.
install_autoscalers() {
  if [[ ${WITH_KEDA} == 1 ]]; then
    install_upstream keda "${KEDA_RELEASE}" "${KEDA_NAMESPACE}" "${KEDA_CHART_REPO_URL}" "${KEDA_CHART_VERSION}" "" \
      "if the cluster has KEDA already, leave out --with-keda"
  fi
  if [[ ${WITH_METRICS_SERVER} == 1 ]]; then
    install_upstream metrics-server "${METRICS_SERVER_RELEASE}" "${METRICS_SERVER_NAMESPACE}" \
      "${METRICS_SERVER_CHART_REPO_URL}" "${METRICS_SERVER_CHART_VERSION}" "" \
      "if the cluster has metrics-server already, leave out --with-metrics-server; on kind or minikube, whose kubelets' certificates it cannot check, add --set 'args={--kubelet-insecure-tls}' to a helm upgrade of the release"
  fi
}

# ---- 3. images --------------------------------------------------------------------------

provide_images() {
  if [[ ${SKIP_IMAGES} == 1 ]]; then
    log "images: skipped; the nodes must have the four elves images (tools/cluster/build-images.sh --help)"
    return
  fi
  if [[ ${HARNESS_ONLY} == 1 ]]; then
    "${CLUSTER_DIR}/build-images.sh" --operator-only
  else
    "${CLUSTER_DIR}/build-images.sh"
  fi
}

# ---- 4. the LoadTest CRD and the elves chart -----------------------------------------------

apply_crd() {
  local crd deadline established='{.status.conditions[?(@.type=="Established")].status}'
  log "applying the elves CRDs (${CHART_CRDS[*]})"
  kube apply --server-side --force-conflicts --field-manager=elves-deploy \
    --filename "${CHART_DIR}/crds/" >/dev/null
  # Polled: `kubectl wait --for=condition=Established` fails at once, instead of waiting,
  # while a new CRD's status.conditions is still null.
  deadline=$((SECONDS + $(seconds_of "${TIMEOUT}")))
  for crd in "${CHART_CRDS[@]}"; do
    until [[ "$(kube get crd "${crd}" -o "jsonpath=${established}")" == True ]]; do
      ((SECONDS < deadline)) || die "the CRD ${crd} is not Established after ${TIMEOUT}: kubectl get crd ${crd} -o yaml"
      sleep 0.2
    done
  done
}

# The operator's copy of Grafana's admin credentials (keys user and password), refreshed on
# every run so it follows the Secret Grafana reads.
copy_grafana_credentials() {
  local user password
  user="$(kube get secret "${GRAFANA_ADMIN_SECRET}" --namespace "${MONITORING_NAMESPACE}" \
            -o 'jsonpath={.data.admin-user}' | base64 -d)"
  password="$(kube get secret "${GRAFANA_ADMIN_SECRET}" --namespace "${MONITORING_NAMESPACE}" \
                -o 'jsonpath={.data.admin-password}' | base64 -d)"
  kube create secret generic "${OPERATOR_GRAFANA_SECRET}" --namespace "${NAMESPACE}" \
    --from-literal="user=${user}" --from-literal="password=${password}" --dry-run=client -o yaml \
    | kube apply --server-side --force-conflicts --field-manager=elves-deploy -f - >/dev/null
}

# A YAML double-quoted scalar of $1.
yaml_string() {
  local text="${1//\\/\\\\}"
  printf '"%s"' "${text//\"/\\\"}"
}

# The values this script gives the chart, in a file, so the user's --values can override them.
write_values() {
  local file="${WORK_DIR}/elves-values.yaml" name
  {
    echo "monitoring:"
    echo "  release: $(yaml_string "${MONITORING_RELEASE}")"
    echo "  namespace: $(yaml_string "${MONITORING_NAMESPACE}")"
    echo "operator:"
    echo "  prometheusUrl: $(yaml_string "${PROMETHEUS_URL}")"
    if [[ ${GRAFANA_FROM_STACK} == 1 ]]; then
      echo "  grafanaUrl: $(yaml_string "${GRAFANA_URL}")"
      echo "  grafanaSecret: $(yaml_string "${OPERATOR_GRAFANA_SECRET}")"
    fi
    # `kubectl apply -f loadtests/examples/...` without -n lands in `default`: the operator may
    # write its ConfigMaps there too (the chart allows only the release namespace by default,
    # and refuses the release namespace in the list: it is always included).
    [[ ${NAMESPACE} == default ]] || echo "  loadTestNamespaces: [default]"
    if [[ -n ${IMAGE_TAG} ]]; then
      echo "  image: {tag: $(yaml_string "${IMAGE_TAG}")}"
    fi
    # KEDA reads the ingestor's queue length from RabbitMQ, which the NetworkPolicies let it reach.
    echo "networkPolicy: {keda: {namespace: $(yaml_string "${KEDA_NAMESPACE}")}}"
    if [[ ${HARNESS_ONLY} == 1 ]]; then
      echo "system: {enabled: false}"
    fi
    if [[ -n ${IMAGE_TAG} ]]; then
      echo "services:"
      for name in "${SYSTEM_DEPLOYMENTS[@]}"; do
        echo "  ${name}: {image: {tag: $(yaml_string "${IMAGE_TAG}")}}"
      done
    fi
    if [[ -n ${IMAGE_REGISTRY} ]]; then
      echo "global: {imageRegistry: $(yaml_string "${IMAGE_REGISTRY%/}")}"
    fi
  } >"${file}"
  echo "${file}"
}

install_chart() {
  local values
  if ! crd_exists servicemonitors.monitoring.coreos.com; then
    warn "the cluster has no monitoring.coreos.com CRDs: the chart leaves its ServiceMonitors and alerts out (it checks .Capabilities)"
  fi
  values="$(write_values)"
  log "installing the elves chart as release ${NAMESPACE}/${RELEASE}"
  ensure_namespace "${NAMESPACE}"
  if [[ ${GRAFANA_FROM_STACK} == 1 ]]; then
    copy_grafana_credentials
  fi
  helm_ upgrade --install "${RELEASE}" "${CHART_DIR}" --namespace "${NAMESPACE}" \
    --skip-crds --values "${values}" "${USER_VALUES[@]}" \
    "${HELM_WAIT_FLAGS[@]}" --timeout "${TIMEOUT}" >/dev/null \
    || die "helm could not install the elves chart (see above); \`kubectl -n ${NAMESPACE} get pods\` and \`kubectl -n ${NAMESPACE} get events\` say what waits"
}

wait_rollouts() {
  local workload
  if [[ ${HELM_WAIT} != 1 ]]; then
    log "not waiting for the pods (ELVES_HELM_WAIT=0)"
    return
  fi
  for workload in $(kube get deployments,statefulsets --namespace "${NAMESPACE}" \
                      --selector "app.kubernetes.io/instance=${RELEASE}" --output name); do
    kube rollout status "${workload}" --namespace "${NAMESPACE}" --timeout="${TIMEOUT}" >&2 \
      || die "${workload} did not roll out within ${TIMEOUT}: kubectl -n ${NAMESPACE} describe ${workload}"
  done
}

print_next_steps() {
  local ns="${NAMESPACE}"
  if [[ ${HARNESS_ONLY} == 1 ]]; then
    cat <<EOF

The Elves harness alone is installed in namespace ${ns} of context ${CONTEXT} (release ${RELEASE}):
the operator and the CRDs, none of Elves' services. A LoadTest names the SystemUnderTest it judges
(docs/own-system.md); the orders example, in a namespace where LoadTests run (default, ${ns}):
  kubectl -n default create configmap orders-script --from-file=orders.js=loadtests/examples/own-system/orders.js
  kubectl -n default apply -f loadtests/examples/own-system/orders.yaml
  kubectl -n default get lt -w

Remove everything:  ./cleanup.sh
EOF
    return
  fi
  cat <<EOF

Elves is installed in namespace ${ns} of context ${CONTEXT} (release ${RELEASE}).

Run a load test and follow it:
  kubectl -n ${ns} apply -f loadtests/examples/quickstart.yaml
  kubectl -n ${ns} get lt -w                 # phase, verdict, rate, p99, deepest queue, lost
  kubectl -n ${ns} describe lt quickstart    # conditions and events

Look at it:
  kubectl -n ${ns} port-forward svc/gateway 8080:8080
EOF
  if [[ ${SKIP_MONITORING} != 1 ]]; then
    cat <<EOF
  kubectl -n ${MONITORING_NAMESPACE} port-forward svc/${MONITORING_RELEASE}-prometheus 9090:9090
  kubectl -n ${MONITORING_NAMESPACE} port-forward svc/${MONITORING_RELEASE}-grafana 3000:80   # dashboards in folder Elves
  kubectl -n ${MONITORING_NAMESPACE} get secret ${GRAFANA_ADMIN_SECRET} -o jsonpath='{.data.admin-password}' | base64 -d; echo   # user admin
EOF
  fi
  cat <<EOF

Check the release:  helm test ${RELEASE} -n ${ns}
Remove everything:  ./cleanup.sh
EOF
}

main() {
  parse_args "$@"
  check_timeout
  if [[ ${HELM_WAIT} == 1 ]]; then
    HELM_WAIT_FLAGS=(--wait)
  fi
  load_facts
  find_kubectl
  check_cluster
  if ! find_helm; then
    log "helm not found: building helm ${HELM_VERSION} (tools/install-helm.sh, a few minutes; needs Go)"
    HELM="$("${REPO_DIR}/tools/install-helm.sh")"
  fi
  WORK_DIR="$(mktemp -d)"
  install_monitoring
  install_k6_operator
  install_autoscalers
  provide_images
  apply_crd
  install_chart
  wait_rollouts
  print_next_steps
}

main "$@"
