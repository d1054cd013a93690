#!/usr/bin/env bash
# Starts the local PostgreSQL and Redis when they are not running (Debian packages, as on the
# development and CI machines; installed first when missing). Sourced by setup.sh.
set -euo pipefail

# A fresh Debian machine has neither: install them the way scripts/podman.sh installs podman
# (root, apt-get). Debian's package creates the `main` cluster; local TCP connections are then
# trusted, as on the development and CI machines (serve-dev.sh and the tests connect as postgres
# without a password). Elsewhere: compose.yaml (`podman compose up` or `docker compose up`).
install_missing() {
  local missing=()
  command -v pg_ctlcluster >/dev/null 2>&1 || missing+=(postgresql postgresql-client)
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server redis-tools)
  [ ${#missing[@]} -eq 0 ] && return
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "PostgreSQL or Redis is missing (${missing[*]}): install them, or start everything with \`podman compose up\` (compose.yaml)" >&2
    exit 1
  fi
  echo "installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  if [[ " ${missing[*]} " == *" postgresql "* ]]; then
    local hba
    hba="/etc/postgresql/$(ls /etc/postgresql | head -1)/main/pg_hba.conf"
    sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  fi
}

ensure_postgres() {
  if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then return; fi
  install_missing
  local version
  version="$(ls /etc/postgresql | head -1)"
  # the package may have started the cluster already: reload so the trust lines count
  if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then pg_ctlcluster --skip-systemctl-redirect "$version" main reload; return; fi
  echo "starting PostgreSQL" >&2
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && return; sleep 1; done
  echo "PostgreSQL did not start" >&2; exit 1
}

ensure_redis() {
  if redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then return; fi
  install_missing
  echo "starting Redis" >&2
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && return; sleep 1; done
  echo "Redis did not start" >&2; exit 1
}
