#!/usr/bin/env bash
# One command from a fresh clone to a running service: installs, starts PostgreSQL, Redis and an
# S3 server (s3rver on 127.0.0.1:9000, data in .run/s3) when they are not running, creates the
# development database, runs `svc init` and `svc serve` on http://localhost:8080 with the
# workflow worker and scheduler on. Every SVC_ variable set by the caller wins.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p .run/s3

# Development credentials only; production keys come from a secret store (docs/operations.md).
export SVC_DATABASE__URL="${SVC_DATABASE__URL:-postgres://svc:svc@127.0.0.1:5432/svc}"
export SVC_STORAGE__ENDPOINT="${SVC_STORAGE__ENDPOINT:-http://127.0.0.1:9000}"
export SVC_STORAGE__ACCESS_KEY="${SVC_STORAGE__ACCESS_KEY:-S3RVER}"
export SVC_STORAGE__SECRET_KEY="${SVC_STORAGE__SECRET_KEY:-S3RVER}"
# A development master key, generated once into .run/ (git-ignored), so sealing works locally.
[ -s .run/master_key ] || node -e "process.stdout.write(require('crypto').randomBytes(32).toString('base64'))" > .run/master_key
export SVC_SECRETS__MASTER_KEY="${SVC_SECRETS__MASTER_KEY:-$(cat .run/master_key)}"
# One process plays API and worker pool in development.
export SVC_WORKFLOW__WORKER_ENABLED="${SVC_WORKFLOW__WORKER_ENABLED:-true}"
export SVC_WORKFLOW__SCHEDULER_ENABLED="${SVC_WORKFLOW__SCHEDULER_ENABLED:-true}"

if ! curl -s -o /dev/null "http://127.0.0.1:9000/"; then
  echo "starting s3rver on 127.0.0.1:9000" >&2
  nohup npx s3rver --address 127.0.0.1 --port 9000 --directory .run/s3 --configure-bucket warehouse \
    --silent > .run/s3rver.log 2>&1 &
  for _ in $(seq 1 30); do curl -s -o /dev/null "http://127.0.0.1:9000/" && break; sleep 0.5; done
fi

# Role and database of the development default URL (trust auth on the local cluster).
psql -h 127.0.0.1 -U postgres -d postgres -qtAc "SELECT 1 FROM pg_roles WHERE rolname='svc'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE ROLE svc LOGIN PASSWORD 'svc'"
psql -h 127.0.0.1 -U postgres -d postgres -qtAc "SELECT 1 FROM pg_database WHERE datname='svc'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE svc OWNER svc"

node bin/svc.js init
exec node bin/svc.js serve
