import { readFileSync } from 'node:fs';
import { verify } from 'node:crypto';
import { crc32 } from '../common/crc32';
import { ID_MAX_LENGTH, isPrintableId } from '../common/printable';
import type { ProviderEvent, ProviderEventKind } from '../common/provider-event';
import {
  CertificateFetcher,
  CertificateLimits,
  CertificateTrust,
  DEFAULT_CERT_HOSTS,
  DEFAULT_CERTIFICATE_LIMITS,
  PaypalCertificates,
  bundleTrust,
  systemCertificateTrust,
} from './paypal-certificates';
import {
  asObject,
  decimal,
  header,
  optionalId,
  ProviderAdapter,
  ProviderEndpoint,
  RawDelivery,
  readJsonObject,
  ReceiveContext,
  ReceivedEvent,
  ReceiveResult,
  requireId,
  text,
} from './provider';

/** The only algorithm PayPal signs with (`PAYPAL-AUTH-ALGO`). */
const AUTH_ALGO = 'SHA256withRSA';

/** The headers of a PayPal delivery, lower case. */
const H = {
  id: 'paypal-transmission-id',
  time: 'paypal-transmission-time',
  sig: 'paypal-transmission-sig',
  certUrl: 'paypal-cert-url',
  algo: 'paypal-auth-algo',
} as const;

/** Standard base64 (PayPal's RSA-2048 signatures are 344 characters; anything far longer is not one). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MAX_SIGNATURE_CHARS = 1_400;
/** An ISO 8601 instant with its zone (PayPal sends `2024-08-02T19:35:04Z`), signed as sent. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})$/;
/** A host, or a host and port, as `certHosts` lists it. */
const CERT_HOST = /^[a-z0-9.-]+(?::\d{1,5})?$|^\[[0-9a-f:.]+\](?::\d{1,5})?$/;

/** Where a link of a capture or a refund points: its last path segment is the id. */
const ORDER_LINK = /\/v2\/checkout\/orders\/([^/?#]+)$/;
const CAPTURE_LINK = /\/v2\/payments\/captures\/([^/?#]+)$/;

/** PayPal's event types and what each moves the payment to (docs/webhooks.md#paypal). */
const KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['CHECKOUT.ORDER.APPROVED', 'authorized'],
  ['PAYMENT.AUTHORIZATION.CREATED', 'authorized'],
  ['PAYMENT.AUTHORIZATION.VOIDED', 'canceled'],
  ['PAYMENT.CAPTURE.PENDING', 'processing'],
  ['PAYMENT.CAPTURE.COMPLETED', 'succeeded'],
  ['PAYMENT.CAPTURE.DENIED', 'failed'],
  ['PAYMENT.CAPTURE.DECLINED', 'failed'],
  ['PAYMENT.CAPTURE.REFUNDED', 'refunded'],
  // Refunds what is left of the capture: a cancel of a captured payment becomes that refund.
  ['PAYMENT.CAPTURE.REVERSED', 'canceled'],
  ['CUSTOMER.DISPUTE.CREATED', 'disputed'],
  ['CUSTOMER.DISPUTE.RESOLVED', 'dispute_lost'],
]);

/** Types whose resource is a refund of a capture, and disputes: both name the capture, not the payment. */
const REFUNDS: ReadonlySet<string> = new Set(['PAYMENT.CAPTURE.REFUNDED', 'PAYMENT.CAPTURE.REVERSED']);
const isDispute = (type: string) => type.startsWith('CUSTOMER.DISPUTE.');
const isOrder = (type: string) => type.startsWith('CHECKOUT.ORDER.');

/**
 * Dispute outcomes after which the merchant keeps the money: a dispute won. Every other outcome
 * (decided for the buyer, accepted by the seller, denied…) is a dispute lost.
 */
const KEPT_BY_SELLER: ReadonlySet<string> = new Set(['RESOLVED_SELLER_FAVOUR', 'CANCELED_BY_BUYER', 'RESOLVED_WITH_PAYOUT']);

/** The endpoint fields of a paypal endpoint, beside the common ones. */
const FIELDS = ['webhookId', 'certHosts', 'caFile', 'caPem', 'clientId', 'clientSecret'] as const;

/** How a `paypal` adapter checks certificates; every option is for tests and hosts with unusual needs. */
export interface PaypalProviderOptions {
  /** Fetches a certificate URL (default: Node's `https`, no redirect, 16 KiB at most). */
  fetchCertificate?: CertificateFetcher;
  /** Bounds on fetches and the cache (docs/security.md#paypals-certificate). */
  limits?: Partial<CertificateLimits>;
}

/** An endpoint's settings as the adapter uses them, worked out once per endpoint. */
interface PaypalSettings {
  webhookId: string;
  certHosts: readonly string[];
  trust: CertificateTrust;
}

/** The links of a resource with `rel`, their `href`s. */
function linkHrefs(resource: Record<string, unknown>, rel: string): string[] {
  const links = resource.links;
  if (!Array.isArray(links)) return [];
  return links.flatMap((link) => {
    const entry = asObject(link);
    return entry?.rel === rel && typeof entry.href === 'string' ? [entry.href] : [];
  });
}

/** The id a link of `rel` names at a path of `shape`, else null. */
function linkedId(resource: Record<string, unknown>, rel: string, shape: RegExp): string | null {
  for (const href of linkHrefs(resource, rel)) {
    const match = shape.exec(href);
    if (match) return decodeURIComponentSafe(match[1]);
  }
  return null;
}

function decodeURIComponentSafe(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** The capture a refund refunds (its `up` link), or the capture a dispute is about. */
function captureNamed(resource: Record<string, unknown>, eventType: string): unknown {
  if (isDispute(eventType)) return asObject(firstOf(resource.disputed_transactions))?.seller_transaction_id;
  return linkedId(resource, 'up', CAPTURE_LINK);
}

/**
 * The PayPal order an authorization or a capture belongs to: `supplementary_data.related_ids.order_id`,
 * else its `up` link when that points at the order (PayPal's simulator sends captures without
 * `supplementary_data`).
 */
function orderOfPayment(resource: Record<string, unknown>): unknown {
  return asObject(asObject(resource.supplementary_data)?.related_ids)?.order_id ?? linkedId(resource, 'up', ORDER_LINK);
}

function firstOf(value: unknown): unknown {
  return Array.isArray(value) ? value[0] : undefined;
}

/**
 * The resource id of an event, as a string to check, or undefined when the event names none: the
 * PayPal order for orders, authorizations and captures; the capture for refunds and disputes (their
 * payment is found through it when processed); a resource of any other type keeps its own id.
 */
function resourceNamed(resource: Record<string, unknown> | undefined, eventType: string): unknown {
  if (!resource) return undefined;
  if (isOrder(eventType)) return resource.id;
  if (REFUNDS.has(eventType) || isDispute(eventType)) return captureNamed(resource, eventType);
  if (eventType.startsWith('PAYMENT.AUTHORIZATION.') || eventType.startsWith('PAYMENT.CAPTURE.')) return orderOfPayment(resource);
  return resource.id;
}

function isoDate(value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** The signed headers of a delivery, or null when one is absent or unparseable (`missing_signature`). */
function signedHeaders(delivery: RawDelivery): { id: string; time: string; timeMs: number; signature: Buffer; certUrl: string } | null {
  const id = header(delivery.headers, H.id);
  const time = header(delivery.headers, H.time);
  const sig = header(delivery.headers, H.sig);
  const certUrl = header(delivery.headers, H.certUrl);
  const algo = header(delivery.headers, H.algo);
  if (!id || !time || !sig || !certUrl || algo !== AUTH_ALGO) return null;
  if (!isPrintableId(id, ID_MAX_LENGTH) || !ISO_INSTANT.test(time)) return null;
  const timeMs = Date.parse(time);
  if (!Number.isFinite(timeMs)) return null;
  if (sig.length > MAX_SIGNATURE_CHARS || !BASE64.test(sig)) return null;
  return { id, time, timeMs, signature: Buffer.from(sig, 'base64'), certUrl };
}

/** The certificate URL as the endpoint allows it: `https:`, no credentials, its host (and port) listed; else null. */
export function allowedCertUrl(value: string, certHosts: readonly string[]): URL | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' || url.username !== '' || url.password !== '') return null;
  return certHosts.includes(url.host.toLowerCase()) ? url : null;
}

/** `certHosts` as configured, lower case; null when it is not a non-empty list of hosts. */
function certHostsOf(value: unknown): string[] | null {
  if (value === undefined) return [...DEFAULT_CERT_HOSTS];
  if (!Array.isArray(value) || value.length === 0) return null;
  const hosts = value.map((h) => (typeof h === 'string' ? h.toLowerCase() : ''));
  return hosts.every((h) => CERT_HOST.test(h)) ? hosts : null;
}

/**
 * PayPal (docs/webhooks.md#paypal): each delivery is signed with RSA-SHA256 over
 * `<transmission id>|<transmission time>|<webhookId>|<CRC32 of the raw body>` by the key of a
 * certificate PayPal serves at `PAYPAL-CERT-URL`. The certificate is fetched only from the
 * endpoint's `certHosts` over HTTPS, checked (chained to a trusted CA, valid now, issued to PayPal's
 * signing name) and cached per URL; what fetching it may cost is bounded per endpoint and per
 * sender address (docs/security.md#paypals-certificate).
 *
 * Refunds and disputes name the capture, not the order: their events are about that capture's
 * payment, which the module remembers when a capture event is processed (`ProviderEvent.captureId`,
 * `resourceKind: 'capture'`).
 */
export function createPaypalProvider(options: PaypalProviderOptions = {}): ProviderAdapter {
  const limits: CertificateLimits = { ...DEFAULT_CERTIFICATE_LIMITS, ...options.limits, sender: { ...DEFAULT_CERTIFICATE_LIMITS.sender, ...options.limits?.sender } };
  const certificates = new PaypalCertificates(limits, options.fetchCertificate);
  const settingsByEndpoint = new WeakMap<ProviderEndpoint, PaypalSettings>();

  /** The CA bundle an endpoint names, as PEM: `caPem` itself, or the file `caFile` names. */
  function caBundle(settings: Readonly<Record<string, unknown>>): { pem: string; key: string } | null {
    if (typeof settings.caPem === 'string') return { pem: settings.caPem, key: `pem:${settings.caPem}` };
    if (typeof settings.caFile === 'string') return { pem: readFileSync(settings.caFile, 'latin1'), key: `file:${settings.caFile}` };
    return null;
  }

  function settingsOf(endpoint: ProviderEndpoint): PaypalSettings {
    let settings = settingsByEndpoint.get(endpoint);
    if (settings) return settings;
    const s = endpoint.settings;
    const bundle = caBundle(s);
    settings = {
      webhookId: String(s.webhookId),
      certHosts: certHostsOf(s.certHosts) ?? [],
      trust: bundle ? bundleTrust(bundle.pem, bundle.key) : systemCertificateTrust(),
    };
    settingsByEndpoint.set(endpoint, settings);
    return settings;
  }

  function identify(body: Record<string, unknown>, text: string, transmissionId: string): ReceivedEvent {
    const eventType = requireId(body.event_type, 'event_type');
    const resource = asObject(body.resource);
    return {
      eventId: requireId(body.id, 'id'),
      eventType,
      resourceId: optionalId(resourceNamed(resource, eventType), 'the resource id'),
      deliveryId: transmissionId,
      account: optionalId(asObject(resource?.payee)?.merchant_id, 'resource.payee.merchant_id'),
      apiVersion: null,
      body: text,
    };
  }

  return {
    name: 'paypal',
    storedHeaders: [H.id, H.time, H.certUrl, H.algo, H.sig, 'paypal-auth-version'],
    signatureHeaders: [H.sig],
    // `resource.payee.merchant_id`, when a capture or an authorization carries it.
    declaresAccount: true,
    // The key is PayPal's certificate's, fetched per delivery: an endpoint has no secret.
    secrets: 'none',
    endpointFields: FIELDS,
    // The REST API the module will call with the OAuth client credentials (payment commands, polling).
    usesApi: { defaultBaseUrl: 'https://api-m.paypal.com' },

    checkEndpoint({ apiKey, apiBaseUrl, settings }): string | null {
      if (apiKey !== undefined) return '"apiKey" is not for paypal endpoints: give "clientId" and "clientSecret" (the REST app\'s OAuth client credentials)';
      const { webhookId, certHosts, caFile, caPem, clientId, clientSecret } = settings;
      if (typeof webhookId !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(webhookId)) {
        return '"webhookId" is required: the id PayPal shows for the webhook (letters, digits, - and _)';
      }
      if (certHostsOf(certHosts) === null) return '"certHosts" must be a non-empty list of hosts (with a port where one is used), such as ["api.paypal.com"]';
      if (caFile !== undefined && caPem !== undefined) return 'give "caFile" or "caPem", not both';
      if (caFile !== undefined && (typeof caFile !== 'string' || caFile === '')) return '"caFile" must be the path of a PEM bundle';
      if (caPem !== undefined && typeof caPem !== 'string') return '"caPem" must be a PEM bundle (text)';
      if (caFile !== undefined || caPem !== undefined) {
        try {
          bundleTrust(caPem !== undefined ? (caPem as string) : readFileSync(caFile as string, 'latin1'), 'check');
        } catch (err) {
          const why = (err as NodeJS.ErrnoException).code ? `cannot be read (${(err as NodeJS.ErrnoException).code})` : (err as Error).message;
          return caPem !== undefined ? `"caPem" ${why}` : `"caFile" ${why}`;
        }
      }
      if ((clientId === undefined) !== (clientSecret === undefined)) return '"clientId" and "clientSecret" go together (the REST app\'s OAuth client credentials)';
      if (clientId !== undefined && (typeof clientId !== 'string' || clientId === '')) return '"clientId" must be a non-empty string';
      if (clientSecret !== undefined && (typeof clientSecret !== 'string' || clientSecret === '')) return '"clientSecret" must be a non-empty string';
      if (apiBaseUrl !== undefined && !apiBaseUrl.startsWith('https://')) return '"apiBaseUrl" must be an https URL';
      return null;
    },

    prepareKey(): object {
      throw new Error('paypal endpoints have no secrets: deliveries are verified with the certificate PayPal serves');
    },

    async receive(delivery: RawDelivery, context: ReceiveContext): Promise<ReceiveResult> {
      const signed = signedHeaders(delivery);
      if (!signed) return { ok: false, error: 'missing_signature' };
      const settings = settingsOf(context.endpoint);
      const url = allowedCertUrl(signed.certUrl, settings.certHosts);
      if (!url) return { ok: false, error: 'invalid_signature' };
      const certificate = await certificates.keyFor(url, settings.trust, { endpoint: context.endpoint, sender: context.sender, nowMs: context.nowMs });
      if (!certificate.ok) {
        if (certificate.error === 'unavailable') throw new Error(`PayPal's certificate could not be had: ${certificate.reason}`);
        return { ok: false, error: certificate.error };
      }
      const content = `${signed.id}|${signed.time}|${settings.webhookId}|${crc32(delivery.body)}`;
      if (!verify('sha256', Buffer.from(content), certificate.publicKey, signed.signature)) return { ok: false, error: 'invalid_signature' };
      if (context.toleranceSeconds > 0 && Math.abs(context.nowMs - signed.timeMs) > context.toleranceSeconds * 1000) {
        return { ok: false, error: 'timestamp_out_of_tolerance' };
      }
      const { text: bodyText, body } = readJsonObject(delivery.body);
      return { ok: true, secretIndex: null, events: [identify(body, bodyText, signed.id)] };
    },

    normalize(body, eventType): ProviderEvent | null {
      const baseKind = KINDS.get(eventType);
      const resource = asObject(body.resource);
      if (baseKind === undefined || !resource) return null;
      const resourceId = text(resourceNamed(resource, eventType));
      if (resourceId === null) return null;
      const occurredAt = isoDate(resource.update_time) ?? isoDate(resource.create_time) ?? isoDate(body.create_time);
      const declaredAccount = text(asObject(resource.payee)?.merchant_id);
      if (REFUNDS.has(eventType) || isDispute(eventType)) {
        const money = asObject(isDispute(eventType) ? resource.dispute_amount : resource.amount);
        const refundId = text(resource.id);
        const outcome = text(asObject(resource.dispute_outcome)?.outcome_code);
        const kind = eventType === 'CUSTOMER.DISPUTE.RESOLVED' && outcome !== null && KEPT_BY_SELLER.has(outcome) ? 'dispute_won' : baseKind;
        const value = decimal(money?.value);
        if (REFUNDS.has(eventType) && (refundId === null || value === null)) return null;
        return {
          kind,
          resourceId,
          resourceKind: 'capture',
          orderId: null,
          amount: null,
          currency: text(money?.currency_code),
          refundedAmount: null,
          refund: REFUNDS.has(eventType) ? { id: refundId!, amount: value! } : null,
          declaredAccount,
          occurredAt,
        };
      }
      const unit = isOrder(eventType) ? asObject(firstOf(resource.purchase_units)) : resource;
      const money = asObject(unit?.amount);
      return {
        kind: baseKind,
        resourceId,
        orderId: null,
        orderReference: text(unit?.custom_id),
        amount: decimal(money?.value),
        currency: text(money?.currency_code),
        refundedAmount: null,
        captureId: eventType.startsWith('PAYMENT.CAPTURE.') ? text(resource.id) : null,
        declaredAccount,
        occurredAt,
      };
    },
  };
}

/** The built-in `paypal` provider. */
export const paypalProvider: ProviderAdapter = createPaypalProvider();
