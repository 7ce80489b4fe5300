import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { api, freePort, runCli, ServiceProcess, waitForHttp } from '../support/process';

/**
 * `payment-webhooks conformance` and `simulate` for the providers of v4 (CONTRACT §8) against the
 * built service on both platforms: PayPal (the kit signs with its own key and serves the certificate
 * on --paypal-cert-port, the endpoint naming that host in certHosts and the kit's CA, as
 * `paypal-test-ca --out` wrote it, in caFile), Checkout.com, Square (its notification URL signed)
 * and Paddle: every check passes; a simulate run with duplicates prints the exact counts; a wrong
 * secret fails the signature check and exits 1.
 */

const ADMIN = 'v4-cli-admin-token';
const WEBHOOK_ID = '3LK45982FA0917355';
const CHECKOUT_KEY = 'cko-v4-signature-key-0001';
const SQUARE_KEY = 'sq-v4-signature-key-0001';
const SQUARE_SELLER = 'L8SELLERV4CLI';
const SQUARE_URL = 'https://shop.example.com/pay/webhooks/square-main';
const PADDLE_KEY = 'pdl_ntfset_01hv4cli_v4paddlesecretkey';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const CHECKS = ['reachable', 'signature', 'delivery', 'duplicate', 'concurrent', 'stale', 'amount', 'reprocess', 'reserialised', 'reconciliation'];

/**
 * The checks on `platform`; with `full`, the simulate runs and the failing cases too (run on one
 * platform: what they prove does not depend on it).
 */
export function describeV4Providers(platform: 'express' | 'fastify', full: boolean): void {
  describe(`payment-webhooks conformance${full ? ' and simulate' : ''} for paypal, checkout, square, paddle, against the service on ${platform}`, () => {
    const sim = new CarrierSimulator();
    let service: ServiceProcess;
    let base: string;
    let certPort: number;

    beforeAll(async () => {
      await sim.start();
      const port = await freePort();
      certPort = await freePort();
      // The kit's CA, as a user writes it for the endpoint's caFile.
      const caFile = join(mkdtempSync(join(tmpdir(), 'pw-v4-cli-')), 'paypal-kit-ca.pem');
      const written = await runCli(['paypal-test-ca', '--out', caFile]);
      expect([written.code, written.stdout.trim()]).toEqual([0, `paypal-test-ca: the kit's CA written to ${caFile}`]);
      expect(readFileSync(caFile, 'utf8')).toMatch(/^-----BEGIN CERTIFICATE-----\n/);
      const endpoints = [
        { id: 'paypal-main', provider: 'paypal', secrets: [], merchantAccountId: 'paypal-shop', webhookId: WEBHOOK_ID, certHosts: [`127.0.0.1:${certPort}`], caFile },
        { id: 'checkout-main', provider: 'checkout', secrets: [CHECKOUT_KEY], merchantAccountId: 'checkout-shop' },
        { id: 'square-main', provider: 'square', secrets: [SQUARE_KEY], merchantAccountId: SQUARE_SELLER, notificationUrl: SQUARE_URL },
        { id: 'paddle-main', provider: 'paddle', secrets: [PADDLE_KEY], merchantAccountId: 'paddle-shop' },
      ];
      service = new ServiceProcess({
        DATABASE_URL: TEST_DATABASE_URL,
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: `pw-v4-cli-${randomUUID().slice(0, 8)}`,
        PORT: String(port),
        ADMIN_TOKEN: ADMIN,
        HTTP_ADAPTER: platform,
        CARRIER_URL: sim.url,
        WEBHOOK_ENDPOINTS: JSON.stringify(endpoints),
      });
      base = `http://127.0.0.1:${port}`;
      await waitForHttp(service, `${base}/health`);
    });
    afterAll(async () => {
      service?.kill('SIGTERM');
      await service?.exited().catch(() => undefined);
      await sim.stop();
    });

    /** What each provider needs beside --url, --endpoint and --provider. */
    const PROVIDER_ARGS: Record<string, () => string[]> = {
      paypal: () => ['--secret', WEBHOOK_ID, '--paypal-cert-port', String(certPort)],
      checkout: () => ['--secret', CHECKOUT_KEY],
      square: () => ['--secret', SQUARE_KEY, '--merchant', SQUARE_SELLER, '--notification-url', SQUARE_URL],
      paddle: () => ['--secret', PADDLE_KEY],
    };
    const target = (provider: string) => ['--url', base, '--endpoint', `${provider}-main`, '--provider', provider];

    it.each(['paypal', 'checkout', 'square', 'paddle'])('conformance --provider %s: 10/10 checks pass, one PASS line each, exit 0', async (provider) => {
      const shipmentsBefore = sim.shipments.length;
      const out = await runCli(['conformance', ...target(provider), ...PROVIDER_ARGS[provider](), '--wait', '20'], { ADMIN_TOKEN: ADMIN });
      const lines = out.stdout.trim().split('\n');
      expect(lines.filter((l) => !l.startsWith('PASS'))).toEqual(['conformance: 10/10 checks pass']);
      expect(lines.slice(0, -1).map((l) => l.split(' ')[1])).toEqual(CHECKS);
      expect(lines.find((l) => l.startsWith('PASS stale'))).toContain('processed/stale');
      expect(lines.find((l) => l.startsWith('PASS reserialised'))).toContain('401 invalid_signature, nothing recorded');
      expect(out.code).toBe(0);
      // The delivery check's order and the concurrent check's: one shipment each; the underpaid one none.
      expect(sim.shipments.length - shipmentsBefore).toBe(2);
      if (provider === 'paypal') {
        expect(out.stderr).toContain(`conformance: paypal: the kit serves its signing certificate at https://127.0.0.1:${certPort}/v1/notifications/certs/`);
      } else expect(out.stderr).toBe('');
      for (const secret of [CHECKOUT_KEY, SQUARE_KEY, PADDLE_KEY]) expect(out.stdout + out.stderr).not.toContain(secret);
    });

    if (!full) return;

    it.each(['paypal', 'square', 'paddle'])(
      'simulate --provider %s --events 6 --duplicates 0.5 --json: every event accepted once, 3 sent again answered duplicate, the orders fulfilled',
      async (provider) => {
        const shipmentsBefore = sim.shipments.length;
        const out = await runCli(
          ['simulate', ...target(provider), ...PROVIDER_ARGS[provider](), '--events', '6', '--duplicates', '0.5', '--time-scale', '100000', '--seed', '11', '--json'],
          { ADMIN_TOKEN: ADMIN },
        );
        const summary = JSON.parse(out.stdout) as Json;
        expect(summary.ok).toBe(true);
        expect(summary.run).toMatchObject({ provider, schedule: provider });
        expect(summary.totals).toEqual({
          events: 6,
          sent: 6,
          accepted: 6,
          acceptedMoreThanOnce: 0,
          duplicateOnly: 0,
          acknowledgedOtherwise: 0,
          gaveUp: 0,
          unfinished: 0,
          requests: 9,
          attempts: 9,
          retries: 0,
          redeliveries: 3,
          giveUps: 0,
        });
        expect(summary.answers).toEqual({ '200 accepted': 6, '200 duplicate': 3 });
        // Paddle: one event a payment (6 orders); PayPal and Square two (3 orders).
        const orders = provider === 'paddle' ? 6 : 3;
        expect(summary.ordersFulfilled).toMatchObject({ fulfilled: orders, total: orders });
        expect(sim.shipments.length - shipmentsBefore).toBe(orders);
        expect(out.code).toBe(0);
        const rows = await api(base, ADMIN, 'GET', `/admin/webhook-deliveries?endpointId=${provider}-main&limit=100`);
        const ours = (summary.events as Json[]).map((e) => e.eventId);
        expect(rows.body.items.filter((r: Json) => ours.includes(r.eventId))).toHaveLength(6);
      },
    );

    it('simulate --provider checkout --events 6 --duplicates 0.5, the text summary: the exact counts, the orders fulfilled once', async () => {
      const shipmentsBefore = sim.shipments.length;
      const out = await runCli(['simulate', ...target('checkout'), ...PROVIDER_ARGS.checkout(), '--events', '6', '--duplicates', '0.5', '--time-scale', '100000', '--seed', '11'], {
        ADMIN_TOKEN: ADMIN,
      });
      expect(out.stdout).toContain('schedule checkout (9 attempts)');
      expect(out.stdout).toContain('orders created: 2\n');
      expect(out.stdout).toContain('events: 6 sent of 6, 6 accepted, 0 acknowledged as duplicate only, 0 acknowledged otherwise, 0 gave up\n');
      expect(out.stdout).toContain('accepted more than once: 0\n');
      expect(out.stdout).toContain('requests: 9 (9 attempts, 0 retries, 3 redeliveries)\n');
      expect(out.stdout).toContain('answers:\n  200 accepted: 6\n  200 duplicate: 3\ngive-ups: 0\n');
      expect(out.stdout).toContain('orders fulfilled: 2/2\n');
      expect(out.stdout).toContain('ok: all 6 events acknowledged, each accepted at most once, all 2 orders fulfilled');
      expect(out.code).toBe(0);
      // Checkout.com: three events a payment (pending, approved, captured), 2 orders, each shipped once.
      expect(sim.shipments.length - shipmentsBefore).toBe(2);
    });

    it.each([
      ['paypal', ['--secret', 'WRONG-WEBHOOK-ID', '--paypal-cert-port', '0'], "is not endpoint \"paypal-main\"'s webhookId, or the endpoint does not trust the kit"],
      ['square', ['--secret', SQUARE_KEY, '--merchant', SQUARE_SELLER, '--notification-url', 'https://elsewhere.example.com/webhooks/square-main'], 'is not its notificationUrl exactly'],
    ])('conformance --provider %s with what is not the endpoint\'s: FAIL signature, saying what to look at; exit 1', async (provider, extra, hint) => {
      const out = await runCli(['conformance', ...target(provider), ...extra, '--wait', '5'], { ADMIN_TOKEN: ADMIN });
      const lines = out.stdout.trim().split('\n');
      const signature = lines.find((l) => l.startsWith('FAIL signature'))!;
      expect(signature).toMatch(/^FAIL signature — pretty-printed body: 401 invalid_signature; compact body: 401 invalid_signature — look at: /);
      expect(signature).toContain(hint);
      expect(lines.at(-1)).toBe('conformance: 1/10 checks pass');
      expect(out.code).toBe(1);
    });
  });
}
