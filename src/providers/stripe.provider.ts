import type { IncomingHttpHeaders } from 'node:http';
import type Stripe from 'stripe';
import type { ProviderEvent, ProviderEventKind, RawAmount } from '../common/provider-event';
import {
  asObject,
  EnvelopeIdentity,
  FetchContext,
  FetchedState,
  HealthAlert,
  header,
  minor,
  lenientId,
  optionalId,
  parseTimestampedHeader,
  ProviderApiError,
  ProviderEndpoint,
  requireId,
  StateFetcher,
  text,
  unixDate,
} from './provider';
import { hmacProvider } from './hmac';
import { DEFAULT_STRIPE_API, endpointStripeClient, retryAfterMs, withoutKey } from './stripe-api';
import { stripeCommands } from './stripe.commands';
import { stripeReader } from './stripe.reader';

/** The event types the service acts on (docs/webhooks.md#stripe); `charge.dispute.closed` depends on its status. */
const KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['payment_intent.processing', 'processing'],
  ['payment_intent.amount_capturable_updated', 'authorized'],
  ['payment_intent.succeeded', 'succeeded'],
  ['payment_intent.payment_failed', 'failed'],
  ['payment_intent.canceled', 'canceled'],
  ['charge.refunded', 'refunded'],
  ['charge.dispute.created', 'disputed'],
]);

/** Whether the service acts on a (snapshot) event type. */
function actedOn(eventType: string): boolean {
  return KINDS.has(eventType) || eventType === 'charge.dispute.closed';
}

function stripeKind(eventType: string, body: Record<string, unknown>): ProviderEventKind | null {
  if (eventType !== 'charge.dispute.closed') return KINDS.get(eventType) ?? null;
  const status = asObject(asObject(asObject(body)?.data)?.object)?.status;
  // `warning_closed` (an inquiry) and any other status change nothing.
  return status === 'won' ? 'dispute_won' : status === 'lost' ? 'dispute_lost' : null;
}

/** What an event destination of thin events sends: a notification that names a change (docs/webhooks.md#thin-event-notifications). */
const NOTIFICATION = 'v2.core.event';
const THIN_PREFIX = 'v1.';

/** The endpoint's `payloadStyle` (default `snapshot`). */
export const PAYLOAD_STYLES = ['snapshot', 'thin'] as const;
export type PayloadStyle = (typeof PAYLOAD_STYLES)[number];

function payloadStyle(endpoint: Pick<ProviderEndpoint, 'settings'>): PayloadStyle {
  return endpoint.settings.payloadStyle === 'thin' ? 'thin' : 'snapshot';
}

/**
 * The object a notification of each (snapshot) type names, and where the API serves it: a charge's
 * dispute events name the dispute, its refund the charge; both hold their PaymentIntent's id.
 */
const THIN_OBJECTS: ReadonlyArray<{ prefix: string; object: string; path: string }> = [
  { prefix: 'payment_intent.', object: 'payment_intent', path: '/v1/payment_intents/' },
  { prefix: 'charge.dispute.', object: 'dispute', path: '/v1/disputes/' },
  { prefix: 'charge.', object: 'charge', path: '/v1/charges/' },
];
/** An object id as Stripe writes them (`pi_3Q…`, `ch_…`, `dp_…`): nothing a URL would read otherwise. */
const OBJECT_ID = /^[A-Za-z0-9_]{1,255}$/;

/**
 * What a thin notification asks to fetch: the type it stands for (without `v1.`), the object's id
 * and its path. Null for a type the service does not act on, and for a `related_object` that is not
 * the object such an event names at its own path (nothing else is ever fetched).
 */
function thinTarget(body: Record<string, unknown>, eventType: string): { snapshotType: string; id: string; object: string; path: string } | null {
  if (body.object !== NOTIFICATION || !eventType.startsWith(THIN_PREFIX)) return null;
  const snapshotType = eventType.slice(THIN_PREFIX.length);
  if (!actedOn(snapshotType)) return null;
  const target = THIN_OBJECTS.find((t) => snapshotType.startsWith(t.prefix));
  const related = asObject(body.related_object);
  const id = related?.id;
  if (!target || typeof id !== 'string' || !OBJECT_ID.test(id)) return null;
  if (related!.type !== target.object || related!.url !== `${target.path}${id}`) return null;
  return { snapshotType, id, object: target.object, path: target.path };
}

/**
 * Whether a body is read as a thin notification: on a thin endpoint, one that says it is; without
 * an endpoint (one no longer configured), whatever the body says. A snapshot endpoint reads none
 * (its `v1.` types are none it acts on: recorded and ignored).
 */
function readsAsThin(body: Record<string, unknown>, endpoint: Pick<ProviderEndpoint, 'settings'> | undefined): boolean {
  return body.object === NOTIFICATION && (endpoint === undefined || payloadStyle(endpoint) === 'thin');
}

/** A notification's identity: keyed on its `id`, its `context` (a connected account) the declared account. */
function identifyThin(body: Record<string, unknown>): EnvelopeIdentity {
  const eventType = requireId(body.type, 'type');
  const related = asObject(body.related_object);
  return {
    eventId: requireId(body.id, 'id'),
    eventType,
    // A PaymentIntent's notification names it; a charge's or a dispute's names it only in the object, read when processed.
    resourceId: eventType.startsWith(`${THIN_PREFIX}payment_intent.`) ? optionalId(related?.id, 'related_object.id') : null,
    deliveryId: null,
    account: optionalId(body.context, 'context'),
    // Notifications are unversioned; the object is read in the API version of the official package.
    apiVersion: null,
  };
}

/** The most bytes of one fetched object ever read: a PaymentIntent, a charge or a dispute takes a few KiB. */
const OBJECT_READ_LIMIT_BYTES = 4 * 1024 * 1024;

function clientFor(endpoint: ProviderEndpoint & { apiKey: string }, context: FetchContext): Stripe {
  // One quick retry of a dropped connection or a 5xx; anything longer is the delivery's own retry.
  return endpointStripeClient(endpoint, { maxNetworkRetries: 1, timeoutMs: context.timeoutMs, readLimitBytes: OBJECT_READ_LIMIT_BYTES, appName: 'thin-events' });
}

/**
 * Reads the object a thin notification names with the official package's own helper
 * (`parseEventNotificationWithoutVerification(…).fetchRelatedObject()`: the endpoint's key, and a
 * connected account's context as `Stripe-Context`), and makes of it the snapshot event of the same
 * type, which `normalize` reads as it reads one Stripe sent.
 */
const thinFetcher: StateFetcher = {
  wants: (body, eventType, endpoint) => readsAsThin(body, endpoint) && thinTarget(body, eventType) !== null,

  async fetch(body, eventType, endpoint, context): Promise<FetchedState> {
    const target = thinTarget(body, eventType);
    if (!target) throw new Error(`not a notification of an object the service reads (${eventType})`);
    if (endpoint?.apiKey === undefined) {
      throw new ProviderApiError(
        `endpoint ${endpoint ? `"${endpoint.id}" has no apiKey` : 'of this delivery is no longer configured'}: the object of a thin notification cannot be read`,
        null,
        'endpoint_not_configured',
      );
    }
    const apiKey = endpoint.apiKey;
    const client = clientFor(endpoint as ProviderEndpoint & { apiKey: string }, context);
    const account = text(body.context);
    let object: Record<string, unknown> | undefined;
    try {
      // The package reads what it is given, and would read another envelope inside a body (a cloud
      // provider's `detail`): it is given only what was checked, the object's own path included.
      const checked = {
        id: body.id,
        object: NOTIFICATION,
        type: eventType,
        ...(account === null ? {} : { context: account }),
        related_object: { id: target.id, type: target.object, url: `${target.path}${target.id}` },
      };
      const notification = client.parseEventNotificationWithoutVerification(JSON.stringify(checked)) as unknown as { fetchRelatedObject(): Promise<unknown> };
      object = asObject(await notification.fetchRelatedObject());
    } catch (err) {
      const failure = err as { statusCode?: number; code?: string; message?: string; headers?: Record<string, unknown> };
      // The object does not exist (deleted, or never on this account): no retry brings it back.
      if (failure.statusCode === 404) return { found: false };
      const what = `Stripe API ${failure.statusCode ? `answered ${failure.statusCode}` : 'failed'} for ${target.path}${target.id}`;
      throw new ProviderApiError(withoutKey(`${what}: ${failure.message ?? String(err)}`, apiKey), retryAfterMs(failure.headers?.['retry-after']));
    }
    if (object?.id !== target.id) throw new ProviderApiError(`Stripe API answered another object than ${target.id}`);
    const created = Date.parse(typeof body.created === 'string' ? body.created : '');
    return {
      found: true,
      eventType: target.snapshotType,
      body: {
        id: body.id,
        object: 'event',
        type: target.snapshotType,
        ...(Number.isNaN(created) ? {} : { created: Math.floor(created / 1000) }),
        ...(account === null ? {} : { account }),
        data: { object },
      },
    };
  },
};

/**
 * Stripe (docs/webhooks.md#stripe): `Stripe-Signature: t=<unix>,v1=<hex>…` over `<t>.<body>`, keyed with
 * the whole `whsec_…` string; only `v1` entries count.
 */
/** Stripe's health alerts (Workbench's Health tab), sent as thin notifications: `.firing` and `.resolved` of each alert. */
const HEALTH_PREFIX = 'v2.core.health.';
/**
 * Events Stripe could not generate, so never sent nor listed: announced (as `.resolved`, once the
 * failure is known) by this alert, whatever its suffix. Only a poll of the payments can find what
 * they would have said.
 */
const EVENTS_LOST_PREFIX = 'v2.core.health.event_generation_failure.';

/**
 * A thin endpoint's `v2.core.health.*` notification as an alert of the endpoint's health: what the
 * notification itself says (no fetch), none of it personal data.
 */
function healthAlert(body: Record<string, unknown>, eventType: string, endpoint?: ProviderEndpoint): HealthAlert | null {
  if (!eventType.startsWith(HEALTH_PREFIX) || !readsAsThin(body, endpoint)) return null;
  const related = asObject(body.related_object);
  // Shown as sent, but never more than an id's length.
  const short = (value: unknown) => text(value)?.slice(0, 255) ?? null;
  return {
    details: {
      createdAt: short(body.created),
      livemode: typeof body.livemode === 'boolean' ? body.livemode : null,
      context: short(body.context),
      ...(related ? { relatedObject: { id: short(related.id), type: short(related.type) } } : {}),
    },
    eventsMayBeLost: eventType.startsWith(EVENTS_LOST_PREFIX),
  };
}

export const stripeProvider = hmacProvider({
  name: 'stripe',
  declaresAccount: true,
  storedHeaders: ['stripe-signature'],
  signatureHeaders: ['stripe-signature'],
  // The backfill reads Stripe's Events API with the endpoint's key, and a thin endpoint the objects its notifications name.
  usesApi: { defaultBaseUrl: DEFAULT_STRIPE_API },
  endpointFields: ['payloadStyle'],
  checkEndpoint({ apiKey, settings }) {
    const style = settings.payloadStyle;
    if (style !== undefined && !PAYLOAD_STYLES.includes(style as PayloadStyle)) return '"payloadStyle" must be "snapshot" or "thin"';
    if (style === 'thin' && apiKey === undefined) return '"payloadStyle": "thin" requires "apiKey" (the objects its notifications name are read with it)';
    return null;
  },
  fetchesState: thinFetcher,
  commands: stripeCommands,
  readPayment: stripeReader,
  healthAlert,

  key: (secret) => Buffer.from(secret, 'utf8'),

  signature: (headers: IncomingHttpHeaders) => parseTimestampedHeader(header(headers, 'stripe-signature')),

  identify(body, _headers, endpoint): EnvelopeIdentity {
    // A thin endpoint reads a notification as one; anything else (a classic event on a thin
    // endpoint, a notification on a snapshot one, an event a backfill listed) as a classic event.
    if (readsAsThin(body, endpoint)) return identifyThin(body);
    const eventType = requireId(body.type, 'type');
    const object = asObject(asObject(body.data)?.object);
    // Charges, refunds and disputes are about the PaymentIntent that holds the money.
    const resource = aboutPaymentIntent(eventType) && typeof object?.payment_intent === 'string'
      ? object.payment_intent
      : object?.id;
    return {
      eventId: requireId(body.id, 'id'),
      eventType,
      resourceId: optionalId(resource, 'data.object.id'),
      deliveryId: null,
      // A declared account is keyed on and compared: an unprintable one is malformed, not "none declared".
      account: optionalId(body.account, 'account'),
      apiVersion: lenientId(body.api_version),
    };
  },

  normalize(body, eventType): ProviderEvent | null {
    if (REFUND_EVENTS.has(eventType)) return refundEvent(body, eventType);
    const kind = stripeKind(eventType, body);
    const envelope = asObject(body);
    const object = asObject(asObject(envelope?.data)?.object);
    if (!kind || !object) return null;
    // The PaymentIntent holds the money: charges, refunds and disputes point at it.
    const resourceId = text(eventType.startsWith('charge.') ? object.payment_intent : object.id);
    if (resourceId === null) return null;
    let amount: RawAmount | null;
    if (eventType === 'payment_intent.succeeded') amount = minor(object.amount_received);
    else if (eventType.startsWith('charge.dispute.')) amount = null; // a dispute may be partial: never checked
    else amount = minor(object.amount);
    const currency = text(object.currency);
    return {
      kind,
      resourceId,
      orderId: text(asObject(object.metadata)?.order_id),
      amount,
      currency: currency === null ? null : currency.toUpperCase(),
      refundedAmount: kind === 'refunded' ? minor(object.amount_refunded) : null,
      ...(kind === 'refunded' ? listedOutcomes(object) : {}),
      declaredAccount: text(envelope?.account), // Connect
      occurredAt: unixDate(envelope?.created),
    };
  },
});

/** Whether an event's object names the PaymentIntent it is about (`payment_intent`) rather than being it. */
function aboutPaymentIntent(eventType: string): boolean {
  return eventType.startsWith('charge.') || eventType.startsWith('refund.');
}

/**
 * The events of one Refund object (docs/commands.md#stripe): its outcome, which confirms or fails a
 * refund the module asked for by its `re_…` id. They move no amount: `charge.refunded` does.
 * `charge.refund.updated` is the older name of `refund.updated`.
 */
const REFUND_EVENTS: ReadonlySet<string> = new Set(['refund.created', 'refund.updated', 'refund.failed', 'charge.refund.updated']);

type RefundOutcome = NonNullable<ProviderEvent['refundOutcomes']>[number];

/**
 * A Refund's final outcome: `succeeded`, or `failed` for `failed` and `canceled` (the money never
 * went back) with Stripe's `failure_reason`; null while it is `pending` or `requires_action`.
 */
function refundOutcome(refund: Record<string, unknown>, failedEvent = false): RefundOutcome | null {
  const id = text(refund.id);
  if (id === null) return null;
  const status = refund.status;
  if (failedEvent || status === 'failed' || status === 'canceled') {
    return { id, status: 'failed', reason: text(refund.failure_reason) ?? (status === 'canceled' ? 'canceled' : 'failed') };
  }
  return status === 'succeeded' ? { id, status: 'succeeded' } : null;
}

/** A `refund.*` event as the outcome of its refund; null while the refund has none, or without a PaymentIntent. */
function refundEvent(body: Record<string, unknown>, eventType: string): ProviderEvent | null {
  const refund = asObject(asObject(body.data)?.object);
  const resourceId = text(refund?.payment_intent);
  const outcome = refund ? refundOutcome(refund, eventType === 'refund.failed') : null;
  if (!refund || resourceId === null || outcome === null) return null;
  const currency = text(refund.currency);
  return {
    kind: 'refund_outcome',
    resourceId,
    orderId: text(asObject(refund.metadata)?.order_id),
    amount: null,
    currency: currency === null ? null : currency.toUpperCase(),
    refundedAmount: null,
    refundOutcomes: [outcome],
    declaredAccount: text(body.account),
    occurredAt: unixDate(body.created),
  };
}

/**
 * The outcomes of the refunds a charge lists (`refunds.data`, sent on API versions before
 * 2022-11-15, or when expanded): each confirms a refund the module asked for. Absent when it lists none.
 */
function listedOutcomes(charge: Record<string, unknown>): { refundOutcomes?: RefundOutcome[] } {
  const listed = asObject(charge.refunds)?.data;
  if (!Array.isArray(listed)) return {};
  const outcomes = listed.map((r) => asObject(r)).flatMap((r) => (r ? [refundOutcome(r)] : [])).filter((o): o is RefundOutcome => o !== null);
  return outcomes.length === 0 ? {} : { refundOutcomes: outcomes };
}
