#!/usr/bin/env bash
# `make fuzz`: schemathesis against the OpenAPI document that a fresh sandbox gateway serves, for
# FUZZ_SECONDS (60 by default); fails on any server error (5xx).
# The gateway runs on SQLite in a temporary directory, or on FUZZ_DATABASE_URL (an empty PostgreSQL
# database) when set. Requests go to the demo merchant's endpoint, so that they pass the endpoint lookup
# and reach field validation; they are not signed, so they end at the signature check at the latest.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
work=$(mktemp -d)
port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export KASSA_DATA_DIR="$work"
export KASSA_DATABASE_URL="${FUZZ_DATABASE_URL:-sqlite:///$work/kassa.db}"
export KASSA_VAULT_KEY="${KASSA_VAULT_KEY:-$(.venv/bin/python -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')}"

.venv/bin/kassa serve --demo --host 127.0.0.1 --port "$port" >"$work/gateway.log" 2>&1 &
gateway=$!
stop() {
    kill "$gateway" 2>/dev/null && wait "$gateway" 2>/dev/null || true
    if grep -q '"level": *"error"\|Traceback' "$work/gateway.log"; then
        echo "the gateway logged errors (kept in $work/gateway.log)"
    else
        rm -rf "$work"
    fi
}
trap stop EXIT

base="http://127.0.0.1:$port/paynet"
for _ in $(seq 100); do
    if curl -sf "$base/openapi.json" >/dev/null; then break; fi
    kill -0 "$gateway" 2>/dev/null || { cat "$work/gateway.log"; exit 1; }
    sleep 0.2
done
endpoint=$(sed -n 's/^ *endpoint id: *\([0-9]*\).*/\1/p' "$work/gateway.log" | head -1)
echo "fuzzing $base (demo endpoint $endpoint) for ${seconds}s"

FUZZ_ENDPOINT="$endpoint" .venv/bin/st --config-file scripts/schemathesis.toml run "$base/openapi.json" \
    --url "$base" --max-time "$seconds" --workers 2
