import { randomUUID } from 'node:crypto';
import { generateV1aKeyPair } from '../../src/testing';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { freePort, runCli, ServiceProcess, waitForHttp } from '../support/process';

/**
 * `payment-webhooks conformance --provider standard --secret whsk_…` against the built service with
 * an endpoint that verifies Standard Webhooks `v1a` with the matching `whpk_` only: every check
 * passes (a paid order fulfilled once, duplicates, ten copies, a late pending, a wrong amount, a
 * reprocess, a re-serialised body refused, reconciliation), and the private key is never printed.
 */

const ADMIN = 'v1a-cli-admin-token';
const ACCOUNT = 'acc_v1a_kit';
const PAIR = generateV1aKeyPair();

describe('payment-webhooks conformance, --provider standard with a whsk_, against the built service', () => {
  const sim = new CarrierSimulator();
  let service: ServiceProcess;
  let base: string;

  beforeAll(async () => {
    await sim.start();
    const port = await freePort();
    service = new ServiceProcess({
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: `pw-v1a-cli-${randomUUID().slice(0, 8)}`,
      PORT: String(port),
      ADMIN_TOKEN: ADMIN,
      CARRIER_URL: sim.url,
      WEBHOOK_ENDPOINTS: JSON.stringify([{ id: 'standard-v1a', provider: 'standard', secrets: [PAIR.publicKey], merchantAccountId: ACCOUNT }]),
    });
    base = `http://127.0.0.1:${port}`;
    await waitForHttp(service, `${base}/health`);
  });
  afterAll(async () => {
    service?.kill('SIGTERM');
    await service?.exited().catch(() => undefined);
    await sim.stop();
  });

  const conformance = (secret: string) =>
    runCli(['conformance', '--url', base, '--endpoint', 'standard-v1a', '--provider', 'standard', '--merchant', ACCOUNT, '--secret', secret, '--wait', '20'], {
      ADMIN_TOKEN: ADMIN,
    });

  it('signed v1a with the whsk_: every check passes, the paid orders shipped once each', async () => {
    const shipmentsBefore = sim.shipments.length;
    const out = await conformance(PAIR.secretKey);
    const lines = out.stdout.trim().split('\n');
    const summary = lines[lines.length - 1];
    expect(summary).toMatch(/^conformance: (\d+)\/\1 checks pass$/);
    expect(lines.filter((l) => !l.startsWith('PASS'))).toEqual([summary]);
    expect(out.code).toBe(0);
    expect(sim.shipments.length - shipmentsBefore).toBeGreaterThanOrEqual(1);
    const shipped = sim.shipments.slice(shipmentsBefore).map((s) => s.orderId);
    expect(new Set(shipped).size).toBe(shipped.length);
    expect(out.stdout + out.stderr).not.toContain(PAIR.secretKey.slice('whsk_'.length));
  });

  it('signed with another key pair: the signature check fails, exit 1', async () => {
    const out = await conformance(generateV1aKeyPair().secretKey);
    expect(out.stdout).toMatch(/^FAIL signature/m);
    expect(out.code).toBe(1);
  });
});
