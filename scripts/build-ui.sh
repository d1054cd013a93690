#!/usr/bin/env bash
# Builds the console (ui/ → ui/dist): the OpenAPI document of this very build (`svc openapi`,
# after tsc: scripts/build.sh) becomes the client's types (openapi-typescript), the console is
# type-checked against them (a changed route fails here, not in a user's browser), and Vite writes
# hashed assets. Skipped when nothing it reads changed since the last build (the stamp holds their hash).
set -euo pipefail
cd "$(dirname "$0")/.."
gen=ui/src/api
node bin/svc.js openapi > "$gen/openapi.json.tmp"
mv "$gen/openapi.json.tmp" "$gen/openapi.json"
stamp=ui/dist/.build-stamp
sum=$( (cat "$gen/openapi.json" package-lock.json ui/index.html ui/vite.config.ts ui/tsconfig.json; find ui/src ui/public -type f ! -name 'schema.d.ts' ! -name 'openapi.json' | LC_ALL=C sort | xargs cat) | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
  echo "build: console up to date" >&2
  exit 0
fi
echo "build: building the console (openapi-typescript, tsc, vite)" >&2
npx --no-install openapi-typescript "$gen/openapi.json" -o "$gen/schema.d.ts" --silent
npx --no-install tsc -p ui/tsconfig.json
npx --no-install vite build --config ui/vite.config.ts
echo "$sum" > "$stamp"
