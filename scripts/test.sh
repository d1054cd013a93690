#!/usr/bin/env bash
# Runs every test against real services: installs and builds, starts PostgreSQL and Redis when
# they are not running (each test file starts its own S3 server and database).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The real container engine (podman's Docker API) and its busybox test image, for the runner and
# script-task tests; installs podman on a fresh machine.
bash scripts/podman.sh > /dev/null
# Debian's Chromium for the browser test (playwright-core drives it).
bash scripts/chromium.sh > /dev/null
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
files=("$@")
if [ ${#files[@]} -eq 0 ]; then files=(test/*.test.ts); fi
# --test-force-exit: a file whose tests all ended must not hang CI on a leftover socket.
exec node --import tsx --test --test-force-exit --test-concurrency=2 --test-reporter=spec "${files[@]}"
