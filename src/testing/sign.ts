import { createHmac } from 'node:crypto';
import { SECRET_KEY_PREFIX, secretKeyOf, signV1a, SYMMETRIC_PREFIX } from '../providers/standard-keys';
import { paypalHeaders, paypalTransmissionTime } from './paypal';

export type SigningProvider = 'paymos' | 'factuarea' | 'stripe' | 'standard' | 'paypal' | 'checkout' | 'square' | 'paddle';

export interface SignOptions {
  /** Unix seconds; default now (`checkout` signs none). */
  timestamp?: number;
  /** Event id sent in the id header (Paymos `X-Webhook-Id`, Factuarea `Factuarea-Event-Id`, Standard `webhook-id`); `checkout` sends none. */
  eventId?: string;
  /** Factuarea delivery id. */
  deliveryId?: string;
  /**
   * Extra secrets: one entry each, as senders do during a rotation (Standard Webhooks: `v1` for a
   * `whsec_`, `v1a` for a `whsk_`, so one header may carry both kinds during a move). Not for
   * `checkout`: Checkout.com sends one signature, with the key the webhook has now.
   */
  extraSecrets?: string[];
  /**
   * Square (required): the endpoint's `notificationUrl`, the URL exactly as registered on the
   * subscription, which Square signs before the body. Square signs with one key: no `extraSecrets`.
   */
  notificationUrl?: string;
  /**
   * PayPal: where the signing certificate is served (`PAYPAL-CERT-URL`; the kit's server:
   * `startPaypalCertServer().certUrl`). Required for `paypal`, whose `secret` is the endpoint's
   * `webhookId` (PayPal signs it; the key is the certificate's).
   */
  certUrl?: string;
  /** PayPal: the signing key (PEM); default the test kit's (`PAYPAL_TEST_SIGNING_KEY_PEM`). */
  privateKeyPem?: string;
  /** PayPal: `PAYPAL-TRANSMISSION-ID`, default a new UUID (`deliveryId` is taken when given). */
  transmissionId?: string;
  /** PayPal: `PAYPAL-TRANSMISSION-TIME` as sent and signed; default `timestamp` (or now) to the second. */
  transmissionTime?: string;
}

function hmac(key: Buffer, content: string, encoding: 'hex' | 'base64'): string {
  return createHmac('sha256', key).update(content).digest(encoding);
}

/**
 * One `webhook-signature` entry of Standard Webhooks: `v1` (HMAC-SHA256) for a `whsec_` key, `v1a`
 * (ed25519) for a `whsk_` secret key, whose public key (`whpk_`) the endpoint verifies with.
 */
function standardSignature(secret: string, content: string): string {
  if (secret.startsWith(SECRET_KEY_PREFIX)) return signV1a(secretKeyOf(secret), content);
  return `v1,${hmac(Buffer.from(secret.slice(SYMMETRIC_PREFIX.length), 'base64'), content, 'base64')}`;
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
    case 'paypal': {
      if (!options.certUrl) throw new Error('signedHeaders("paypal"): give options.certUrl, where the signing certificate is served');
      return paypalHeaders(secret, body, {
        certUrl: options.certUrl,
        transmissionId: options.transmissionId ?? options.deliveryId,
        transmissionTime: options.transmissionTime ?? paypalTransmissionTime(Number(t) * 1000),
        privateKeyPem: options.privateKeyPem,
      });
    }
    case 'standard': {
      const id = options.eventId ?? `msg_${Math.random().toString(36).slice(2)}`;
      const content = `${id}.${t}.${body}`;
      return {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': t,
        'webhook-signature': secrets.map((s) => standardSignature(s, content)).join(' '),
      };
    }
    case 'checkout': {
      // One `Cko-Signature`: the hex HMAC-SHA256 of the body alone, keyed with the signature key; no timestamp.
      if (secrets.length > 1) throw new Error('checkout: Checkout.com sends one signature; extraSecrets does not apply');
      return { 'content-type': 'application/json', 'cko-signature': hmac(Buffer.from(secret, 'utf8'), body, 'hex') };
    }
    case 'square': {
      if (!options.notificationUrl) throw new Error('signedHeaders("square", …) needs options.notificationUrl: Square signs the URL it posts to before the body');
      if (options.extraSecrets?.length) throw new Error('signedHeaders("square", …): Square signs a notification with one signature key; extraSecrets are not sent');
      return {
        'content-type': 'application/json',
        'x-square-hmacsha256-signature': hmac(Buffer.from(secret), `${options.notificationUrl}${body}`, 'base64'),
      };
    }
    case 'paddle': {
      // `ts=<unix>;h1=<hex>`, an HMAC-SHA256 of `<ts>:<body>` keyed with the destination's secret key;
      // one `h1` per secret (`extraSecrets`), as during a rotation.
      return {
        'content-type': 'application/json',
        'paddle-signature': [`ts=${t}`, ...secrets.map((s) => `h1=${hmac(Buffer.from(s), `${t}:${body}`, 'hex')}`)].join(';'),
      };
    }
  }
}
