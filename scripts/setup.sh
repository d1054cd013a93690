#!/usr/bin/env bash
# Installs the project (npm ci when the lock file changed), builds it, and starts PostgreSQL and
# Redis when they are not running. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh

# `npm install` (not `npm ci`): the lock pins every version, but the registry these machines reach
# lacks some other platforms' optional packages (msgpackr-extract), which `npm ci` refuses.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund
fi
npm run --silent build
ensure_postgres
ensure_redis
