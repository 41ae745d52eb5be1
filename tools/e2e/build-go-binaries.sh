#!/usr/bin/env bash
# Builds the Go programs the end-to-end cluster runs as images, from their Go modules at
# the pinned versions (tools/versions.env, tools/e2e/versions.env), into
#   ${ELVES_CACHE:-$HOME/.cache/elves}/bin/<program>-<version>
# A binary already there is not rebuilt (the version is in its name).
#
#   tools/e2e/build-go-binaries.sh [program...]    default: all of them
#
# Programs: kube-state-metrics, prometheus-operator, prometheus-config-reloader,
# k6-operator-manager, coredns, prometheus, kube-router (not an image: cluster.sh runs it
# on the host as the NetworkPolicy firewall).
#
# Why a wrapper module per program: prometheus-operator and k6-operator carry `replace`
# directives in their go.mod, so `go install module@version` refuses them. A tiny main
# module that requires the program's module (and, for prometheus-operator, its nested
# modules at the same published version; for prometheus, the replace its go.mod has)
# builds all of them the same way.
#
# Prometheus is built with only the service discovery the cluster uses: Kubernetes (what
# prometheus-operator's configuration asks for) plus file and HTTP (Prometheus' own
# minimum), the cut Prometheus' plugins.yml makes for custom builds. Its cmd/prometheus
# main.go is copied into the wrapper with the `plugins` import (every SD: AWS, Azure,
# GCE, OpenStack, Consul, ...) replaced by those three, which halves the Go source
# compiled (85 MB -> 46 MB outside the standard library).
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

cache=${ELVES_CACHE:-$HOME/.cache/elves}
bin=$cache/bin
work=$cache/go-build

readonly SCRIPT_NAME=build-go-binaries
# shellcheck source=../lib/log.sh
source "$here/../lib/log.sh"

# program -> "module version package [extra-requires...]"; an extra require is a nested
# module of the same repository, taken at the same version instead of its local path.
declare -A RECIPES=(
  [kube-state-metrics]="k8s.io/kube-state-metrics/v2 $KUBE_STATE_METRICS_VERSION k8s.io/kube-state-metrics/v2"
  [prometheus-operator]="github.com/prometheus-operator/prometheus-operator $PROMETHEUS_OPERATOR_VERSION github.com/prometheus-operator/prometheus-operator/cmd/operator github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring github.com/prometheus-operator/prometheus-operator/pkg/client"
  [prometheus-config-reloader]="github.com/prometheus-operator/prometheus-operator $PROMETHEUS_OPERATOR_VERSION github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring github.com/prometheus-operator/prometheus-operator/pkg/client"
  [k6-operator-manager]="github.com/grafana/k6-operator $K6_OPERATOR_VERSION github.com/grafana/k6-operator"
  [coredns]="github.com/coredns/coredns $COREDNS_VERSION github.com/coredns/coredns"
  # Prometheus' Go module versions are v0.<minor>.<patch> for Prometheus 3.<minor>.<patch>.
  # Its go.mod pins fsnotify back to v1.7.0; the wrapper repeats that replace.
  [prometheus]="github.com/prometheus/prometheus $PROMETHEUS_MODULE_VERSION github.com/prometheus/prometheus/cmd/prometheus github.com/fsnotify/fsnotify@v1.8.0=>github.com/fsnotify/fsnotify@v1.7.0"
  [kube-router]="github.com/cloudnativelabs/kube-router/v2 $KUBE_ROUTER_VERSION github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
)
readonly ORDER=(coredns kube-state-metrics prometheus-operator prometheus-config-reloader k6-operator-manager prometheus kube-router)

# The path a program's binary has in the cache.
binary_path() {
  local recipe
  read -ra recipe <<<"${RECIPES[$1]}"
  if [[ $1 == prometheus ]]; then
    echo "$bin/$1-$PROMETHEUS_BINARY_VERSION"
  else
    echo "$bin/$1-${recipe[1]}"
  fi
}

# In the wrapper module (the current directory): cmd/prometheus/main.go of Prometheus
# module $1 at version $2, registering only the Kubernetes, file and HTTP discovery.
trim_prometheus_discovery() {
  local source
  source="$(go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')/cmd/prometheus/main.go"
  [[ -f $source ]] || die "no cmd/prometheus/main.go in $1@$2"
  grep -q '^'$'\t''_ "github.com/prometheus/prometheus/plugins"' "$source" \
    || die "$1@$2's main.go no longer imports the plugins package: update trim_prometheus_discovery"
  mkdir -p cmd/prometheus
  sed 's|^\t_ "github.com/prometheus/prometheus/plugins".*$|\t_ "github.com/prometheus/prometheus/discovery/file"\n\t_ "github.com/prometheus/prometheus/discovery/http"\n\t_ "github.com/prometheus/prometheus/discovery/kubernetes"|' \
    "$source" >cmd/prometheus/main.go
}

build_one() {
  local name=$1 out module version package extra
  out=$(binary_path "$name")
  if [[ -x $out ]]; then
    echo "build-go-binaries: $name already built: $out"
    return 0
  fi
  read -r module version package extra <<<"${RECIPES[$name]}"
  local dir=$work/$name-$version
  mkdir -p "$dir" "$bin"
  {
    echo "// Generated by tools/e2e/build-go-binaries.sh: do not edit."
    echo "module elves.local/build-$name"
    echo
    echo "go 1.24"
    echo
    echo "require $module $version"
    local m
    for m in $extra; do
      if [[ $m == *'=>'* ]]; then
        m=${m//@/ }
        echo "replace ${m/=>/ => }"
      else
        echo "require $m $version"
      fi
    done
  } >"$dir/go.mod"
  : >"$dir/go.sum"

  # Version stamps, so the programs report what they are (prometheus/common is used by
  # kube-state-metrics and prometheus-operator; the -X is ignored where the package is absent).
  local ldflags="-s -w -X github.com/prometheus/common/version.Version=${version#v}"
  [[ $name != kube-router ]] || ldflags+=" -X $module/pkg/version.Version=$version"
  local started=$SECONDS
  echo "build-go-binaries: building $name $version"
  (
    cd "$dir"
    export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false"
    if [[ $name == prometheus ]]; then
      trim_prometheus_discovery "$module" "$version"
      package=./cmd/prometheus
    fi
    go list -deps "$package" >/dev/null
    nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$out.new" "$package"
  ) || die "building $name $version failed (see above)"
  mv -f "$out.new" "$out"
  echo "build-go-binaries: built $out in $((SECONDS - started)) s"
}

main() {
  command -v go >/dev/null || die "go is not installed"
  local names=("$@")
  ((${#names[@]})) || names=("${ORDER[@]}")
  local n
  for n in "${names[@]}"; do
    [[ -n ${RECIPES[$n]:-} ]] || die "unknown program '$n' (known: ${ORDER[*]})"
    build_one "$n"
  done
}

main "$@"
