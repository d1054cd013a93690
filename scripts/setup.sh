#!/usr/bin/env bash
# Installs the project (npm ci when the lock file changed), builds it, and starts PostgreSQL and
# Redis when they are not running. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node.sh
source scripts/services.sh

# `npm ci` installs exactly the lock. msgpackr-extract is pinned (package.json `overrides`) to a
# version whose optional platform packages are published for every platform, which `npm ci` needs.
# No dependency's install script runs (package.json `allowScripts`, docs/decisions.md): each
# platform binary comes as an optional package of the lock.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --ignore-scripts --no-audit --no-fund
fi
npm run --silent build
ensure_postgres
ensure_redis
