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

# What Node.js to install, said first, where this one is older than supported (the service's own check).
node -e 'const line = require("./dist/src/common/engine.js").unsupportedNode(); if (line) console.error(line)'

# The demo's admin token is published in the README: it listens on this machine only.
export HOST="${HOST:-127.0.0.1}"
# Where to reach it: the address it listens on, or this machine for every interface.
case "$HOST" in 0.0.0.0|::|'[::]') reach=127.0.0.1 ;; *:*) reach="[${HOST#[}"; reach="${reach%]}]" ;; *) reach="$HOST" ;; esac
base="http://${reach}:${PORT:-3000}$(node -e 'const p=(process.argv[1]||"").replace(/^\/+|\/+$/g,"");process.stdout.write(p?"/"+p:"")' "${ROUTE_PREFIX:-}")"

node dist/src/main.js &
service=$!
trap 'kill $sim $service 2>/dev/null' EXIT

# The addresses once the service answers, after its start-up lines, where they stay in view.
for _ in $(seq 1 300); do
  if ! kill -0 "$service" 2>/dev/null; then wait "$service"; exit $?; fi
  node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "${base}/health" && break
  sleep 0.2
done
cat <<EOF2

  Swagger UI      ${base}/docs   (user: anything, password: the ADMIN_TOKEN, "${ADMIN_TOKEN:-<unset: admin routes answer 503>}")
  Webhooks        ${base}/webhooks/{endpointId}   (the endpoints of .env.example: paymos-main, factuarea-company,
                  factuarea-account, stripe-main, stripe-thin, standard-main, standard-v1a, adyen-main, mollie-main)
  Health          ${base}/health, ${base}/health/ready
  Carrier sim     ${CARRIER_URL:-http://127.0.0.1:4010}/_sim/shipments
  Listening on    ${HOST}:${PORT:-3000} only (set HOST to change it)

EOF2
wait "$service"
