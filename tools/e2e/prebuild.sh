#!/usr/bin/env bash
# Builds into the cache what the API-server and cluster tiers need and tiers 2 and 3 leave as
# they find it: Kubernetes, the cluster's Go programs, the third-party images, the Debian bases
# of Elves' own images, and the operator's image (its inputs: operator/, loadtests/' scripts and
# examples, k6). The services' images wait for tier 4: tier 2's `mvn verify` rewrites their jars.
# Built here, the operator's image no longer holds up tier 4's harness install whenever a commit
# changed its inputs, as in the warm proof of 2026-11-30 (its archive is dated from that install).
#
#   tools/e2e/prebuild.sh
#
# Everything it builds is cached (tools/build-kubernetes.sh, build-go-binaries.sh,
# build-images.sh), so on a warm machine it only checks, and the tiers that follow find
# it all there. `make test` runs it niced beside tier 2 (tools/with-background-build.sh): on a cold
# machine these builds take about 25 minutes that the later tiers would otherwise wait for,
# while tier 2 mostly waits on its load.
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly SCRIPT_NAME=prebuild
# shellcheck source=../lib/log.sh
source "$here/../lib/log.sh"

# Elves' own images: their bases here, and the operator's image whole (above: why not the others).
readonly OWN_IMAGES=(operator gateway registry ingestor)
readonly OPERATOR_IMAGE=operator

main() {
  local started=$SECONDS images=() name
  "$here/../build-kubernetes.sh"
  "$here/build-go-binaries.sh"
  for name in $("$here/build-images.sh" --list | cut -d' ' -f1); do
    [[ " ${OWN_IMAGES[*]} " == *" $name "* ]] || images+=("$name")
  done
  "$here/build-images.sh" "${images[@]}" >/dev/null
  "$here/build-images.sh" --bases "${OWN_IMAGES[@]}"
  "$here/build-images.sh" "$OPERATOR_IMAGE" >/dev/null
  log "the cluster tiers' programs and images are in the cache ($((SECONDS - started)) s)"
}

main "$@"
