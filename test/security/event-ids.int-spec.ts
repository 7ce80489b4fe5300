import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { signedHeaders } from '../../src/testing/sign';
import { AUTH, createTestApp, PLATFORMS, secretOf, TEST_ENDPOINTS, TestApp, truncateAll } from '../support/app';
import { createOrder } from '../payments/api-helpers';

/**
 * Ids are printable text. An event id, event type, resource id or declared account that holds a
 * control or format character (Unicode Cc and Cf: C0 and C1 controls, zero-width and bidirectional
 * formatting characters), a line or paragraph separator or a lone surrogate answers
 * `400 malformed_payload` on every provider, and nothing is recorded: such an id would make an
 * archive row read as something else, or (a lone surrogate, stored as U+FFFD) collide with another.
 * Printable non-ASCII ids, astral characters included, are ids like any other. The REST API's
 * stored ids follow the same rule (`400 validation_failed`).
 */

/** Endpoints of any account: there the declared account is the key, so a printable one is stored as itself. */
const ANY_ACCOUNT: EndpointDefinition[] = [
  { id: 'factuarea-any', provider: 'factuarea', secrets: ['whsec_factuarea_any'], merchantAccountIds: ['*'] },
  { id: 'stripe-any', provider: 'stripe', secrets: ['whsec_stripe_any'], merchantAccountIds: ['*'] },
  { id: 'standard-any', provider: 'standard', secrets: ['whsec_c3RhbmRhcmQtYW55LWFjY291bnQtdGVzdC1rZXk='], merchantAccountIds: ['*'] },
];

function secret(endpointId: string): string {
  const any = ANY_ACCOUNT.find((e) => e.id === endpointId);
  return any ? (any.secrets[0] as string) : secretOf(endpointId);
}

/** The characters an id must not hold, each as the JSON text of a body carries it. */
const UNPRINTABLE: Array<[string, string]> = [
  ['U+009B', '\u009b'],
  ['U+0085', '\u0085'],
  ['U+2028', '\u2028'],
  ['U+2029', '\u2029'],
  ['U+202E', '\u202e'],
  ['U+200B', '\u200b'],
  ['U+FEFF', '\ufeff'],
  ['U+0000', '\u0000'], // JSON.stringify writes it `\u0000`
  ['lone surrogate', '\ud800'], // JSON.stringify writes it `\ud800`: well-formed text on the wire
];

/**
 * What an id read from a header can hold. Node reads header bytes as Latin-1, so every character
 * of such an id is at most U+00FF: the C1 controls and U+00AD come as their own bytes; a sender's
 * U+2028, U+2029, U+202E or U+200B comes as its UTF-8 bytes, which read as C1 controls (0x80–0x9F).
 * A NUL cannot be sent in a header, a lone surrogate has no bytes, and U+FEFF's UTF-8 bytes read as
 * three printable Latin-1 letters: those cases do not exist for a header.
 */
const utf8Bytes = (c: string) => Buffer.from(c, 'utf8').toString('latin1');
const UNPRINTABLE_IN_HEADER: Array<[string, string]> = [
  ['U+009B', '\u009b'],
  ['U+0085', '\u0085'],
  ['U+00AD', '\u00ad'],
  ['U+2028 (UTF-8 bytes)', utf8Bytes('\u2028')],
  ['U+2029 (UTF-8 bytes)', utf8Bytes('\u2029')],
  ['U+202E (UTF-8 bytes)', utf8Bytes('\u202e')],
  ['U+200B (UTF-8 bytes)', utf8Bytes('\u200b')],
];

/** Printable non-ASCII ids: accepted and stored as themselves. `escaped` writes the emoji as its surrogate pair escapes. */
const PRINTABLE: Array<{ value: string; escaped?: true }> = [{ value: 'é' }, { value: '日本' }, { value: '😀' }, { value: '😀', escaped: true }];
const PRINTABLE_IN_HEADER: Array<{ value: string; escaped?: true }> = [{ value: 'é' }, { value: 'ÿ' }];

type Field = 'eventId' | 'type' | 'resource' | 'account' | 'deliveryId';

interface Delivery {
  endpoint: string;
  body: string;
  headers: Record<string, string>;
}

interface Place {
  provider: string;
  field: Field;
  /** The name the 400's detail gives the field. */
  named: string;
  /** The delivery with `value` in the field; every other id unique per `n`. */
  delivery: (value: string, n: string, opts?: { anyAccount?: boolean; escaped?: boolean }) => Delivery;
  fromHeader?: true;
  /** The column a printable value is stored in (the account: on an endpoint of any account). */
  column: string;
}

/** The body's JSON text, with an emoji written as its surrogate pair escapes when asked. */
function json(body: object, escaped?: boolean): string {
  const text = JSON.stringify(body);
  return escaped ? text.replace(/😀/g, '\\ud83d\\ude00') : text;
}

const PLACES: Place[] = [];
{
  const paymos = (f: Partial<Record<Field, string>>, n: string, escaped?: boolean): Delivery => {
    const body = json({ event_id: f.eventId ?? `evt_p${n}`, type: f.type ?? 'invoice.updated', data: { object: 'invoice', id: f.resource ?? `inv_${n}` } }, escaped);
    return { endpoint: 'paymos-a', body, headers: signedHeaders('paymos', secret('paymos-a'), body) };
  };
  PLACES.push(
    { provider: 'paymos', field: 'eventId', named: 'event_id', column: 'event_id', delivery: (v, n, o) => paymos({ eventId: `evt_${n}_${v}` }, n, o?.escaped) },
    { provider: 'paymos', field: 'type', named: 'type', column: 'event_type', delivery: (v, n, o) => paymos({ type: `invoice.${v}` }, n, o?.escaped) },
    { provider: 'paymos', field: 'resource', named: 'data.id', column: 'resource_id', delivery: (v, n, o) => paymos({ resource: `inv_${n}_${v}` }, n, o?.escaped) },
  );

  const factuarea = (f: Partial<Record<Field, string>>, n: string, o: { anyAccount?: boolean; escaped?: boolean } = {}): Delivery => {
    const endpoint = o.anyAccount ? 'factuarea-any' : 'factuarea-account';
    const body = json(
      {
        id: f.eventId ?? `evt_f${n}`,
        type: f.type ?? 'invoice.paid',
        account: { id: f.account ?? 'fa-merchant-1' },
        data: { object: { object: 'invoice', id: f.resource ?? `inv_${n}` } },
      },
      o.escaped,
    );
    return { endpoint, body, headers: signedHeaders('factuarea', secret(endpoint), body, f.deliveryId === undefined ? {} : { deliveryId: f.deliveryId }) };
  };
  PLACES.push(
    { provider: 'factuarea', field: 'eventId', named: 'id', column: 'event_id', delivery: (v, n, o) => factuarea({ eventId: `evt_${n}_${v}` }, n, o) },
    { provider: 'factuarea', field: 'type', named: 'type', column: 'event_type', delivery: (v, n, o) => factuarea({ type: `invoice.${v}` }, n, o) },
    { provider: 'factuarea', field: 'resource', named: 'data.object.id', column: 'resource_id', delivery: (v, n, o) => factuarea({ resource: `inv_${n}_${v}` }, n, o) },
    { provider: 'factuarea', field: 'account', named: 'account.id', column: 'merchant_account_id', delivery: (v, n, o) => factuarea({ account: `acc_${n}_${v}` }, n, o) },
    {
      provider: 'factuarea',
      field: 'deliveryId',
      named: 'Factuarea-Delivery-Id',
      column: 'delivery_id',
      fromHeader: true,
      delivery: (v, n, o) => factuarea({ deliveryId: `dlv_${n}_${v}` }, n, o),
    },
  );

  const stripe = (f: Partial<Record<Field, string>>, n: string, o: { anyAccount?: boolean; escaped?: boolean } = {}): Delivery => {
    const endpoint = o.anyAccount ? 'stripe-any' : 'stripe-main';
    const body = json(
      {
        id: f.eventId ?? `evt_s${n}`,
        type: f.type ?? 'payment_intent.succeeded',
        account: f.account ?? 'acct_1',
        data: { object: { object: 'payment_intent', id: f.resource ?? `pi_${n}` } },
      },
      o.escaped,
    );
    return { endpoint, body, headers: signedHeaders('stripe', secret(endpoint), body) };
  };
  PLACES.push(
    { provider: 'stripe', field: 'eventId', named: 'id', column: 'event_id', delivery: (v, n, o) => stripe({ eventId: `evt_${n}_${v}` }, n, o) },
    { provider: 'stripe', field: 'type', named: 'type', column: 'event_type', delivery: (v, n, o) => stripe({ type: `payment_intent.${v}` }, n, o) },
    { provider: 'stripe', field: 'resource', named: 'data.object.id', column: 'resource_id', delivery: (v, n, o) => stripe({ resource: `pi_${n}_${v}` }, n, o) },
    { provider: 'stripe', field: 'account', named: 'account', column: 'merchant_account_id', delivery: (v, n, o) => stripe({ account: `acct_${n}_${v}` }, n, o) },
  );

  const standard = (f: Partial<Record<Field, string>>, n: string, o: { anyAccount?: boolean; escaped?: boolean } = {}): Delivery => {
    const endpoint = o.anyAccount ? 'standard-any' : 'standard-main';
    const body = json({ type: f.type ?? 'payment.succeeded', data: { payment_id: f.resource ?? `pay_${n}`, account_id: f.account ?? 'acc_1' } }, o.escaped);
    return { endpoint, body, headers: signedHeaders('standard', secret(endpoint), body, { eventId: f.eventId ?? `msg_${n}` }) };
  };
  PLACES.push(
    {
      provider: 'standard',
      field: 'eventId',
      named: 'webhook-id',
      column: 'event_id',
      fromHeader: true,
      delivery: (v, n, o) => standard({ eventId: `msg_${n}_${v}` }, n, o),
    },
    { provider: 'standard', field: 'type', named: 'type', column: 'event_type', delivery: (v, n, o) => standard({ type: `payment.${v}` }, n, o) },
    { provider: 'standard', field: 'resource', named: 'data.payment_id', column: 'resource_id', delivery: (v, n, o) => standard({ resource: `pay_${n}_${v}` }, n, o) },
    { provider: 'standard', field: 'account', named: 'data.account_id', column: 'merchant_account_id', delivery: (v, n, o) => standard({ account: `acc_${n}_${v}` }, n, o) },
  );
}

/** A serializer that writes a Buffer body as it is (superagent types one as giving a string). */
const asIs = ((bytes: Buffer) => bytes) as unknown as (body: unknown) => string;

describe.each(PLATFORMS)('%s: ids are printable text', (platform) => {
  let t: TestApp;
  // The body as bytes, sent as they are: with a string body Node writes the headers in the body's
  // encoding (UTF-8), not as the Latin-1 bytes a header's characters stand for.
  const send = ({ endpoint, body, headers }: Delivery) =>
    request(t.app.getHttpServer())
      .post(`/webhooks/${endpoint}`)
      .set(headers)
      .serialize(asIs)
      .send(Buffer.from(body, 'utf8'));
  const rows = async () => (await t.dataSource.query(`SELECT event_id FROM webhook_inbox ORDER BY event_id`)) as Array<{ event_id: string }>;
  const count = async () => (await rows()).length;

  beforeAll(async () => {
    t = await createTestApp({ endpoints: [...TEST_ENDPOINTS, ...ANY_ACCOUNT] }, { platform });
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  describe.each(PLACES.map((p) => [`${p.provider} ${p.named}`, p] as const))('%s', (_name, place) => {
    it('holding a control or format character, a separator or a lone surrogate: 400 malformed_payload, nothing recorded', async () => {
      const cases = place.fromHeader ? UNPRINTABLE_IN_HEADER : UNPRINTABLE;
      const seen = [];
      for (const [i, [what, c]] of cases.entries()) {
        const res = await send(place.delivery(`a${c}b`, `u${i}`));
        seen.push({ what, status: res.status, body: res.body, recorded: await count() });
      }
      const detail = `${place.named} is not a printable string of at most 255 characters`;
      expect(seen).toEqual(cases.map(([what]) => ({ what, status: 400, body: { error: 'malformed_payload', detail }, recorded: 0 })));
    });

    it('printable non-ASCII text (an emoji raw or as its surrogate pair escapes): accepted, stored as itself', async () => {
      const cases = place.fromHeader ? PRINTABLE_IN_HEADER : PRINTABLE;
      // A declared account is stored where it is the key: on an endpoint of any account.
      const anyAccount = place.field === 'account';
      for (const [i, { value, escaped }] of cases.entries()) {
        const delivery = place.delivery(value, `p${i}`, { anyAccount, escaped });
        const res = await send(delivery);
        expect({ value, escaped, status: res.status, answer: res.body.status }).toEqual({ value, escaped, status: 200, answer: 'accepted' });
        const [row] = await t.dataSource.query(`SELECT ${place.column} AS v FROM webhook_inbox WHERE event_id = $1`, [res.body.eventId]);
        expect(row.v.endsWith(value)).toBe(true);
      }
      expect(await count()).toBe(cases.length);
    });
  });

  it('two ids differing only by a lone surrogate: both 400 malformed_payload, nothing recorded', async () => {
    for (const id of ['evt_lone_\\ud800', 'evt_lone_\\udbff', 'evt_lone_\\udc00x', 'evt_\\udfff']) {
      const body = `{"event_id":"${id}","type":"invoice.updated","data":{"object":"invoice","id":"inv_ids"}}`;
      const res = await send({ endpoint: 'paymos-a', body, headers: signedHeaders('paymos', secretOf('paymos-a'), body) });
      expect({ id, status: res.status, body: res.body }).toEqual({
        id,
        status: 400,
        body: { error: 'malformed_payload', detail: 'event_id is not a printable string of at most 255 characters' },
      });
    }
    expect(await rows()).toEqual([]);
  });

  it('astral-plane ids (emoji, as a surrogate pair, escaped or raw) are each their own event', async () => {
    const paymos = (idJson: string): Delivery => {
      const body = `{"event_id":"${idJson}","type":"invoice.updated","data":{"object":"invoice","id":"inv_ids"}}`;
      return { endpoint: 'paymos-a', body, headers: signedHeaders('paymos', secretOf('paymos-a'), body) };
    };
    const a = await send(paymos('evt_\\ud83d\\ude00'));
    expect([a.status, a.body]).toEqual([200, { status: 'accepted', eventId: 'evt_😀' }]);
    const b = await send(paymos('evt_😁'));
    expect([b.status, b.body]).toEqual([200, { status: 'accepted', eventId: 'evt_😁' }]);
    const again = await send(paymos('evt_😀'));
    expect(again.body).toEqual({ status: 'duplicate', eventId: 'evt_😀' });
    expect((await rows()).map((r) => r.event_id).sort()).toEqual(['evt_😀', 'evt_😁'].sort());
  });

  describe('REST: a payment registration stores printable ids only', () => {
    const register = (orderId: string, body: object) =>
      request(t.app.getHttpServer()).post(`/orders/${orderId}/payments`).set(AUTH).set('content-type', 'application/json').send(JSON.stringify(body));
    const payments = async () => Number((await t.dataSource.query(`SELECT count(*)::int AS n FROM payments`))[0].n);

    it.each([
      ['providerPaymentId', 'U+009B', { providerPaymentId: 'pi_\u009b1' }],
      ['providerPaymentId', 'U+2028', { providerPaymentId: 'pi_\u20281' }],
      ['providerPaymentId', 'U+202E', { providerPaymentId: 'pi_\u202e1' }],
      ['providerPaymentId', 'U+FEFF', { providerPaymentId: 'pi_\ufeff1' }],
      ['merchantAccountId', 'U+200B', { providerPaymentId: 'pi_1', merchantAccountId: 'acc_\u200b1' }],
      ['merchantAccountId', 'U+0085', { providerPaymentId: 'pi_1', merchantAccountId: 'acc_\u00851' }],
    ])('%s holding %s: 400 validation_failed naming the field, nothing written', async (field, _what, ids) => {
      const order = await createOrder(t);
      const res = await register(order.id, { provider: 'paymos', ...ids });
      expect([res.status, res.body]).toEqual([
        400,
        { error: 'validation_failed', details: [{ field, message: `${field} must be printable text of at most 255 characters` }] },
      ]);
      expect(await payments()).toBe(0);
    });

    it('a NUL or a lone surrogate: 400 validation_failed naming the field', async () => {
      const order = await createOrder(t);
      for (const text of ['{"provider":"paymos","providerPaymentId":"pi_\\u0000"}', '{"provider":"paymos","providerPaymentId":"pi_\\ud800"}']) {
        const res = await request(t.app.getHttpServer()).post(`/orders/${order.id}/payments`).set(AUTH).set('content-type', 'application/json').send(text);
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('validation_failed');
        expect(res.body.details.map((d: { field: string }) => d.field)).toEqual(['providerPaymentId']);
      }
      expect(await payments()).toBe(0);
    });

    it('printable non-ASCII ids are registered as themselves', async () => {
      const order = await createOrder(t);
      const res = await register(order.id, { provider: 'paymos', providerPaymentId: 'inv_日本_😀', merchantAccountId: 'acc_1' });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ providerPaymentId: 'inv_日本_😀', merchantAccountId: 'acc_1' });
    });
  });
});
