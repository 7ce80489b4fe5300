#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis answer at the given URLs, starting them when they are local and
# down: the Debian services where installed, else docker compose where a Docker engine runs.
# Usage: scripts/ensure-services.sh <postgres-url> <redis-url>
set -euo pipefail
cd "$(dirname "$0")/.."

pg_url=${1:?postgres url}
redis_url=${2:?redis url}

hostport() { node -e 'const u=new URL(process.argv[1]);console.log(`${u.hostname} ${u.port||process.argv[2]}`)' "$1" "$2"; }
reachable() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
is_local() { [[ "$1" == 127.0.0.1 || "$1" == localhost || "$1" == ::1 ]]; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"; else return 1; fi; }
docker_up() { command -v docker >/dev/null && docker info >/dev/null 2>&1 && docker compose -f docker/compose.yml up -d "$@"; }

wait_for() { # name host port
  for _ in $(seq 1 60); do reachable "$2" "$3" && return 0; sleep 0.5; done
  echo "error: $1 did not come up at $2:$3 within 30 s" >&2; exit 1
}

read -r pg_host pg_port < <(hostport "$pg_url" 5432)
read -r redis_host redis_port < <(hostport "$redis_url" 6379)

if ! reachable "$pg_host" "$pg_port"; then
  if ! is_local "$pg_host"; then
    echo "error: PostgreSQL is not reachable at $pg_host:$pg_port; start it, or point DATABASE_URL elsewhere" >&2; exit 1
  fi
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ] && [ -n "$(ls /etc/postgresql 2>/dev/null)" ]; then
    echo "starting the local PostgreSQL service" >&2
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start \
      || { echo "error: could not start PostgreSQL (needs root): run pg_ctlcluster ... main start" >&2; exit 1; }
  elif docker_up postgres; then
    echo "started PostgreSQL with docker compose" >&2
  else
    echo "error: PostgreSQL is down at $pg_host:$pg_port and neither a local service nor Docker is available: install PostgreSQL, or run docker compose -f docker/compose.yml up -d" >&2
    exit 1
  fi
  wait_for PostgreSQL "$pg_host" "$pg_port"
fi

if ! reachable "$redis_host" "$redis_port"; then
  if ! is_local "$redis_host"; then
    echo "error: Redis is not reachable at $redis_host:$redis_port; start it, or point REDIS_URL elsewhere" >&2; exit 1
  fi
  if command -v redis-server >/dev/null; then
    echo "starting a local Redis" >&2
    redis-server --daemonize yes --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no >/dev/null
  elif docker_up redis; then
    echo "started Redis with docker compose" >&2
  else
    echo "error: Redis is down at $redis_host:$redis_port and neither redis-server nor Docker is available: install Redis 7, or run docker compose -f docker/compose.yml up -d" >&2
    exit 1
  fi
  wait_for Redis "$redis_host" "$redis_port"
fi

node scripts/ensure-database.js "$pg_url"
