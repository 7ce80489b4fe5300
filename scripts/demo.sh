#!/usr/bin/env bash
# Starts the service with the demo endpoints of .env.example (a local .env overrides them),
# bringing PostgreSQL and Redis up when they are down and creating the database.
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
exec node dist/src/main.js
