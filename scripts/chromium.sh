#!/usr/bin/env bash
# Makes sure Debian's Chromium is installed for the browser test (test/ui.test.ts), which drives
# it with playwright-core (`npx playwright install` cannot download anything here).
# Idempotent and instant when /usr/bin/chromium exists. Installing needs root. Prints the path.
#
#   SVC_CHROMIUM   path of the browser binary (default /usr/bin/chromium)
set -euo pipefail

CHROMIUM="${SVC_CHROMIUM:-/usr/bin/chromium}"

log() { echo "chromium.sh: $*" >&2; }

if [ ! -x "$CHROMIUM" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    log "$CHROMIUM is missing and installing it needs root: apt-get install -y chromium"
    exit 1
  fi
  log "installing chromium from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
fi

if [ ! -x "$CHROMIUM" ]; then
  log "no executable at $CHROMIUM after installing"
  exit 1
fi
"$CHROMIUM" --version >&2 || true
echo "$CHROMIUM"
