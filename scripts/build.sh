#!/usr/bin/env bash
# `npm run build`: builds what changed since the last build, and says what it does.
#   server   tsc into dist/, incremental (dist/.tsbuildinfo), skipped when no source, tsconfig or
#            lock is newer than dist/.build-stamp; then the files tsc does not copy, then the
#            bundle bin/svc.js runs (dist/bundle/, scripts/bundle.mjs)
#   document dist/openapi.json, the `svc openapi` answer (src/cli/openapi.ts), rewritten when stale
#   console  ui/ -> ui/dist (scripts/build-ui.sh), skipped when nothing it reads changed
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=dist/.build-stamp
if [ -f "$stamp" ] && [ -z "$(find src tsconfig.json package-lock.json -newer "$stamp" -print -quit)" ]; then
  echo "build: server up to date (no source changed since the last build)" >&2
else
  changed=$([ -f "$stamp" ] && find src -newer "$stamp" -type f | wc -l || echo all)
  echo "build: compiling the server with tsc ($changed source files changed; incremental)" >&2
  start=$SECONDS
  npx --no-install tsc -p tsconfig.json --incremental --tsBuildInfoFile dist/.tsbuildinfo
  cp src/runners/cluster/*.sh dist/runners/cluster/
  cp src/catalog/*.yaml dist/catalog/
  node scripts/bundle.mjs
  touch "$stamp"
  echo "build: server compiled and bundled in $((SECONDS - start)) s" >&2
fi
if [ ! -f dist/bundle/main.js ] || [ scripts/bundle.mjs -nt dist/bundle/main.js ] || [ scripts/bundle-rewrites.mjs -nt dist/bundle/main.js ]; then
  echo "build: bundling the server (dist/bundle)" >&2
  node scripts/bundle.mjs
fi
# A fresh prebuilt document answers at once; a stale one is rebuilt from the routes.
node bin/svc.js openapi > dist/openapi.json.tmp
mv dist/openapi.json.tmp dist/openapi.json
bash scripts/build-ui.sh
