import { Injector } from '@nestjs/core/injector/injector';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import type { PaymentWebhooksOptions } from '../../src/config/options';
import type { CarrierAdapter, ShipmentRequest, ShipmentResult } from '../../src/fulfillment/carriers/carrier';
import { OutboxStore } from '../../src/outbox/outbox.store';
import { AUTH, createTestApp, eventually, TestApp } from '../support/app';
import { driver } from '../support/domain';

/**
 * A host's own carrier adapter (`carrierAdapters`), next to the configured HTTP carriers, driven
 * end to end: REST order naming it, support marks it paid, the outbox relay and dispatcher (workers
 * on, real PostgreSQL and Redis) call the adapter and record its answer.
 */

type Script = (request: ShipmentRequest, idempotencyKey: string, call: number) => Promise<ShipmentResult>;

/** The `licenses` adapter: what it answers is scripted per order, and every call is recorded. */
class LicensesAdapter implements CarrierAdapter {
  readonly name = 'licenses';
  readonly calls: Array<{ request: ShipmentRequest; idempotencyKey: string }> = [];
  readonly results: Array<{ orderId: string; result: ShipmentResult | 'threw' }> = [];
  private readonly scripts = new Map<string, Script>();

  script(orderId: string, script: Script): void {
    this.scripts.set(orderId, script);
  }

  callsFor(orderId: string) {
    return this.calls.filter((c) => c.request.orderId === orderId);
  }

  async ship(request: ShipmentRequest, idempotencyKey: string): Promise<ShipmentResult> {
    // A deep copy: what the dispatcher passed, not an object it may change later.
    this.calls.push({ request: JSON.parse(JSON.stringify(request)), idempotencyKey });
    const script = this.scripts.get(request.orderId);
    if (!script) throw new Error(`no script for order ${request.orderId}`);
    try {
      const result = await script(request, idempotencyKey, this.callsFor(request.orderId).length);
      this.results.push({ orderId: request.orderId, result });
      return result;
    } catch (err) {
      this.results.push({ orderId: request.orderId, result: 'threw' });
      throw err;
    }
  }
}

const SHIP_TO = { name: 'Ada Lovelace', line1: '12 Analytical Row', city: 'London', postalCode: 'N1 9GU', country: 'GB' };

describe("a host's own carrier adapter", () => {
  const adapter = new LicensesAdapter();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    t = await createTestApp({
      runWorkers: true,
      carrierAdapters: [adapter],
      carrierMaxAttempts: 3,
      tuning: { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 100, sweepIntervalMs: 200, sweepAfterMs: 100 },
    });
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** An order for `licenses`, its script set, then marked paid by support. */
  async function paidLicenseOrder(script: Script, extra: Record<string, unknown> = {}) {
    const order = await d.createOrder('49.90', 'EUR', { carrier: 'licenses', ...extra });
    adapter.script(order.id, script);
    const res = await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'license bought at the counter' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('paid');
    return order.id;
  }

  const messageOf = (orderId: string) => d.outboxMessage(orderId);
  const fulfillmentRow = async (orderId: string) =>
    (
      await t.dataSource.query(
        `SELECT id, status, carrier, shipment_id AS "shipmentId", last_error AS "lastError" FROM fulfillments WHERE order_id = $1`,
        [orderId],
      )
    )[0];
  const orderStatus = async (orderId: string) => (await d.getOrder(orderId)).status;
  const messageStatus = (orderId: string, status: string) =>
    eventually(async () => (await messageOf(orderId))?.status === status, 15_000, `message of ${orderId} ${status}`);

  it('an order may name the adapter; the REST view shows it', async () => {
    const order = await d.createOrder('10.00', 'EUR', { carrier: 'licenses' });
    const view = await d.getOrder(order.id);
    expect(view).toMatchObject({ status: 'awaiting_payment', carrier: 'licenses', fulfillment: null });
  });

  it("is called with the order's shipTo and items and the fulfillment id as key; {ok, lic_1} fulfils the order", async () => {
    const items = [
      { sku: 'LIC-PRO', quantity: 3 },
      { sku: 'LIC-ADDON', quantity: 1 },
    ];
    const orderId = await paidLicenseOrder(async () => ({ ok: true, shipmentId: 'lic_1' }), {
      reference: `ORD-LIC-${Date.now()}`,
      items,
    });
    await eventually(async () => (await orderStatus(orderId)) === 'fulfilled', 15_000, 'the order fulfilled');

    const view = await d.getOrder(orderId);
    const fulfillmentId = view.fulfillment.id;
    expect(view.fulfillment).toEqual({ id: fulfillmentId, status: 'dispatched', carrier: 'licenses', shipmentId: 'lic_1' });
    expect(adapter.callsFor(orderId)).toEqual([
      {
        request: { orderId, orderReference: view.reference, shipTo: SHIP_TO, items },
        idempotencyKey: fulfillmentId,
      },
    ]);
    expect(view.reference).toMatch(/^ORD-LIC-\d+$/);
    expect(await messageOf(orderId)).toEqual({ status: 'dispatched', attempts: 1, lastError: null, dispatched: true });
    expect(await fulfillmentRow(orderId)).toEqual({
      id: fulfillmentId,
      status: 'dispatched',
      carrier: 'licenses',
      shipmentId: 'lic_1',
      lastError: null,
    });
  });

  it('an adapter that throws once, then succeeds: retried with the same key, one success, attempts 2', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const orderId = await paidLicenseOrder(async (_req, _key, call) => {
      if (call === 1) throw new Error('license server down');
      await gate; // the second call waits until the test has looked at the message in between
      return { ok: true, shipmentId: 'lic_2' };
    });

    await eventually(async () => adapter.callsFor(orderId).length === 2, 15_000, 'the second call');
    // Between the two calls: the failure is recorded as a retryable one.
    expect(await messageOf(orderId)).toEqual({
      status: 'pending',
      attempts: 1,
      lastError: 'carrier adapter failed: license server down',
      dispatched: false,
    });
    release();

    await eventually(async () => (await orderStatus(orderId)) === 'fulfilled', 15_000, 'the order fulfilled');
    const view = await d.getOrder(orderId);
    const keys = adapter.callsFor(orderId).map((c) => c.idempotencyKey);
    expect(keys).toEqual([view.fulfillment.id, view.fulfillment.id]);
    expect(adapter.results.filter((r) => r.orderId === orderId).map((r) => r.result)).toEqual([
      'threw',
      { ok: true, shipmentId: 'lic_2' },
    ]);
    expect(await messageOf(orderId)).toEqual({ status: 'dispatched', attempts: 2, lastError: null, dispatched: true });
    expect(view.fulfillment).toMatchObject({ status: 'dispatched', shipmentId: 'lic_2' });
  });

  it('{ok:false, retryable:false, reason:"unknown sku"}: the message is dead at once, the fulfillment failed', async () => {
    const orderId = await paidLicenseOrder(async () => ({ ok: false, retryable: false, reason: 'unknown sku' }));
    await messageStatus(orderId, 'dead');
    expect(await messageOf(orderId)).toEqual({ status: 'dead', attempts: 1, lastError: 'unknown sku', dispatched: false });
    expect(await fulfillmentRow(orderId)).toMatchObject({ status: 'failed', shipmentId: null, lastError: 'unknown sku' });
    const view = await d.getOrder(orderId);
    expect(view.status).toBe('paid');
    expect(view.fulfillment).toMatchObject({ status: 'failed', carrier: 'licenses', shipmentId: null });
    expect(adapter.callsFor(orderId).length).toBe(1);
  });

  it('a retryable failure every time: dead after CARRIER_MAX_ATTEMPTS (3) calls, with the count in the reason', async () => {
    const orderId = await paidLicenseOrder(async () => ({ ok: false, retryable: true, reason: 'issuer busy' }));
    await messageStatus(orderId, 'dead');
    expect(await messageOf(orderId)).toEqual({
      status: 'dead',
      attempts: 3,
      lastError: 'issuer busy (after 3 attempts)',
      dispatched: false,
    });
    expect(adapter.callsFor(orderId).length).toBe(3);
    expect(await fulfillmentRow(orderId)).toMatchObject({ status: 'failed', lastError: 'issuer busy (after 3 attempts)' });
  });

  it("a worker whose lease was taken over during its call records nothing: its recording is undone, and the other worker's lease stands", async () => {
    // The recording runs optimistically (the attempt's write and the fulfillment's move in one
    // statement), and again guarded when the lease turns out lapsed: both are observed here.
    const store = t.get(OutboxStore);
    const recordings: number[] = [];
    const original = store.recordAttempts.bind(store);
    const spy = jest.spyOn(store, 'recordAttempts').mockImplementation((em, owner, records, then) =>
      original(em, owner, records, (written) => {
        recordings.push(written.size);
        return then(written);
      }),
    );
    try {
      const orderId = await paidLicenseOrder(async (request) => {
        // Another worker took the message over while this call ran.
        await t.dataSource.query(
          `UPDATE outbox_message SET lease_owner = 'other-worker', lease_until = now() + interval '10 minutes' WHERE payload->>'orderId' = $1`,
          [request.orderId],
        );
        return { ok: true, shipmentId: 'lic_lapsed' };
      });
      await eventually(async () => recordings.length === 2, 15_000, 'the optimistic and the guarded recording');
      expect(recordings).toEqual([0, 0]);
      expect(await messageOf(orderId)).toEqual({ status: 'pending', attempts: 0, lastError: null, dispatched: false });
      const [{ owner }] = await t.dataSource.query(`SELECT lease_owner AS owner FROM outbox_message WHERE payload->>'orderId' = $1`, [orderId]);
      expect(owner).toBe('other-worker');
      // The fulfillment's move, written in the undone statement, is not kept: the other worker records.
      expect((await fulfillmentRow(orderId)).status).toBe('requested');
      expect(await orderStatus(orderId)).toBe('paid');
    } finally {
      spy.mockRestore();
    }
  });

  it('an order naming a carrier that exists nowhere answers 400 validation_failed on `carrier`, and creates nothing', async () => {
    const before = await d.count(`SELECT 1 FROM orders`);
    const res = await d
      .http()
      .post('/orders')
      .set(AUTH)
      .send({ amount: '49.90', currency: 'EUR', carrier: 'nowhere', shipTo: SHIP_TO, items: [{ sku: 'SKU-1', quantity: 1 }] });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'validation_failed',
      details: [{ field: 'carrier', message: 'carrier "nowhere" is not configured' }],
    });
    expect(await d.count(`SELECT 1 FROM orders`)).toBe(before);
  });
});

describe('carrier adapter names', () => {
  const ship = async (): Promise<ShipmentResult> => ({ ok: true, shipmentId: 'never' });

  /**
   * Starts an app that is expected not to start, and returns what createTestApp rejected with.
   * A start that fails half way leaves what it opened so far (a DataSource, BullMQ's Redis clients)
   * with no app to close it, and Nest goes on creating the other providers after the rejection
   * (see the report). So: every provider load is tracked until all have settled, every DataSource
   * and Redis client created meanwhile is recorded, and they are closed here, so the run can exit.
   * An app that does start is closed, and the test fails.
   */
  async function failedStart(overrides: Partial<PaymentWebhooksOptions>): Promise<unknown> {
    const loads = new Set<Promise<unknown>>();
    const dataSources: Array<{ dataSource: DataSource; settled: Promise<unknown> }> = [];
    const redisClients = new Set<Redis>();
    const loadInstance = Injector.prototype.loadInstance;
    const initialize = DataSource.prototype.initialize;
    const connect = Redis.prototype.connect;
    jest.spyOn(Injector.prototype, 'loadInstance').mockImplementation(function (
      this: Injector,
      ...args: Parameters<Injector['loadInstance']>
    ) {
      const load = loadInstance.apply(this, args);
      loads.add(load.catch(() => undefined));
      return load;
    });
    jest.spyOn(DataSource.prototype, 'initialize').mockImplementation(function (this: DataSource) {
      const init = initialize.call(this);
      dataSources.push({ dataSource: this, settled: init.catch(() => undefined) });
      return init;
    });
    jest.spyOn(Redis.prototype, 'connect').mockImplementation(function (this: Redis, ...args: Parameters<Redis['connect']>) {
      redisClients.add(this);
      return connect.apply(this, args);
    });
    try {
      return await createTestApp(overrides).then(
        async (started) => {
          await started.close();
          return 'the app started';
        },
        (err: unknown) => err,
      );
    } finally {
      // Until no provider load is left running (each settled load may have started others).
      for (let seen = -1; seen !== loads.size; ) {
        seen = loads.size;
        await Promise.all(loads);
        await new Promise((resolve) => setImmediate(resolve));
      }
      jest.restoreAllMocks();
      for (const { dataSource, settled } of dataSources) {
        await settled;
        if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
      }
      for (const client of redisClients) client.disconnect();
    }
  }

  it('an adapter named like a configured HTTP carrier: the app fails to start with a clear error', async () => {
    const err = await failedStart({ carrierAdapters: [{ name: 'default', ship }] });
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe('carrierAdapters: two carriers are named "default"');
  });

  it('two adapters with the same name: the app fails to start with a clear error', async () => {
    const err = await failedStart({ carrierAdapters: [{ name: 'licenses', ship }, { name: 'licenses', ship }] });
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe('carrierAdapters: two carriers are named "licenses"');
  });

  it('an adapter with a name of its own, beside the configured carriers, starts', async () => {
    const started = await createTestApp({ carrierAdapters: [{ name: 'licenses', ship }, { name: 'vouchers', ship }] });
    try {
      const d = driver(started);
      for (const carrier of ['default', 'licenses', 'vouchers']) {
        const order = await d.createOrder('1.00', 'EUR', { carrier });
        expect((await d.getOrder(order.id)).carrier).toBe(carrier);
      }
    } finally {
      await started.close();
    }
  });
});
