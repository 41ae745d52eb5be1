# shellcheck shell=bash
# Messages and errors of Elves' shell scripts, in one format: "NAME: message" on stderr, so
# a script's stdout stays its output. Sourced, never run; the sourcing script sets
# SCRIPT_NAME first (the prefix of its messages, e.g. `readonly SCRIPT_NAME=deployments`),
# else the prefix is the name it was run by.

# Progress the user may follow.
log() { echo "${SCRIPT_NAME:-${0##*/}}: $*" >&2; }
# Something the user should know; the script goes on.
warn() { log "warning: $*"; }
# What is wrong, named; the script stops with status 1.
die() { log "error: $*"; exit 1; }
