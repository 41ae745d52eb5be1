#!/usr/bin/env bash
# Builds into the cache what the API-server and cluster tiers need and this repository's
# changing sources do not decide: Kubernetes, the cluster's Go programs, the third-party
# images and the Debian bases of Elves' own images (their jars come later, from tier 2).
#
#   tools/e2e/prebuild.sh
#
# Kubernetes first: it is all tier 3 needs that tier 1 has not built, so once it is there the
# script creates the file $ELVES_BUILD_READY, if set, and tools/with-background-build.sh starts
# tier 3 beside tier 2 while the rest builds.
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

# Elves' own images: only their bases here (the images need the jars and the operator).
readonly OWN_IMAGES=(operator gateway registry ingestor)

main() {
  local started=$SECONDS images=() name
  "$here/../build-kubernetes.sh"
  [[ -z ${ELVES_BUILD_READY:-} ]] || touch "$ELVES_BUILD_READY"
  "$here/build-go-binaries.sh"
  for name in $("$here/build-images.sh" --list | cut -d' ' -f1); do
    [[ " ${OWN_IMAGES[*]} " == *" $name "* ]] || images+=("$name")
  done
  "$here/build-images.sh" "${images[@]}" >/dev/null
  "$here/build-images.sh" --bases "${OWN_IMAGES[@]}"
  log "the cluster tiers' programs and images are in the cache ($((SECONDS - started)) s)"
}

main "$@"
