import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { ConfigurationError } from '../../src/config/validate';
import { signedHeaders } from '../../src/testing/sign';
import { AUTH, createTestApp, PLATFORMS, TEST_ENDPOINTS, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';

const OLD = 'whsec_rotation_old';
const NEW = 'whsec_rotation_new';
const GONE = 'whsec_rotation_gone';
const HOUR_MS = 3_600_000;

/** CONTRACT §1 expiring secrets: a rotation that ends on schedule, on the clock the guard reads. */
describe.each(PLATFORMS)('%s: secrets that expire', (platform) => {
  let t: TestApp;
  let expiresAtMs: number;

  beforeAll(async () => {
    // Whole seconds, so the test clock can be set to the very instant.
    expiresAtMs = Math.ceil((Date.now() + HOUR_MS) / 1000) * 1000;
    const endpoints: EndpointDefinition[] = [
      ...TEST_ENDPOINTS,
      {
        id: 'rotating',
        provider: 'stripe',
        secrets: [{ secret: OLD, expiresAt: new Date(expiresAtMs).toISOString() }, NEW],
        merchantAccountId: 'acct_1',
      },
      {
        id: 'rotated',
        provider: 'stripe',
        secrets: [{ secret: GONE, expiresAt: new Date(Date.now() - HOUR_MS).toISOString() }, NEW],
        merchantAccountId: 'acct_1',
      },
    ];
    t = await createTestApp({ endpoints }, { platform });
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    t.clock.reset();
    await truncateAll(t.dataSource);
  });

  /** Signed with `secret` at the test clock's time (within tolerance of it). */
  const send = (endpointId: string, secret: string) => {
    const { eventId, body } = bodies.stripe('payment_intent.succeeded', uniqueId('pi'));
    const text = JSON.stringify(body);
    const timestamp = Math.floor(t.clock.now() / 1000);
    return request(t.app.getHttpServer())
      .post(`/webhooks/${endpointId}`)
      .set(signedHeaders('stripe', secret, text, { timestamp }))
      .send(text)
      .then((res) => ({ res, eventId }));
  };
  const rows = () => driver(t).count(`SELECT 1 FROM webhook_inbox`);
  const lastUsed = async (endpoint: string, index: number): Promise<number | undefined> => {
    const text = (await request(t.app.getHttpServer()).get('/metrics').set(AUTH)).text;
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`pw_webhook_secret_last_used_seconds{endpoint="${endpoint}",secret_index="${index}"}`));
    return line === undefined ? undefined : Number(line.split(' ').pop());
  };

  it('an already expired secret is refused (401 invalid_signature, nothing recorded); the live one is accepted', async () => {
    const refused = await send('rotated', GONE);
    expect(refused.res.status).toBe(401);
    expect(refused.res.body).toEqual({ error: 'invalid_signature' });
    expect(await rows()).toBe(0);

    const accepted = await send('rotated', NEW);
    expect(accepted.res.status).toBe(200);
    expect(accepted.res.body).toEqual({ status: 'accepted', eventId: accepted.eventId });
    expect(await rows()).toBe(1);
  });

  it('a live secret is accepted until its instant, refused from it on; the other keeps working', async () => {
    const before = await send('rotating', OLD);
    expect(before.res.body).toEqual({ status: 'accepted', eventId: before.eventId });

    t.clock.setSeconds(expiresAtMs / 1000 - 2);
    expect((await send('rotating', OLD)).res.status).toBe(200);

    t.clock.setSeconds(expiresAtMs / 1000);
    const after = await send('rotating', OLD);
    expect(after.res.status).toBe(401);
    expect(after.res.body).toEqual({ error: 'invalid_signature' });
    const renewed = await send('rotating', NEW);
    expect(renewed.res.body).toEqual({ status: 'accepted', eventId: renewed.eventId });
    expect(await rows()).toBe(3);
  });

  it('the metric shows each secret’s last use, by index, never by value', async () => {
    t.clock.setSeconds(expiresAtMs / 1000 - 600);
    expect((await send('rotating', OLD)).res.status).toBe(200);
    expect(await lastUsed('rotating', 0)).toBe(expiresAtMs / 1000 - 600);

    t.clock.setSeconds(expiresAtMs / 1000 + 60);
    expect((await send('rotating', NEW)).res.status).toBe(200);
    expect((await send('rotating', OLD)).res.status).toBe(401);
    // The refused delivery did not move the old secret's gauge.
    expect(await lastUsed('rotating', 0)).toBe(expiresAtMs / 1000 - 600);
    expect(await lastUsed('rotating', 1)).toBe(expiresAtMs / 1000 + 60);
    const text = (await request(t.app.getHttpServer()).get('/metrics').set(AUTH)).text;
    expect(text.includes(OLD)).toBe(false);
    expect(text.includes(NEW)).toBe(false);
  });
});

describe('a configuration whose endpoint has no live secret', () => {
  it('is refused at start, naming the endpoint and never the secret', async () => {
    const endpoints: EndpointDefinition[] = [
      {
        id: 'stale',
        provider: 'stripe',
        secrets: [
          { secret: GONE, expiresAt: new Date(Date.now() - HOUR_MS).toISOString() },
          { secret: OLD, expiresAt: new Date(Date.now() - 1000).toISOString() },
        ],
        merchantAccountId: 'acct_1',
      },
    ];
    let error: unknown;
    await createTestApp({ endpoints }).then(
      (t) => t.close(),
      (err: unknown) => {
        error = err;
      },
    );
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).message).toBe(
      'endpoints: endpoint "stale": every secret has already expired ("expiresAt" is in the past)',
    );
    expect(String((error as Error).stack).includes(GONE)).toBe(false);
    expect(String((error as Error).stack).includes(OLD)).toBe(false);
  });
});
