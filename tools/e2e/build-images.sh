#!/usr/bin/env bash
# Builds the container images the end-to-end cluster runs, without any registry:
#   Debian root filesystem (mmdebstrap, cached) -> OCI image (umoci) -> docker-archive
#   (skopeo) -> optionally `ctr images import` into a running containerd.
#
#   tools/e2e/build-images.sh [--import CONTAINERD_SOCKET] [--list] [--versions] [--relock] [--bases] [image...]
#
# With no image names, every image of the cluster tier is built (not the autoscaling tests'
# keda, keda-metrics-apiserver and metrics-server: only when named, as `make test-autoscaling`
# does, since KEDA and metrics-server are large Go builds). --list prints "name tag" for each image;
# --versions prints the Debian packages each built image's base was made of.
# --bases builds only the named images' Debian bases (what takes the time), not the images:
# tools/e2e/prebuild.sh prepares Elves' own images this way before their jars exist.
# Recipes are in images/<recipe>/image.conf, Debian bases in images/bases/<base>.conf;
# tests/e2e/README.md lists the images and their tags.
#
# The bases come from the Debian mirror, which keeps only each package's latest version
# (no snapshot archive is reachable here to pin a date). Each base's packages and versions
# are locked in images/bases/<base>.lock, written by the first build of the base (commit it).
# A later build records the versions it used beside the root filesystem and the image
# (--versions shows them) and tells them from the lock with tools/e2e/base_lock.py: a Debian
# update within the release (a security fix, a library's point release) is reported, not
# fatal, so a fresh machine builds whatever Debian published since; a new upstream version
# of a base's PRINCIPAL package (RabbitMQ, PostgreSQL, the JRE, Python, curl) fails, naming
# it; --relock accepts the versions the base has now and rewrites the lock.
#
# Caches under ${ELVES_CACHE:-$HOME/.cache/elves}/images:
#   rootfs/<base>-<key>.tar     a base root filesystem (key: its recipe)
#   rootfs/<base>-<key>.packages  the "package version" lines it was built with
#   archives/<image>-<key>.packages  the same for a finished image (its base's)
#   oci/                        the OCI layout umoci works in (layers shared by digest)
#   archives/<image>-<key>.tar  a finished image (key: recipe, base and input files)
# so a second run builds nothing, and an import is skipped when containerd already has
# the image with the same key (kept as the image label elves.key).
set -Eeuo pipefail
# A failure inside $(...) must stop the script too.
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
REPO=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/cache-root.sh
source "$here/../lib/cache-root.sh"
export ELVES_CACHE
# The services' and operator's tag: the chart's appVersion, which is the tag it deploys.
ELVES_VERSION=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$REPO/charts/elves/Chart.yaml" 2>/dev/null)
ELVES_VERSION=${ELVES_VERSION:-$(sed -n 's/^version = "\(.*\)"$/\1/p' "$REPO/operator/pyproject.toml")}
export ELVES_VERSION
CACHE=$ELVES_CACHE/images
LAYOUT=$CACHE/oci
# --relock: accept the Debian versions a base now has (see the header).
RELOCK=0

# image name -> recipe directory under images/
declare -A RECIPE_OF=(
  [pause]=pause [coredns]=static-program
  [gateway]=service [registry]=service [ingestor]=service [operator]=operator
  [rabbitmq]=rabbitmq [postgres]=postgres [prometheus]=static-program
  [kube-state-metrics]=static-program [prometheus-operator]=static-program
  [prometheus-config-reloader]=static-program [k6-operator]=static-program
  [k6]=k6 [k6-starter]=k6-starter
  [keda]=static-program [keda-metrics-apiserver]=static-program [metrics-server]=static-program
  [orders]=orders
)
# orders: tier 4's foreign system (tests/e2e/test_foreign_system.py), not Elves.
readonly ALL_IMAGES=(pause coredns rabbitmq postgres prometheus kube-state-metrics
  prometheus-operator prometheus-config-reloader k6-operator k6 k6-starter
  operator gateway registry ingestor orders)

# The Debian archive the bases come from: the host's mirror, with updates and security.
readonly MIRRORS=(
  "deb http://deb.debian.org/debian $DEBIAN_SUITE main"
  "deb http://deb.debian.org/debian $DEBIAN_SUITE-updates main"
  "deb http://deb.debian.org/debian-security $DEBIAN_SUITE-security main"
)
# Documentation and translations are left out of every base (copyright files stay).
readonly DPKG_EXCLUDES=(
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias'
)

readonly SCRIPT_NAME=build-images
# shellcheck source=../lib/log.sh
source "$here/../lib/log.sh"

sha() { sha256sum | cut -c1-16; }

# --- bases -------------------------------------------------------------------

# Prints the cache key of a base: its recipe, the suite, the mirrors and the excludes.
base_key() {
  { cat "$REPO/images/bases/$1.conf"; printf '%s\n' "$DEBIAN_SUITE" "${MIRRORS[@]}" "${DPKG_EXCLUDES[@]}"; } | sha
}

# Builds (once) the root filesystem tarball of a base and prints its path.
base_rootfs() {
  local base=$1 key tarball
  key=$(base_key "$base")
  tarball=$CACHE/rootfs/$base-$key.tar
  if [[ ! -s $tarball ]]; then
    (
      PACKAGES=() EXPECT_VERSIONS=() FIXED_USERS=() NO_POSTGRES_CLUSTER=0 MAKE_DIRS=()
      # shellcheck disable=SC1090
      source "$REPO/images/bases/$base.conf"
      local hooks=() spec name uid home
      # Users with fixed ids, written before the packages' maintainer scripts run, so
      # adduser finds them and the image's uid is known to the charts.
      for spec in "${FIXED_USERS[@]}"; do
        IFS=: read -r name uid home <<<"$spec"
        hooks+=(--essential-hook="echo '$name:x:$uid:$uid::$home:/usr/sbin/nologin' >>\"\$1/etc/passwd\"; echo '$name:x:$uid:' >>\"\$1/etc/group\"; echo '$name:*:19000:0:99999:7:::' >>\"\$1/etc/shadow\"")
      done
      local dir
      for dir in "${MAKE_DIRS[@]}"; do hooks+=(--essential-hook="mkdir -p \"\$1$dir\""); done
      # The hooks are scripts mmdebstrap runs with the root filesystem as $1: single quotes on purpose.
      if ((NO_POSTGRES_CLUSTER)); then
        # shellcheck disable=SC2016
        hooks+=(--essential-hook='mkdir -p "$1/etc/postgresql-common" && echo "create_main_cluster = false" >"$1/etc/postgresql-common/createcluster.conf"')
      fi
      # shellcheck disable=SC2016
      hooks+=(--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/*.log')
      mkdir -p "$CACHE/rootfs"
      log "base $base: mmdebstrap $DEBIAN_SUITE with ${PACKAGES[*]}"
      local started=$SECONDS
      mmdebstrap --quiet --variant=apt --format=tar --include="$(IFS=,; echo "${PACKAGES[*]}")" \
        "${DPKG_EXCLUDES[@]}" "${hooks[@]}" "$DEBIAN_SUITE" "$tarball.tmp" "${MIRRORS[@]}" >&2 ||
        die "mmdebstrap for base $base failed (see above)"
      check_versions "$tarball.tmp" "${EXPECT_VERSIONS[@]}"
      mv "$tarball.tmp" "$tarball"
      log "base $base: $(du -h "$tarball" | cut -f1) in $((SECONDS - started)) s"
    )
  fi
  # A cached root filesystem too: the lock may be newer than the cache.
  check_lock "$base" "$tarball"
  echo "$tarball"
}

# "package version" of every package installed in a root filesystem tarball, sorted.
installed_packages() {
  tar -xOf "$1" ./var/lib/dpkg/status |
    awk '$1=="Package:"{p=$2} $1=="Version:"{v=$2} /^$/{if(p!="")print p, v; p=""} END{if(p!="")print p, v}' |
    LC_ALL=C sort
}

# Records the packages of a base's root filesystem beside it and checks them against
# images/bases/<base>.lock (tools/e2e/base_lock.py): writes the lock when there is none (or
# with --relock); reports Debian's updates within the release; fails on a new upstream
# version of a principal package, naming the command that accepts it.
check_lock() {
  local base=$1 tarball=$2 lock=$REPO/images/bases/$1.lock packages=${2%.tar}.packages
  [[ -s $packages && $packages -nt $tarball ]] || installed_packages "$tarball" >"$packages"
  if [[ ! -f $lock || $RELOCK == 1 ]]; then
    { echo "# Packages of the $base base (tools/e2e/build-images.sh writes this; --relock rewrites it)."; cat "$packages"; } >"$lock"
    log "base $base: wrote $lock ($(wc -l <"$packages") packages): commit it"
    return
  fi
  local principal=()
  # shellcheck disable=SC1090
  mapfile -t principal < <(PRINCIPAL=(); source "$REPO/images/bases/$base.conf"; printf '%s\n' "${PRINCIPAL[@]}")
  python3 "$here/base_lock.py" --base "$base" --lock "$lock" --now "$packages" \
    --principal "${principal[@]}" --relock-command "tools/e2e/build-images.sh --relock --bases ${IMAGE_NAME:-IMAGE}" ||
    die "base $base: see above"
}

# Fails unless each "package version-prefix" pair is installed in the tarball: the tags
# carry these versions, so a distribution update that changes them must not go unnoticed.
check_versions() {
  local tarball=$1 spec package prefix version
  shift
  local status
  status=$(tar -xOf "$tarball" ./var/lib/dpkg/status)
  for spec in "$@"; do
    read -r package prefix <<<"$spec"
    version=$(awk -v p="$package" '$1=="Package:"{cur=$2} cur==p && $1=="Version:"{print $2; exit}' <<<"$status")
    version=${version#*:}
    [[ $version == "$prefix"* ]] || die "base has $package '${version:-not installed}', expected $prefix*: update the image tag and images/bases"
  done
}

# Makes (once) the one-layer OCI image of a base in the layout and prints its tag there.
base_image() {
  local base=$1 tarball tag
  tarball=$(base_rootfs "$base")
  tag=base-$(basename "$tarball" .tar)
  if ! umoci ls --layout "$LAYOUT" | grep -qx "$tag"; then
    log "base $base: packing the root filesystem as a layer"
    umoci new --image "$LAYOUT:$tag"
    umoci raw add-layer --image "$LAYOUT:$tag" "$tarball"
  fi
  echo "$tag"
}

# --- images ------------------------------------------------------------------

# Loads an image's recipe into the current (sub)shell.
load_recipe() {
  IMAGE_NAME=$1
  local recipe=${RECIPE_OF[$IMAGE_NAME]:-}
  [[ -n $recipe ]] || die "unknown image '$IMAGE_NAME' (known: ${ALL_IMAGES[*]})"
  RECIPE_DIR=$REPO/images/$recipe
  TAG='' BASE='' IMAGE_USER='' WORKDIR='' ENTRYPOINT=() CMD=() ENV=() ALIASES=()
  input_files() { :; }
  add_files() { :; }
  # shellcheck disable=SC1091
  source "$RECIPE_DIR/image.conf"
  [[ -n $TAG && -n $BASE ]] || die "$RECIPE_DIR/image.conf must set TAG and BASE"
}

# The cache key of an image: this script, its recipe directory, its base, its inputs.
image_key() {
  {
    echo "$IMAGE_NAME $TAG ${ALIASES[*]}"
    cat "${BASH_SOURCE[0]}"
    find "$RECIPE_DIR" -type f -print0 | sort -z | xargs -0 cat
    [[ $BASE == scratch ]] || base_key "$BASE"
    local f
    while read -r f; do
      [[ -z $f ]] && continue
      if [[ -e $f ]]; then sha256sum <"$f"; else echo "missing $f"; fi
    done < <(input_files)
  } | sha
}

# Builds one image's docker-archive (unless cached) and prints its path.
build_image() {
  load_recipe "$1"
  local key archive
  key=$(image_key)
  archive=$CACHE/archives/$IMAGE_NAME-$key.tar
  if [[ -s $archive ]]; then
    log "$IMAGE_NAME: cached ($TAG)"
    echo "$archive"
    return
  fi
  local started=$SECONDS work=work-$IMAGE_NAME
  umoci rm --image "$LAYOUT:$work" 2>/dev/null || true
  if [[ $BASE == scratch ]]; then
    umoci new --image "$LAYOUT:$work"
  else
    local base_tag
    base_tag=$(base_image "$BASE")
    umoci tag --image "$LAYOUT:$base_tag" "$work"
  fi

  local files
  files=$(mktemp -d "$CACHE/files.XXXXXX")
  chmod 755 "$files"
  add_files "$files"
  if [[ -n $(ls -A "$files") ]]; then
    # Deterministic layer: sorted, numeric owners as the recipe set them, fixed times.
    tar -C "$files" --sort=name --numeric-owner --mtime=@0 -cf "$files.tar" .
    umoci raw add-layer --image "$LAYOUT:$work" "$files.tar"
  fi
  rm -rf "$files" "$files.tar"

  local config=(--config.user="$IMAGE_USER" --config.workingdir="${WORKDIR:-/}") x
  for x in "${ENTRYPOINT[@]}"; do config+=(--config.entrypoint="$x"); done
  for x in "${CMD[@]}"; do config+=(--config.cmd="$x"); done
  for x in "${ENV[@]}"; do config+=(--config.env="$x"); done
  umoci config --image "$LAYOUT:$work" --author=elves --history.created_by="tools/e2e/build-images.sh $IMAGE_NAME" "${config[@]}"

  mkdir -p "$CACHE/archives"
  # The key is 16 hex digits: a plain * would also match k6-starter for k6.
  rm -f "$CACHE/archives/$IMAGE_NAME"-????????????????.{tar,packages}
  local alias additional=()
  for alias in "${ALIASES[@]}"; do additional+=(--additional-tag "$alias"); done
  skopeo copy --quiet "${additional[@]}" "oci:$LAYOUT:$work" "docker-archive:$archive.tmp:$TAG" >&2
  # The Debian versions the image was made of, kept with it (--versions prints them).
  [[ $BASE == scratch ]] || cp "$CACHE/rootfs/${base_tag#base-}.packages" "${archive%.tar}.packages"
  mv "$archive.tmp" "$archive"
  umoci rm --image "$LAYOUT:$work"
  log "$IMAGE_NAME: built $TAG in $((SECONDS - started)) s ($(du -h "$archive" | cut -f1))"
  echo "$archive"
}

# Prints the Debian packages a built image's base was made of (recorded by build_image).
print_versions() {
  load_recipe "$1"
  local packages
  packages=$CACHE/archives/$IMAGE_NAME-$(image_key).packages
  if [[ $BASE == scratch ]]; then
    echo "# $IMAGE_NAME ($TAG): no Debian base"
  elif [[ -s $packages ]]; then
    echo "# $IMAGE_NAME ($TAG): base $BASE"
    cat "$packages"
  else
    echo "# $IMAGE_NAME ($TAG): not built with its current recipe"
  fi
}

# Imports a built image into containerd's k8s.io namespace unless it is already there
# with the same key.
import_image() {
  local socket=$1 archive=$2
  local key=${archive##*-}
  key=${key%.tar}
  local ctr=(ctr --address "$socket" -n k8s.io) ref
  if "${ctr[@]}" images ls "name==$(normalized_ref "$TAG")" 2>/dev/null | grep -q "elves.key=$key"; then
    log "$IMAGE_NAME: already in containerd"
    return
  fi
  "${ctr[@]}" images import "$archive" >/dev/null
  for ref in "$TAG" "${ALIASES[@]}"; do
    "${ctr[@]}" images label "$(normalized_ref "$ref")" "elves.key=$key" >/dev/null
  done
  log "$IMAGE_NAME: imported $TAG${ALIASES[*]:+ (also as ${ALIASES[*]})}"
}

# The name containerd (and the kubelet) knows an image by: Docker Hub's normalisation.
normalized_ref() {
  local first=${1%%/*}
  if [[ $first == "$1" ]]; then
    echo "docker.io/library/$1"
  elif [[ $first == *.* || $first == *:* || $first == localhost ]]; then
    echo "$1"
  else
    echo "docker.io/$1"
  fi
}

main() {
  local socket='' list=0 versions=0 bases_only=0 names=()
  while (($#)); do
    case $1 in
      --import) socket=${2:?--import needs containerd socket path}; shift 2 ;;
      --list) list=1; shift ;;
      --versions) versions=1; shift ;;
      --bases) bases_only=1; shift ;;
      --relock) RELOCK=1; shift ;;
      -h|--help) sed -n '2,31p' "${BASH_SOURCE[0]}"; return 0 ;;
      -*) die "unknown option $1" ;;
      *) names+=("$1"); shift ;;
    esac
  done
  ((${#names[@]})) || names=("${ALL_IMAGES[@]}")

  if ((list)); then
    local n
    for n in "${names[@]}"; do (load_recipe "$n"; echo "$n $TAG"); done
    return 0
  fi

  if ((versions)); then
    local n
    for n in "${names[@]}"; do (print_versions "$n"); done
    return 0
  fi

  local tool
  for tool in mmdebstrap umoci skopeo tar; do
    command -v "$tool" >/dev/null || die "$tool is missing: run tools/e2e/install-node-deps.sh"
  done
  [[ -z $socket || -S $socket ]] || die "no containerd socket at $socket"
  [[ $(id -u) == 0 ]] || die "must run as root (image layers keep their owners)"

  mkdir -p "$CACHE"
  # One builder at a time: the OCI layout is not safe for concurrent writers.
  exec 9>"$CACHE/.lock"
  flock 9
  [[ -f $LAYOUT/index.json ]] || umoci init --layout "$LAYOUT"

  local name archive
  for name in "${names[@]}"; do
    if ((bases_only)); then
      (load_recipe "$name"; [[ $BASE == scratch ]] || base_image "$BASE" >/dev/null)
      continue
    fi
    archive=$(build_image "$name")
    if [[ -n $socket ]]; then (load_recipe "$name"; import_image "$socket" "$archive"); fi
  done
  # Drop the blobs no tag uses any more (slow on a large layout: only after a build).
  if [[ -n $(find "$LAYOUT/index.json" -newer "$CACHE/.lock") ]]; then umoci gc --layout "$LAYOUT"; fi
}

main "$@"
