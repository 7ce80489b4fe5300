import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeliveryProcessingService } from '../../src/webhooks/delivery-processing.service';
import { AUTH, createTestApp, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { TEST_DATABASE_URL } from '../support/env';

/** POST /admin/reconciliation (CONTRACT §4) and its command line, tools/reconcile.ts. */

const CLI = join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');
const EMPTY = { missingEvents: [], missingPaidPayments: [], paidNotFulfilled: [], duplicateEffects: [], backfill: null };

describe('reconciliation', () => {
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  const dir = mkdtempSync(join(tmpdir(), 'pw-reconcile-'));

  beforeAll(async () => {
    t = await createTestApp();
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
  });
  beforeEach(() => truncateAll(t.dataSource));

  const reconcile = (body: unknown) => d.http().post('/admin/reconciliation').set(AUTH).send(body as object);

  /** An order whose Paymos invoice was paid by a signed webhook, processed: payment succeeded, order paid. */
  async function paidByWebhook(endpointId = 'paymos-a'): Promise<{ orderId: string; invoiceId: string; eventId: string }> {
    const order = await d.createOrder();
    const invoiceId = uniqueId('inv');
    await d.registerPayment(order.id, 'paymos', invoiceId, 'acc_1');
    const { eventId, body } = bodies.paymos('invoice.paid', invoiceId, { orderId: order.id });
    expect((await d.send(endpointId, 'paymos', body, { eventId })).body).toEqual({ status: 'accepted', eventId });
    const [{ id }] = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    expect(await t.get(DeliveryProcessingService).process(id, false)).toEqual({ status: 'processed', outcome: 'applied' });
    return { orderId: order.id, invoiceId, eventId };
  }

  /** An order marked paid by support `minutesAgo` minutes ago (paid_at moved back by SQL). */
  async function paidAgo(minutesAgo: number): Promise<string> {
    const order = await d.createOrder();
    await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'paid at the counter' }).expect(200);
    await t.dataSource.query(`UPDATE orders SET paid_at = now() - make_interval(mins => $2) WHERE id = $1`, [
      order.id,
      minutesAgo,
    ]);
    return order.id;
  }

  describe('POST /admin/reconciliation', () => {
    it('nothing to compare, nothing here: four empty lists', async () => {
      const res = await reconcile({ provider: 'paymos', merchantAccountId: 'acc_1' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(EMPTY);
    });

    it('names the paid invoice that never arrived, the pending one, and the event never recorded', async () => {
      const ok = await paidByWebhook('paymos-a');
      const viaB = await paidByWebhook('paymos-b'); // same merchant account, other endpoint
      const pendingOrder = await d.createOrder();
      const pendingInvoice = uniqueId('inv');
      expect((await d.registerPayment(pendingOrder.id, 'paymos', pendingInvoice, 'acc_1')).status).toBe('pending');
      const neverSeen = uniqueId('inv');
      const neverEvent = uniqueId('evt');

      const res = await reconcile({
        provider: 'paymos',
        merchantAccountId: 'acc_1',
        eventIds: [ok.eventId, neverEvent, viaB.eventId],
        paidResourceIds: [neverSeen, pendingInvoice, ok.invoiceId, viaB.invoiceId],
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        missingEvents: [neverEvent],
        missingPaidPayments: [neverSeen, pendingInvoice],
        paidNotFulfilled: [], // paid just now
        duplicateEffects: [],
        backfill: null, // paymos has no events API
      });
    });

    it('captured and later states count as paid; failed, canceled, processing do not', async () => {
      const captured = ['succeeded', 'partially_refunded', 'refunded', 'disputed', 'dispute_lost'];
      const notCaptured = ['pending', 'processing', 'authorized', 'failed', 'canceled', 'expired'];
      const ids = new Map<string, string>();
      for (const status of [...captured, ...notCaptured]) {
        const order = await d.createOrder();
        const invoiceId = uniqueId('inv');
        const payment = await d.registerPayment(order.id, 'paymos', invoiceId, 'acc_1');
        await t.dataSource.query(`UPDATE payments SET status = $2 WHERE id = $1`, [payment.id, status]);
        ids.set(status, invoiceId);
      }
      const res = await reconcile({ provider: 'paymos', merchantAccountId: 'acc_1', paidResourceIds: [...ids.values()] });
      expect(res.status).toBe(200);
      expect(res.body.missingPaidPayments).toEqual(notCaptured.map((s) => ids.get(s)));
    });

    it('events and payments are looked up under the provider and merchant account asked about', async () => {
      const ok = await paidByWebhook();
      const other = await reconcile({
        provider: 'stripe',
        merchantAccountId: 'acc_1',
        eventIds: [ok.eventId],
        paidResourceIds: [ok.invoiceId],
      });
      expect(other.body).toMatchObject({ missingEvents: [ok.eventId], missingPaidPayments: [ok.invoiceId] });
      const otherAccount = await reconcile({
        provider: 'paymos',
        merchantAccountId: 'acc_2',
        eventIds: [ok.eventId],
        paidResourceIds: [ok.invoiceId],
      });
      expect(otherAccount.body).toMatchObject({ missingEvents: [ok.eventId], missingPaidPayments: [ok.invoiceId] });
      const same = await reconcile({
        provider: 'paymos',
        merchantAccountId: 'acc_1',
        eventIds: [ok.eventId, ok.eventId],
        paidResourceIds: [ok.invoiceId],
      });
      expect(same.body).toEqual(EMPTY);
    });

    it('an id listed twice is named once', async () => {
      const never = uniqueId('inv');
      const neverEvent = uniqueId('evt');
      const res = await reconcile({
        provider: 'paymos',
        merchantAccountId: 'acc_1',
        eventIds: [neverEvent, neverEvent],
        paidResourceIds: [never, never],
      });
      expect(res.body).toEqual({ ...EMPTY, missingEvents: [neverEvent], missingPaidPayments: [never] });
    });

    it('paidNotFulfilled: an order paid more than 10 minutes ago without a dispatched fulfillment, not one paid a minute ago', async () => {
      const stuck = await paidAgo(11);
      const dead = await paidAgo(45);
      await t.dataSource.query(`UPDATE fulfillments SET status = 'failed', last_error = 'carrier answered 400' WHERE order_id = $1`, [dead]);
      await t.dataSource.query(`UPDATE outbox_message SET status = 'dead' WHERE payload->>'orderId' = $1`, [dead]);
      const recent = await paidAgo(1);
      const nineMinutes = await paidAgo(9);
      // Paid long ago and shipped: fulfilled, not listed.
      const shipped = await paidAgo(60);
      await t.dataSource.query(
        `UPDATE fulfillments SET status = 'dispatched', shipment_id = 'shp_1', dispatched_at = now() WHERE order_id = $1`,
        [shipped],
      );
      await t.dataSource.query(`UPDATE orders SET status = 'fulfilled' WHERE id = $1`, [shipped]);

      const res = await reconcile({ provider: 'paymos', merchantAccountId: 'acc_1' });
      expect(res.status).toBe(200);
      expect([...res.body.paidNotFulfilled].sort()).toEqual([stuck, dead].sort());
      expect(res.body.paidNotFulfilled).not.toContain(recent);
      expect(res.body.paidNotFulfilled).not.toContain(nineMinutes);
      expect(res.body.paidNotFulfilled).not.toContain(shipped);
      expect(res.body.duplicateEffects).toEqual([]);
      expect(res.body.missingEvents).toEqual([]);
      expect(res.body.missingPaidPayments).toEqual([]);
    });

    it.each([
      ['an unknown provider', { provider: 'worldpay', merchantAccountId: 'acc_1' }, 'provider'],
      ['no provider', { merchantAccountId: 'acc_1' }, 'provider'],
      ['no merchantAccountId', { provider: 'paymos' }, 'merchantAccountId'],
      ['an empty merchantAccountId', { provider: 'paymos', merchantAccountId: '' }, 'merchantAccountId'],
      ['eventIds not an array', { provider: 'paymos', merchantAccountId: 'acc_1', eventIds: 'evt_1' }, 'eventIds'],
      ['paidResourceIds not an array', { provider: 'paymos', merchantAccountId: 'acc_1', paidResourceIds: { a: 1 } }, 'paidResourceIds'],
      ['an unknown field', { provider: 'paymos', merchantAccountId: 'acc_1', since: '2026-01-01' }, 'since'],
    ])('%s: 400 validation_failed on the field', async (_name, body, field) => {
      const res = await reconcile(body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_failed');
      expect(res.body.details.map((x: { field: string }) => x.field)).toEqual([field]);
    });

    it('an id in eventIds that is not a string: 400 on eventIds', async () => {
      const res = await reconcile({ provider: 'paymos', merchantAccountId: 'acc_1', eventIds: ['evt_1', 7] });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_failed');
      expect(res.body.details.map((x: { field: string }) => x.field)).toEqual(['eventIds']);
    });

    it('without the token: 401', async () => {
      const res = await d.http().post('/admin/reconciliation').send({ provider: 'paymos', merchantAccountId: 'acc_1' });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
    });
  });

  describe('the command line (payment-webhooks reconcile)', () => {
    function run(args: string[]) {
      const result = spawnSync(process.execPath, [CLI, 'reconcile', ...args], {
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: TEST_DATABASE_URL },
        encoding: 'utf8',
        timeout: 30_000,
      });
      return { code: result.status, stdout: result.stdout, stderr: result.stderr };
    }
    function file(name: string, lines: string[]): string {
      const path = join(dir, name);
      writeFileSync(path, `${lines.join('\n')}\n`);
      return path;
    }

    it('something to report: the JSON report on stdout (the same as the API), exit code 1 (CONTRACT §8 v3), the database and schema on stderr', async () => {
      const ok = await paidByWebhook();
      const never = uniqueId('inv');
      const neverEvent = uniqueId('evt');
      const stuck = await paidAgo(15);
      const paid = file('paid-2.txt', ['# paid yesterday', never, '', `  ${ok.invoiceId}  `]);
      const events = file('events-2.txt', [ok.eventId, neverEvent, '# end']);

      const out = run(['--provider', 'paymos', '--account', 'acc_1', '--paid', paid, '--events', events]);
      expect(out.code).toBe(1);
      expect(out.stderr).toMatch(/^reconcile: schema \S+ of 127\.0\.0\.1:5432\/\S+\n$/);
      expect(out.stderr).not.toContain('postgres@');
      const report = JSON.parse(out.stdout);
      expect(report).toEqual({
        missingEvents: [neverEvent],
        missingPaidPayments: [never],
        paidNotFulfilled: [stuck],
        duplicateEffects: [],
        backfill: null,
      });
      const api = await reconcile({
        provider: 'paymos',
        merchantAccountId: 'acc_1',
        paidResourceIds: [never, ok.invoiceId],
        eventIds: [ok.eventId, neverEvent],
      });
      expect(report).toEqual(api.body);
    });

    it('a paid invoice we never saw alone: exit code 1', async () => {
      const never = uniqueId('inv');
      const out = run(['--provider', 'paymos', '--account', 'acc_1', '--paid', file('paid-never.txt', [never])]);
      expect(out.code).toBe(1);
      expect(JSON.parse(out.stdout)).toEqual({ ...EMPTY, missingPaidPayments: [never] });
    });

    it('nothing to report: four empty lists, exit code 0', async () => {
      const ok = await paidByWebhook();
      const out = run(['--provider', 'paymos', '--account', 'acc_1', '--paid', file('paid-0.txt', [ok.invoiceId])]);
      expect({ code: out.code, stderr: out.stderr }).toEqual({ code: 0, stderr: expect.stringMatching(/^reconcile: schema payment_webhooks of 127\.0\.0\.1:5432\/\S+\n$/) });
      expect(JSON.parse(out.stdout)).toEqual(EMPTY);
    });

    it("a provider of the host's own: any name of the shape (the command runs without the host's code)", () => {
      const out = run(['--provider', 'acme', '--account', 'm_1']);
      expect({ code: out.code, stderr: out.stderr }).toEqual({ code: 0, stderr: expect.stringMatching(/^reconcile: schema payment_webhooks of 127\.0\.0\.1:5432\/\S+\n$/) });
      expect(JSON.parse(out.stdout)).toEqual(EMPTY);
    });

    it.each([
      ['no arguments', []],
      ['no --account', ['--provider', 'paymos']],
      ['no --provider', ['--account', 'acc_1']],
      ['a provider name of another shape', ['--provider', 'Pay Pal', '--account', 'acc_1']],
      ['an unknown option', ['--provider', 'paymos', '--account', 'acc_1', '--bogus']],
      ['--paid without a file name', ['--provider', 'paymos', '--account', 'acc_1', '--paid']],
      ['a --paid file that does not exist', ['--provider', 'paymos', '--account', 'acc_1', '--paid', '/nonexistent/paid.txt']],
    ])('bad arguments (%s): exit code 2 (could not run, CONTRACT §8) with a usage line, nothing on stdout', (_name, args) => {
      const out = run(args);
      expect(out.code).toBe(2);
      expect(out.stdout).toBe('');
      expect(out.stderr).toMatch(/^payment-webhooks: reconcile: /);
    });
  });
});
