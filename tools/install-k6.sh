#!/usr/bin/env bash
# Build k6 at the pinned version from its Go module and cache the binary.
#
# Settings (environment):
#   ELVES_CACHE   cache root; the binary lands in $ELVES_CACHE/bin/k6
#                 (default: $HOME/.cache/elves)
#   K6_VERSION    overrides the pin from tools/versions.env (for trying a new version)
#
# Idempotent: when the cached binary already reports the pinned version, nothing is built.
# Prints the path of the binary on stdout (and only that), so callers can do
#   K6="$(tools/install-k6.sh)"
set -Eeuo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SCRIPT_DIR

readonly SCRIPT_NAME=install-k6
# shellcheck source=lib/log.sh
source "${SCRIPT_DIR}/lib/log.sh"
# shellcheck source=lib/cache-root.sh
source "${SCRIPT_DIR}/lib/cache-root.sh"

# "k6 v1.8.1 (commit/..., go1.26, linux/amd64)" -> true when the first line names our version.
has_version() {
  local binary="$1" version="$2" first_line
  [[ -x "$binary" ]] || return 1
  first_line="$("$binary" version 2>/dev/null | head -n 1)" || return 1
  [[ "$first_line" == "k6 ${version} "* || "$first_line" == "k6 ${version}" ]]
}

# The remote-write output is built in since k6 v0.42 but `k6 version` lists only
# extensions, so try it: one empty iteration with the output on (an unknown output fails
# at start; pushing to a closed loopback port only logs an error).
has_prometheus_output() {
  local binary="$1" script
  script="$SCRATCH/noop.js"
  echo 'export default function () {}' >"$script"
  K6_PROMETHEUS_RW_SERVER_URL=http://127.0.0.1:9/api/v1/write \
    "$binary" run -q --no-usage-report --iterations 1 -o experimental-prometheus-rw "$script" >/dev/null 2>&1
}

main() {
  local pinned version
  # In a subshell, so that the file's value never replaces a K6_VERSION from the environment.
  # shellcheck source=versions.env
  pinned="$(. "$SCRIPT_DIR/versions.env" && echo "$K6_VERSION")"
  # shellcheck disable=SC2031 # the environment's K6_VERSION, unchanged by the subshell
  version="${K6_VERSION:-$pinned}"
  [[ -n "$version" ]] || die "K6_VERSION is not set in $SCRIPT_DIR/versions.env"

  local cache="$ELVES_CACHE"
  local bin_dir="$cache/bin"
  local binary="$bin_dir/k6"

  if has_version "$binary" "$version"; then
    echo "install-k6: $binary is already k6 $version" >&2
    echo "$binary"
    return 0
  fi

  command -v go >/dev/null 2>&1 || die "go is not on PATH; install Go (k6 $version is built from its Go module)"
  mkdir -p "$bin_dir"

  # Build into a scratch GOBIN and move into place only on success, so an interrupted
  # build never leaves a half-written binary that a later run would trust.
  # A global (not local) so the EXIT trap still sees it after main returns.
  SCRATCH="$(mktemp -d "$bin_dir/.k6-build.XXXXXX")"
  trap 'rm -rf "$SCRATCH"' EXIT

  echo "install-k6: building go.k6.io/k6@$version (takes a few minutes on 2 cores)" >&2
  GOBIN="$SCRATCH" CGO_ENABLED=0 nice -n 10 go install "go.k6.io/k6@$version" >&2 \
    || die "go install go.k6.io/k6@$version failed (see the messages above)"

  has_version "$SCRATCH/k6" "$version" \
    || die "the built binary does not report k6 $version: $("$SCRATCH/k6" version 2>&1 | head -n 1)"
  has_prometheus_output "$SCRATCH/k6" \
    || die "k6 $version has no experimental-prometheus-rw output, which Elves writes its metrics with"
  mv -f "$SCRATCH/k6" "$binary"
  echo "install-k6: installed $binary" >&2
  echo "$binary"
}

main "$@"
