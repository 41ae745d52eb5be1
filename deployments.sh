#!/usr/bin/env bash
# Sets up and starts Elves.
#
#   ./deployments.sh --local   the local mode: installs the Debian packages, builds the
#                              services (and k6), creates the state directory (marked as
#                              the local mode's, so ./cleanup.sh --local may delete it) and
#                              its secrets once, starts the supervisor in the background and
#                              waits until every replica is ready. Running it again while it
#                              runs is fine.
#   ./deployments.sh [OPTIONS] into the current kube context: tools/cluster/deploy.sh
#                              (see `tools/cluster/deploy.sh --help` for its options;
#                              --harness-only installs the harness without Elves' system).
#
# Settings (environment):
#   ELVES_STATE_DIR        local state directory (default: <repo>/.elves); an existing
#                          directory is used but never marked for deletion
#   ELVES_LOCAL_PORT_OFFSET  added to every local port (default: 0)
#   ELVES_CACHE            built tools (default: $HOME/.cache/elves)
#   ELVES_READY_TIMEOUT    seconds to wait for the local stack to be ready (default: 600)
#   ELVES_SKIP_BUILD       1: use the jars as they are (default: build when sources changed)
#   ELVES_LOCAL_REPLICAS   replicas at start, e.g. gateway=1,registry=1,ingestor=2
#   ELVES_LOCAL_SERVICE_USER  OS user of every service replica (default: as root, a user per
#                          service, elves-<service>, created by tools/install-local-deps.sh;
#                          else the caller); the state directory must let it in
#   ELVES_LOCAL_START      warm (default): the services run the trained form of their build
#                          on JDK 25 (trained here once per build: at start, then the gateway
#                          and the registry on served requests); start-trained: the start's
#                          training only; cold: the default java and the fat jar
#   ELVES_LOCAL_LOAD_CPUS  CPUs that k6 gets to itself, e.g. 0 (default: none, k6 and the
#                          system share every core); the system runs on the others
# Paths, ports and the service list come from the Python (tools/facts.sh: `elves local env`).
set -Eeuo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly REPO_DIR
readonly READY_TIMEOUT="${ELVES_READY_TIMEOUT:-600}"
readonly SKIP_BUILD="${ELVES_SKIP_BUILD:-0}"
readonly VENV="${REPO_DIR}/.venv"
readonly ELVES="${VENV}/bin/elves"
BUILT_SERVICES=0  # set when this run rebuilt the jars

readonly SCRIPT_NAME=deployments
# shellcheck source=tools/lib/log.sh
source "${REPO_DIR}/tools/lib/log.sh"

usage() {
  sed -n '2,/^set -E/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
}

# shellcheck source=tools/facts.sh
source "${REPO_DIR}/tools/facts.sh"

# ---- local mode -----------------------------------------------------------------

install_local_deps() {
  "${REPO_DIR}/tools/install-local-deps.sh"
}

ensure_venv() {
  if [[ -x ${ELVES} ]]; then
    return
  fi
  log "creating the virtualenv ${VENV}"
  "${REPO_DIR}/tools/make-venv.sh" "${VENV}"
}

jars_up_to_date() {
  local jar
  for jar in "${LOCAL_JARS[@]}"; do
    [[ -f ${jar} ]] || return 1
    # Any source or build file newer than the jar means a rebuild.
    if [[ -n "$(find "${REPO_DIR}/services" -path '*/target' -prune -o -type f \
                 \( -name '*.java' -o -name 'pom.xml' -o -path '*/src/main/resources/*' \) \
                 -newer "${jar}" -print -quit)" ]]; then
      return 1
    fi
  done
}

build_services() {
  [[ -f ${REPO_DIR}/services/pom.xml ]] || die "services/pom.xml not found: the services are not in this checkout"
  if [[ ${SKIP_BUILD} == 1 ]] || jars_up_to_date; then
    log "service jars are up to date"
    return
  fi
  log "building the services (mvn package)"
  nice -n 10 mvn -q -B -f "${REPO_DIR}/services/pom.xml" package -DskipTests
  BUILT_SERVICES=1
}

train_warm_start() {
  # The services' JVMs reuse what a training run of their build learned (operator/elves/warm_start.py);
  # a service whose training fails starts cold, as before, and the supervisor's log says so.
  if [[ ${ELVES_LOCAL_START:-warm} == cold ]]; then
    return
  fi
  log "training the services' warm start (builds already trained are skipped)"
  nice -n 10 "${ELVES}" local train || log "some services will start cold (see above)"
}

train_on_served_requests() {
  # Once per build, with the stack up: the gateway and the registry trained again while they serve
  # requests on its broker and database (operator/elves/local/serve_training.py), then rolled onto
  # it; where that fails they keep the start's training.
  if [[ ${ELVES_LOCAL_START:-warm} != warm ]]; then
    return
  fi
  if "${ELVES}" local train --served; then
    wait_until_ready
  else
    log "the gateway and the registry keep the start's training (see above)"
  fi
}

build_k6() {
  local script="${REPO_DIR}/tools/install-k6.sh"
  if [[ -x ${script} ]]; then
    "${script}" >/dev/null
  fi
}

start_supervisor() {
  local pid
  if pid="$(local_supervisor_pid)"; then
    log "the local stack is already running (supervisor pid ${pid})"
    if [[ ${BUILT_SERVICES} == 1 ]]; then
      # Replicas run a copy of the jar they started with; roll them onto the new build.
      "${ELVES}" local rollout
    fi
    return
  fi
  mkdir -p "${LOCAL_LOGS_DIR}"
  # Children a dead supervisor left behind would hold the ports: end them by their PIDs.
  "${ELVES}" local reap
  log "starting the supervisor (log: ${LOCAL_SUPERVISOR_LOG})"
  setsid "${ELVES}" local supervise >>"${LOCAL_SUPERVISOR_LOG}" 2>&1 </dev/null &
}

wait_until_ready() {
  log "waiting up to ${READY_TIMEOUT} s until every replica is ready"
  if ! "${ELVES}" local status --wait "${READY_TIMEOUT}"; then
    tail -n 20 "${LOCAL_SUPERVISOR_LOG}" >&2 || true
    die "the local stack is not ready; logs are in ${LOCAL_LOGS_DIR} (stop it with ./cleanup.sh --local)"
  fi
}

print_access() {
  local elves="${ELVES#"${REPO_DIR}/"}"
  cat <<EOF

Elves runs locally (state in ${LOCAL_STATE_DIR}):
  gateway     ${LOCAL_GATEWAY_URL}   (through the local Service, over the ready replicas)
  registry    ${LOCAL_REGISTRY_URL}
  Prometheus  ${LOCAL_PROMETHEUS_URL}
  supervisor  ${LOCAL_SUPERVISOR_URL}/state   (control API; kube-state-metrics at /metrics)

A token:  TOKEN=\$(${elves} token --user alice)   (add --admin for an administrator)
Try it:   curl -H "Authorization: Bearer \$TOKEN" ${LOCAL_GATEWAY_URL}/api/v1/users/me
Status:   ${elves} local status
Stop:     ./cleanup.sh --local
EOF
}

deploy_local() {
  install_local_deps
  load_facts
  ensure_venv
  build_services
  train_warm_start
  build_k6
  "${ELVES}" local prepare
  start_supervisor
  wait_until_ready
  train_on_served_requests
  print_access
}

# ---- cluster mode -----------------------------------------------------------------

deploy_cluster() {
  exec "${REPO_DIR}/tools/cluster/deploy.sh" "$@"
}

main() {
  case "${1:-}" in
    --local) deploy_local ;;
    -h|--help) usage ;;
    *) deploy_cluster "$@" ;;
  esac
}

main "$@"
