import { createHmac } from 'node:crypto';

export type SigningProvider = 'paymos' | 'factuarea' | 'stripe' | 'standard';

export interface SignOptions {
  /** Unix seconds; default now. */
  timestamp?: number;
  /** Event id sent in the id header (Paymos `X-Webhook-Id`, Factuarea `Factuarea-Event-Id`, Standard `webhook-id`). */
  eventId?: string;
  /** Factuarea delivery id. */
  deliveryId?: string;
  /** Extra secrets: one `v1` entry each, as senders do during a rotation. */
  extraSecrets?: string[];
}

function hmac(key: Buffer, content: string, encoding: 'hex' | 'base64'): string {
  return createHmac('sha256', key).update(content).digest(encoding);
}

/**
 * Headers a provider would send with `body`: what the tests, the benchmark and
 * a demo use to play the sender.
 */
export function signedHeaders(
  provider: SigningProvider,
  secret: string,
  body: string,
  options: SignOptions = {},
): Record<string, string> {
  const t = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const secrets = [secret, ...(options.extraSecrets ?? [])];
  switch (provider) {
    case 'paymos': {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'x-webhook-timestamp': t,
        'x-webhook-signature': secrets.map((s) => `v1=${hmac(Buffer.from(s), `${t}.${body}`, 'hex')}`).join(','),
      };
      if (options.eventId) headers['x-webhook-id'] = options.eventId;
      return headers;
    }
    case 'factuarea':
    case 'stripe': {
      const name = provider === 'stripe' ? 'stripe-signature' : 'factuarea-signature';
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        [name]: [`t=${t}`, ...secrets.map((s) => `v1=${hmac(Buffer.from(s), `${t}.${body}`, 'hex')}`)].join(','),
      };
      if (provider === 'factuarea' && options.eventId) {
        headers['factuarea-event-id'] = options.eventId;
        headers['idempotency-key'] = options.eventId;
      }
      if (provider === 'factuarea' && options.deliveryId) headers['factuarea-delivery-id'] = options.deliveryId;
      return headers;
    }
    case 'standard': {
      const id = options.eventId ?? `msg_${Math.random().toString(36).slice(2)}`;
      const key = (s: string) => Buffer.from(s.slice('whsec_'.length), 'base64');
      return {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': t,
        'webhook-signature': secrets.map((s) => `v1,${hmac(key(s), `${id}.${t}.${body}`, 'base64')}`).join(' '),
      };
    }
  }
}
