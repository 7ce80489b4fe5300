import { randomUUID } from 'node:crypto';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { freePort, runCli, ServiceProcess, waitForHttp } from '../support/process';
import { StripeEventsStub } from '../support/stripe-events-stub';

/** `payment-webhooks backfill` (CONTRACT §8) against the built service and a local stub of Stripe's Events API. */

const ADMIN = 'cli-admin-token';
const SECRET = 'whsec_cli_backfill';
const WRONG_KEY = 'sk_test_cliWrongKey4242';

/** Async: the stub answers from this process, so the command must not block it. */
const run = runCli;

describe('payment-webhooks backfill', () => {
  const sim = new CarrierSimulator();
  const stub = new StripeEventsStub();
  let service: ServiceProcess;
  let port: number;
  let env: Record<string, string>;

  beforeAll(async () => {
    await sim.start();
    await stub.start();
    port = await freePort();
    env = {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: `pw-cli-${randomUUID().slice(0, 8)}`,
      WEBHOOK_ENDPOINTS: JSON.stringify([
        { id: 'stripe-main', provider: 'stripe', secrets: [SECRET], merchantAccountId: 'acct_cli', apiKey: stub.apiKey, apiBaseUrl: stub.url },
        { id: 'stripe-badkey', provider: 'stripe', secrets: [SECRET], merchantAccountId: 'acct_cli_bad', apiKey: WRONG_KEY, apiBaseUrl: stub.url },
        { id: 'paymos-a', provider: 'paymos', secrets: ['paymos-secret-p'], merchantAccountId: 'acc_1' },
      ]),
    };
    service = new ServiceProcess({ ...env, PORT: String(port), ADMIN_TOKEN: ADMIN, CARRIER_URL: sim.url });
    await waitForHttp(service, `http://127.0.0.1:${port}/health`);
  });
  afterAll(async () => {
    service?.kill('SIGTERM');
    await service?.exited().catch(() => undefined);
    await stub.stop();
    await sim.stop();
  });

  const since = () => new Date(Date.now() - 3_600_000).toISOString();

  it('runs a backfill on the service\'s workers to its end and prints the counts, exit 0', async () => {
    const base = Math.floor(Date.now() / 1000) - 600;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/orders`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          amount: '49.90',
          currency: 'EUR',
          shipTo: { name: 'Ada Lovelace', line1: '12 Analytical Row', city: 'London', postalCode: 'N1 9GU', country: 'GB' },
          items: [{ sku: 'SKU-1', quantity: 1 }],
        }),
      });
      stub.addSucceeded({ orderId: ((await res.json()) as { id: string }).id, created: base + i });
    }
    const out = await run(['backfill', '--endpoint', 'stripe-main', '--since', since()], env);
    expect({ code: out.code, stderr: out.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^backfill [0-9a-f-]{36} of stripe-main running$/);
    expect(lines.at(-1)).toMatch(/^backfill [0-9a-f-]{36}: done — listed 3, accepted 3, duplicates 0, refused 0$/);

    const again = await run(['backfill', '--endpoint', 'stripe-main', '--since', since()], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('done — listed 3, accepted 0, duplicates 3');
  });

  it("a key Stripe refuses: failed with Stripe's message, exit 1, never the key", async () => {
    const out = await run(['backfill', '--endpoint', 'stripe-badkey', '--since', since()], env);
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/: failed — listed 0, accepted 0, duplicates 0, refused 0\nerror: Stripe events API answered 401: Invalid API Key provided: sk_test_\*\*\*\*4242\n$/);
    expect(out.stdout + out.stderr).not.toContain(WRONG_KEY);
  });

  it.each([
    ['no --since', ['--endpoint', 'stripe-main'], {}, /^payment-webhooks: backfill: --endpoint and --since are required/],
    ['a --since that is no instant', ['--endpoint', 'stripe-main', '--since', 'yesterday'], {}, /^payment-webhooks: backfill: --since must be an ISO 8601 instant/],
    ['an unknown endpoint', ['--endpoint', 'nope', '--since', 'S'], {}, /^payment-webhooks: backfill: endpointId: no endpoint nope is configured/],
    ['a non-stripe endpoint', ['--endpoint', 'paymos-a', '--since', 'S'], {}, /^payment-webhooks: backfill: endpointId: endpoint paymos-a is not a stripe endpoint/],
    ['until before since', ['--endpoint', 'stripe-main', '--since', '2026-01-02T00:00:00Z', '--until', '2026-01-01T00:00:00Z'], {}, /^payment-webhooks: backfill: until: until must be after since/],
    ['no worker on the queue prefix', ['--endpoint', 'stripe-main', '--since', 'S'], { QUEUE_PREFIX: 'pw-cli-nobody' }, /^payment-webhooks: backfill: no worker runs backfills/],
    ['a database that does not answer', ['--endpoint', 'stripe-main', '--since', 'S'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:9/nowhere' }, /^payment-webhooks: cannot reach the database/],
  ])('%s: exit 2 with one line saying why', async (_name, args, extra, stderr) => {
    const out = await run(['backfill', ...(args as string[]).map((a) => (a === 'S' ? since() : a))], { ...env, ...(extra as Record<string, string>) });
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(stderr as RegExp);
  });
});
