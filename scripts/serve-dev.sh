#!/usr/bin/env bash
# One command from a fresh clone to the whole product on this machine (docs/operations.md
# "Development"): installs and builds what changed, starts PostgreSQL, Redis and an S3 server
# (s3rver, data in .run/s3) when they are not running, writes the development svc.toml (secrets in
# .run/secrets/, not in it), runs `svc init` and `svc serve` with everything on: the workflow
# worker and scheduler, the catalog, the policy service, data apps on a sibling origin with the
# subprocess launcher and a sample app, the embedded engine's databases under .run/duckdb, alert
# webhooks to local receivers, links to the address it prints last.
#
#   bash scripts/serve-dev.sh                 # Ctrl-C stops svc (the services it started stay up)
#   bash scripts/serve-dev.sh --write-config  # only svc.toml and .run/secrets/, then exit
#
# SVC_DEV_ROOT (default: the repository) is where svc.toml and .run/ go. SVC_* variables set by
# the caller win over svc.toml, as always.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
root=$(mkdir -p "${SVC_DEV_ROOT:-$repo}" && cd "${SVC_DEV_ROOT:-$repo}" && pwd)
run=$root/.run
say() { printf '==> %s\n' "$*" >&2; }

# The browser reaches the service and the apps on two sibling names under one parent: *.localhost
# resolves to loopback in browsers, and the shared parent (dev.localhost) makes them one site, so
# the app's SameSite=Strict cookie travels in the console's frame (localhost beside apps.localhost
# would be two sites). Processes on this machine use 127.0.0.1: resolvers outside browsers need
# not know *.localhost.
SERVICE_ORIGIN=http://svc.dev.localhost:8080
APPS_ORIGIN=http://apps.dev.localhost:8081
ADMIN_EMAIL="${SVC_ADMIN_EMAIL:-admin@svc.local}"

write_config() {
  mkdir -p "$run/secrets" "$run/s3" "$run/duckdb" "$run/apps"
  chmod 700 "$run/secrets"
  secret() { # name, generator: written once, kept across runs
    [ -s "$run/secrets/$1" ] || (umask 077 && "${@:2}" > "$run/secrets/$1")
  }
  random() { node -e "process.stdout.write(require('crypto').randomBytes($1).toString('base64'))"; }
  secret master_key random 32
  secret catalog_token random 32
  secret policy_token random 32
  secret database_url printf 'postgres://svc:svc@127.0.0.1:5432/svc'
  # s3rver's fixed development keys
  secret s3_access_key printf S3RVER
  secret s3_secret_key printf S3RVER
  local marker='# Written by scripts/serve-dev.sh'
  if [ -f "$root/svc.toml" ] && ! head -1 "$root/svc.toml" | grep -q "^$marker"; then
    say "svc.toml exists and was not written by this script: keeping it (move it away for the development settings)"
    return
  fi
  cat > "$root/svc.toml" <<EOF
$marker for development on this machine; rewritten on its next run (delete this
# line to keep your own edits). Every svc command run here reads it, as the server does. Secrets
# are files under .run/secrets/ (key = { file = "..." }), never in this file.

[server]
host = "127.0.0.1"
port = 8080

[database]
url = { file = ".run/secrets/database_url" }

[storage]
endpoint = "http://127.0.0.1:9000"
bucket = "warehouse"
access_key = { file = ".run/secrets/s3_access_key" }
secret_key = { file = ".run/secrets/s3_secret_key" }

[secrets]
master_key = { file = ".run/secrets/master_key" }

# __Host- cookies: an app on the sibling origin cannot toss cookies onto the service's
# (browsers accept their Secure flag from http://*.localhost)
[session]
cookie_name = "__Host-svc_session"

[csrf]
cookie_name = "__Host-svc_csrf"

[workflow]
worker_enabled = true
scheduler_enabled = true

# The Iceberg REST catalog, each workspace its warehouse (s3://warehouse/<workspace>); engines and
# clients on this machine reach it (and the token endpoint) at localhost.
[catalog]
enabled = true
auth_token = { file = ".run/secrets/catalog_token" }
public_url = "http://localhost:8080"

[policy_service]
enabled = true
auth_token = { file = ".run/secrets/policy_token" }

# The embedded DuckDB engine keeps each workspace's database in a file: tables outlive a restart.
[engines]
embedded_data_dir = "$run/duckdb"

[automation]
public_url = "http://127.0.0.1:8080"
browser_url = "$SERVICE_ORIGIN"
# Development only: alert webhooks may reach receivers on this machine.
webhook_allow_hosts = ["localhost", "127.0.0.0/8", "::1"]

[apps]
origin = "$APPS_ORIGIN"
service_origin = "$SERVICE_ORIGIN"
listen = "127.0.0.1:8081"

# Each app pod is scripts/dev/app-pod.py, Python's standard library only (docs/apps.md "Pods").
[apps.pod]
launcher = "subprocess"
command = ["python3", "$repo/scripts/dev/app-pod.py"]
callback_url = "http://127.0.0.1:8080"
work_dir = "$run/apps"
EOF
}

if [ "${1:-}" = --write-config ]; then write_config; exit 0; fi

source scripts/node.sh
say "installing and building what changed"
bash scripts/setup.sh
command -v python3 >/dev/null || { echo "python3 is missing: the development app pods run on it (apt-get install python3)" >&2; exit 1; }
write_config
cd "$root"

if ! curl -s -o /dev/null "http://127.0.0.1:9000/"; then
  say "starting s3rver on 127.0.0.1:9000 (data in .run/s3)"
  nohup "$repo/node_modules/.bin/s3rver" --address 127.0.0.1 --port 9000 --directory "$run/s3" --configure-bucket warehouse \
    --silent > "$run/s3rver.log" 2>&1 &
  for _ in $(seq 1 30); do curl -s -o /dev/null "http://127.0.0.1:9000/" && break; sleep 0.5; done
fi

# Role and database of the development URL (trust auth on the local cluster).
psql -h 127.0.0.1 -U postgres -d postgres -qtAc "SELECT 1 FROM pg_roles WHERE rolname='svc'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE ROLE svc LOGIN PASSWORD 'svc'"
psql -h 127.0.0.1 -U postgres -d postgres -qtAc "SELECT 1 FROM pg_database WHERE datname='svc'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE svc OWNER svc"

svc() { node "$repo/bin/svc.js" "$@"; }
say "svc init"
init=$(SVC_ADMIN_EMAIL="$ADMIN_EMAIL" svc init)
password=$(sed -n 's/^password: //p' <<<"$init")
if [ -n "$password" ]; then printf '%s\n' "$ADMIN_EMAIL" > "$run/admin_email"; fi
[ -s "$run/admin_email" ] && ADMIN_EMAIL=$(cat "$run/admin_email")

say "starting svc serve (log: .run/svc.log)"
svc serve > "$run/svc.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server; exit 0' INT TERM
for _ in $(seq 1 240); do
  curl -s -o /dev/null http://127.0.0.1:8080/readyz && break
  kill -0 $server 2>/dev/null || { tail -20 "$run/svc.log" >&2; echo "svc serve stopped; the log is .run/svc.log" >&2; exit 1; }
  sleep 0.5
done

# The first run knows the password: the sample app goes into workspace default, published.
if [ -n "$password" ]; then
  say "creating the sample app (workspace default, app hello)"
  node --input-type=module - "$ADMIN_EMAIL" "$password" "$repo/scripts/dev/hello.py" <<'EOF' || say "the sample app was not created (see above); the rest is up"
const [email, password, file] = process.argv.slice(2);
const base = 'http://127.0.0.1:8080';
const login = await fetch(`${base}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
if (login.status !== 200) throw new Error(`sign-in: ${login.status}`);
const cookies = login.headers.getSetCookie().map((c) => c.split(';')[0]);
const csrf = cookies.find((c) => c.startsWith('__Host-svc_csrf='))?.split('=')[1] ?? '';
const headers = { cookie: cookies.join('; '), 'x-svc-csrf': csrf, 'content-type': 'application/json' };
const source = (await import('node:fs')).readFileSync(file, 'utf8');
const app = await fetch(`${base}/api/workspaces/default/apps`, { method: 'POST', headers, body: JSON.stringify({ name: 'hello', description: 'sample app of the development setup', source }) });
if (app.status !== 201) throw new Error(`create: ${app.status} ${await app.text()}`);
const pub = await fetch(`${base}/api/workspaces/default/apps/${(await app.json()).id}/publish`, { method: 'POST', headers, body: '{}' });
if (pub.status !== 201) throw new Error(`publish: ${pub.status} ${await pub.text()}`);
EOF
fi

echo "svc is running: API and console $SERVICE_ORIGIN (also http://localhost:8080), apps $APPS_ORIGIN; log .run/svc.log; Ctrl-C stops it"
if [ -n "$password" ]; then
  echo "administrator: $ADMIN_EMAIL, password: $password (shown this once)"
else
  echo "the administrator's password was printed on the first run; to set a new one: npx svc admin reset-password --email $ADMIN_EMAIL"
fi
echo "open $SERVICE_ORIGIN and sign in as $ADMIN_EMAIL"
wait $server
