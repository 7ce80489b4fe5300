import type { EndpointDefinition } from '../../src/config/options';
import { AUTH, createTestApp, eventually, TEST_ENDPOINTS, TestApp } from '../support/app';
import { driver, uniqueId } from '../support/domain';
import { acmeEvent, acmeHeaders } from '../support/acme-provider';
import { acmePayApi, acmePayProvider } from '../support/acme-pay-provider';
import { ProviderApiStub } from '../support/provider-api-stub';
import { linksOf, parentOf, spansNamed, useInMemoryTracing } from '../support/tracing';

/**
 * CONTRACT §9 (v4): a payment command's call to the provider is a span `payment command <type>`,
 * linked to the request that asked for it; no credential, key or body is an attribute. With the
 * OpenTelemetry SDK a host registers, exporting to memory.
 */
const exporter = useInMemoryTracing();
const SECRET = 'acme_sk_traces_0123456789';
const API_KEY = 'ak_live_trace_secret_55aa';

describe('§9 the span of a payment command', () => {
  const stub = acmePayApi(new ProviderApiStub());
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    await stub.start();
    const endpoints: EndpointDefinition[] = [
      ...TEST_ENDPOINTS,
      { id: 'acmepay-main', provider: 'acmepay', secrets: [SECRET], merchantAccountId: 'm_1', apiKey: API_KEY, apiBaseUrl: stub.baseUrl },
    ];
    t = await createTestApp({ providers: [acmePayProvider], endpoints, runWorkers: true, carriers: [], carrierAdapters: [{ name: 'default', ship: async () => ({ ok: true, shipmentId: uniqueId('shp') }) }] });
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
    await stub.stop();
  });

  it('a refund: `payment_webhooks refund` (the request), then `outbox dispatch payment.refund`, then `payment command refund` under it, linked to the request', async () => {
    const order = await d.createOrder();
    const paid = acmeEvent('charge.paid', uniqueId('ch'), { orderId: order.id, merchant: 'm_1' });
    expect((await d.http().post('/webhooks/acmepay-main').set(acmeHeaders(SECRET, paid.body)).send(paid.body)).status).toBe(200);
    await d.processed(paid.eventId);
    exporter.reset();

    const res = await d.http().post(`/orders/${order.id}/refunds`).set(AUTH).send({ amount: '5.00', reason: 'Ada Lovelace returned it' });
    expect(res.status).toBe(202);
    // The dispatch span ends once the attempt is recorded, after the command's.
    const { command, dispatch } = (await eventually(
      async () => {
        const [c] = spansNamed(exporter, 'payment command refund');
        const [o] = spansNamed(exporter, 'outbox dispatch payment.refund');
        return c && o ? { command: c, dispatch: o } : undefined;
      },
      15_000,
      'the command and dispatch spans',
    ))!;
    const [request] = spansNamed(exporter, 'payment_webhooks refund');
    expect(request).toBeDefined();
    expect(dispatch).toBeDefined();
    expect(parentOf(command)).toBe(dispatch.spanContext().spanId);
    expect(linksOf(command)).toEqual([request.spanContext().spanId]);
    expect(command.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(command.attributes).toEqual({
      'messaging.system': 'payment_webhooks',
      'payment_webhooks.provider': 'acmepay',
      'payment_webhooks.merchant_account_id': 'm_1',
      'payment_webhooks.outcome': 'accepted',
    });
    // Nothing secret or personal in any span of the command's trace.
    const text = JSON.stringify(exporter.getFinishedSpans().map((s) => ({ a: s.attributes, e: s.events })));
    for (const secret of [API_KEY, res.body.id, 'Ada Lovelace']) expect(text.includes(secret)).toBe(false);
  });
});
