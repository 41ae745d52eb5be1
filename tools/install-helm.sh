#!/usr/bin/env bash
# Build helm at the version pinned in tools/versions.env and cache it.
#
# There is no binary download source here, so helm is built from the Go module proxy
# (about 3-4 minutes on 2 cores with empty Go caches). Idempotent: a cached binary that
# reports the pinned version is kept as is.
#
# Settings (environment):
#   ELVES_CACHE   cache root (default: $HOME/.cache/elves); helm lands in $ELVES_CACHE/bin/helm
#   HELM_VERSION  overrides the pinned version (default: from tools/versions.env)
# Prints the path of the helm binary on stdout; progress goes to stderr.
set -Eeuo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
# The temporary build directory, removed on exit whatever happens.
BUILD_DIR=""
trap 'if [[ -n "${BUILD_DIR}" ]]; then rm -rf "${BUILD_DIR}"; fi' EXIT

readonly SCRIPT_NAME=install-helm
# shellcheck source=lib/log.sh
source "${REPO_ROOT}/tools/lib/log.sh"
# shellcheck source=lib/cache-root.sh
source "${REPO_ROOT}/tools/lib/cache-root.sh"

# The Kubernetes minor version helm's own client-go is built for ("1.34"): `helm template`
# and `helm lint` assume it as the cluster version. helm's Makefile sets it at link time;
# `go install` alone would leave helm's default (1.20), which fails charts needing newer.
kube_version_of_module() {
  local version="$1" gomod client_go
  gomod="$(go mod download -json "helm.sh/helm/v3@${version}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  [[ -f "${gomod}" ]] || die "could not download helm.sh/helm/v3@${version} (is the version on the Go proxy?)"
  client_go="$(awk '$1 == "k8s.io/client-go" { print $2 }' "${gomod}")"
  [[ "${client_go}" =~ ^v0\.([0-9]+)\. ]] || die "no k8s.io/client-go v0.N.x in ${gomod}"
  echo "1.${BASH_REMATCH[1]}"
}

# True when $1 is a helm binary that reports exactly version $2 (with build metadata).
helm_is_version() {
  local binary="$1" wanted="$2" reported
  [[ -x "${binary}" ]] || return 1
  reported="$("${binary}" version --template '{{.Version}}' 2>/dev/null)" || return 1
  [[ "${reported}" == "${wanted}" ]]
}

main() {
  local override="${HELM_VERSION:-}"
  # shellcheck source=versions.env
  source "${REPO_ROOT}/tools/versions.env"
  local version="${override:-${HELM_VERSION:?HELM_VERSION missing from tools/versions.env}}"
  local bin_dir="${ELVES_CACHE}/bin"
  local helm="${bin_dir}/helm"

  # Our builds carry the Kubernetes version they assume as build metadata (v3.19.0+k8s1.34),
  # so a cached helm is recognised without a network call.
  if [[ -x "${helm}" ]] && [[ "$("${helm}" version --template '{{.Version}}' 2>/dev/null)" == "${version}+k8s"* ]]; then
    echo "${helm}"
    return 0
  fi
  command -v go >/dev/null || die "go is not on PATH; install Go (1.24 or newer) to build helm ${version}"
  local kube_version kube_major kube_minor
  kube_version="$(kube_version_of_module "${version}")"
  kube_major="${kube_version%%.*}"
  kube_minor="${kube_version#*.}"

  # Build into a temporary directory and move into place, so an interrupted build never
  # leaves a half-written binary that a later run would trust.
  mkdir -p "${bin_dir}"
  BUILD_DIR="$(mktemp -d "${bin_dir}/.helm-build.XXXXXX")"
  echo "install-helm: building helm ${version} from the Go module proxy (a few minutes)" >&2
  GOBIN="${BUILD_DIR}" CGO_ENABLED=0 nice -n 10 \
    go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${version} \
      -X helm.sh/helm/v3/internal/version.metadata=k8s${kube_version} \
      -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=${kube_major} \
      -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${kube_minor} \
      -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=${kube_major} \
      -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${kube_minor}" \
    "helm.sh/helm/v3/cmd/helm@${version}" >&2 \
    || die "go install helm.sh/helm/v3/cmd/helm@${version} failed (is the version on the Go proxy?)"
  helm_is_version "${BUILD_DIR}/helm" "${version}+k8s${kube_version}" \
    || die "the built helm does not report ${version}: $("${BUILD_DIR}/helm" version 2>&1 || true)"
  mv -f "${BUILD_DIR}/helm" "${helm}"
  echo "${helm}"
}

main "$@"
