import { exampleEvents } from '../../test/support/fixtures';
import type { ProviderEvent } from '../common/provider-event';
import { factuareaProvider } from './factuarea.provider';
import { paymosProvider } from './paymos.provider';
import type { ProviderAdapter } from './provider';
import { standardProvider } from './standard.provider';
import { stripeProvider } from './stripe.provider';

type Body = Record<string, unknown>;

const ORDER = '8d1e5a2c-0000-4000-8000-000000000001';
/** `created` of every example body (unix seconds). */
const CREATED = new Date(1790590561 * 1000);

/** A deep copy of one example body, so a test can change it freely. */
function example(provider: string, type: string): Body {
  const body = exampleEvents(provider)[type];
  if (!body) throw new Error(`no ${provider} example for ${type}`);
  return structuredClone(body);
}

function dataOf(body: Body): Body {
  return body.data as Body;
}

function objectOf(body: Body): Body {
  return dataOf(body).object as Body;
}

/** Every example type has an expectation and every expectation an example. */
function expectSameTypes(provider: string, expected: Record<string, ProviderEvent>): void {
  expect(Object.keys(exampleEvents(provider)).sort()).toEqual(Object.keys(expected).sort());
}

// ---------------------------------------------------------------------------------------------
// paymos (docs/webhooks.md#paymos)

describe('paymosProvider.normalize', () => {
  const invoice = (kind: ProviderEvent['kind'], extra: Partial<ProviderEvent> = {}): ProviderEvent => ({
    kind,
    resourceId: 'inv_51ab77c0',
    orderId: ORDER,
    amount: { form: 'decimal', value: '49.90' },
    currency: 'EUR',
    refundedAmount: null,
    declaredAccount: null,
    occurredAt: CREATED,
    ...extra,
  });
  const expected: Record<string, ProviderEvent> = {
    'invoice.created': invoice('pending'),
    'invoice.confirming': invoice('processing'),
    'invoice.paid': invoice('succeeded'),
    'invoice.expired': invoice('expired'),
    'invoice.invalid': invoice('failed'),
    'invoice.refunded': invoice('refunded', { refundedAmount: { form: 'decimal', value: '20.00' } }),
  };

  it('has an expectation for every example event type', () => expectSameTypes('paymos', expected));

  it.each(Object.keys(exampleEvents('paymos')))('maps the %s example', (type) => {
    expect(paymosProvider.normalize(example('paymos', type), type)).toEqual(expected[type]);
  });

  it('ignores a withdrawal (wdr_…) and a pcd_… resource, even with an invoice type', () => {
    for (const id of ['wdr_8c1f0a', 'pcd_77aa01']) {
      const body = example('paymos', 'invoice.paid');
      dataOf(body).id = id;
      dataOf(body).object = id.startsWith('wdr_') ? 'withdrawal' : 'payment_card';
      expect(paymosProvider.normalize(body, 'invoice.paid')).toBeNull();
    }
  });

  it('ignores a withdrawal event type', () => {
    const body = {
      event_id: 'evt_1',
      type: 'withdrawal.completed',
      created: 1790590561,
      data: { object: 'withdrawal', id: 'wdr_8c1f0a', amount: '10.00', currency: 'EUR' },
    };
    expect(paymosProvider.normalize(body, 'withdrawal.completed')).toBeNull();
  });

  it.each(['invoice.unknown', 'invoice.updated', 'payment.succeeded', '', 'constructor', '__proto__'])(
    'ignores the unknown type %p',
    (type) => {
      expect(paymosProvider.normalize(example('paymos', 'invoice.paid'), type)).toBeNull();
    },
  );

  it.each([
    ['missing', undefined],
    ['a number', 42],
    ['empty', ''],
    ['null', null],
  ])('ignores an invoice whose id is %s', (_label, id) => {
    const body = example('paymos', 'invoice.paid');
    if (id === undefined) delete dataOf(body).id;
    else dataOf(body).id = id;
    expect(paymosProvider.normalize(body, 'invoice.paid')).toBeNull();
  });

  it('reads an amount of the wrong JSON type, or a missing one, as null', () => {
    const body = example('paymos', 'invoice.refunded');
    dataOf(body).price_amount = 49.9;
    dataOf(body).refunded_amount = 20;
    expect(paymosProvider.normalize(body, 'invoice.refunded')).toEqual(
      invoice('refunded', { amount: null, refundedAmount: null }),
    );
    delete dataOf(body).price_amount;
    delete dataOf(body).refunded_amount;
    expect(paymosProvider.normalize(body, 'invoice.refunded')).toEqual(
      invoice('refunded', { amount: null, refundedAmount: null }),
    );
  });

  it('reads an absent or empty order id, currency and created as null', () => {
    const body = example('paymos', 'invoice.paid');
    dataOf(body).order_id = '';
    delete dataOf(body).price_currency;
    body.created = '1790590561';
    expect(paymosProvider.normalize(body, 'invoice.paid')).toEqual(
      invoice('succeeded', { orderId: null, currency: null, occurredAt: null }),
    );
  });

  it('never reads a declared account, whatever the body carries', () => {
    const body = example('paymos', 'invoice.paid');
    body.account = 'acc_1';
    body.account_id = 'acc_1';
    dataOf(body).account_id = 'acc_1';
    expect(paymosProvider.normalize(body, 'invoice.paid')).toEqual(invoice('succeeded'));
  });
});

// ---------------------------------------------------------------------------------------------
// factuarea (docs/webhooks.md#factuarea)

describe('factuareaProvider.normalize', () => {
  const invoice = (kind: ProviderEvent['kind'], extra: Partial<ProviderEvent> = {}): ProviderEvent => ({
    kind,
    resourceId: '01931b3e-7c4a-7f2e-9a8b-3c5d6e7f8a42',
    orderId: ORDER,
    amount: { form: 'decimal', value: '49.90' },
    currency: 'EUR',
    refundedAmount: null,
    declaredAccount: null,
    occurredAt: CREATED,
    ...extra,
  });
  const expected: Record<string, ProviderEvent> = {
    'invoice.created': invoice('pending'),
    'invoice.sent': invoice('pending'),
    'invoice.paid': invoice('succeeded'),
    'invoice.voided': invoice('canceled'),
    'invoice.refunded': invoice('refunded', { refundedAmount: { form: 'decimal', value: '20.00' } }),
  };

  it('has an expectation for every example event type', () => expectSameTypes('factuarea', expected));

  it.each(Object.keys(exampleEvents('factuarea')))('maps the %s example', (type) => {
    expect(factuareaProvider.normalize(example('factuarea', type), type)).toEqual(expected[type]);
  });

  it('reads the declared account of an account endpoint body (account.id)', () => {
    const body = example('factuarea', 'invoice.paid');
    body.account = { id: '5f0c2b8e-1d3a-4e6f-9a7b-2c4d6e8f0a1b' };
    body.account_relationship = 'connected';
    body.company_id = '7a1b2c3d-0000-4000-8000-00000000c0de';
    expect(factuareaProvider.normalize(body, 'invoice.paid')).toEqual(
      invoice('succeeded', { declaredAccount: '5f0c2b8e-1d3a-4e6f-9a7b-2c4d6e8f0a1b' }),
    );
  });

  it('reads an account without a usable id as no declared account', () => {
    for (const account of [{}, { id: 7 }, { id: '' }, 'acc_1', null, []]) {
      const body = example('factuarea', 'invoice.paid');
      body.account = account;
      expect(factuareaProvider.normalize(body, 'invoice.paid')).toEqual(invoice('succeeded'));
    }
  });

  it('ignores account.* events', () => {
    const body = {
      id: '9b8e7c1a-0000-4000-8000-000000000001',
      type: 'account.updated',
      api_version: '2026-09-23',
      created: 1790590561,
      data: { type: 'account.updated', object: { object: 'account', id: '5f0c2b8e-1d3a-4e6f-9a7b-2c4d6e8f0a1b' } },
      account: { id: '5f0c2b8e-1d3a-4e6f-9a7b-2c4d6e8f0a1b' },
    };
    expect(factuareaProvider.normalize(body, 'account.updated')).toBeNull();
  });

  it.each(['invoice.updated', 'invoice.deleted', 'customer.created', ''])('ignores the unknown type %p', (type) => {
    expect(factuareaProvider.normalize(example('factuarea', 'invoice.paid'), type)).toBeNull();
  });

  it('ignores an invoice type whose object is not an invoice', () => {
    const body = example('factuarea', 'invoice.paid');
    objectOf(body).object = 'credit_note';
    expect(factuareaProvider.normalize(body, 'invoice.paid')).toBeNull();
  });

  it('accepts an invoice whose object field is absent when its id is a string', () => {
    const body = example('factuarea', 'invoice.paid');
    delete objectOf(body).object;
    expect(factuareaProvider.normalize(body, 'invoice.paid')).toEqual(invoice('succeeded'));
  });

  it.each([
    ['missing', undefined],
    ['a number', 42],
    ['empty', ''],
  ])('ignores an invoice whose id is %s', (_label, id) => {
    const body = example('factuarea', 'invoice.paid');
    if (id === undefined) delete objectOf(body).id;
    else objectOf(body).id = id;
    expect(factuareaProvider.normalize(body, 'invoice.paid')).toBeNull();
  });

  it('reads amounts of the wrong JSON type as null, and a missing metadata as no order id', () => {
    const body = example('factuarea', 'invoice.refunded');
    objectOf(body).total = 49.9;
    objectOf(body).refunded_total = { value: '20.00' };
    delete objectOf(body).metadata;
    expect(factuareaProvider.normalize(body, 'invoice.refunded')).toEqual(
      invoice('refunded', { amount: null, refundedAmount: null, orderId: null }),
    );
  });

  it('reads the signature-vector body (no metadata) too', () => {
    const body = {
      id: '01a0e783-aae8-7c2d-9f15-2b7d4e6a8c31',
      type: 'invoice.sent',
      api_version: '2026-09-23',
      created: 1790590561,
      livemode: true,
      test: false,
      correlation_id: '01a0e783-aa84-7b48-8c63-1a5e9d2f4b70',
      data: {
        type: 'invoice.sent',
        object: {
          object: 'invoice',
          id: '01931b3e-7c4a-7f2e-9a8b-3c5d6e7f8a42',
          number: 'FAC-2026-00042',
          status: 'sent',
          total: '1210.00',
          currency: 'EUR',
        },
      },
    };
    expect(factuareaProvider.normalize(body, 'invoice.sent')).toEqual(
      invoice('pending', { orderId: null, amount: { form: 'decimal', value: '1210.00' } }),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// stripe (docs/webhooks.md#stripe)

describe('stripeProvider.normalize', () => {
  const event = (kind: ProviderEvent['kind'], extra: Partial<ProviderEvent> = {}): ProviderEvent => ({
    kind,
    resourceId: 'pi_3QxAbcDEF',
    orderId: ORDER,
    amount: { form: 'minor', value: 4990 },
    currency: 'EUR',
    refundedAmount: null,
    declaredAccount: null,
    occurredAt: CREATED,
    ...extra,
  });
  const expected: Record<string, ProviderEvent> = {
    'payment_intent.processing': event('processing'),
    'payment_intent.amount_capturable_updated': event('authorized'),
    'payment_intent.succeeded': event('succeeded'),
    'payment_intent.payment_failed': event('failed'),
    'payment_intent.canceled': event('canceled'),
    'charge.refunded': event('refunded', { refundedAmount: { form: 'minor', value: 2000 } }),
    // Disputes carry no metadata and no amount to check (a dispute may be partial).
    'charge.dispute.created': event('disputed', { orderId: null, amount: null }),
    'charge.dispute.closed': event('dispute_won', { orderId: null, amount: null }),
  };

  it('has an expectation for every example event type', () => expectSameTypes('stripe', expected));

  it.each(Object.keys(exampleEvents('stripe')))('maps the %s example', (type) => {
    expect(stripeProvider.normalize(example('stripe', type), type)).toEqual(expected[type]);
  });

  it('upper-cases the currency Stripe sends in lower case', () => {
    for (const type of Object.keys(exampleEvents('stripe'))) {
      const body = example('stripe', type);
      expect(objectOf(body).currency).toBe('eur');
      expect(stripeProvider.normalize(body, type)?.currency).toBe('EUR');
    }
    const body = example('stripe', 'payment_intent.succeeded');
    objectOf(body).currency = 'jpy';
    objectOf(body).amount = 5000;
    objectOf(body).amount_received = 5000;
    expect(stripeProvider.normalize(body, 'payment_intent.succeeded')).toEqual(
      event('succeeded', { currency: 'JPY', amount: { form: 'minor', value: 5000 } }),
    );
  });

  it('states amount_received, not amount, for payment_intent.succeeded', () => {
    const body = example('stripe', 'payment_intent.succeeded');
    objectOf(body).amount = 5000;
    objectOf(body).amount_received = 4990;
    expect(stripeProvider.normalize(body, 'payment_intent.succeeded')).toEqual(event('succeeded'));
  });

  it('states amount for the other payment_intent events (amount_received is 0 there)', () => {
    const body = example('stripe', 'payment_intent.amount_capturable_updated');
    expect(objectOf(body).amount_received).toBe(0);
    expect(stripeProvider.normalize(body, 'payment_intent.amount_capturable_updated')).toEqual(event('authorized'));
  });

  it('maps charge.dispute.closed lost to dispute_lost', () => {
    const body = example('stripe', 'charge.dispute.closed');
    objectOf(body).status = 'lost';
    expect(stripeProvider.normalize(body, 'charge.dispute.closed')).toEqual(
      event('dispute_lost', { orderId: null, amount: null }),
    );
  });

  it.each(['warning_closed', 'under_review', 'needs_response', undefined, 7])(
    'ignores charge.dispute.closed with status %p',
    (status) => {
      const body = example('stripe', 'charge.dispute.closed');
      if (status === undefined) delete objectOf(body).status;
      else objectOf(body).status = status;
      expect(stripeProvider.normalize(body, 'charge.dispute.closed')).toBeNull();
    },
  );

  it('reads the Connect account as the declared account', () => {
    for (const type of Object.keys(exampleEvents('stripe'))) {
      const body = example('stripe', type);
      body.account = 'acct_1Q2w3E4r5T';
      expect(stripeProvider.normalize(body, type)).toEqual({ ...expected[type], declaredAccount: 'acct_1Q2w3E4r5T' });
    }
  });

  it('reads a non-string account as no declared account', () => {
    for (const account of [{ id: 'acct_1' }, 42, '', null]) {
      const body = example('stripe', 'payment_intent.succeeded');
      body.account = account;
      expect(stripeProvider.normalize(body, 'payment_intent.succeeded')).toEqual(event('succeeded'));
    }
  });

  it('reads the order id from a charge when its metadata carries one, and null otherwise', () => {
    const body = example('stripe', 'charge.refunded');
    delete objectOf(body).metadata;
    expect(stripeProvider.normalize(body, 'charge.refunded')).toEqual(
      event('refunded', { orderId: null, refundedAmount: { form: 'minor', value: 2000 } }),
    );
    const dispute = example('stripe', 'charge.dispute.created');
    objectOf(dispute).metadata = { order_id: ORDER };
    expect(stripeProvider.normalize(dispute, 'charge.dispute.created')).toEqual(event('disputed', { amount: null }));
  });

  it.each(['customer.created', 'charge.succeeded', 'payment_intent.created', 'charge.dispute.updated', ''])(
    'ignores the type %p',
    (type) => {
      const body = example('stripe', type.startsWith('charge.') ? 'charge.refunded' : 'payment_intent.succeeded');
      body.type = type;
      expect(stripeProvider.normalize(body, type)).toBeNull();
    },
  );

  it('ignores customer.created on a customer object', () => {
    const body = {
      id: 'evt_1Cus',
      object: 'event',
      created: 1790590561,
      type: 'customer.created',
      data: { object: { id: 'cus_R2d2', object: 'customer', email: 'a@example.com' } },
    };
    expect(stripeProvider.normalize(body, 'customer.created')).toBeNull();
  });

  it('ignores a charge without a PaymentIntent (its own ch_… id is not the resource)', () => {
    for (const value of [undefined, null, 42, '']) {
      const body = example('stripe', 'charge.refunded');
      if (value === undefined) delete objectOf(body).payment_intent;
      else objectOf(body).payment_intent = value;
      expect(stripeProvider.normalize(body, 'charge.refunded')).toBeNull();
    }
    const dispute = example('stripe', 'charge.dispute.created');
    delete objectOf(dispute).payment_intent;
    expect(stripeProvider.normalize(dispute, 'charge.dispute.created')).toBeNull();
  });

  it('ignores a payment_intent event without an id', () => {
    const body = example('stripe', 'payment_intent.succeeded');
    delete objectOf(body).id;
    expect(stripeProvider.normalize(body, 'payment_intent.succeeded')).toBeNull();
  });

  it('reads amounts of the wrong JSON type as null, and a missing currency as null', () => {
    const body = example('stripe', 'charge.refunded');
    objectOf(body).amount = { value: 4990 };
    objectOf(body).amount_refunded = true;
    delete objectOf(body).currency;
    expect(stripeProvider.normalize(body, 'charge.refunded')).toEqual(
      event('refunded', { amount: null, refundedAmount: null, currency: null }),
    );
  });

  it('reads the signature-vector body too', () => {
    const body = {
      id: 'evt_1QxAbcDEF',
      object: 'event',
      api_version: '2026-10-28',
      created: 1790590560,
      livemode: false,
      type: 'payment_intent.succeeded',
      data: {
        object: {
          id: 'pi_3QxAbc',
          object: 'payment_intent',
          amount: 4990,
          amount_received: 4990,
          currency: 'eur',
          status: 'succeeded',
          metadata: { order_id: ORDER },
        },
      },
    };
    expect(stripeProvider.normalize(body, 'payment_intent.succeeded')).toEqual(
      event('succeeded', { resourceId: 'pi_3QxAbc', occurredAt: new Date(1790590560 * 1000) }),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// standard (docs/webhooks.md#standard-webhooks)

describe('standardProvider.normalize', () => {
  const OCCURRED = new Date('2026-09-28T10:16:01Z');
  const payment = (kind: ProviderEvent['kind'], extra: Partial<ProviderEvent> = {}): ProviderEvent => ({
    kind,
    resourceId: 'pay_7Hc2Lq',
    orderId: ORDER,
    amount: { form: 'minor', value: 4990 },
    currency: 'EUR',
    refundedAmount: null,
    declaredAccount: 'acc_1',
    occurredAt: OCCURRED,
    ...extra,
  });
  const expected: Record<string, ProviderEvent> = {
    'payment.pending': payment('pending'),
    'payment.processing': payment('processing'),
    'payment.authorized': payment('authorized'),
    'payment.succeeded': payment('succeeded'),
    'payment.failed': payment('failed'),
    'payment.canceled': payment('canceled'),
    'payment.expired': payment('expired'),
    'payment.refunded': payment('refunded', { refundedAmount: { form: 'minor', value: 2000 } }),
    'payment.disputed': payment('disputed'),
    'payment.dispute_won': payment('dispute_won'),
    'payment.dispute_lost': payment('dispute_lost'),
  };

  it('has an expectation for every example event type', () => expectSameTypes('standard', expected));

  it.each(Object.keys(exampleEvents('standard')))('maps the %s example', (type) => {
    expect(standardProvider.normalize(example('standard', type), type)).toEqual(expected[type]);
  });

  it.each(['payment.created', 'payment.updated', 'refund.created', 'payment', ''])('ignores the unknown type %p', (type) => {
    expect(standardProvider.normalize(example('standard', 'payment.succeeded'), type)).toBeNull();
  });

  it.each([
    ['missing', undefined],
    ['a number', 42],
    ['empty', ''],
    ['an object', { id: 'pay_7Hc2Lq' }],
  ])('ignores a payment whose id is %s', (_label, id) => {
    const body = example('standard', 'payment.succeeded');
    if (id === undefined) delete dataOf(body).payment_id;
    else dataOf(body).payment_id = id;
    expect(standardProvider.normalize(body, 'payment.succeeded')).toBeNull();
  });

  it('keeps a minor amount sent as a string as it is (parsed later, against the currency)', () => {
    const body = example('standard', 'payment.refunded');
    dataOf(body).amount = '4990';
    dataOf(body).amount_refunded = '2000';
    expect(standardProvider.normalize(body, 'payment.refunded')).toEqual(
      payment('refunded', { amount: { form: 'minor', value: '4990' }, refundedAmount: { form: 'minor', value: '2000' } }),
    );
  });

  it('reads amounts of the wrong JSON type, or missing, as null', () => {
    const body = example('standard', 'payment.refunded');
    dataOf(body).amount = { minor: 4990 };
    delete dataOf(body).amount_refunded;
    expect(standardProvider.normalize(body, 'payment.refunded')).toEqual(
      payment('refunded', { amount: null, refundedAmount: null }),
    );
  });

  it('reads an absent account_id, order_id and currency as null', () => {
    const body = example('standard', 'payment.succeeded');
    delete dataOf(body).account_id;
    dataOf(body).order_id = 12;
    dataOf(body).currency = null;
    expect(standardProvider.normalize(body, 'payment.succeeded')).toEqual(
      payment('succeeded', { declaredAccount: null, orderId: null, currency: null }),
    );
  });

  it.each([
    ['2026-09-28T12:16:01.250+02:00', new Date('2026-09-28T10:16:01.250Z')],
    ['2026-09-28T10:16Z', new Date('2026-09-28T10:16:00Z')],
  ])('reads the ISO timestamp %p', (timestamp, date) => {
    const body = example('standard', 'payment.succeeded');
    body.timestamp = timestamp;
    expect(standardProvider.normalize(body, 'payment.succeeded')).toEqual(payment('succeeded', { occurredAt: date }));
  });

  it.each([
    ['garbage', 'not a date'],
    ['unix seconds', 1790590561],
    ['a date without time', '2026-09-28'],
    ['a local time without offset', '2026-09-28T10:16:01'],
    ['an impossible month', '2026-13-01T00:00:00Z'],
    ['missing', undefined],
  ])('reads a timestamp that is %s as null', (_label, timestamp) => {
    const body = example('standard', 'payment.succeeded');
    if (timestamp === undefined) delete body.timestamp;
    else body.timestamp = timestamp;
    expect(standardProvider.normalize(body, 'payment.succeeded')).toEqual(payment('succeeded', { occurredAt: null }));
  });
});

// ---------------------------------------------------------------------------------------------
// weird bodies: normalize never throws

describe('normalize on weird bodies', () => {
  const adapters: Array<[string, ProviderAdapter, string[]]> = [
    ['paymos', paymosProvider, Object.keys(exampleEvents('paymos'))],
    ['factuarea', factuareaProvider, Object.keys(exampleEvents('factuarea'))],
    ['stripe', stripeProvider, Object.keys(exampleEvents('stripe'))],
    ['standard', standardProvider, Object.keys(exampleEvents('standard'))],
  ];
  const weirdData: unknown[] = [undefined, null, 'inv_51ab77c0', 42, true, [], [{ id: 'inv_1' }], { object: null }];

  it.each(adapters)('%s: data that is not an object is ignored, for every type acted on', (_name, adapter, types) => {
    for (const type of types) {
      for (const data of weirdData) {
        const body: Body = { id: 'evt_1', event_id: 'evt_1', type, created: 1790590561, data };
        expect(adapter.normalize(body, type)).toBeNull();
      }
    }
  });

  it.each(adapters)('%s: a body that is not an object, or an empty one, is ignored', (_name, adapter, types) => {
    for (const type of types) {
      for (const body of [{}, null, undefined, [], 'x', 1]) {
        expect(adapter.normalize(body as unknown as Body, type)).toBeNull();
      }
    }
  });

  it.each(adapters)('%s: every field of the wrong JSON type reads as null, never a throw', (name, adapter, types) => {
    const strange: unknown[] = [null, 42, 1.5, true, [], {}, ['x'], { value: '49.90' }, Number.MAX_VALUE];
    for (const type of types) {
      for (const value of strange) {
        const body = example(name, type);
        // Every field but the resource id, at every level the adapters read.
        for (const target of [body, asRecord(body.data), asRecord(asRecord(body.data)?.object)]) {
          if (!target) continue;
          for (const key of Object.keys(target)) {
            if (['id', 'payment_id', 'payment_intent', 'data', 'object'].includes(key)) continue;
            target[key] = value;
          }
        }
        body.account = value;
        expect(() => adapter.normalize(body, type)).not.toThrow();
        const event = adapter.normalize(body, type);
        // A number is a valid minor amount and unix time: only the other types must read as null.
        if (event !== null && typeof value !== 'number') {
          expect(event.amount).toBeNull();
          expect(event.refundedAmount).toBeNull();
          expect(event.currency).toBeNull();
          expect(event.orderId).toBeNull();
          expect(event.occurredAt).toBeNull();
          expect(event.declaredAccount).toBeNull();
        }
      }
    }
  });

  it.each(adapters)('%s: ids and types that name Object.prototype members are ignored', (_name, adapter) => {
    for (const type of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      expect(adapter.normalize({ type, data: { object: {} } }, type)).toBeNull();
    }
  });

  it('reads a Stripe created out of Date range as no occurredAt', () => {
    const body = example('stripe', 'payment_intent.succeeded');
    body.created = 1e300;
    expect(stripeProvider.normalize(body, 'payment_intent.succeeded')?.occurredAt).toBeNull();
  });
});

function asRecord(value: unknown): Body | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Body) : undefined;
}
