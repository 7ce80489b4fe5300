import type { Provider } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { PaymentWebhooksEvent } from '../../src/common/host-events';
import type { PaymentWebhooksOptions } from '../../src/config/options';
import type { SigningProvider } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { createTestApp, eventually, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';

/** The §7 id: a time-ordered UUID (version 7). */
export const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The fields of an Order in an event: the REST view's, without `payments` (CONTRACT §7). */
export const ORDER_FIELDS = ['id', 'reference', 'status', 'amount', 'currency', 'carrier', 'merchantAccountId', 'shipTo', 'items', 'fulfillment', 'createdAt', 'updatedAt'].sort();
export const PAYMENT_FIELDS = ['id', 'orderId', 'provider', 'providerPaymentId', 'merchantAccountId', 'status', 'amount', 'currency', 'refundedAmount', 'createdAt', 'updatedAt'].sort();

/** Fast carrier and event retries (CONTRACT §5 backoff, shortened), fast outbox sweeps. */
export const FAST_TUNING = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 100, sweepIntervalMs: 200, sweepAfterMs: 100 };

/**
 * A suite's app with workers on, the carrier simulator behind it and the host providers given (the
 * subscribers under test): started once, tables emptied and the simulator reset before each test.
 */
export function useEventsApp(
  sim: CarrierSimulator,
  options: (carrierUrl: string) => Partial<PaymentWebhooksOptions>,
  providers: Provider[],
  ready: (t: TestApp) => void,
): void {
  let app: TestApp | undefined;
  beforeAll(async () => {
    await sim.start();
    const chosen = options(sim.url);
    app = await createTestApp(
      { runWorkers: true, carriers: [{ name: 'default', url: sim.url, timeoutMs: 2_000 }], ...chosen, tuning: { ...FAST_TUNING, ...chosen.tuning } },
      { providers },
    );
    ready(app);
  });
  afterAll(async () => {
    await app?.close();
    await sim.stop();
  });
  beforeEach(async () => {
    await truncateAll(app!.dataSource);
    sim.reset();
  });
}

/** The events a subscriber got, in the order it got them. */
export class Calls {
  readonly all: PaymentWebhooksEvent[] = [];
  push(event: PaymentWebhooksEvent): void {
    this.all.push(structuredClone(event));
  }
  of(orderId: string): PaymentWebhooksEvent[] {
    return this.all.filter((e) => e.data.order.id === orderId);
  }
  typesOf(orderId: string): string[] {
    return this.of(orderId).map((e) => e.type);
  }
  withId(id: string): PaymentWebhooksEvent[] {
    return this.all.filter((e) => e.id === id);
  }
}

/** One provider's way to pay a registered payment, and to send it a stale (earlier) event. */
export interface ProviderCase {
  provider: SigningProvider;
  endpoint: string;
  newResourceId(): string;
  success(resourceId: string): { eventId: string; body: object };
  stale(resourceId: string): { eventId: string; body: object };
}

export const PROVIDER_CASES: ProviderCase[] = [
  {
    provider: 'paymos',
    endpoint: 'paymos-a',
    newResourceId: () => uniqueId('inv'),
    success: (id) => bodies.paymos('invoice.paid', id),
    stale: (id) => bodies.paymos('invoice.created', id),
  },
  {
    provider: 'factuarea',
    endpoint: 'factuarea-company',
    newResourceId: () => `inv-${uniqueId('fa')}`,
    success: (id) => bodies.factuarea('invoice.paid', id),
    stale: (id) => bodies.factuarea('invoice.created', id),
  },
  {
    provider: 'stripe',
    endpoint: 'stripe-main',
    newResourceId: () => uniqueId('pi'),
    success: (id) => bodies.stripe('payment_intent.succeeded', id),
    stale: (id) => bodies.stripe('payment_intent.processing', id),
  },
  {
    provider: 'standard',
    endpoint: 'standard-main',
    newResourceId: () => uniqueId('pay'),
    success: (id) => bodies.standard('payment.succeeded', id),
    stale: (id) => bodies.standard('payment.pending', id),
  },
];

/** A Stripe event about a charge or a dispute of a PaymentIntent (CONTRACT §2.3). */
export function stripeChargeEvent(type: string, paymentIntentId: string, object: Record<string, unknown>) {
  const eventId = uniqueId('evt');
  return {
    eventId,
    body: {
      id: eventId,
      object: 'event',
      api_version: '2026-10-28',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      type,
      data: { object: { currency: 'eur', payment_intent: paymentIntentId, ...object } },
    },
  };
}

/** The outbox messages of an order's events (every subscriber's), oldest first. */
export async function eventMessages(t: TestApp, orderId: string) {
  return (await t.dataSource.query(
    `SELECT id, type, idempotency_key AS "idempotencyKey", status, attempts, last_error AS "lastError",
            payload->'event'->>'id' AS "eventId", payload->>'subscriber' AS subscriber
       FROM outbox_message WHERE payload->'event'->'data'->'order'->>'id' = $1 ORDER BY id`,
    [orderId],
  )) as Array<{ id: string; type: string; idempotencyKey: string; status: string; attempts: number; lastError: string | null; eventId: string; subscriber: string }>;
}

/** Every outbox message has left `pending` (delivered or dead): nothing more is on its way. */
export async function outboxSettled(t: TestApp, timeoutMs = 15_000): Promise<void> {
  await eventually(
    async () => (await t.dataSource.query(`SELECT count(*)::int AS n FROM outbox_message WHERE status = 'pending'`))[0].n === 0,
    timeoutMs,
    'every outbox message delivered',
  );
}

/**
 * Checks an event's body against CONTRACT §7: its own id (a UUID v7), its type, an ISO instant,
 * the order without its payments, the payment (or null), the provider event that caused it (or null).
 */
export function expectEventBody(
  event: PaymentWebhooksEvent,
  expected: { type: string; orderId: string; orderStatus?: string; payment: Record<string, unknown> | null; sourceEventId: string | null },
): void {
  expect(Object.keys(event).sort()).toEqual(['data', 'id', 'occurredAt', 'type']);
  expect(event.id).toMatch(UUID7);
  expect(event.type).toBe(expected.type);
  expect(event.occurredAt).toMatch(ISO_INSTANT);
  expect(Object.keys(event.data).sort()).toEqual(['order', 'payment', 'sourceEventId']);
  expect(Object.keys(event.data.order).sort()).toEqual(ORDER_FIELDS);
  expect(event.data.order).not.toHaveProperty('payments');
  expect(event.data.order.id).toBe(expected.orderId);
  if (expected.orderStatus) expect(event.data.order.status).toBe(expected.orderStatus);
  if (expected.payment === null) {
    expect(event.data.payment).toBeNull();
  } else {
    expect(Object.keys(event.data.payment ?? {}).sort()).toEqual(PAYMENT_FIELDS);
    expect(event.data.payment).toMatchObject(expected.payment);
  }
  expect(event.data.sourceEventId).toBe(expected.sourceEventId);
}

/** The order view of GET /orders/{id}, as an event carries it (without payments). */
export function withoutPayments(view: Record<string, unknown>): Record<string, unknown> {
  const { payments: _payments, ...order } = view;
  return order;
}

export function sinkSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export interface SinkRequest {
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  receivedAt: number;
  /** What the server did: the status it answered, or 'hang'. */
  answer: number | 'hang';
}

/**
 * An HTTP receiver of event deliveries on 127.0.0.1: it records every request (raw body and
 * headers) and answers what `respond` says (`'hang'`: read the request, never answer).
 */
export class SinkServer {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  readonly requests: SinkRequest[] = [];
  respond: (req: Omit<SinkRequest, 'answer'>, earlier: SinkRequest[]) => number | 'hang' = () => 200;

  async start(): Promise<this> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const seen = { path: req.url ?? '', headers: req.headers, rawBody: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() };
        const answer = this.respond(seen, [...this.requests]);
        this.requests.push({ ...seen, answer });
        if (answer === 'hang') return;
        res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer < 300 ? 'ok' : 'no');
      });
    });
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    return this;
  }

  url(path = '/'): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}${path}`;
  }

  at(path: string): SinkRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  reset(): void {
    this.requests.length = 0;
    this.respond = () => 200;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

export { driver };
