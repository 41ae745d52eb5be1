#!/usr/bin/env bash
# Builds into the cache what tier 4's autoscaling tests install, last in the tier: KEDA (with the
# scalers the cluster uses: build-go-binaries.sh) and metrics-server, their programs and images.
# First it checks that Kubernetes is built, and says so: tier 3 may start then.
#
#   tools/e2e/prebuild-autoscaling.sh
#
# `make test` runs it niced beside tier 4 (tools/with-background-build.sh ... --then-beside
# make test-apiserver): tier 4 leaves about a core idle, and these builds (each from a build list
# of its own: nothing of them is compiled before, build-go-binaries.sh says why) fit there instead
# of following tier 2 in the prebuild. Should the tests reach them first, they wait for the build
# of the same program (build-go-binaries.sh builds each once at a time) and find it built.
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly SCRIPT_NAME=prebuild-autoscaling
# shellcheck source=../lib/log.sh
source "$here/../lib/log.sh"

# The programs, then the images that hold them (tools/e2e/build-images.sh's names): the images'
# builder takes one lock for all its builds, so it is called only once the programs are there.
readonly PROGRAMS=(keda-operator keda-adapter metrics-server)
readonly IMAGES=(keda keda-metrics-apiserver metrics-server)

main() {
  local started=$SECONDS
  "$here/../build-kubernetes.sh"
  [[ -z ${ELVES_BUILD_READY:-} ]] || touch "$ELVES_BUILD_READY"
  "$here/build-go-binaries.sh" "${PROGRAMS[@]}"
  "$here/build-images.sh" "${IMAGES[@]}" >/dev/null
  log "the autoscaling tests' programs and images are in the cache ($((SECONDS - started)) s)"
}

main "$@"
