#!/usr/bin/env bash
# Runs every test against real services: installs and builds, starts PostgreSQL and Redis when
# they are not running (each test file starts its own S3 server and database).
set -euo pipefail
cd "$(dirname "$0")/.."
# Node.js 24 for the install, the build and the tests (put under .tools/ when the machine's is older)
source scripts/node.sh
bash scripts/setup.sh
# The real container engine (podman's Docker API) and its busybox test image, for the runner and
# script-task tests; installs podman on a fresh machine.
bash scripts/podman.sh > /dev/null
# Debian's Chromium for the browser test (playwright-core drives it).
bash scripts/chromium.sh > /dev/null
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
# The thread pool `svc` gives itself (bin/svc.js), for the services the tests start in process too.
export UV_THREADPOOL_SIZE="${UV_THREADPOOL_SIZE:-16}"
files=("$@")
if [ ${#files[@]} -eq 0 ]; then files=(test/*.test.ts); fi
# No --test-force-exit: with concurrency it exits a file's process before its last verdicts reach
# the runner, which then reports fewer tests than ran and can lose a failure's name and error
# (nodejs/node#64833; seen here as 758 and 769 tests for one commit). A file left hanging on a
# socket exits 10 s after its last test and a file running past 20 minutes is stopped, both by
# test/helpers/exit-guard.ts; a test hanging on a promise fails after --test-timeout (10 min).
# `timeout` stays as the last resort.
exec timeout --kill-after=30s 80m node --import tsx --import ./test/helpers/exit-guard.ts --test --test-timeout=600000 --test-concurrency=2 --test-reporter=spec "${files[@]}"
