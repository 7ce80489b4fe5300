import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { PaypalCertServer, startPaypalCertServer } from '../../src/testing/paypal';
import { signedHeaders } from '../../src/testing/sign';
import { DeliveryProcessingService } from '../../src/webhooks/delivery-processing.service';
import { paypalBody } from '../fixtures/paypal';
import { createTestApp, TestApp, truncateAll } from '../support/app';
import { driver, uniqueId } from '../support/domain';

const WEBHOOK_ID = '4JH86294D6297924G';
const ACCOUNT = 'MERCHANTPP1';
const paypalId = (prefix = '') => `${prefix}${uniqueId('X').slice(2).toUpperCase()}`;

function envelope(sample: string, eventType: string, resource: Record<string, unknown>): Record<string, unknown> {
  const { body } = paypalBody(sample);
  return { ...body, id: `WH-${paypalId()}-${paypalId()}`, event_type: eventType, resource: { ...(body.resource as object), ...resource } };
}

/**
 * A PayPal refund names its capture, not its payment: the capture's record is how it finds its
 * payment. When the capture and its refund are processed in one transaction (a backlog drained after
 * an outage), the refund must find the capture that same transaction recorded, even at the attempt
 * where a delivery whose payment is not found is parked. Processing is driven directly (workers
 * off), so that both deliveries are one batch; the route is the same on both platforms.
 */
describe('PayPal: a capture and its refund in one processing transaction', () => {
  let certs: PaypalCertServer;
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    certs = await startPaypalCertServer();
    const endpoints: EndpointDefinition[] = [
      { id: 'paypal-main', provider: 'paypal', secrets: [], merchantAccountId: ACCOUNT, webhookId: WEBHOOK_ID, caPem: certs.caPem, certHosts: [certs.certHost] },
    ];
    t = await createTestApp({ endpoints, runWorkers: false, webhookMaxBodyBytes: 64 * 1024 });
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
    await certs?.close();
  });
  beforeEach(() => truncateAll(t.dataSource));

  async function record(body: Record<string, unknown>): Promise<string> {
    const text = JSON.stringify(body);
    const res = await request(t.app.getHttpServer()).post('/webhooks/paypal-main').set(signedHeaders('paypal', WEBHOOK_ID, text, { certUrl: certs.certUrl })).send(text);
    expect(res.body).toEqual({ status: 'accepted', eventId: body.id });
    return (await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [body.id]))[0].id;
  }

  it('the refund is applied to the payment the capture was recorded for, never parked behind it', async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const orderId = paypalId('O');
    const captureId = paypalId('C');
    // The refund first, as a backlog may hold them: recorded, not processed yet.
    const refunded = envelope('PAYMENT.CAPTURE.REFUNDED', 'PAYMENT.CAPTURE.REFUNDED', {
      id: paypalId('R'),
      amount: { value: '49.90', currency_code: 'EUR' },
      links: [{ href: `https://api.paypal.com/v2/payments/captures/${captureId}`, rel: 'up', method: 'GET' }],
    });
    const completed = envelope('PAYMENT.CAPTURE.COMPLETED.pui-docs', 'PAYMENT.CAPTURE.COMPLETED', {
      id: captureId,
      status: 'COMPLETED',
      amount: { value: '49.90', currency_code: 'EUR' },
      custom_id: reference,
      supplementary_data: { related_ids: { order_id: orderId } },
    });
    const ids = [await record(refunded), await record(completed)];

    const processing = t.get(DeliveryProcessingService);
    // One event-loop turn: one batch, one transaction; at the attempt that parks what finds no payment.
    const results = await Promise.all(ids.map((inboxId) => processing.submit({ inboxId, finalAttempt: false, parkUnmatched: true })));
    expect(results).toEqual([
      { status: 'processed', outcome: 'applied' },
      { status: 'processed', outcome: 'applied' },
    ]);
    expect(await t.dataSource.query(`SELECT DISTINCT xmin::text FROM webhook_inbox WHERE id = ANY($1::uuid[])`, [ids])).toHaveLength(1);
    const view = await d.getOrder(order.id);
    expect(view.payments).toMatchObject([{ providerPaymentId: orderId, status: 'refunded', refundedAmount: '49.90' }]);
    expect(view.status).toBe('refunded');
  });
});
