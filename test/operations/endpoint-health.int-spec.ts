import { Injectable } from '@nestjs/common';
import request from 'supertest';
import { OnPaymentEvent, type EndpointEvent } from '../../src';
import type { EndpointDefinition } from '../../src/config/options';
import type { PollEndpointRequestedEvent } from '../../src/common/internal-events';
import { TransactionEvents } from '../../src/outbox/transaction-events';
import { signedHeaders } from '../../src/testing/sign';
import { EndpointHealthService } from '../../src/webhooks/endpoint-health.service';
import { ALERTS_KEPT, EndpointHealthStore } from '../../src/webhooks/endpoint-health.store';
import { runTransaction } from '../../src/database/transaction';
import { ADMIN_TOKEN, AUTH, createTestApp, eventually, PLATFORMS, TestApp, truncateAll } from '../support/app';
import { uniqueId } from '../support/domain';

/**
 * CONTRACT §4.2 endpoint health and §7 `endpoint.silent`/`endpoint.resumed`, on the real PostgreSQL
 * and Redis with the workers, on both HTTP platforms: `GET /admin/endpoints` with exact counts,
 * secrets' last use and no secret in it; a silence declared once (one process or two) and ended
 * once by an authentic delivery, never by a refused one; Stripe's health alerts kept per endpoint,
 * an event generation failure asking for a poll of the endpoint.
 */
const NEW = 'whsec_health_rotation_new_0001';
const OLD = 'whsec_health_rotation_old_0002';
const OLD_EXPIRES = '2099-01-01T00:00:00.000Z';
const THIN = 'whsec_health_thin_destination_0003';
const API_KEY = 'sk_test_healthKey51NqZ8cQ2x7LmTt0pVw9';
const QUIET = 'paymos-quiet-secret-0004';
const QUIET2 = 'paymos-quiet2-secret-0005';
const ANY = 'whsec_health_connect_any_0006';

const ENDPOINTS: EndpointDefinition[] = [
  { id: 'stripe-rot', provider: 'stripe', secrets: [NEW, { secret: OLD, expiresAt: OLD_EXPIRES }], merchantAccountId: 'acct_health' },
  { id: 'stripe-any', provider: 'stripe', secrets: [ANY], merchantAccountIds: ['*'] },
  // Never fetched: a health notification names no object to read.
  { id: 'stripe-health', provider: 'stripe', secrets: [THIN], merchantAccountId: 'acct_health', payloadStyle: 'thin', apiKey: API_KEY, apiBaseUrl: 'http://127.0.0.1:9' },
  { id: 'paymos-quiet', provider: 'paymos', secrets: [QUIET], merchantAccountId: 'acc_quiet', silenceAlertSeconds: 60 },
  { id: 'paymos-quiet2', provider: 'paymos', secrets: [QUIET2], merchantAccountId: 'acc_quiet', silenceAlertSeconds: 60 },
];

/** 60 "seconds" of silence last 1.5 s here; counts flushed every 100 ms; the silence checked every 200 ms. */
const TUNING = { silenceAlertUnitMs: 25, endpointHealthFlushMs: 100, silenceCheckIntervalMs: 200, inboxBackoffMs: 100 };

/** A host's subscriber of the endpoint events: each is one outbox message for it. */
const heard: EndpointEvent[] = [];
@Injectable()
class EndpointWatcher {
  @OnPaymentEvent(['endpoint.silent', 'endpoint.resumed'])
  heard(event: EndpointEvent): void {
    heard.push(event);
  }
}

function stripeEvent(type = 'payment_intent.created') {
  const id = uniqueId('evt');
  return { id, text: JSON.stringify({ id, object: 'event', type, created: Math.floor(Date.now() / 1000), data: { object: { id: uniqueId('pi'), object: 'payment_intent' } } }) };
}

function paymosEvent() {
  const id = uniqueId('evt');
  // A type the service does not act on: processing ends `ignored`.
  return { id, text: JSON.stringify({ event_id: id, type: 'invoice.viewed', created: Math.floor(Date.now() / 1000), data: { object: 'invoice', id: uniqueId('inv') } }) };
}

function healthNotification(type: string) {
  const id = uniqueId('evt_test');
  return { id, text: JSON.stringify({ id, object: 'v2.core.event', type, livemode: false, created: '2026-12-01T10:00:00.000Z' }) };
}

describe.each(PLATFORMS)('%s: endpoint health (§4.2, §7 endpoint events)', (platform) => {
  let t: TestApp;
  const polls: PollEndpointRequestedEvent[] = [];
  const http = () => request(t.app.getHttpServer());

  beforeAll(async () => {
    t = await createTestApp({ endpoints: ENDPOINTS, runWorkers: true, tuning: TUNING }, { platform, providers: [EndpointWatcher] });
    await truncateAll(t.dataSource);
    t.get(TransactionEvents).on(['internal.poll.endpoint-requested'], (event) => {
      polls.push(event);
    });
  });
  afterAll(() => t?.close());

  const post = (endpointId: string, text: string, headers: Record<string, string>) => http().post(`/webhooks/${endpointId}`).set(headers).send(text);
  async function endpoints(): Promise<Array<Record<string, any>>> {
    const res = await http().get('/admin/endpoints').set(AUTH);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['items']);
    return res.body.items;
  }
  const itemOf = async (id: string) => (await endpoints()).find((e) => e.id === id)!;
  const outboxOf = (type: string, endpointId: string): Promise<Array<{ payload: { event: EndpointEvent; subscriber: string } }>> =>
    t.dataSource.query(`SELECT payload FROM outbox_message WHERE type = $1 AND payload #>> '{event,data,endpoint,id}' = $2`, [`event.${type}`, endpointId]);
  async function silentMetric(endpointId: string): Promise<number | undefined> {
    const res = await http().get('/metrics').set(AUTH);
    const line = res.text.split('\n').find((l) => l.startsWith(`pw_endpoint_silent{endpoint="${endpointId}"}`));
    return line === undefined ? undefined : Number(line.split(' ').pop());
  }

  it('lists every endpoint in configuration order, with exact counts and when each secret last matched; no secret in it', async () => {
    const before = Date.now();
    const first = stripeEvent();
    expect((await post('stripe-rot', first.text, signedHeaders('stripe', NEW, first.text))).body).toEqual({ status: 'accepted', eventId: first.id });
    expect((await post('stripe-rot', first.text, signedHeaders('stripe', NEW, first.text))).body).toEqual({ status: 'duplicate', eventId: first.id });
    // The old secret of the rotation (index 1) verifies the second.
    const second = stripeEvent();
    expect((await post('stripe-rot', second.text, signedHeaders('stripe', OLD, second.text))).body).toEqual({ status: 'accepted', eventId: second.id });
    const forged = stripeEvent();
    expect((await post('stripe-rot', forged.text, signedHeaders('stripe', 'whsec_not_a_configured_secret', forged.text))).status).toBe(401);
    expect((await post('stripe-rot', forged.text, { 'content-type': 'application/json' })).status).toBe(401);
    const stale = stripeEvent();
    expect((await post('stripe-rot', stale.text, signedHeaders('stripe', NEW, stale.text, { timestamp: Math.floor(Date.now() / 1000) - 3_600 }))).status).toBe(401);
    expect((await post('stripe-rot', 'not json', signedHeaders('stripe', NEW, 'not json'))).status).toBe(400);
    const after = Date.now();

    const items = await endpoints();
    expect(items.map((i) => i.id)).toEqual(ENDPOINTS.map((e) => e.id));
    const rot = items[0];
    expect(Object.keys(rot).sort()).toEqual(
      ['alerts', 'id', 'last24h', 'lastAuthenticDeliveryAt', 'lastDeliveryAt', 'merchantAccountIds', 'provider', 'secrets', 'silent', 'silentSince'].sort(),
    );
    expect(rot).toMatchObject({
      id: 'stripe-rot',
      provider: 'stripe',
      merchantAccountIds: ['acct_health'],
      last24h: { accepted: 2, duplicate: 1, refused: 4 },
      silent: false,
      silentSince: null,
      alerts: [],
    });
    const at = (iso: string | null) => (iso === null ? NaN : Date.parse(iso));
    expect(at(rot.lastDeliveryAt)).toBeGreaterThanOrEqual(before);
    expect(at(rot.lastDeliveryAt)).toBeLessThanOrEqual(after);
    // The refusals came after the last authentic delivery.
    expect(at(rot.lastAuthenticDeliveryAt)).toBeLessThan(at(rot.lastDeliveryAt));
    expect(rot.secrets.map((s: { index: number; expiresAt: string | null }) => [s.index, s.expiresAt])).toEqual([
      [0, null],
      [1, OLD_EXPIRES],
    ]);
    // Index 0 verified the first and its duplicate, index 1 the second (a stale or malformed delivery matches no secret).
    expect(at(rot.secrets[0].lastMatchedAt)).toBeGreaterThanOrEqual(before);
    expect(at(rot.secrets[1].lastMatchedAt)).toBeGreaterThanOrEqual(before);
    expect(at(rot.secrets[1].lastMatchedAt)).toBeLessThanOrEqual(at(rot.lastAuthenticDeliveryAt));

    // An endpoint that serves any account; one never delivered to.
    expect(items[1]).toEqual({
      id: 'stripe-any',
      provider: 'stripe',
      merchantAccountIds: ['*'],
      lastDeliveryAt: null,
      lastAuthenticDeliveryAt: null,
      last24h: { accepted: 0, duplicate: 0, refused: 0 },
      silent: false,
      silentSince: null,
      secrets: [{ index: 0, expiresAt: null, lastMatchedAt: null }],
      alerts: [],
    });

    const text = JSON.stringify(items);
    for (const secret of [NEW, OLD, THIN, API_KEY, QUIET, QUIET2, ANY, ADMIN_TOKEN]) expect(text).not.toContain(secret);
    // The admin token guards it.
    expect((await http().get('/admin/endpoints')).status).toBe(401);
  });

  it('declares a silence once, keeps it through a refused delivery, and ends it once at an authentic one', async () => {
    const health = t.get(EndpointHealthService);
    const silent = (await eventually(async () => {
      const item = await itemOf('paymos-quiet');
      return item.silent ? item : undefined;
    }, 10_000, 'paymos-quiet silent'))!;
    expect(Date.parse(silent.silentSince)).not.toBeNaN();
    expect(await eventually(async () => (await silentMetric('paymos-quiet')) === 1, 5_000, 'the gauge at 1')).toBe(true);
    // Checked again and again: still one event.
    for (let i = 0; i < 3; i++) await health.checkSilence();
    const declared = await outboxOf('endpoint.silent', 'paymos-quiet');
    expect(declared.length).toBe(1);
    const event = declared[0].payload.event;
    expect(event).toEqual({
      id: expect.any(String),
      type: 'endpoint.silent',
      occurredAt: expect.any(String),
      data: { order: null, payment: null, sourceEventId: null, endpoint: { id: 'paymos-quiet', provider: 'paymos', silentSince: silent.silentSince } },
    });
    // Delivered to the host's subscriber, after the commit.
    await eventually(async () => heard.some((e) => e.id === event.id), 10_000, 'the subscriber called');

    // Refused: a delivery, never an authentic one.
    const forged = paymosEvent();
    expect((await post('paymos-quiet', forged.text, signedHeaders('paymos', 'not-the-secret-at-all', forged.text))).status).toBe(401);
    const afterRefusal = await itemOf('paymos-quiet');
    expect(afterRefusal).toMatchObject({ silent: true, silentSince: silent.silentSince, lastAuthenticDeliveryAt: null, last24h: { accepted: 0, duplicate: 0, refused: 1 } });
    expect(afterRefusal.lastDeliveryAt).not.toBeNull();
    expect(await health.checkSilence()).toBe(0);
    expect((await outboxOf('endpoint.resumed', 'paymos-quiet')).length).toBe(0);

    const authentic = paymosEvent();
    expect((await post('paymos-quiet', authentic.text, signedHeaders('paymos', QUIET, authentic.text))).body).toEqual({ status: 'accepted', eventId: authentic.id });
    const resumed = await itemOf('paymos-quiet');
    expect(resumed).toMatchObject({ silent: false, silentSince: null, last24h: { accepted: 1, duplicate: 0, refused: 1 } });
    const resumedEvents = await outboxOf('endpoint.resumed', 'paymos-quiet');
    expect(resumedEvents.map((r) => r.payload.event.data)).toEqual([
      { order: null, payment: null, sourceEventId: null, endpoint: { id: 'paymos-quiet', provider: 'paymos', silentSince: silent.silentSince } },
    ]);
    expect(await silentMetric('paymos-quiet')).toBe(0);
    // A duplicate of it ends nothing more.
    expect((await post('paymos-quiet', authentic.text, signedHeaders('paymos', QUIET, authentic.text))).body.status).toBe('duplicate');
    await itemOf('paymos-quiet');
    expect((await outboxOf('endpoint.resumed', 'paymos-quiet')).length).toBe(1);
    expect((await outboxOf('endpoint.silent', 'paymos-quiet')).length).toBe(1);
  });

  it('silence across two processes emits one event', async () => {
    // A second process on the same database and queues, with workers too.
    const other = await createTestApp({ endpoints: ENDPOINTS, runWorkers: true, tuning: TUNING, queuePrefix: t.queuePrefix }, { platform, providers: [EndpointWatcher] });
    try {
      const here = t.get(EndpointHealthService);
      const there = other.get(EndpointHealthService);
      // Watched from now, and not silent (whatever an earlier check of this suite declared): its
      // silence begins in 1.5 s, while both processes' scheduled checks and the ones below run.
      await t.dataSource.query(`UPDATE endpoint_health SET silent_since = NULL, watched_since = now() WHERE endpoint_id = 'paymos-quiet2'`);
      const before = (await outboxOf('endpoint.silent', 'paymos-quiet2')).length;
      // Both check at once, again and again, until one of them (or a scheduled check) declared it.
      await eventually(
        async () => {
          await Promise.all([here.checkSilence(), there.checkSilence()]);
          return (await outboxOf('endpoint.silent', 'paymos-quiet2')).length > before;
        },
        10_000,
        'paymos-quiet2 silent',
      );
      await Promise.all([here.checkSilence(), there.checkSilence()]);
      expect((await outboxOf('endpoint.silent', 'paymos-quiet2')).length).toBe(before + 1);

      // Each process received one authentic delivery: one resume.
      const one = paymosEvent();
      const two = paymosEvent();
      expect((await post('paymos-quiet2', one.text, signedHeaders('paymos', QUIET2, one.text))).status).toBe(200);
      expect((await request(other.app.getHttpServer()).post('/webhooks/paymos-quiet2').set(signedHeaders('paymos', QUIET2, two.text)).send(two.text)).status).toBe(200);
      await Promise.all([here.flush(), there.flush()]);
      expect((await outboxOf('endpoint.resumed', 'paymos-quiet2')).length).toBe(1);
      // Both processes' counts add up.
      expect((await itemOf('paymos-quiet2')).last24h).toEqual({ accepted: 2, duplicate: 0, refused: 0 });
    } finally {
      await other.app.close();
    }
  });

  it("keeps Stripe's health alerts, the newest first, and asks for a poll once per event generation failure", async () => {
    const lost = healthNotification('v2.core.health.event_generation_failure.resolved');
    expect((await post('stripe-health', lost.text, signedHeaders('stripe', THIN, lost.text))).body).toEqual({ status: 'accepted', eventId: lost.id });
    const row = await eventually(async () => {
      const [r] = await t.dataSource.query(`SELECT status, outcome FROM webhook_inbox WHERE event_id = $1`, [lost.id]);
      return r && r.status !== 'received' ? r : undefined;
    }, 10_000, 'the notification processed');
    // Recorded and ignored, as every v2 notification.
    expect(row).toEqual({ status: 'ignored', outcome: 'no_handler' });
    expect(polls.filter((p) => p.endpointId === 'stripe-health')).toEqual([
      { type: 'internal.poll.endpoint-requested', endpointId: 'stripe-health', reason: `v2.core.health.event_generation_failure.resolved (${lost.id})` },
    ]);
    // Its duplicate is not processed again: no second request.
    expect((await post('stripe-health', lost.text, signedHeaders('stripe', THIN, lost.text))).body.status).toBe('duplicate');

    const latency = healthNotification('v2.core.health.api_error.firing');
    expect((await post('stripe-health', latency.text, signedHeaders('stripe', THIN, latency.text))).status).toBe(200);
    const item = (await eventually(async () => {
      const i = await itemOf('stripe-health');
      return i.alerts.length === 2 ? i : undefined;
    }, 10_000, 'two alerts'))!;
    expect(item.alerts).toEqual([
      { type: 'v2.core.health.api_error.firing', eventId: latency.id, receivedAt: expect.any(String), createdAt: '2026-12-01T10:00:00.000Z', livemode: false, context: null },
      { type: 'v2.core.health.event_generation_failure.resolved', eventId: lost.id, receivedAt: expect.any(String), createdAt: '2026-12-01T10:00:00.000Z', livemode: false, context: null },
    ]);
    expect(item.last24h).toEqual({ accepted: 2, duplicate: 1, refused: 0 });
    // Only the event generation failure asks for a poll, once.
    expect(polls.filter((p) => p.endpointId === 'stripe-health').length).toBe(1);
    expect(JSON.stringify(item)).not.toContain(API_KEY);
  });

  it('counts the current hour and the 23 before it; hours past two days are forgotten', async () => {
    const hoursAgo = (n: number) => `date_trunc('hour', now()) - interval '${n} hours'`;
    await t.dataSource.query(`
      INSERT INTO endpoint_counts (endpoint_id, hour, accepted, duplicate, refused) VALUES
        ('stripe-any', ${hoursAgo(23)}, 7, 1, 0), ('stripe-any', ${hoursAgo(24)}, 5, 0, 0), ('stripe-any', ${hoursAgo(49)}, 3, 0, 0)`);
    expect((await itemOf('stripe-any')).last24h).toEqual({ accepted: 7, duplicate: 1, refused: 0 });
    await t.get(EndpointHealthService).checkSilence();
    const hours: Array<{ accepted: number }> = await t.dataSource.query(`SELECT accepted FROM endpoint_counts WHERE endpoint_id = 'stripe-any' ORDER BY hour`);
    expect(hours.map((h) => h.accepted)).toEqual([5, 7]);
    await t.dataSource.query(`DELETE FROM endpoint_counts WHERE endpoint_id = 'stripe-any'`);
  });

  it(`keeps the newest ${ALERTS_KEPT} alerts, each once`, async () => {
    const store = t.get(EndpointHealthStore);
    const base = Date.parse('2026-12-01T10:00:00.000Z');
    for (let i = 0; i < ALERTS_KEPT + 2; i++) {
      const alert = { type: 'v2.core.health.api_latency.firing', eventId: `evt_many_${i}`, receivedAt: new Date(base + i).toISOString() };
      await runTransaction(t.dataSource, async (em) => {
        expect(await store.addAlert(em, 'stripe-any', alert, base)).toBe(true);
        // The same notification again adds nothing.
        expect(await store.addAlert(em, 'stripe-any', alert, base)).toBe(false);
      });
    }
    const { alerts } = await itemOf('stripe-any');
    expect(alerts.map((a: { eventId: string }) => a.eventId)).toEqual(Array.from({ length: ALERTS_KEPT }, (_, i) => `evt_many_${ALERTS_KEPT + 1 - i}`));
  });
});
