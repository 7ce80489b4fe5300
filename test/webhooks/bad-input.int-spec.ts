import { createHmac } from 'node:crypto';
import request from 'supertest';
import { signedHeaders } from '../../src/testing/sign';
import { createTestApp, PLATFORMS, secretOf, TestApp, truncateAll } from '../support/app';
import { signatureVectors } from '../support/fixtures';

const MAX_BODY = 4_096;
const paymosSecret = secretOf('paymos-a');

function paymosBody(eventId: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ event_id: eventId, type: 'invoice.paid', data: { id: 'inv_1' }, ...extra });
}

/** A body of exactly `size` bytes (the padding sits in a field the service ignores). */
function paymosBodyOfSize(eventId: string, size: number): string {
  const base = paymosBody(eventId, { pad: '' });
  return paymosBody(eventId, { pad: 'x'.repeat(size - Buffer.byteLength(base)) });
}

interface Case {
  name: string;
  endpoint: string;
  body: string;
  headers: Record<string, string>;
  status: number;
  answer: Record<string, unknown>;
}

function cases(now: number): Case[] {
  const body = paymosBody('evt_bad');
  const good = signedHeaders('paymos', paymosSecret, body, { timestamp: now, eventId: 'evt_bad' });
  const vectors = signatureVectors();
  const reserialised = vectors.find((v) => v.case.startsWith('body parsed and serialised again'))!;
  const notJson = 'this is not json';
  const noId = JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_1' } });
  const factuareaBody = JSON.stringify({ id: 'evt-fa-1', type: 'invoice.paid', data: { object: { id: 'in_1' } } });
  const signedFa = (headers: Record<string, string> = {}) => ({
    ...signedHeaders('factuarea', secretOf('factuarea-company'), factuareaBody, { timestamp: now }),
    ...headers,
  });
  return [
    { name: 'unknown endpoint', endpoint: 'nope', body, headers: good, status: 404, answer: { error: 'unknown_endpoint' } },
    { name: 'no endpoint id (/webhooks/)', endpoint: '', body, headers: good, status: 404, answer: { error: 'unknown_endpoint' } },
    { name: 'a path below an endpoint', endpoint: 'paymos-a/extra', body, headers: good, status: 404, answer: { error: 'unknown_endpoint' } },
    // Longer than Fastify's default maxParamLength (100), which would answer its own 414.
    { name: 'an endpoint id of 300 characters', endpoint: 'a'.repeat(300), body, headers: good, status: 404, answer: { error: 'unknown_endpoint' } },
    {
      name: 'body over the limit',
      endpoint: 'paymos-a',
      body: paymosBodyOfSize('evt_big', MAX_BODY + 1),
      headers: signedHeaders('paymos', paymosSecret, paymosBodyOfSize('evt_big', MAX_BODY + 1), { timestamp: now }),
      status: 413,
      answer: { error: 'payload_too_large' },
    },
    {
      name: 'signature header absent',
      endpoint: 'paymos-a',
      body,
      headers: { 'content-type': 'application/json', 'x-webhook-timestamp': String(now) },
      status: 401,
      answer: { error: 'missing_signature' },
    },
    {
      name: 'signature header unparseable',
      endpoint: 'paymos-a',
      body,
      headers: { ...good, 'x-webhook-signature': 'garbage' },
      status: 401,
      answer: { error: 'missing_signature' },
    },
    {
      name: 'signed timestamp absent',
      endpoint: 'paymos-a',
      body,
      headers: { 'content-type': 'application/json', 'x-webhook-signature': good['x-webhook-signature'] },
      status: 401,
      answer: { error: 'missing_signature' },
    },
    {
      name: 'Factuarea header without t=',
      endpoint: 'factuarea-company',
      body: factuareaBody,
      headers: signedFa({ 'factuarea-signature': signedFa()['factuarea-signature'].replace(/^t=\d+,/, '') }),
      status: 401,
      answer: { error: 'missing_signature' },
    },
    {
      name: 'Standard Webhooks without webhook-id',
      endpoint: 'standard-main',
      body,
      headers: (() => {
        const h = signedHeaders('standard', secretOf('standard-main'), body, { timestamp: now });
        delete h['webhook-id'];
        return h;
      })(),
      status: 401,
      answer: { error: 'missing_signature' },
    },
    {
      name: 'wrong signature',
      endpoint: 'paymos-a',
      body,
      headers: signedHeaders('paymos', 'not-the-secret', body, { timestamp: now }),
      status: 401,
      answer: { error: 'invalid_signature' },
    },
    {
      name: 'a header with no v1 entry',
      endpoint: 'paymos-a',
      body,
      headers: { ...good, 'x-webhook-signature': good['x-webhook-signature'].replace('v1=', 'v0=') },
      status: 401,
      answer: { error: 'invalid_signature' },
    },
    {
      name: 'a body parsed and serialised again',
      endpoint: 'paymos-a',
      body: reserialised.body,
      headers: { ...reserialised.headers, 'X-Webhook-Timestamp': String(now) },
      status: 401,
      answer: { error: 'invalid_signature' },
    },
    {
      name: 'a stale timestamp',
      endpoint: 'paymos-a',
      body,
      headers: signedHeaders('paymos', paymosSecret, body, { timestamp: now - 301 }),
      status: 401,
      answer: { error: 'timestamp_out_of_tolerance' },
    },
    {
      name: 'a timestamp in milliseconds (signed as sent)',
      endpoint: 'paymos-a',
      body,
      headers: signedHeaders('paymos', paymosSecret, body, { timestamp: now * 1000 }),
      status: 401,
      answer: { error: 'timestamp_out_of_tolerance' },
    },
    {
      name: 'a future timestamp',
      endpoint: 'paymos-a',
      body,
      headers: signedHeaders('paymos', paymosSecret, body, { timestamp: now + 301 }),
      status: 401,
      answer: { error: 'timestamp_out_of_tolerance' },
    },
    {
      name: 'authentic, not JSON',
      endpoint: 'paymos-a',
      body: notJson,
      headers: signedHeaders('paymos', paymosSecret, notJson, { timestamp: now }),
      status: 400,
      answer: { error: 'malformed_payload', detail: 'the body is not JSON' },
    },
    {
      name: 'authentic JSON that is not an object',
      endpoint: 'paymos-a',
      body: '[1,2]',
      headers: signedHeaders('paymos', paymosSecret, '[1,2]', { timestamp: now }),
      status: 400,
      answer: { error: 'malformed_payload', detail: 'the body is not a JSON object' },
    },
    {
      name: 'authentic, no event id',
      endpoint: 'paymos-a',
      body: noId,
      headers: signedHeaders('paymos', paymosSecret, noId, { timestamp: now }),
      status: 400,
      answer: { error: 'malformed_payload', detail: 'event_id is missing' },
    },
    {
      name: 'X-Webhook-Id different from the body id',
      endpoint: 'paymos-a',
      body,
      headers: signedHeaders('paymos', paymosSecret, body, { timestamp: now, eventId: 'evt_other' }),
      status: 400,
      answer: { error: 'malformed_payload', detail: "x-webhook-id header does not match the body's event id" },
    },
    {
      name: 'Factuarea-Event-Id different from the body id',
      endpoint: 'factuarea-company',
      body: factuareaBody,
      headers: signedFa({ 'factuarea-event-id': 'evt-fa-other' }),
      status: 400,
      answer: { error: 'malformed_payload', detail: "factuarea-event-id header does not match the body's event id" },
    },
    {
      name: 'Idempotency-Key different from the body id',
      endpoint: 'factuarea-company',
      body: factuareaBody,
      headers: signedFa({ 'idempotency-key': 'evt-fa-other' }),
      status: 400,
      answer: { error: 'malformed_payload', detail: "idempotency-key header does not match the body's event id" },
    },
    {
      name: 'an event id with a NUL character',
      endpoint: 'paymos-a',
      body: paymosBody('evt\u0000nul'),
      headers: signedHeaders('paymos', paymosSecret, paymosBody('evt\u0000nul'), { timestamp: now }),
      status: 400,
      answer: { error: 'malformed_payload', detail: 'event_id is not a printable string of at most 255 characters' },
    },
  ];
}

describe.each(PLATFORMS)('%s: bad input on the receive path: a clear answer, no row, never 5xx', (platform) => {
  let t: TestApp;
  const now = Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    t = await createTestApp({ webhookMaxBodyBytes: MAX_BODY }, { platform });
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    t.clock.setSeconds(now);
    await truncateAll(t.dataSource);
  });

  it.each(cases(now).map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const res = await request(t.app.getHttpServer()).post(`/webhooks/${c.endpoint}`).set(c.headers).send(c.body);
    expect(res.status).toBe(c.status);
    expect(res.body).toEqual(c.answer);
    const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM webhook_inbox`);
    expect(n).toBe(0);
  });

  it('authentic bytes that are not UTF-8: 400 malformed_payload, no row', async () => {
    const bytes = Buffer.concat([Buffer.from('{"event_id":"evt_latin1","type":"invoice.paid","data":{"id":"inv_1","note":"'), Buffer.from([0xe9]), Buffer.from('"}}')]);
    // Signed over the very bytes sent (the signing helper takes text, which these bytes are not).
    const signature = createHmac('sha256', paymosSecret).update(Buffer.concat([Buffer.from(`${now}.`), bytes])).digest('hex');
    const headers = { 'content-type': 'application/octet-stream', 'x-webhook-timestamp': String(now), 'x-webhook-signature': `v1=${signature}` };
    const res = await request(t.app.getHttpServer()).post('/webhooks/paymos-a').set(headers).send(bytes);
    expect(res.body).toEqual({ error: 'malformed_payload', detail: 'the body is not valid UTF-8' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'malformed_payload', detail: 'the body is not valid UTF-8' });
    const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM webhook_inbox`);
    expect(n).toBe(0);
  });

  it('POST /webhooks with no endpoint segment: 404 unknown_endpoint, no row', async () => {
    const res = await request(t.app.getHttpServer()).post('/webhooks').set(signedHeaders('paymos', paymosSecret, '{}', { timestamp: now })).send('{}');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'unknown_endpoint' });
    const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM webhook_inbox`);
    expect(n).toBe(0);
  });

  it('accepts a body of exactly the limit', async () => {
    const body = paymosBodyOfSize('evt_exact', MAX_BODY);
    expect(Buffer.byteLength(body)).toBe(MAX_BODY);
    const res = await request(t.app.getHttpServer())
      .post('/webhooks/paymos-a')
      .set(signedHeaders('paymos', paymosSecret, body, { timestamp: now }))
      .send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'evt_exact' });
  });

  it('answers 413 for an over-size chunked body (no Content-Length) and writes nothing', async () => {
    const body = paymosBodyOfSize('evt_chunked', MAX_BODY * 4);
    const address = t.app.getHttpServer().listening ? t.app.getHttpServer().address() : null;
    const server = address ? t.app.getHttpServer() : await new Promise<import('node:http').Server>((resolve) => {
      const s = t.app.getHttpServer().listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const port = (server.address() as import('node:net').AddressInfo).port;
      // A stream body makes fetch send Transfer-Encoding: chunked.
      const stream = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(body));
          controller.close();
        },
      });
      const res = await fetch(`http://127.0.0.1:${port}/webhooks/paymos-a`, {
        method: 'POST',
        headers: signedHeaders('paymos', paymosSecret, body, { timestamp: now }),
        body: stream,
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({ error: 'payload_too_large' });
    } finally {
      if (!address) await new Promise((r) => server.close(r));
    }
    const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM webhook_inbox`);
    expect(n).toBe(0);
  });
});
