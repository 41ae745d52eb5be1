#!/usr/bin/env bash
# Copies the upstream CRDs the chart and the operator rely on into the cache:
#   ${ELVES_CACHE:-$HOME/.cache/elves}/crds/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION/
#       ServiceMonitor, PodMonitor, PrometheusRule, Prometheus, Alertmanager, ...
#   ${ELVES_CACHE:-$HOME/.cache/elves}/crds/k6-operator-$K6_OPERATOR_VERSION/
#       TestRun, PrivateLoadZone
#   ${ELVES_CACHE:-$HOME/.cache/elves}/crds/keda-$KEDA_VERSION/
#       ScaledObject, TriggerAuthentication, ... (the chart's and the operator's autoscalers)
# All come from the projects' Go modules through the Go module proxy (checked against
# the sum database), because no chart repository or GitHub download is reachable here.
# Prints the directories, one a line. Does nothing when they are already complete.
#
# Settings (environment):
#   ELVES_CACHE   cache root (default $HOME/.cache/elves)
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

# shellcheck source=lib/cache-root.sh
source "$here/lib/cache-root.sh"
cache=$ELVES_CACHE

readonly SCRIPT_NAME=fetch-crds
# shellcheck source=lib/log.sh
source "$here/lib/log.sh"

# Directory of module@version in the Go module cache, downloading it when needed.
module_dir() {
  local dir
  # Run outside any module so a go.mod nearby cannot change what is resolved.
  dir=$(cd / && GOFLAGS="" go mod download -json "$1@$2" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [[ -d $dir ]] || die "could not download Go module $1@$2 from $(go env GOPROXY)"
  echo "$dir"
}

# copy_crds <module> <version> <dir inside module> <destination name>
copy_crds() {
  local module=$1 version=$2 subdir=$3 dest=$cache/crds/$4
  if [[ -f $dest/.complete ]]; then
    echo "$dest"
    return
  fi
  command -v go >/dev/null || die "go is not installed (needed to fetch $module@$version)"
  local src
  src=$(module_dir "$module" "$version")/$subdir
  compgen -G "$src/*.yaml" >/dev/null || die "no CRD files in $src"
  rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
  cp "$src"/*.yaml "$dest.tmp/"
  chmod u+w "$dest.tmp"/*.yaml # the module cache is read-only
  touch "$dest.tmp/.complete"
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
  echo "$dest"
}

main() {
  # The "-crd" variant (not "-crd-full") is the one upstream ships for kube-prometheus-stack.
  copy_crds github.com/prometheus-operator/prometheus-operator "$PROMETHEUS_OPERATOR_VERSION" \
    example/prometheus-operator-crd "prometheus-operator-$PROMETHEUS_OPERATOR_VERSION"
  copy_crds github.com/grafana/k6-operator "$K6_OPERATOR_VERSION" \
    config/crd/bases "k6-operator-$K6_OPERATOR_VERSION"
  copy_crds github.com/kedacore/keda/v2 "$KEDA_VERSION" config/crd/bases "keda-$KEDA_VERSION"
}

main "$@"
