import { readFileSync } from 'node:fs';
import { createHash, verify } from 'node:crypto';
import { crc32 } from '../common/crc32';
import { ID_MAX_LENGTH, isPrintableId } from '../common/printable';
import type { ProviderEvent, ProviderEventKind } from '../common/provider-event';
import { ExpiringMap } from './call-out';
import { PAYPAL_PACKAGE, paypalCommands } from './paypal.commands';
import { paypalReader } from './paypal.reader';
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
  isoDate,
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

/** Where PayPal serves its certificates: this path, then the certificate's name (`CERT-360caa42-…`). */
export const CERT_PATH = '/v1/notifications/certs/';
/** A certificate's name: one path segment of unreserved characters (a percent-escape would be another spelling of a name). */
const CERT_NAME = /^[A-Za-z0-9._~-]+$/;
/** The longest `PAYPAL-CERT-URL` looked at (PayPal's are under 100 characters). */
export const MAX_CERT_URL_CHARS = 512;

/**
 * The webhook id PayPal's Webhooks Simulator signs with: anyone can have deliveries of their choosing
 * signed for it, so an endpoint of that id would verify anyone's events.
 */
const SIMULATOR_WEBHOOK_ID = 'WEBHOOK_ID';
/** The tolerance a transmission id is remembered for at least (each way): the default's. */
const MIN_TRANSMISSION_TOLERANCE_MS = 300_000;

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
  // A refund of the capture's amount, at most what earlier refunds left of it.
  ['PAYMENT.CAPTURE.REVERSED', 'refunded'],
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
  /** Bounds on fetches and the cache, per endpoint (docs/security.md#paypals-certificate). */
  limits?: Partial<CertificateLimits>;
  /** Transmission ids one endpoint remembers with their body's digest (the oldest dropped first; default 100000). */
  maxRememberedTransmissions?: number;
}

/** What the adapter keeps per endpoint: its settings, worked out once, its certificates and the transmissions it verified. */
interface EndpointState {
  webhookId: string;
  certHosts: readonly string[];
  certificates: PaypalCertificates;
  /**
   * Transmission id → SHA-256 of the body it verified with, for as long as a delivery of that
   * transmission can be within tolerance. Made with the first delivery, whose tolerance it follows.
   */
  transmissions?: ExpiringMap<string>;
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

/**
 * The certificate URL as the endpoint allows it, normalised (one spelling per certificate, the key
 * of its cache entry): `https:`, at most MAX_CERT_URL_CHARS, no credentials, no query or fragment,
 * its host (and port) listed, a certificate's name under CERT_PATH; else null.
 */
export function allowedCertUrl(value: string, certHosts: readonly string[]): URL | null {
  if (value.length > MAX_CERT_URL_CHARS || /[@?#]/.test(value)) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' || !certHosts.includes(url.host)) return null;
  if (!url.pathname.startsWith(CERT_PATH) || !CERT_NAME.test(url.pathname.slice(CERT_PATH.length))) return null;
  return new URL(`https://${url.host}${url.pathname}`);
}

/**
 * `certHosts` as configured, each as a URL's `host` reads it (lower case, the default port dropped,
 * an IPv6 address compressed), so that it matches the host of the URLs PayPal sends; null when it
 * is not a non-empty list of hosts.
 */
function certHostsOf(value: unknown): string[] | null {
  if (value === undefined) return [...DEFAULT_CERT_HOSTS];
  if (!Array.isArray(value) || value.length === 0) return null;
  const hosts: string[] = [];
  for (const entry of value) {
    if (typeof entry !== 'string' || !CERT_HOST.test(entry.toLowerCase())) return null;
    try {
      hosts.push(new URL(`https://${entry}`).host);
    } catch {
      return null;
    }
  }
  return hosts;
}

/**
 * PayPal (docs/webhooks.md#paypal): each delivery is signed with RSA-SHA256 over
 * `<transmission id>|<transmission time>|<webhookId>|<CRC32 of the raw body>` by the key of a
 * certificate PayPal serves at `PAYPAL-CERT-URL`. The certificate is fetched only from PayPal's
 * certificate path on the endpoint's `certHosts` over HTTPS, checked (chained to a trusted CA, valid
 * now, issued to PayPal's signing name) and cached per normalised URL; what fetching it may cost is
 * bounded per endpoint and per sender address (docs/security.md#paypals-certificate). The body is
 * signed only through its CRC32, so a transmission verified with one body is refused with another
 * (docs/webhooks.md#what-paypals-signature-protects).
 *
 * Refunds and disputes name the capture, not the order: their events are about that capture's
 * payment, which the module remembers when a capture event is processed (`ProviderEvent.captureId`,
 * `resourceKind: 'capture'`).
 */
export function createPaypalProvider(options: PaypalProviderOptions = {}): ProviderAdapter {
  const limits: CertificateLimits = { ...DEFAULT_CERTIFICATE_LIMITS, ...options.limits, sender: { ...DEFAULT_CERTIFICATE_LIMITS.sender, ...options.limits?.sender } };
  const maxTransmissions = options.maxRememberedTransmissions ?? 100_000;
  // Per endpoint object: two apps in one process (two tests, say) never share a cache or a budget.
  const byEndpoint = new WeakMap<ProviderEndpoint, EndpointState>();
  /** The trust of each `caFile`, as read when an endpoint naming it was checked at start. */
  const caFiles = new Map<string, CertificateTrust>();

  function trustOf(settings: Readonly<Record<string, unknown>>): CertificateTrust {
    if (typeof settings.caPem === 'string') return bundleTrust(settings.caPem);
    if (typeof settings.caFile === 'string') {
      // An endpoint resolved without its start-up check (one built by hand) reads its file here.
      return caFiles.get(settings.caFile) ?? bundleTrust(readFileSync(settings.caFile, 'latin1'));
    }
    return systemCertificateTrust();
  }

  function stateOf(endpoint: ProviderEndpoint): EndpointState {
    let state = byEndpoint.get(endpoint);
    if (state) return state;
    const s = endpoint.settings;
    state = {
      webhookId: String(s.webhookId),
      certHosts: certHostsOf(s.certHosts) ?? [],
      certificates: new PaypalCertificates(trustOf(s), limits, options.fetchCertificate),
    };
    byEndpoint.set(endpoint, state);
    return state;
  }

  /**
   * A delivery of a transmission is signed at its transmission time and verifies within tolerance
   * of it, each way: remembered from its first delivery for twice the tolerance (and at least the
   * default's five minutes each way), every delivery of it that can still verify finds it.
   */
  function transmissionsOf(state: EndpointState, toleranceSeconds: number): ExpiringMap<string> {
    state.transmissions ??= new ExpiringMap(maxTransmissions, 2 * Math.max(toleranceSeconds * 1000, MIN_TRANSMISSION_TOLERANCE_MS));
    return state.transmissions;
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
    // Most events carry no `resource.payee`: an endpoint serves one account. A `payee.merchant_id`
    // that is present is still checked against it.
    declaresAccount: false,
    // The key is PayPal's certificate's, fetched per delivery: an endpoint has no secret.
    secrets: 'none',
    endpointFields: FIELDS,
    // The REST API the module will call with the OAuth client credentials (payment commands, polling).
    usesApi: { defaultBaseUrl: 'https://api-m.paypal.com' },
    commands: paypalCommands,
    // Polling reads the order with the same credentials (docs/operations.md#when-webhooks-stop).
    readPayment: paypalReader,

    checkEndpoint({ apiKey, apiBaseUrl, settings }): string | null {
      if (apiKey !== undefined) return '"apiKey" is not for paypal endpoints: give "clientId" and "clientSecret" (the REST app\'s OAuth client credentials)';
      const { webhookId, certHosts, caFile, caPem, clientId, clientSecret } = settings;
      if (typeof webhookId !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(webhookId)) {
        return '"webhookId" is required: the id PayPal shows for the webhook (letters, digits, - and _)';
      }
      if (webhookId.toUpperCase() === SIMULATOR_WEBHOOK_ID) {
        return `"webhookId" ${webhookId} is the id PayPal's Webhooks Simulator signs with: anyone can have deliveries signed for it`;
      }
      if (certHostsOf(certHosts) === null) return '"certHosts" must be a non-empty list of hosts (with a port where one is used), such as ["api.paypal.com"]';
      if (caFile !== undefined && caPem !== undefined) return 'give "caFile" or "caPem", not both';
      if (caFile !== undefined && (typeof caFile !== 'string' || caFile === '')) return '"caFile" must be the path of a PEM bundle';
      if (caPem !== undefined && typeof caPem !== 'string') return '"caPem" must be a PEM bundle (text)';
      if (caFile !== undefined || caPem !== undefined) {
        try {
          // The file is read here, once: a delivery never waits for the disk, nor finds the file changed.
          const trust = bundleTrust(caPem !== undefined ? (caPem as string) : readFileSync(caFile as string, 'latin1'));
          if (caFile !== undefined) caFiles.set(caFile as string, trust);
        } catch (err) {
          const why = (err as NodeJS.ErrnoException).code ? `cannot be read (${(err as NodeJS.ErrnoException).code})` : (err as Error).message;
          return caPem !== undefined ? `"caPem" ${why}` : `"caFile" ${why}`;
        }
      }
      if ((clientId === undefined) !== (clientSecret === undefined)) return '"clientId" and "clientSecret" go together (the REST app\'s OAuth client credentials)';
      if (clientId !== undefined && (typeof clientId !== 'string' || clientId === '')) return '"clientId" must be a non-empty string';
      if (clientSecret !== undefined && (typeof clientSecret !== 'string' || clientSecret === '')) return '"clientSecret" must be a non-empty string';
      if (apiBaseUrl !== undefined && !apiBaseUrl.startsWith('https://')) return '"apiBaseUrl" must be an https URL';
      // Client credentials are for the payment commands, sent through PayPal's SDK: refused now rather than at the first refund.
      if (clientId !== undefined && !paypalCommands.installed()) return `"clientId" needs the ${PAYPAL_PACKAGE} package: npm install ${PAYPAL_PACKAGE}`;
      return null;
    },

    prepareKey(): object {
      throw new Error('paypal endpoints have no secrets: deliveries are verified with the certificate PayPal serves');
    },

    async receive(delivery: RawDelivery, context: ReceiveContext): Promise<ReceiveResult> {
      const signed = signedHeaders(delivery);
      if (!signed) return { ok: false, error: 'missing_signature' };
      const state = stateOf(context.endpoint);
      const url = allowedCertUrl(signed.certUrl, state.certHosts);
      if (!url) return { ok: false, error: 'invalid_signature' };
      const content = Buffer.from(`${signed.id}|${signed.time}|${state.webhookId}|${crc32(delivery.body)}`);
      const checked = await state.certificates.verify(url, (publicKey) => verify('sha256', content, publicKey, signed.signature), {
        sender: context.sender,
        nowMs: context.nowMs,
      });
      if (!checked.ok) {
        if (checked.error === 'unavailable') throw new Error(`PayPal's certificate could not be had: ${checked.reason}`);
        return { ok: false, error: checked.error };
      }
      // PayPal signs the body's CRC32, not the body, and anyone can write other bytes of the same
      // CRC32: a transmission verified with one body is refused with any other. The same bytes
      // again are a resend of the same delivery.
      const digest = createHash('sha256').update(delivery.body).digest('base64url');
      const transmissions = transmissionsOf(state, context.toleranceSeconds);
      const seen = transmissions.get(signed.id, context.nowMs);
      if (seen !== undefined && seen !== digest) return { ok: false, error: 'invalid_signature' };
      if (context.toleranceSeconds > 0 && Math.abs(context.nowMs - signed.timeMs) > context.toleranceSeconds * 1000) {
        return { ok: false, error: 'timestamp_out_of_tolerance' };
      }
      if (seen === undefined) transmissions.set(signed.id, digest, context.nowMs);
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
        // A resolution that does not say for whom decides nothing: ignored, never guessed lost.
        if (eventType === 'CUSTOMER.DISPUTE.RESOLVED' && outcome === null) return null;
        const kind = eventType === 'CUSTOMER.DISPUTE.RESOLVED' && KEPT_BY_SELLER.has(outcome!) ? 'dispute_won' : baseKind;
        const value = decimal(money?.value);
        if (REFUNDS.has(eventType) && (refundId === null || value === null)) return null;
        const refundStatus = text(resource.status);
        // A refund PayPal reports failed or cancelled returned nothing: only its outcome.
        if (eventType === 'PAYMENT.CAPTURE.REFUNDED' && (refundStatus === 'FAILED' || refundStatus === 'CANCELLED')) {
          const why = text(asObject(resource.status_details)?.reason);
          return {
            kind: 'refund_outcome',
            resourceId,
            resourceKind: 'capture',
            orderId: null,
            amount: null,
            currency: text(money?.currency_code),
            refundedAmount: null,
            refund: null,
            refundOutcomes: [{ id: refundId!, status: 'failed', reason: `PayPal refund ${refundStatus}${why ? ` (${why})` : ''}` }],
            declaredAccount,
            occurredAt,
          };
        }
        const reversal = eventType === 'PAYMENT.CAPTURE.REVERSED';
        // The refund's own id confirms a refund the module sent (matched by its providerRefundId);
        // one PayPal still has PENDING is not confirmed yet.
        const confirmed = eventType === 'PAYMENT.CAPTURE.REFUNDED' && refundStatus !== 'PENDING';
        return {
          kind,
          resourceId,
          resourceKind: 'capture',
          orderId: null,
          amount: null,
          currency: text(money?.currency_code),
          refundedAmount: null,
          refund: REFUNDS.has(eventType) ? { id: refundId!, amount: value!, ...(reversal ? { reversal } : {}) } : null,
          ...(confirmed ? { refundOutcomes: [{ id: refundId!, status: 'succeeded' as const }] } : {}),
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
