#!/usr/bin/env bash
# Starts the service with the demo endpoints of .env.example (a local .env overrides them) and the
# carrier simulator beside it, bringing PostgreSQL and Redis up when they are down and creating
# the database.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -d node_modules ] || npm ci --no-audit --no-fund

set -a
# shellcheck disable=SC1091
. ./.env.example
if [ -f .env ]; then . ./.env; fi
set +a

bash scripts/ensure-services.sh "$DATABASE_URL" "$REDIS_URL"
npm run build --silent

# The carrier simulator beside the service, at the CARRIER_URL of .env.example.
sim_port=$(node -e 'const u=new URL(process.argv[1]);console.log(u.port||80)' "${CARRIER_URL:-http://127.0.0.1:4010}")
node dist/tools/carrier-sim.js --port "$sim_port" &
sim=$!
trap 'kill $sim 2>/dev/null' EXIT
node dist/src/main.js
