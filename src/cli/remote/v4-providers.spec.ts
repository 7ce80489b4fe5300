import { BUILT_IN_PROVIDERS } from '../../providers';
import { receiveWith } from '../../testing/receive';
import { PAYPAL_TEST_CA_PEM, startPaypalCertServer, type PaypalCertServer } from '../../testing/paypal';
import { signDelivery } from './delivery';
import { EventKind, eventType, lifecycleKinds, newEventId, newResourceId, providerEvent, wireBody } from './events';

/**
 * What `simulate` and `conformance` send as PayPal, Checkout.com, Square and Paddle: each event of
 * each kind, signed as the provider signs it, is accepted by the provider's own adapter through the
 * module's receive path, and means to it what the kit means it to.
 */
describe('playing PayPal, Checkout.com, Square and Paddle', () => {
  const WEBHOOK_ID = '8PT597110X687430LKGECATA';
  const NOTIFICATION_URL = 'https://shop.example.com/pay/webhooks/square-main';
  const SECRETS = { checkout: 'ckosig-0123456789abcdef', square: 'sq0wss-signature-key-0001', paddle: 'pdl_ntfset_01hv8x_secretkey0001' } as const;
  let kit: PaypalCertServer;

  beforeAll(async () => {
    kit = await startPaypalCertServer();
  });
  afterAll(async () => {
    await kit.close();
  });

  type Provider = 'paypal' | 'checkout' | 'square' | 'paddle';
  const endpointOf = (provider: Provider) =>
    provider === 'paypal'
      ? { merchantAccountId: 'acc_test', webhookId: WEBHOOK_ID, caPem: PAYPAL_TEST_CA_PEM, certHosts: [kit.certHost] }
      : provider === 'square'
        ? { merchantAccountId: 'MLSELLER01', secrets: [SECRETS.square], notificationUrl: NOTIFICATION_URL }
        : { merchantAccountId: 'acc_test', secrets: [SECRETS[provider]] };
  const secretOf = (provider: Provider) => (provider === 'paypal' ? WEBHOOK_ID : SECRETS[provider]);
  const paymentOf = (provider: Provider) => ({
    resourceId: newResourceId(provider),
    orderId: '0f8fad5b-d9cb-469f-a165-70867728950e',
    amount: '49.90',
    currency: 'EUR',
    ...(provider === 'square' ? { account: 'MLSELLER01' } : {}),
  });

  async function received(provider: Provider, kind: EventKind) {
    const payment = paymentOf(provider);
    const event = providerEvent(provider, kind, payment);
    const delivery = signDelivery(provider, 'http://127.0.0.1:1/webhooks/x', event.eventId, wireBody(event.body), {
      secrets: [secretOf(provider)],
      notificationUrl: NOTIFICATION_URL,
      paypalCertUrl: kit.certUrl,
    });
    const adapter = BUILT_IN_PROVIDERS[provider];
    const outcome = await receiveWith(adapter, { headers: delivery.headers, body: delivery.body }, { endpoint: endpointOf(provider) });
    return { payment, event, delivery, outcome, meaning: adapter.normalize(event.body, event.type) };
  }

  const EXPECTED: Record<Provider, Record<'early' | 'succeeded', string>> = {
    paypal: { early: 'authorized', succeeded: 'succeeded' },
    checkout: { early: 'processing', succeeded: 'succeeded' },
    square: { early: 'authorized', succeeded: 'succeeded' },
    paddle: { early: 'failed', succeeded: 'succeeded' },
  };

  it.each(['paypal', 'checkout', 'square', 'paddle'] as const)('%s: every kind is accepted by the adapter, keyed by the event id sent', async (provider) => {
    for (const kind of ['early', 'processing', 'succeeded', 'ignored'] as const) {
      const { outcome, event, payment } = await received(provider, kind);
      expect(outcome).toMatchObject({ ok: true, events: [{ eventId: event.eventId, eventType: eventType(provider, kind), served: true }] });
      if (kind !== 'ignored' && outcome.ok) expect(outcome.events[0].resourceId).toBe(payment.resourceId);
    }
  });

  it.each(['paypal', 'checkout', 'square', 'paddle'] as const)('%s: a paid event means the payment succeeded, of 49.90 EUR, for the order; the early one lies behind it', async (provider) => {
    const { meaning, payment } = await received(provider, 'succeeded');
    expect(meaning).toMatchObject({ kind: 'succeeded', resourceId: payment.resourceId, currency: 'EUR' });
    // PayPal's amounts are decimal, the others' minor units: either way 49.90.
    expect(meaning!.amount).toEqual(provider === 'paypal' ? { form: 'decimal', value: '49.90' } : { form: 'minor', value: provider === 'paddle' ? '4990' : 4990 });
    // Where the adapter reads the order: its id (Checkout.com, Paddle) or reference (PayPal custom_id, Square reference_id).
    expect(meaning!.orderId ?? meaning!.orderReference).toBe(payment.orderId);
    const early = await received(provider, 'early');
    expect(early.meaning).toMatchObject({ kind: EXPECTED[provider].early, resourceId: early.payment.resourceId });
    // The ignored kind is recorded and means nothing.
    const ignored = await received(provider, 'ignored');
    expect(BUILT_IN_PROVIDERS[provider].normalize(ignored.event.body, ignored.event.type)).toBeNull();
  });

  it('a body changed after signing is refused by each (the bytes, or PayPal\'s CRC32 of them, are signed)', async () => {
    for (const provider of ['paypal', 'checkout', 'square', 'paddle'] as const) {
      const { delivery } = await received(provider, 'ignored');
      const compact = JSON.stringify(JSON.parse(delivery.body));
      const outcome = await receiveWith(BUILT_IN_PROVIDERS[provider], { headers: delivery.headers, body: compact }, { endpoint: endpointOf(provider) });
      expect([provider, outcome]).toEqual([provider, { ok: false, error: 'invalid_signature' }]);
    }
  });

  it('lifecycles: PayPal and Square two steps, Checkout.com three, Paddle one (as Adyen)', () => {
    expect(lifecycleKinds('paypal').map((k) => eventType('paypal', k))).toEqual(['CHECKOUT.ORDER.APPROVED', 'PAYMENT.CAPTURE.COMPLETED']);
    expect(lifecycleKinds('checkout').map((k) => eventType('checkout', k))).toEqual(['payment_pending', 'payment_approved', 'payment_captured']);
    expect(lifecycleKinds('square').map((k) => eventType('square', k))).toEqual(['payment.created', 'payment.updated']);
    expect(lifecycleKinds('paddle').map((k) => eventType('paddle', k))).toEqual(['transaction.paid']);
  });

  it('ids in each provider\'s shape', () => {
    expect(newResourceId('paypal')).toMatch(/^[A-Z0-9]{17}$/);
    expect(newEventId('paypal')).toMatch(/^WH-[A-Z0-9]{17}-[A-Z0-9]{17}$/);
    expect(newResourceId('checkout')).toMatch(/^pay_[a-z2-7]{26}$/);
    expect(newEventId('checkout')).toMatch(/^evt_[a-z2-7]{26}$/);
    expect(newResourceId('square')).toMatch(/^[A-Za-z0-9]{29}$/);
    expect(newEventId('square')).toMatch(/^[0-9a-f-]{36}$/);
    expect(newResourceId('paddle')).toMatch(/^txn_[a-z2-7]{26}$/);
    expect(newEventId('paddle')).toMatch(/^evt_[a-z2-7]{26}$/);
  });

  it('Square signs the notification URL given; PayPal names the kit\'s certificate', async () => {
    const square = await received('square', 'succeeded');
    const elsewhere = await receiveWith(BUILT_IN_PROVIDERS.square, { headers: square.delivery.headers, body: square.delivery.body }, {
      endpoint: { ...endpointOf('square'), notificationUrl: 'https://other.example.com/webhooks/square-main' },
    });
    expect(elsewhere).toEqual({ ok: false, error: 'invalid_signature' });
    const paypal = await received('paypal', 'succeeded');
    expect(paypal.delivery.headers['paypal-cert-url']).toBe(kit.certUrl);
    expect(paypal.delivery.headers['paypal-auth-algo']).toBe('SHA256withRSA');
  });
});
