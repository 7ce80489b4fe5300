/**
 * Receive-path benchmark: drives a running service with signed new deliveries, with one repeated
 * delivery, and with `GET /health` of the same process, and prints req/s and p99 of each and the
 * two ratios. Start the service first (`npm run demo`, or with RUN_WORKERS=false to measure an
 * HTTP-only process).
 *
 *   npm run bench:ingest -- [--url http://127.0.0.1:3000] [--endpoint paymos-main]
 *                           [--secret demo-paymos-secret] [--duration 10] [--connections 50]
 *                           [--rounds 3] [--only health|new|duplicate]
 *
 * Each round runs `/health` then new deliveries, and `/health` then duplicates; each ratio is the
 * median over the rounds of a load's rate to the `/health` rate measured just before it, and the
 * req/s shown are medians too, so a burst of background load on the machine moves one round, not
 * the result. `--only` runs one load once (e.g. under a profiler).
 */
import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { signedHeaders } from '../src/testing/sign';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.BENCH_URL ?? 'http://127.0.0.1:3000' },
    endpoint: { type: 'string', default: 'paymos-main' },
    secret: { type: 'string', default: 'demo-paymos-secret' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    only: { type: 'string' },
    rounds: { type: 'string', default: '3' },
  },
});
const duration = Number(args.duration);
const connections = Number(args.connections);
const path = `/webhooks/${args.endpoint}`;

function paymosDelivery(eventId: string): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    event_id: eventId,
    type: 'invoice.paid',
    created: Math.floor(Date.now() / 1000),
    data: { object: 'invoice', id: `inv_${eventId}`, status: 'paid', price_amount: '49.90', price_currency: 'EUR' },
  });
  return { body, headers: signedHeaders('paymos', args.secret!, body, { eventId }) };
}

interface Figures {
  name: string;
  rps: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function run(name: string, request: autocannon.Request, seconds = duration): Promise<Figures> {
  const result = await autocannon({ url: args.url!, connections, duration: seconds, requests: [request] });
  return {
    name,
    rps: result.requests.average,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

const health: autocannon.Request = { method: 'GET', path: '/health' };
const fresh: autocannon.Request = {
  method: 'POST',
  path,
  setupRequest: (req) => {
    const { body, headers } = paymosDelivery(`evt_bench_${randomUUID()}`);
    return { ...req, body, headers };
  },
};

async function main(): Promise<void> {
  const probe = await fetch(`${args.url}/health`).catch(() => null);
  if (!probe?.ok) {
    console.error(`error: no service answers at ${args.url}/health; start it first (npm run demo)`);
    process.exit(1);
  }
  // The repeated delivery: recorded once up front, so every timed request is a duplicate.
  const repeated = paymosDelivery(`evt_bench_repeat_${randomUUID()}`);
  const first = await fetch(`${args.url}${path}`, { method: 'POST', headers: repeated.headers, body: repeated.body });
  if (first.status !== 200) {
    console.error(`error: the repeated delivery answered ${first.status} ${await first.text()}; check --endpoint/--secret`);
    process.exit(1);
  }
  const duplicate: autocannon.Request = { method: 'POST', path, headers: repeated.headers, body: repeated.body };

  if (args.only) {
    const request = { health, new: fresh, duplicate }[args.only];
    if (!request) throw new Error('--only takes health, new or duplicate');
    const r = await run(args.only, request);
    console.log(`${r.name}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms, non-2xx ${r.non2xx}, errors ${r.errors}`);
    return;
  }
  const warmup = Number(args.warmup);
  if (warmup > 0) {
    for (const request of [health, fresh, duplicate]) await run('warmup', request, warmup);
  }
  // Each load is measured right after a `/health` load of its own, and its ratio taken against that
  // neighbour: on a shared machine whose speed drifts from minute to minute, a ratio of adjacent
  // measurements says more than a ratio of medians taken minutes apart.
  const loads: Array<[string, autocannon.Request]> = [
    ['new deliveries', fresh],
    ['duplicates', duplicate],
  ];
  const rounds: Array<{ health: Figures[]; load: Figures[] }> = [];
  for (let round = 0; round < Number(args.rounds); round++) {
    const entry = { health: [] as Figures[], load: [] as Figures[] };
    for (const [name, request] of loads) {
      entry.health.push(await run('GET /health', health));
      entry.load.push(await run(name, request));
    }
    rounds.push(entry);
    console.log(
      `round ${round + 1}: ` +
        loads
          .map(([name], i) => `GET /health ${entry.health[i].rps.toFixed(0)} req/s then ${name} ${entry.load[i].rps.toFixed(0)} req/s`)
          .join(', '),
    );
  }
  const summary = (name: string, figures: Figures[]): Figures => ({
    name,
    rps: median(figures.map((f) => f.rps)),
    p99: median(figures.map((f) => f.p99)),
    non2xx: figures.reduce((sum, f) => sum + f.non2xx, 0),
    errors: figures.reduce((sum, f) => sum + f.errors, 0),
  });
  const rows = [
    summary('GET /health', rounds.flatMap((r) => r.health)),
    ...loads.map(([name], i) => summary(name, rounds.map((r) => r.load[i]))),
  ];
  const ratio = (i: number) => median(rounds.map((r) => r.load[i].rps / r.health[i].rps)) * 100;

  console.log(`\n${connections} connections, ${duration} s per load, median of ${rounds.length} rounds, against ${args.url}\n`);
  console.log('load             req/s     p99 ms   non-2xx  errors');
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(16)} ${r.rps.toFixed(0).padStart(7)} ${String(r.p99).padStart(9)} ${String(r.non2xx).padStart(9)} ${String(r.errors).padStart(7)}`,
    );
  }
  console.log(`\nnew deliveries / health: ${ratio(0).toFixed(1)} %   (aim ≥ 50 %; median of each round's ratio to the /health load just before)`);
  console.log(`duplicates / health:     ${ratio(1).toFixed(1)} %   (aim ≥ 80 %; likewise)`);
  if (rows.some((r) => r.non2xx > 0 || r.errors > 0)) {
    console.log('\nwarning: some requests failed; the figures above are not valid');
    process.exitCode = 1;
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

void main();
