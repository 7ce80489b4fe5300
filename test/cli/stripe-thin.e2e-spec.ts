import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { api, freePort, runCli, ServiceProcess, until, waitForHttp } from '../support/process';

/**
 * `payment-webhooks simulate` and `conformance` with `--payload-style thin --serve-objects`, against
 * the built service whose thin endpoints read their objects from the kit (`apiBaseUrl` its
 * address): the kit sends thin notifications, serves the objects they name for the length of its
 * run (checking the endpoint's key), and every order is paid and shipped once; every conformance
 * check passes, the thin ones included. A connected account's notifications carry its context,
 * which the service sends as Stripe-Context and the kit serves the objects under.
 */

const ADMIN = 'thin-cli-admin-token';
const ACCOUNT = 'acct_1KitThinPlatform';
const CONNECTED = 'acct_1KitThinConnected';
const SECRET = 'whsec_thin_cli_destination_secret_1';
const CONNECT_SECRET = 'whsec_thin_cli_connect_secret_2';
const API_KEY = 'sk_test_kitThinKey51NqZ8cQ2x7LmTt0pVw9Ysd3';

/**
 * Each thin endpoint's secret and account. The connected account's destinations: its notifications
 * carry the account as their context. The `-sim` ones are the simulate runs', the others the
 * conformance runs'.
 */
const ENDPOINTS: Record<string, [secret: string, account: string]> = {
  'stripe-thin': [SECRET, ACCOUNT],
  'stripe-thin-connect': [CONNECT_SECRET, CONNECTED],
  'stripe-thin-sim': [SECRET, ACCOUNT],
  'stripe-thin-connect-sim': [CONNECT_SECRET, CONNECTED],
};

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

// A conformance run waits for processing and shipments check after check.
jest.setTimeout(120_000);

describe('payment-webhooks simulate and conformance --payload-style thin against the built service', () => {
  const sim = new CarrierSimulator();
  let service: ServiceProcess;
  let base: string;
  /**
   * The address the kit serves objects at for each endpoint (its apiBaseUrl). The simulate runs and
   * the conformance runs use endpoints of their own: a delivery of an earlier run still being
   * retried (a refund before its payment, read again at each attempt) never reads from the server
   * of a run that counts its reads.
   */
  const ports: Record<string, number> = {};
  let keyFile: string;

  beforeAll(async () => {
    await sim.start();
    const port = await freePort();
    for (const id of Object.keys(ENDPOINTS)) ports[id] = await freePort();
    service = new ServiceProcess({
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: `pw-thin-cli-${randomUUID().slice(0, 8)}`,
      PORT: String(port),
      ADMIN_TOKEN: ADMIN,
      CARRIER_URL: sim.url,
      WEBHOOK_ENDPOINTS: JSON.stringify(
        Object.entries(ENDPOINTS).map(([id, [secret, account]]) => ({
          id,
          provider: 'stripe',
          secrets: [secret],
          merchantAccountId: account,
          payloadStyle: 'thin',
          apiKey: API_KEY,
          apiBaseUrl: `http://127.0.0.1:${ports[id]}`,
        })),
      ),
    });
    base = `http://127.0.0.1:${port}`;
    await waitForHttp(service, `${base}/health`);
    keyFile = join(mkdtempSync(join(tmpdir(), 'pw-thin-cli-')), 'stripe-api-key');
    writeFileSync(keyFile, `# the endpoint's apiKey\n${API_KEY}\n`, { mode: 0o600 });
  });
  afterAll(async () => {
    service?.kill('SIGTERM');
    await service?.exited().catch(() => undefined);
    await sim.stop();
  });

  const thin = (endpoint: string, key = keyFile) => ['--payload-style', 'thin', '--serve-objects', `127.0.0.1:${ports[endpoint]}`, '--stripe-api-key-file', key];

  /** The archive rows of these event ids, once none is `received` any more. */
  async function settledRows(endpoint: string, ids: string[]): Promise<Json[]> {
    let rows: Json[] = [];
    await until(`${ids.length} deliveries of ${endpoint} processed`, async () => {
      const list = await api(base, ADMIN, 'GET', `/admin/webhook-deliveries?endpointId=${endpoint}&limit=100`);
      rows = list.body.items.filter((r: Json) => ids.includes(r.eventId));
      return rows.length === ids.length && rows.every((r: Json) => r.status !== 'received');
    }, 20_000);
    return rows;
  }

  it('simulate: the thin twin of every event, its object read from the kit once, every order fulfilled once; exit 0', async () => {
    const shipmentsBefore = sim.shipments.length;
    const out = await runCli(
      ['simulate', '--url', base, '--endpoint', 'stripe-thin-sim', '--provider', 'stripe', '--secret', SECRET, '--events', '6', '--out-of-order', '0.5', '--time-scale', '100000', '--seed', '7', ...thin('stripe-thin-sim'), '--json'],
      { ADMIN_TOKEN: ADMIN },
    );
    expect(out.stderr).toBe('');
    const summary = JSON.parse(out.stdout) as Json;
    expect(summary.ok).toBe(true);
    expect(summary.run).toMatchObject({ provider: 'stripe', payloadStyle: 'thin', objectsUrl: `http://127.0.0.1:${ports['stripe-thin-sim']}` });
    expect(summary.totals).toMatchObject({ events: 6, sent: 6, accepted: 6, acceptedMoreThanOnce: 0, acknowledgedOtherwise: 0, gaveUp: 0 });
    expect(summary.answers).toEqual({ '200 accepted': 6 });
    expect(summary.ordersFulfilled).toMatchObject({ fulfilled: 3, total: 3 });
    // Three PaymentIntents, two notifications each, every one read, every read answered 200 (a processing the
    // service retries, e.g. a processing before its payment was known, reads the object again: at least 6).
    expect(summary.objects).toMatchObject({ url: `http://127.0.0.1:${ports['stripe-thin-sim']}`, notifications: 6, unread: [], pending: [] });
    expect(summary.objects.answers).toEqual({ '200': summary.objects.requests });
    expect(summary.objects.requests).toBeGreaterThanOrEqual(6);
    expect(out.code).toBe(0);

    const events = summary.events as Json[];
    expect(events.every((e) => /^evt_test_[A-Za-z0-9]{24}$/.test(e.eventId))).toBe(true);
    expect(events.map((e) => e.type).sort()).toEqual([...Array(3).fill('v1.payment_intent.processing'), ...Array(3).fill('v1.payment_intent.succeeded')]);
    const rows = await settledRows('stripe-thin-sim', events.map((e) => e.eventId));
    // Each succeeded applied; each processing applied before it, or stale after it (out of order).
    for (const row of rows) {
      expect(row).toMatchObject({ merchantAccountId: ACCOUNT, apiVersion: null, status: 'processed' });
      expect(row.eventType === 'v1.payment_intent.succeeded' ? ['applied'] : ['applied', 'stale']).toContain(row.outcome);
    }
    expect(sim.shipments.length - shipmentsBefore).toBe(3);
    for (const id of summary.orders as string[]) {
      const order = await api(base, ADMIN, 'GET', `/orders/${id}`);
      expect(order.body).toMatchObject({ status: 'fulfilled', fulfillment: { shipmentId: expect.any(String) } });
    }
    expect(out.stdout).not.toContain(API_KEY);
  });

  it('simulate, the text summary, a connected account: the context served under it; the objects line', async () => {
    const out = await runCli(
      ['simulate', '--url', base, '--endpoint', 'stripe-thin-connect-sim', '--provider', 'stripe', '--secret', CONNECT_SECRET, '--merchant', CONNECTED, '--events', '2', '--time-scale', '100000', ...thin('stripe-thin-connect-sim')],
      { ADMIN_TOKEN: ADMIN },
    );
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toBe(`simulate stripe (thin notifications) → ${base}/webhooks/stripe-thin-connect-sim`);
    expect(lines).toContain('events: 2 sent of 2, 2 accepted, 0 acknowledged as duplicate only, 0 acknowledged otherwise, 0 gave up');
    expect(lines).toContain('orders fulfilled: 1/1');
    const objects = lines.find((l) => l.startsWith('objects served at'));
    const [, requests, found] = /^objects served at http:\/\/127\.0\.0\.1:\d+: (\d+) request\(s\) \(200: (\d+)\) for 2 acknowledged notification\(s\) naming one; each object read$/.exec(objects ?? '') ?? [];
    expect(objects).toContain(`http://127.0.0.1:${ports['stripe-thin-connect-sim']}:`);
    expect(Number(requests)).toBeGreaterThanOrEqual(2);
    expect(found).toBe(requests);
    expect(lines[lines.length - 1]).toBe('ok: all 2 events acknowledged, each accepted at most once, all 1 orders fulfilled');
    expect(out.code).toBe(0);
    expect(out.stdout + out.stderr).not.toContain(API_KEY);
  });

  it('conformance: every check passes, missing-object and fetched-once included; one PASS line each; exit 0', async () => {
    const shipmentsBefore = sim.shipments.length;
    // Two stripe endpoints of different accounts: payments are registered under --merchant, the notifications' context.
    const out = await runCli(
      ['conformance', '--url', base, '--endpoint', 'stripe-thin', '--provider', 'stripe', '--secret', SECRET, '--merchant', ACCOUNT, '--wait', '20', ...thin('stripe-thin')],
      { ADMIN_TOKEN: ADMIN },
    );
    const lines = out.stdout.trim().split('\n');
    expect(lines.filter((l) => !l.startsWith('PASS'))).toEqual(['conformance: 12/12 checks pass']);
    expect(lines.map((l) => l.split(' ')[1])).toEqual([
      'reachable',
      'signature',
      'delivery',
      'duplicate',
      'concurrent',
      'stale',
      'amount',
      'missing-object',
      'fetched-once',
      'reprocess',
      'reserialised',
      'reconciliation',
      '12/12',
    ]);
    expect(lines[1]).toMatch(/^PASS signature — pretty-printed body: 200 accepted; compact body: 200 accepted \(events of type v1\.customer\.created, recorded and ignored\)$/);
    expect(lines[2]).toMatch(/^PASS delivery — 200 accepted; delivery processed\/applied \(its object read from the kit at \/v1\/payment_intents\/pi_[0-9a-f]{24}\); order /);
    expect(lines[5]).toMatch(/^PASS stale — late v1\.payment_intent\.processing \(the object read is the succeeded PaymentIntent\): 200 accepted, processed\/stale; payment still succeeded, order still fulfilled$/);
    expect(lines[6]).toBe('PASS amount — 4.99 EUR for 49.90 (the object served says so): 200 accepted, rejected/amount_mismatch; order still awaiting_payment, no fulfillment');
    expect(lines[7]).toMatch(
      /^PASS missing-object — v1\.payment_intent\.succeeded of pi_[0-9a-f]{24}, which the kit does not hold: 200 accepted; 1 request\(s\) for \/v1\/payment_intents\/pi_[0-9a-f]{24} answered 404 resource_missing; rejected\/resource_not_found; order still awaiting_payment, no fulfillment$/,
    );
    // delivery, concurrent (one of ten copies), stale, amount, missing-object: five notifications, four objects.
    expect(lines[8]).toBe(
      'PASS fetched-once — 5 recorded notifications naming 4 objects: 5 requests at the kit, exactly one per notification; none for the duplicates, the concurrent copies or the notifications of types the service does not act on',
    );
    expect(out.code).toBe(0);
    // The delivery check's order and the concurrent check's: one shipment each.
    expect(sim.shipments.length - shipmentsBefore).toBe(2);
    expect(out.stdout + out.stderr).not.toContain(API_KEY);
    expect(out.stdout + out.stderr).not.toContain(SECRET);
  });

  it('conformance --json against the connected-account endpoint: every check passes; the objects served named', async () => {
    const out = await runCli(
      ['conformance', '--url', base, '--endpoint', 'stripe-thin-connect', '--provider', 'stripe', '--secret', CONNECT_SECRET, '--merchant', CONNECTED, '--wait', '20', ...thin('stripe-thin-connect'), '--json'],
      { ADMIN_TOKEN: ADMIN },
    );
    const report = JSON.parse(out.stdout) as Json;
    expect(report.checks.filter((c: Json) => !c.pass)).toEqual([]);
    expect([report.passed, report.total, report.payloadStyle]).toEqual([12, 12, 'thin']);
    // Five reads before reprocess, one more by it: the rejected delivery read again (this service leaves a processed one as it is).
    expect(report.objects).toEqual({ url: `http://127.0.0.1:${ports['stripe-thin-connect']}`, requests: 6, answers: { '200': 5, '404': 1 } });
    expect(out.code).toBe(0);
  });

  it('conformance with a key file that is not the endpoint\'s apiKey: the fetch refused 401, delivery fails naming the key; exit 1', async () => {
    const wrongKey = join(mkdtempSync(join(tmpdir(), 'pw-thin-cli-')), 'wrong-key');
    writeFileSync(wrongKey, 'sk_test_notTheEndpointsKey00000000000000\n', { mode: 0o600 });
    const out = await runCli(
      ['conformance', '--url', base, '--endpoint', 'stripe-thin', '--provider', 'stripe', '--secret', SECRET, '--merchant', ACCOUNT, '--wait', '3', ...thin('stripe-thin', wrongKey), '--json'],
      { ADMIN_TOKEN: ADMIN },
    );
    const report = JSON.parse(out.stdout) as Json;
    const delivery = report.checks.find((c: Json) => c.check === 'delivery');
    expect(delivery.pass).toBe(false);
    expect(delivery.detail).toMatch(/^waited 3 s for event evt_test_[A-Za-z0-9]{24} to be processed$/);
    expect(delivery.hint).toMatch(/^the kit refused the service's key \d+ time\(s\) \(401\): the endpoint's apiKey is not the key in --stripe-api-key-file$/);
    expect(out.code).toBe(1);
    expect(out.stdout + out.stderr).not.toContain(API_KEY);
    expect(out.stdout + out.stderr).not.toContain('sk_test_notTheEndpointsKey');
  });

  it.each([
    ['simulate', ['simulate', '--url', 'http://127.0.0.1:1', '--endpoint', 'x', '--provider', 'paymos', '--secret', 's', '--payload-style', 'thin']],
    ['conformance', ['conformance', '--url', 'http://127.0.0.1:1', '--endpoint', 'x', '--provider', 'paymos', '--secret', 's', '--admin-token', 't', '--payload-style', 'thin']],
  ])('%s --payload-style with another provider than stripe: exit 2, one line', async (command, argv) => {
    const out = await runCli(argv);
    expect(out.stderr.trim().split('\n')).toEqual([`payment-webhooks: ${command}: --payload-style applies to stripe only (thin event notifications are Stripe's), not paymos`]);
    expect(out.code).toBe(2);
  });
});
