#!/bin/sh
# Starts PostgreSQL the way the official image does, for the settings a chart uses:
#   POSTGRES_PASSWORD (required unless POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_USER
#   (default postgres), POSTGRES_DB (default: the user), PGDATA (initialised when empty).
# Runs as the postgres user (uid 999); point PGDATA at a subdirectory of a mounted volume
# so initdb can create it with the permissions it insists on. Like the official image, it
# runs the scripts in /docker-entrypoint-initdb.d (*.sh sourced, *.sql through psql) once,
# on the empty data directory, against a server that listens only on its socket; the chart
# creates the registry's roles there.
set -eu

INIT_DIR=${ELVES_INITDB_DIR:-/docker-entrypoint-initdb.d}  # another directory only in tests

# The init scripts, or none: a data directory they failed on is removed, so the next start
# initialises again rather than serving a database without its roles.
run_init_scripts() {
  [ -d "$INIT_DIR" ] && [ -n "$(ls -A "$INIT_DIR")" ] || return 0
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w -t 60 start >/dev/null
  for f in "$INIT_DIR"/*; do
    case $f in
      *.sh) echo "docker-entrypoint: running $f"; (. "$f") || init_failed "$f" ;;
      *.sql) echo "docker-entrypoint: running $f"
             psql -v ON_ERROR_STOP=1 --username "$user" --dbname "$db" -f "$f" >/dev/null || init_failed "$f" ;;
      *) echo "docker-entrypoint: ignoring $f (neither .sh nor .sql)" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
}

init_failed() {
  echo "docker-entrypoint: $1 failed: removing $PGDATA so the next start initialises again" >&2
  pg_ctl -D "$PGDATA" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$PGDATA"
  exit 1
}

if [ "${1:-}" != postgres ]; then
  exec "$@"
fi

user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
    echo "docker-entrypoint: POSTGRES_PASSWORD is not set (or set POSTGRES_HOST_AUTH_METHOD=trust)" >&2
    exit 1
  fi
  mkdir -p "$PGDATA"
  chmod 700 "$PGDATA"
  pwfile=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
  initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host="$auth" \
    --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  echo "host all all all $auth" >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\" OWNER \"$user\";" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  run_init_scripts
  echo "docker-entrypoint: initialised $PGDATA (user $user, database $db)"
fi

shift
exec postgres -c listen_addresses='*' "$@"
