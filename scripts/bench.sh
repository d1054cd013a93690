#!/usr/bin/env bash
# Runs every benchmark under bench/; each prints its figures beside a baseline of the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node.sh
bash scripts/setup.sh
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
for f in bench/*.ts; do
  echo "== $f"
  node --import tsx "$f"
done
