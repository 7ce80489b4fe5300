#!/usr/bin/env bash
# The whole test suite: unit, integration (real PostgreSQL and Redis) and e2e (the built service).
# Brings PostgreSQL and Redis up when they are down, creates the test database, builds, runs Jest.
# Extra arguments go to Jest (e.g. `npm test -- test/webhooks`).
set -euo pipefail
cd "$(dirname "$0")/.."

[ -d node_modules ] || npm ci --no-audit --no-fund

export TEST_DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/payments_test}
export TEST_REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379}
bash scripts/ensure-services.sh "$TEST_DATABASE_URL" "$TEST_REDIS_URL"

npm run build --silent
mkdir -p reports
exec npx jest --json --outputFile=reports/jest.json "$@"
