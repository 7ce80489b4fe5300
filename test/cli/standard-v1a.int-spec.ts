import type { AddressInfo } from 'node:net';
import { deliver, webhookUrl } from '../../src/cli/remote/delivery';
import { SCHEDULES, seededRandom } from '../../src/cli/remote/schedules';
import { planRun, realClock, Simulation } from '../../src/cli/remote/simulation';
import { totals } from '../../src/cli/simulate.command';
import { generateV1aKeyPair } from '../../src/testing';
import { createTestApp, TEST_ENDPOINTS, TestApp } from '../support/app';

/**
 * What `payment-webhooks simulate --provider standard --secret whsk_…` sends, against the real
 * route of an endpoint that verifies `v1a` with the matching `whpk_`: every event accepted once, the
 * provider's own redeliveries answered `duplicate`; signed with another key pair, every attempt is
 * `401 invalid_signature` and nothing is recorded.
 */
describe('simulate with a whsk_ against a whpk_ endpoint (real PostgreSQL and Redis)', () => {
  const PAIR = generateV1aKeyPair();
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp({
      endpoints: [...TEST_ENDPOINTS, { id: 'standard-v1a', provider: 'standard', secrets: [PAIR.publicKey], merchantAccountId: 'acc_sim' }],
    });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(() => t?.close());

  function simulation(secret: string) {
    const random = seededRandom(7);
    const payments = planRun({ provider: 'standard', events: 6, duplicates: 0.5, outOfOrder: 0, merchant: 'acc_sim' }, random);
    return new Simulation(
      {
        provider: 'standard',
        url: webhookUrl(base, 'standard-v1a'),
        secrets: [secret],
        schedule: SCHEDULES.standard,
        timeScale: 100_000,
        copies: 1,
        concurrency: 4,
        payments,
      },
      { transport: (d) => deliver(d, 10_000), clock: realClock },
    );
  }

  it('signed v1a with the whsk_: every event accepted exactly once, the redeliveries duplicates', async () => {
    const report = await simulation(PAIR.secretKey).run();
    expect(totals(report)).toMatchObject({ events: 6, accepted: 6, acceptedMoreThanOnce: 0, gaveUp: 0 });
    expect(report.answers['200 accepted']).toBe(6);
    expect(report.answers['200 duplicate']).toBe(report.redeliveries);
    expect(report.redeliveries).toBeGreaterThan(0);
    const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE endpoint_id = 'standard-v1a'`);
    expect(n).toBe(6);
  });

  it('signed with another key pair: every attempt 401 invalid_signature, until the schedule runs out', async () => {
    const report = await simulation(generateV1aKeyPair().secretKey).run();
    expect(report.answers['401 invalid_signature']).toBe(report.requests);
    // Still the six rows of the run before: nothing of this one was recorded.
    const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE endpoint_id = 'standard-v1a'`);
    expect(n).toBe(6);
    expect(report.giveUps.length).toBeGreaterThan(0);
    // A Standard Webhooks sender retries any non-2xx on its schedule, and every attempt is refused.
    expect(report.giveUps.map((g) => [g.reason, g.lastAnswer])).toEqual(Array(6).fill(['schedule_exhausted', '401 invalid_signature']));
  });
});
