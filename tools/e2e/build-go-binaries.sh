#!/usr/bin/env bash
# Builds the Go programs the end-to-end cluster runs as images, from their Go modules at
# the pinned versions (tools/versions.env, tools/e2e/versions.env), into
#   ${ELVES_CACHE:-$HOME/.cache/elves}/bin/<program>-<version>
# A binary already there is not rebuilt (the version is in its name).
#
#   tools/e2e/build-go-binaries.sh [--download] [program...]    default: all of them
#   tools/e2e/build-go-binaries.sh --path program                  where its binary goes
#   tools/e2e/build-go-binaries.sh --shared-module                 what tools/update-cluster-build.sh
#       needs of SHARED's programs: their go.mod lines, then a line `packages:` and their main packages
#
# --download only resolves and downloads the Go modules the named programs need (no
# compiling): what a build would fetch from the module proxy, to measure or to fetch ahead.
#
# Programs: kube-state-metrics, prometheus-operator, prometheus-config-reloader,
# k6-operator-manager, coredns, prometheus, kube-router (not an image: cluster.sh runs it
# on the host as the NetworkPolicy firewall), orders (tier 4's foreign system, from this
# repository: below), and, for the opt-in autoscaling tests (built only when named),
# keda-operator, keda-adapter (KEDA's external metrics API server) and metrics-server.
#
# Why a wrapper module per program: prometheus-operator, k6-operator and KEDA carry
# `replace` directives in their go.mod, so `go install module@version` refuses them. A tiny
# main module that requires the program's module (and, for prometheus-operator, its nested
# modules at the same published version; for prometheus and KEDA, the replaces and excludes
# their go.mod has, which only a main module's go.mod applies) builds all of them the same way.
#
# Prometheus is built with only the service discovery the cluster uses: Kubernetes (what
# prometheus-operator's configuration asks for) plus file and HTTP (Prometheus' own
# minimum), the cut Prometheus' plugins.yml makes for custom builds. Its cmd/prometheus
# main.go is copied into the wrapper with the `plugins` import (every SD: AWS, Azure,
# GCE, OpenStack, Consul, ...) replaced by those three, which halves the Go source
# compiled (85 MB -> 46 MB outside the standard library).
#
# KEDA is built the same way with only the scalers the cluster tier's ScaledObjects use
# (KEDA_TRIGGERS): tools/e2e/trim_keda.py copies its module without the others and the wrapper
# replaces the module with that copy, which cuts the Go source compiled from 171 MB to 71 MB.
#
# One build list for Kubernetes and the programs of SHARED (below): they need the same libraries
# (client-go, apimachinery, grpc, ...), each program at versions of its own, which Go compiled
# once per version: 266 MB of Go source outside the standard library for Kubernetes and these
# six. Built from the one module tools/cluster-build/ (go.mod and go.sum committed, written by
# tools/update-cluster-build.sh from these recipes; read-only here), every library has one
# version, compiled once into Go's build cache, where every later build finds it: 123 MB, of which
# Kubernetes alone is 84. Their binaries' names carry a hash of that module, so a binary built
# from another build list is not taken for theirs. Left out, each with a module of its own: KEDA
# (Kubernetes libraries v0.36, newer than Kubernetes'), Prometheus 3.5 (its Kubernetes discovery
# does not compile against client-go v0.33), metrics-server v0.8.0 (its scraper does not compile
# against the Prometheus library prometheus-operator asks for), and this repository's programs.
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

# shellcheck source=../lib/cache-root.sh
source "$here/../lib/cache-root.sh"
cache=$ELVES_CACHE
bin=$cache/bin
work=$cache/go-build

readonly SCRIPT_NAME=build-go-binaries
# shellcheck source=../lib/log.sh
source "$here/../lib/log.sh"

# program -> "module version package [extra...]"; an extra is a nested module of the same
# repository, taken at the same version instead of its local path; or `a@v=>b@w`, a replace;
# or `!a@v`, an exclude (both repeated from the program's own go.mod).
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
  # KEDA's operator and its metrics API server (the admission webhooks are left out: nothing
  # here needs them). Its go.mod's one replace and one exclude, repeated.
  [keda-operator]="github.com/kedacore/keda/v2 $KEDA_VERSION github.com/kedacore/keda/v2/cmd/operator $KEDA_GO_MOD_DIRECTIVES"
  [keda-adapter]="github.com/kedacore/keda/v2 $KEDA_VERSION github.com/kedacore/keda/v2/cmd/adapter $KEDA_GO_MOD_DIRECTIVES"
  [metrics-server]="sigs.k8s.io/metrics-server $METRICS_SERVER_VERSION sigs.k8s.io/metrics-server/cmd/metrics-server"
)
# Programs of this repository rather than a published module: program -> its directory, which
# holds its go.mod and the go.sum that pins every module it needs (fetched through the module
# proxy like the others'). The binary's name carries a hash of the sources, so an edit builds
# it again and the image that holds it (tools/e2e/build-images.sh) changes with it.
declare -A LOCAL_SOURCES=(
  [orders]=tests/e2e/orders-system
)
# The programs built from the cluster's one build list (the header says why).
readonly SHARED=(coredns kube-state-metrics prometheus-operator prometheus-config-reloader k6-operator-manager kube-router)
readonly SHARED_MODULE=$REPO/tools/cluster-build
# What a build of every program makes (KEDA's, for the autoscaling tests, are built when named).
readonly ORDER=("${SHARED[@]}" prometheus orders)
readonly AUTOSCALING=(keda-operator keda-adapter metrics-server)
# 1: --download, resolve and fetch the modules only.
DOWNLOAD_ONLY=0

# A short hash of a local program's sources (its .go files, go.mod and go.sum).
source_hash() {
  (cd "$REPO/${LOCAL_SOURCES[$1]}" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-12
}

# The path a program's binary has in the cache.
binary_path() {
  local recipe
  if [[ -n ${LOCAL_SOURCES[$1]:-} ]]; then
    echo "$bin/$1-src-$(source_hash "$1")"
    return
  fi
  read -ra recipe <<<"${RECIPES[$1]}"
  if [[ $1 == prometheus ]]; then
    echo "$bin/$1-$PROMETHEUS_BINARY_VERSION"
  elif [[ $1 == keda-* ]]; then
    echo "$bin/$1-$KEDA_BINARY_VERSION"
  elif is_shared "$1"; then
    echo "$bin/$1-${recipe[1]}-$(shared_module_hash)"
  else
    echo "$bin/$1-${recipe[1]}"
  fi
}

is_shared() { [[ " ${SHARED[*]} " == *" $1 "* ]]; }

# A short hash of the cluster's one build list (go.mod and go.sum of tools/cluster-build/).
shared_module_hash() {
  cat "$SHARED_MODULE/go.mod" "$SHARED_MODULE/go.sum" | sha256sum | cut -c1-12
}

# Where module $1 at version $2 is in the Go module cache (downloaded when missing).
module_dir() {
  local dir
  dir=$(go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  [[ -d $dir ]] || die "no module directory for $1@$2"
  echo "$dir"
}

# In the wrapper module (the current directory): cmd/prometheus/main.go of Prometheus
# module $1 at version $2, registering only the Kubernetes, file and HTTP discovery.
trim_prometheus_discovery() {
  local source
  source="$(module_dir "$1" "$2")/cmd/prometheus/main.go"
  [[ -f $source ]] || die "no cmd/prometheus/main.go in $1@$2"
  grep -q '^'$'\t''_ "github.com/prometheus/prometheus/plugins"' "$source" \
    || die "$1@$2's main.go no longer imports the plugins package: update trim_prometheus_discovery"
  mkdir -p cmd/prometheus
  sed 's|^\t_ "github.com/prometheus/prometheus/plugins".*$|\t_ "github.com/prometheus/prometheus/discovery/file"\n\t_ "github.com/prometheus/prometheus/discovery/http"\n\t_ "github.com/prometheus/prometheus/discovery/kubernetes"|' \
    "$source" >cmd/prometheus/main.go
}

# In the wrapper module (the current directory): ./keda, a copy of KEDA module $1 at version $2
# with only the scalers of KEDA_TRIGGERS (tools/e2e/trim_keda.py), put in the module's place.
trim_keda_scalers() {
  local source
  source=$(module_dir "$1" "$2")
  python3 "$here/trim_keda.py" "$source" keda "${KEDA_TRIGGERS// /,}" || die "could not trim $1@$2's scalers"
  echo "replace $1 => ./keda" >>go.mod
}

# Builds a program of this repository in its own directory, with its committed go.sum
# (-mod=readonly: a go.mod or go.sum out of date fails instead of being rewritten).
build_local() {
  local name=$1 out=$2 started=$SECONDS what=building
  local go=(env CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" go)
  ((!DOWNLOAD_ONLY)) || what="downloading the modules of"
  echo "build-go-binaries: $what $name (${LOCAL_SOURCES[$name]})"
  mkdir -p "$bin"
  (
    cd "$REPO/${LOCAL_SOURCES[$name]}"
    "${go[@]}" mod download
    ((!DOWNLOAD_ONLY)) || exit 0
    nice -n 10 "${go[@]}" build -trimpath -ldflags "-s -w" -o "$out.new" .
  ) || die "building $name failed (see above)"
  ((DOWNLOAD_ONLY)) || mv -f "$out.new" "$out"
  echo "build-go-binaries: $name done in $((SECONDS - started)) s: $out"
}

# One build of a program at a time (two tiers or helpers may ask for it at once): a second
# waits for the first and finds it built, rather than both writing the same file. A build that
# fails ends the script (die), which lets the lock go.
build_one() {
  local lock
  mkdir -p "$bin"
  exec {lock}>"$bin/.$1.lock"
  flock "$lock"
  build_unlocked "$1"
  exec {lock}>&-
}

build_unlocked() {
  local name=$1 out module version package extra
  out=$(binary_path "$name")
  if [[ -x $out ]] && ((!DOWNLOAD_ONLY)); then
    echo "build-go-binaries: $name already built: $out"
    return 0
  fi
  if [[ -n ${LOCAL_SOURCES[$name]:-} ]]; then
    build_local "$name" "$out"
    return
  fi
  read -r module version package extra <<<"${RECIPES[$name]}"
  local dir goflags
  if is_shared "$name"; then
    # The committed build list as it is: -mod=readonly fails on a module go.sum lacks.
    dir=$work/$name-$version-$(shared_module_hash)
    rm -rf "$dir" && mkdir -p "$dir"
    cp "$SHARED_MODULE/go.mod" "$SHARED_MODULE/go.sum" "$dir/"
    goflags="-mod=readonly -buildvcs=false"
  else
    dir=$work/$name-$version
    mkdir -p "$dir"
    {
      echo "// Generated by tools/e2e/build-go-binaries.sh: do not edit."
      echo "module elves.local/build-$name"
      echo
      echo "go 1.24"
      echo
      module_lines "$name"
    } >"$dir/go.mod"
    : >"$dir/go.sum"
    goflags="-mod=mod -buildvcs=false"
  fi
  mkdir -p "$bin"

  # Version stamps, so the programs report what they are (prometheus/common is used by
  # kube-state-metrics and prometheus-operator; the -X is ignored where the package is absent).
  local ldflags="-s -w -X github.com/prometheus/common/version.Version=${version#v}"
  case $name in
    kube-router) ldflags+=" -X $module/pkg/version.Version=$version" ;;
    keda-*) ldflags+=" -X $module/version.Version=${version#v} -X $module/version.GitCommit=module-$version" ;;
    metrics-server) ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$version" ;;
  esac
  local started=$SECONDS
  if ((DOWNLOAD_ONLY)); then
    echo "build-go-binaries: downloading the modules of $name $version"
  else
    echo "build-go-binaries: building $name $version"
  fi
  (
    cd "$dir"
    export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="$goflags"
    if [[ $name == prometheus ]]; then
      trim_prometheus_discovery "$module" "$version"
      package=./cmd/prometheus
    elif [[ $name == keda-* ]]; then
      trim_keda_scalers "$module" "$version"
    fi
    go list -deps "$package" >/dev/null
    ((!DOWNLOAD_ONLY)) || exit 0
    nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$out.new" "$package"
  ) || die "building $name $version failed (see above)"
  if ((DOWNLOAD_ONLY)); then
    echo "build-go-binaries: modules of $name $version downloaded in $((SECONDS - started)) s"
    return 0
  fi
  mv -f "$out.new" "$out"
  echo "build-go-binaries: built $out in $((SECONDS - started)) s"
}

# The go.mod lines program $1's recipe asks for: its module; the nested modules at the same
# version; the replaces and excludes repeated from its own go.mod.
module_lines() {
  local module version package extra m
  read -r module version package extra <<<"${RECIPES[$1]}"
  echo "require $module $version"
  for m in $extra; do
    if [[ $m == *'=>'* ]]; then
      m=${m//@/ }
      echo "replace ${m/=>/ => }"
    elif [[ $m == '!'* ]]; then
      m=${m#!}
      echo "exclude ${m/@/ }"
    else
      echo "require $m $version"
    fi
  done
}

# For tools/update-cluster-build.sh: SHARED's go.mod lines (each once), then `packages:` and
# their main packages.
shared_module() {
  local name module version package extra
  for name in "${SHARED[@]}"; do module_lines "$name"; done | awk '!seen[$0]++'
  echo "packages:"
  for name in "${SHARED[@]}"; do
    read -r module version package extra <<<"${RECIPES[$name]}"
    echo "$package"
  done
}

main() {
  if [[ ${1:-} == --shared-module ]]; then
    shared_module
    return
  fi
  if [[ ${1:-} == --path ]]; then
    [[ -n ${RECIPES[${2:-}]:-}${LOCAL_SOURCES[${2:-}]:-} ]] || die "--path needs a known program"
    binary_path "$2"
    return
  fi
  command -v go >/dev/null || die "go is not installed"
  if [[ ${1:-} == --download ]]; then
    DOWNLOAD_ONLY=1
    shift
  fi
  local names=("$@")
  ((${#names[@]})) || names=("${ORDER[@]}")
  local n
  for n in "${names[@]}"; do
    [[ -n ${RECIPES[$n]:-}${LOCAL_SOURCES[$n]:-} ]] || die "unknown program '$n' (known: ${ORDER[*]} ${AUTOSCALING[*]})"
    build_one "$n"
  done
}

main "$@"
