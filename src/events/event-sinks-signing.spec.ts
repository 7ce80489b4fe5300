import * as noble from '@noble/ed25519';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { PaymentWebhooksEvent } from '../common/host-events';
import type { ResolvedOptions } from '../config/options';
import { MetricsService } from '../observability/metrics.service';
import { standardProvider } from '../providers/standard.provider';
import { generateV1aKeyPair } from '../providers/standard-keys';
import { receiveWith } from '../testing/receive';
import { EventSinks } from './event-sinks';

/**
 * How a sink's deliveries are signed (docs/events.md#over-http): a `whsec_` secret signs `v1`
 * (HMAC-SHA256, what the `standardwebhooks` package verifies), a `whsk_` private key signs `v1a`
 * (ed25519), which a receiver verifies with the matching `whpk_`: here the module's own standard
 * adapter and an independent ed25519 implementation.
 */
describe('EventSinks: v1 with a whsec_, v1a with a whsk_', () => {
  let server: Server;
  let url: string;
  const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));
  beforeEach(() => (received.length = 0));

  const event = {
    id: '01900000-0000-7000-8000-0000000000a1',
    type: 'order.paid',
    occurredAt: '2026-12-01T10:00:00.123Z',
    data: { order: { id: 'ord_1', merchantAccountId: 'acc_1' }, payment: null, sourceEventId: null },
  } as unknown as PaymentWebhooksEvent;

  async function deliverWith(secret: string) {
    const options = { eventSinks: [{ name: 'crm', url: `${url}/hooks`, secret, types: '*', timeoutMs: 5_000 }] } as unknown as ResolvedOptions;
    const sinks = new EventSinks(options, new MetricsService(undefined as never));
    await expect(sinks.deliver(sinks.get('crm')!, event)).resolves.toEqual({ kind: 'done' });
    expect(received).toHaveLength(1);
    return received[0];
  }

  it('a whsk_ sink signs v1a: the whpk_ verifies it, through the standard adapter and with @noble/ed25519', async () => {
    const { secretKey, publicKey } = generateV1aKeyPair();
    const { headers, body } = await deliverWith(secretKey);
    expect(headers['webhook-id']).toBe(event.id);
    expect(headers['webhook-signature']).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    expect(body).toBe(JSON.stringify(event));

    const signature = Buffer.from(String(headers['webhook-signature']).slice('v1a,'.length), 'base64');
    const content = Buffer.from(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`, 'utf8');
    expect(await noble.verifyAsync(signature, content, Buffer.from(publicKey.slice('whpk_'.length), 'base64'))).toBe(true);

    const nowMs = Number(headers['webhook-timestamp']) * 1000;
    const asStandard = { headers: headers as Record<string, string>, body };
    // The event body declares no `type` the adapter knows as a payment event, but it is authentic.
    await expect(receiveWith(standardProvider, asStandard, { endpoint: { secrets: [publicKey] }, nowMs })).resolves.toMatchObject({ ok: true, secretIndex: 0 });
    await expect(receiveWith(standardProvider, asStandard, { endpoint: { secrets: [generateV1aKeyPair().publicKey] }, nowMs })).resolves.toEqual({
      ok: false,
      error: 'invalid_signature',
    });
    // A receiver that only knows v1 finds no signature of its kind.
    expect(() => new Webhook(`whsec_${Buffer.from('any-symmetric-key-0001').toString('base64')}`).verify(body, headers as Record<string, string>)).toThrow();
  });

  it('a whsec_ sink still signs v1, as the standardwebhooks package does', async () => {
    const secret = `whsec_${Buffer.from('sink-secret-0123456789').toString('base64')}`;
    const { headers, body } = await deliverWith(secret);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, headers as Record<string, string>)).toEqual(event);
  });
});
