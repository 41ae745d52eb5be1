#!/usr/bin/env bash
# Builds the Elves images and puts them where the current kube context's nodes find them
# (what tools/cluster/deploy.sh runs, unless --skip-images).
#
#   tools/cluster/build-images.sh [options]
#
# One image per service of the system (elves-gateway, elves-registry, elves-ingestor: one
# services/Dockerfile with the build argument SERVICE) and elves-operator (operator/Dockerfile,
# k6 at the pinned version), tagged with the chart's appVersion. Built with docker, podman or
# nerdctl; then pushed to ELVES_IMAGE_REGISTRY, or loaded into kind or minikube when the
# current kube context is one of those.
#
# Options:
#   --build-only         build only: the images stay in the builder's image store
#   --operator-only      elves-operator alone (the harness without Elves' system: deploy.sh
#                        --harness-only)
#   -h, --help           this text
#
# Settings (environment):
#   ELVES_IMAGE_BUILDER          docker, podman or nerdctl (default: the first that answers)
#   ELVES_IMAGE_REGISTRY         push the images there (default: none)
#   ELVES_IMAGE_TAG              tag of the four images (default: the chart's appVersion)
#   ELVES_KUBECTL                kubectl binary (default: kubectl on PATH), to ask which
#                                cluster the current context is (kind, minikube, other)
#   KUBECONFIG                   as for kubectl
set -Eeuo pipefail

# shellcheck disable=SC2034 # read by common.sh
readonly SCRIPT_NAME=build-images
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# appVersion: "0.1.0" -> 0.1.0 (the chart's default image tag)
APP_VERSION="$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}[[:space:]]*$/\1/p' "${REPO_DIR}/charts/elves/Chart.yaml")"
readonly APP_VERSION
readonly IMAGE_TAG="${ELVES_IMAGE_TAG:-${APP_VERSION}}"
readonly IMAGE_REGISTRY="${ELVES_IMAGE_REGISTRY:-}"
BUILD_ONLY=0
OPERATOR_ONLY=0
# Scratch space for image archives, removed on exit.
WORK_DIR=""
trap 'if [[ -n ${WORK_DIR} ]]; then rm -rf "${WORK_DIR}"; fi' EXIT

parse_args() {
  while (($#)); do
    case "$1" in
      --build-only) BUILD_ONLY=1 ;;
      --operator-only) OPERATOR_ONLY=1 ;;
      -h|--help) usage; exit 0 ;;
      *) die "unknown argument: $1 (see --help)" ;;
    esac
    shift
  done
}

image_ref() {
  echo "${IMAGE_REGISTRY:+${IMAGE_REGISTRY%/}/}elves-$1:${IMAGE_TAG}"
}

dockerfile_of() {
  if [[ $1 == operator ]]; then
    echo "${REPO_DIR}/operator/Dockerfile"
  else
    echo "${REPO_DIR}/services/Dockerfile"
  fi
}

# Sets BUILDER to the first container engine that answers (ELVES_IMAGE_BUILDER: only that one).
find_builder() {
  local candidate candidates=(docker podman nerdctl)
  if [[ -n ${ELVES_IMAGE_BUILDER:-} ]]; then
    candidates=("${ELVES_IMAGE_BUILDER}")
  fi
  for candidate in "${candidates[@]}"; do
    # The CLI alone is not enough: `info` needs the engine behind it.
    if command -v "${candidate}" >/dev/null && "${candidate}" info >/dev/null 2>&1; then
      BUILDER="${candidate}"
      return
    fi
  done
  die "no container engine answers (tried: ${candidates[*]}): start one, or build the images elsewhere, put them on the nodes and pass --skip-images to deploy.sh"
}

# kind, minikube or other: where the images must go for the nodes to find them.
cluster_flavour() {
  local provider
  provider="$(kube config view --minify -o jsonpath='{.contexts[0].context.extensions[*].extension.provider}' 2>/dev/null || true)"
  if [[ ${CONTEXT} == kind-* ]]; then
    echo kind
  elif [[ ${provider} == *minikube.sigs.k8s.io* || ${CONTEXT} == minikube ]]; then
    echo minikube
  else
    echo other
  fi
}

build_images() {
  local name build_args
  for name in "${IMAGES[@]}"; do
    if [[ ${name} == operator ]]; then
      build_args=(--build-arg "K6_VERSION=${K6_VERSION}")
    else
      build_args=(--build-arg "SERVICE=${name}")  # services/Dockerfile builds any service
    fi
    log "building $(image_ref "${name}") with ${BUILDER}"
    "${BUILDER}" build "${build_args[@]}" --file "$(dockerfile_of "${name}")" \
      --tag "$(image_ref "${name}")" "${REPO_DIR}" >&2 \
      || die "${BUILDER} build of $(image_ref "${name}") failed (see above)"
  done
}

# Puts the built images where the cluster's nodes look for them.
ship_images() {
  local name archive flavour
  if [[ -n ${IMAGE_REGISTRY} ]]; then
    for name in "${IMAGES[@]}"; do
      log "pushing $(image_ref "${name}")"
      "${BUILDER}" push "$(image_ref "${name}")" >&2 || die "could not push $(image_ref "${name}")"
    done
    return
  fi
  find_kubectl
  CONTEXT="$(kube config current-context 2>/dev/null)" \
    || die "no current kube context to load the images into (KUBECONFIG=${KUBECONFIG:-~/.kube/config}); set ELVES_IMAGE_REGISTRY or pass --build-only"
  flavour="$(cluster_flavour)"
  if [[ ${flavour} == other ]]; then
    warn "context ${CONTEXT} is neither kind nor minikube and ELVES_IMAGE_REGISTRY is not set: the images are only in this machine's ${BUILDER}; the pods find them only if the nodes share that image store (Docker Desktop does)"
    return
  fi
  WORK_DIR="$(mktemp -d)"
  for name in "${IMAGES[@]}"; do
    archive="${WORK_DIR}/elves-${name}.tar"
    "${BUILDER}" save --output "${archive}" "$(image_ref "${name}")" >&2
    log "loading $(image_ref "${name}") into ${flavour} (${CONTEXT})"
    case "${flavour}" in
      kind) kind load image-archive "${archive}" --name "${CONTEXT#kind-}" >&2 ;;
      minikube) minikube --profile "${CONTEXT}" image load "${archive}" >&2 ;;
    esac
    rm -f "${archive}"
  done
}

main() {
  parse_args "$@"
  [[ -n ${IMAGE_TAG} ]] || die "no appVersion in ${REPO_DIR}/charts/elves/Chart.yaml"
  load_facts
  # One image per deployment of the system, and the operator's.
  IMAGES=("${SYSTEM_DEPLOYMENTS[@]}" operator)
  if [[ ${OPERATOR_ONLY} == 1 ]]; then
    IMAGES=(operator)
  fi
  find_builder
  build_images
  if [[ ${BUILD_ONLY} != 1 ]]; then
    ship_images
  fi
}

main "$@"
