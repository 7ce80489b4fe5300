import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { HttpProxy } from '../../tools/http-proxy';
import { api, freePort, runCli, ServiceProcess, waitForHttp } from '../support/process';

/**
 * `payment-webhooks conformance --provider adyen` and `simulate --provider adyen` against the built
 * service with an adyen endpoint: the kit plays Adyen (signed items in one delivery, `[accepted]`
 * answers), every check passes, and five AUTHORISATIONs in deliveries of two items are each
 * recorded once and pay their orders, each shipped once.
 */

const ADMIN = 'adyen-cli-admin-token';
const ACCOUNT = 'KitShopEU';
const KEY = 'A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90';
const OLD_KEY = '0F1E2D3C4B5A69788796A5B4C3D2E1F00F1E2D3C4B5A69788796A5B4C3D2E1F0';
const MANUAL_KEY = 'C0FFEE00C0FFEE00C0FFEE00C0FFEE00C0FFEE00C0FFEE00C0FFEE00C0FFEE00';
const ENDPOINTS = [
  { id: 'adyen-main', provider: 'adyen', secrets: [KEY, OLD_KEY], merchantAccountId: ACCOUNT },
  { id: 'adyen-manual', provider: 'adyen', secrets: [MANUAL_KEY], merchantAccountId: 'KitShopManual', capture: 'manual' },
];

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

describe('payment-webhooks conformance and simulate, --provider adyen, against the built service', () => {
  const sim = new CarrierSimulator();
  let service: ServiceProcess;
  let base: string;
  let acknowledging: HttpProxy;
  let gateway: HttpProxy;

  beforeAll(async () => {
    await sim.start();
    const port = await freePort();
    service = new ServiceProcess({
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: `pw-adyen-cli-${randomUUID().slice(0, 8)}`,
      PORT: String(port),
      ADMIN_TOKEN: ADMIN,
      CARRIER_URL: sim.url,
      WEBHOOK_ENDPOINTS: JSON.stringify(ENDPOINTS),
    });
    base = `http://127.0.0.1:${port}`;
    await waitForHttp(service, `${base}/health`);
    acknowledging = new HttpProxy(port, { acknowledgeWebhooks: true });
    gateway = new HttpProxy(port, { reserialise: true });
    await acknowledging.start();
    await gateway.start();
  });
  afterAll(async () => {
    await acknowledging?.stop();
    await gateway?.stop();
    service?.kill('SIGTERM');
    await service?.exited().catch(() => undefined);
    await sim.stop();
  });

  const conformance = (extra: string[]) =>
    runCli(['conformance', '--url', base, '--endpoint', 'adyen-main', '--provider', 'adyen', '--merchant', ACCOUNT, '--wait', '20', ...extra], { ADMIN_TOKEN: ADMIN });

  it('conformance: every check passes, tampered in place of reserialised; one PASS line each', async () => {
    const shipmentsBefore = sim.shipments.length;
    const out = await conformance(['--secret', KEY]);
    const lines = out.stdout.trim().split('\n');
    expect(lines.filter((l) => !l.startsWith('PASS'))).toEqual(['conformance: 10/10 checks pass']);
    expect(lines.map((l) => l.split(' ')[1])).toEqual([
      'reachable',
      'signature',
      'delivery',
      'duplicate',
      'concurrent',
      'stale',
      'amount',
      'reprocess',
      'tampered',
      'reconciliation',
      '10/10',
    ]);
    expect(lines[1]).toMatch(/^PASS signature — a delivery of 2 items: 200 \[accepted\]; a compact one of 1 item: 200 \[accepted\]; all 3 items recorded/);
    expect(lines[5]).toContain('late AUTHORISATION (success "false"): 200 [accepted], processed/stale');
    expect(lines[8]).toMatch(/^PASS tampered — 2 items, the second's amount\.value changed after signing \(4990 → 4991\): 401 invalid_signature, neither item recorded$/);
    expect(out.code).toBe(0);
    // The delivery check's order and the concurrent check's: one shipment each; the underpaid one none.
    expect(sim.shipments.length - shipmentsBefore).toBe(2);
    expect(out.stdout + out.stderr).not.toContain(KEY);
  });

  it('conformance with a key that is not the endpoint\'s: signature fails naming the key, tampered not run; exit 1', async () => {
    const out = await conformance(['--secret', 'ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789', '--json']);
    const report = JSON.parse(out.stdout) as Json;
    const signature = report.checks.find((c: Json) => c.check === 'signature');
    expect(signature.detail).toBe('a delivery of 2 items: 401 invalid_signature; a compact one of 1 item: 401 invalid_signature');
    expect(signature.hint).toContain('the HMAC key (--secret or --secret-file, the first line) is not one of endpoint "adyen-main"\'s secrets');
    expect(report.checks.find((c: Json) => c.check === 'tampered')).toEqual({
      check: 'tampered',
      pass: false,
      detail: 'not run: no correctly signed delivery was accepted (see signature)',
    });
    expect([report.passed, report.total, out.code]).toEqual([1, 10, 1]);
  });

  it('conformance through a gateway that re-serialises JSON: every check passes, since Adyen signs fields, not bytes', async () => {
    const out = await runCli(
      ['conformance', '--url', gateway.url, '--endpoint', 'adyen-main', '--provider', 'adyen', '--merchant', ACCOUNT, '--secret', KEY, '--wait', '20', '--json'],
      { ADMIN_TOKEN: ADMIN },
    );
    const report = JSON.parse(out.stdout) as Json;
    expect(report.checks.filter((c: Json) => !c.pass)).toEqual([]);
    expect([report.passed, report.total, out.code]).toEqual([10, 10, 0]);
    expect(gateway.rewritten).toBeGreaterThan(0);
  });

  it("conformance through a proxy that answers 200 for the service: not [accepted], the event would be lost; exit 1", async () => {
    const out = await runCli(
      ['conformance', '--url', acknowledging.url, '--endpoint', 'adyen-main', '--provider', 'adyen', '--merchant', ACCOUNT, '--secret', KEY, '--wait', '5', '--json'],
      { ADMIN_TOKEN: ADMIN },
    );
    const report = JSON.parse(out.stdout) as Json;
    const signature = report.checks.find((c: Json) => c.check === 'signature');
    expect(signature.detail).toContain('a 2xx that is not the service\'s answer [accepted] ({"ok":true})');
    expect(signature.hint).toContain('Adyen stops retrying on that 2xx and the event is lost');
    expect(report.checks.find((c: Json) => c.check === 'tampered')).toEqual({ check: 'tampered', pass: false, detail: "not run: the webhook answers are not the service's (see signature)" });
    expect(out.code).toBe(1);
  });

  it('conformance against a manual-capture endpoint: delivery fails saying the checks play automatic capture', async () => {
    const out = await runCli(
      ['conformance', '--url', base, '--endpoint', 'adyen-manual', '--provider', 'adyen', '--merchant', 'KitShopManual', '--secret', MANUAL_KEY, '--wait', '5', '--json'],
      { ADMIN_TOKEN: ADMIN },
    );
    const report = JSON.parse(out.stdout) as Json;
    const delivery = report.checks.find((c: Json) => c.check === 'delivery');
    expect(delivery.pass).toBe(false);
    expect(delivery.detail).toMatch(/made the payment authorized, not succeeded$/);
    expect(delivery.hint).toContain('"capture": "manual"');
    expect(out.code).toBe(1);
  });

  it('simulate --events 5 --batch 2 from a --secret-file: 3 deliveries, every event accepted and recorded once, the orders fulfilled once', async () => {
    const secretFile = join(mkdtempSync(join(tmpdir(), 'pw-adyen-cli-')), 'adyen-main');
    writeFileSync(secretFile, `# adyen-main\n${KEY}\n${OLD_KEY}\n`, { mode: 0o600 });
    const shipmentsBefore = sim.shipments.length;
    const out = await runCli(
      ['simulate', '--url', base, '--endpoint', 'adyen-main', '--provider', 'adyen', '--secret-file', secretFile, '--merchant', ACCOUNT, '--events', '5', '--batch', '2', '--duplicates', '0.4', '--time-scale', '100000', '--seed', '3', '--json'],
      { ADMIN_TOKEN: ADMIN },
    );
    expect(out.stderr).toBe('');
    const summary = JSON.parse(out.stdout) as Json;
    expect(summary.ok).toBe(true);
    expect(summary.run).toMatchObject({ provider: 'adyen', schedule: 'adyen' });
    expect(summary.totals).toMatchObject({ events: 5, sent: 5, accepted: 5, acknowledgedOtherwise: 0, gaveUp: 0, giveUps: 0 });
    // Three deliveries (2 + 2 + 1 items), and those sent again: every one answered [accepted].
    expect(summary.totals.attempts).toBe(3 + summary.totals.redeliveries);
    expect(summary.totals.redeliveries).toBeGreaterThan(0);
    expect(summary.answers).toEqual({ '200 [accepted]': summary.totals.requests });
    expect(summary.recordedOnce).toEqual({ total: 5, recordedOnce: 5, missing: [], many: [] });
    expect(summary.ordersFulfilled).toMatchObject({ fulfilled: 5, total: 5 });
    expect(out.code).toBe(0);
    // One shipment per order, whatever was delivered twice.
    const orders = summary.orders as string[];
    expect(sim.shipments.length - shipmentsBefore).toBe(5);
    for (const id of orders) {
      const order = await api(base, ADMIN, 'GET', `/orders/${id}`);
      expect(order.body).toMatchObject({ status: 'fulfilled', fulfillment: { shipmentId: expect.any(String) } });
    }
    const rows = await api(base, ADMIN, 'GET', '/admin/webhook-deliveries?endpointId=adyen-main&eventType=AUTHORISATION&limit=100');
    const ours = (summary.events as Json[]).map((e) => e.eventId);
    expect(ours.every((id) => /^\d{16}:AUTHORISATION:true$/.test(id))).toBe(true);
    expect(rows.body.items.filter((r: Json) => ours.includes(r.eventId)).map((r: Json) => `${r.status}/${r.outcome}`)).toEqual(Array(5).fill('processed/applied'));
  });

  it('simulate, the text summary: [accepted] read as the service\'s answer, the archive check named', async () => {
    const out = await runCli(
      ['simulate', '--url', base, '--endpoint', 'adyen-main', '--provider', 'adyen', '--secret', KEY, '--merchant', ACCOUNT, '--events', '3', '--batch', '3', '--time-scale', '100000'],
      { ADMIN_TOKEN: ADMIN },
    );
    expect(out.stdout).toContain('events: 3 sent of 3, 3 accepted (2xx [accepted]), 0 acknowledged otherwise, 0 gave up');
    expect(out.stdout).toContain('recorded once (archive): 3/3');
    expect(out.stdout).toContain('  200 [accepted]: 1');
    expect(out.stdout).toContain('ok: all 3 events acknowledged, each recorded exactly once (archive), all 3 orders fulfilled');
    expect(out.code).toBe(0);
  });

  it.each([
    ['simulate', ['simulate', '--url', 'http://127.0.0.1:1', '--endpoint', 'm', '--provider', 'mollie', '--secret', 'test_x']],
    ['conformance', ['conformance', '--url', 'http://127.0.0.1:1', '--endpoint', 'm', '--provider', 'mollie', '--secret', 'test_x', '--admin-token', 't']],
  ])('%s --provider mollie: exit 2, one line saying why and where to look', async (command, argv) => {
    const out = await runCli(argv);
    expect(out.stderr.trim().split('\n')).toEqual([
      `payment-webhooks: ${command}: --provider mollie cannot be played: a Mollie delivery is an unsigned hint, authenticated by the service fetching the payment from Mollie's API, which no sender but Mollie can answer; see docs/going-live.md#mollie-check-it-with-mollie-itself`,
    ]);
    expect(out.stdout).toBe('');
    expect(out.code).toBe(2);
  });

  it.each([
    ['a key that is not hex', ['--secret', 'not-hex-key'], 'simulate: --secret of an adyen endpoint must be the hex HMAC key the Customer Area shows (an even number of hex digits)'],
    ['no --merchant', ['--secret', KEY], "simulate: --provider adyen needs --merchant <merchantAccountCode>: every item declares its merchant account (the endpoint's merchantAccountId)"],
  ])('simulate --provider adyen, %s: exit 2 with one line', async (_name, extra, message) => {
    const out = await runCli(['simulate', '--url', base, '--endpoint', 'adyen-main', '--provider', 'adyen', ...extra]);
    expect(out.stderr.split('\n')[0]).toBe(`payment-webhooks: ${message}`);
    expect(out.stderr).not.toContain(KEY);
    expect(out.code).toBe(2);
  });
});
