# shellcheck shell=bash disable=SC2034 # ELVES_CACHE is read by the sourcing script
# The cache root of Elves' built tools, binaries, CRDs and images: ELVES_CACHE from the
# environment, else $HOME/.cache/elves. The one definition of that default: the Makefile and
# Python's reader (elves.cache.cache_root) agree with it, as a tier-1 test checks. Sourced,
# never run. Assigned, not exported, so a script's children see the environment it was given.
ELVES_CACHE="${ELVES_CACHE:-${HOME}/.cache/elves}"
