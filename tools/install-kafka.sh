#!/usr/bin/env bash
# Assemble an Apache Kafka broker (KRaft mode, on the machine's JRE) from its Maven Central jars at
# the pinned version, checked against the committed sha256 of every jar, and cache it.
#
# Settings (environment):
#   ELVES_CACHE     cache root; the jars land in $ELVES_CACHE/kafka/<version>/libs
#                   (default: $HOME/.cache/elves)
#   KAFKA_VERSION   overrides the pin from tools/versions.env (then give --relock)
#
# Options:
#   --relock        write tools/kafka/jars-<version>.sha256 from what Maven resolved (for a new
#                   version; review and commit the file), instead of checking against it
#
# Idempotent: when the cached jars are the pinned version's and their hashes match, nothing is
# fetched. Prints the libs directory on stdout (and only that), so callers can do
#   KAFKA_LIBS="$(tools/install-kafka.sh)"; java -cp "$KAFKA_LIBS/*" kafka.Kafka server.properties
set -Eeuo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SCRIPT_DIR

readonly SCRIPT_NAME=install-kafka
# shellcheck source=lib/log.sh
source "${SCRIPT_DIR}/lib/log.sh"
# shellcheck source=lib/cache-root.sh
source "${SCRIPT_DIR}/lib/cache-root.sh"

# The jars of a directory match the lock: the same names, each with its hash, nothing more.
matches_lock() {
  local libs="$1" lock="$2"
  [[ -d "$libs" ]] || return 1
  diff <(find "$libs" -maxdepth 1 -name '*.jar' -printf '%f\n' | sort) <(awk '{print $2}' "$lock" | sort) >/dev/null || return 1
  (cd "$libs" && sha256sum --quiet --strict -c "$lock") >/dev/null 2>&1
}

main() {
  local relock=false
  case "${1:-}" in
    "") ;;
    --relock) relock=true ;;
    *) die "unknown option '$1' (known: --relock)" ;;
  esac

  local pinned version
  # In a subshell, so that the file's value never replaces a KAFKA_VERSION from the environment.
  # shellcheck source=versions.env
  pinned="$(. "$SCRIPT_DIR/versions.env" && echo "$KAFKA_VERSION")"
  # shellcheck disable=SC2031 # the environment's KAFKA_VERSION, unchanged by the subshell
  version="${KAFKA_VERSION:-$pinned}"
  [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "KAFKA_VERSION '$version' is not a release (e.g. 4.1.1)"

  local lock="$SCRIPT_DIR/kafka/jars-$version.sha256"
  local home="$ELVES_CACHE/kafka/$version"
  local libs="$home/libs"

  if ! $relock; then
    [[ -f "$lock" ]] || die "no hashes for Kafka $version ($lock): run $0 --relock with KAFKA_VERSION=$version"
    if matches_lock "$libs" "$lock"; then
      echo "install-kafka: $libs is already Kafka $version" >&2
      echo "$libs"
      return 0
    fi
  fi

  command -v mvn >/dev/null 2>&1 || die "mvn is not on PATH; install Maven with tools/install-local-deps.sh"
  command -v java >/dev/null 2>&1 || die "java is not on PATH; install OpenJDK 17 with tools/install-local-deps.sh"
  mkdir -p "$home"

  # Resolve into a scratch directory and move it into place only once checked, so an interrupted
  # or tampered download never leaves jars a later run would trust. A global for the EXIT trap.
  SCRATCH="$(mktemp -d "$home/.libs.XXXXXX")"
  trap 'rm -rf "$SCRATCH"' EXIT

  log "resolving org.apache.kafka:kafka_2.13:$version and its dependencies from Maven Central"
  mvn -q -B -Dstyle.color=never -f "$SCRIPT_DIR/kafka/pom.xml" -Dkafka.version="$version" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$SCRATCH" >&2 \
    || die "Maven could not resolve Kafka $version (see the messages above)"

  if $relock; then
    (cd "$SCRATCH" && sha256sum -- *.jar) >"$lock"
    log "wrote $lock ($(wc -l <"$lock") jars): review and commit it"
  fi
  matches_lock "$SCRATCH" "$lock" \
    || die "the jars Maven resolved for Kafka $version differ from $lock: a jar added, missing or changed"

  rm -rf "$libs"
  mv "$SCRATCH" "$libs"
  log "installed $libs"
  echo "$libs"
}

main "$@"
