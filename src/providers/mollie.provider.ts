import type { ProviderEvent, ProviderEventKind } from '../common/provider-event';
import {
  asObject,
  decimal,
  MalformedPayloadError,
  ProviderAdapter,
  ProviderEndpoint,
  RawDelivery,
  ReceiveContext,
  ReceivedEvent,
  ReceiveResult,
  text,
} from './provider';

/** The npm package of Mollie's official client, an optional peer dependency of this module. */
export const MOLLIE_PACKAGE = '@mollie/api-client';

/**
 * What this adapter uses of `@mollie/api-client`, typed here so that a host without the package
 * still compiles against this module.
 */
export interface MollieClientPackage {
  createMollieClient(options: { apiKey: string; apiEndpoint: string; versionStrings?: string | string[] }): {
    payments: { get(id: string, parameters: { embed: string[] }): Promise<object> };
  };
}

/** Loads the client package (throws `MODULE_NOT_FOUND` when it is not installed). */
export type MollieClientLoader = () => MollieClientPackage;

/** How a Mollie endpoint fetches what a hint names, and how hard a flood of hints may make it fetch. */
export interface MollieProviderOptions {
  /** Loads `@mollie/api-client`; called at most once, when the first Mollie endpoint is checked. */
  loadClient?: MollieClientLoader;
  /**
   * Longest wait for Mollie's answer before the delivery answers 503 (default 4000 ms). With the
   * receive path's own bounds after it (3 s to record, 1 s to enqueue) the answer stays under 8 s,
   * inside the 10 s every webhook answer keeps; it is many times Mollie's usual answer time, and
   * leaves room for the client's own retry of a 5xx, 2 s after the first attempt.
   */
  fetchTimeoutMs?: number;
  /** A payment is fetched at most once in this window per endpoint; hints inside it share the result (default 1000 ms). */
  hintWindowMs?: number;
  /** Fetches one endpoint has unanswered at once, abandoned ones included; past it a hint answers 503 unfetched (default 64). */
  maxFetchesInFlight?: number;
  /** Results one endpoint remembers for the window (least recently fetched dropped first; default 1000). */
  maxRememberedPayments?: number;
}

const DEFAULTS = { fetchTimeoutMs: 4_000, hintWindowMs: 1_000, maxFetchesInFlight: 64, maxRememberedPayments: 1_000 };

/** A payment id as Mollie writes it: `tr_` and letters and digits (bounded, so a hint can never name a huge key). */
const PAYMENT_ID_CHARS = 'tr_[A-Za-z0-9]{1,64}';
const PAYMENT_ID = new RegExp(`^${PAYMENT_ID_CHARS}$`);
/** The whole body of a hint: `id=<payment id>`, form-encoded (nothing in the id needs escaping). */
const HINT = new RegExp(`^id=(${PAYMENT_ID_CHARS})$`);
const HINT_MAX_BYTES = 'id=tr_'.length + 64;
export const HINT_DETAIL = 'the body is not id=<a Mollie payment id (tr_ and letters and digits)>';

const API_KEY = /^(test|live)_[A-Za-z0-9]+$/;

/** Mollie's payment statuses, as the lifecycle names them (docs/webhooks.md#mollie). */
const STATUS_KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['open', 'pending'],
  ['pending', 'processing'],
  ['authorized', 'authorized'],
  ['paid', 'succeeded'],
  ['failed', 'failed'],
  ['canceled', 'canceled'],
  ['expired', 'expired'],
]);

/** When a status says it happened (Mollie's timestamps, ISO 8601). */
const STATUS_TIMES: Readonly<Record<string, string>> = {
  open: 'createdAt',
  authorized: 'authorizedAt',
  paid: 'paidAt',
  failed: 'failedAt',
  canceled: 'canceledAt',
  expired: 'expiredAt',
};

/** A decimal string Mollie sends (`"10.00"`) that is above zero. */
function positive(value: string | null): boolean {
  return value !== null && /^\d+(\.\d+)?$/.test(value) && /[1-9]/.test(value);
}

/** `amountRefunded.value` / `amountChargedBack.value` as Mollie sent it, or `0` when absent. */
function amountField(payment: Record<string, unknown>, field: 'amountRefunded' | 'amountChargedBack'): string {
  const value = asObject(payment[field])?.value;
  return typeof value === 'string' && value.length > 0 ? value : '0';
}

/**
 * The business fact a fetched payment shows, newest first: a chargeback, else a refund (cumulative),
 * else its status. Null for a status the service does not act on.
 */
function factOf(payment: Record<string, unknown>): { kind: ProviderEventKind; type: string } | null {
  if (positive(amountField(payment, 'amountChargedBack'))) return { kind: 'dispute_lost', type: 'payment.charged_back' };
  if (positive(amountField(payment, 'amountRefunded'))) return { kind: 'refunded', type: 'payment.refunded' };
  const status = text(payment.status);
  const kind = status === null ? undefined : STATUS_KINDS.get(status);
  return kind ? { kind, type: `payment.${status}` } : null;
}

function isoDate(value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** The payment id a hint names, or MalformedPayloadError (Mollie is then not called). */
function readHint(body: Buffer): string {
  const match = body.length <= HINT_MAX_BYTES ? HINT.exec(body.toString('latin1')) : null;
  if (!match) throw new MalformedPayloadError(HINT_DETAIL);
  return match[1];
}

/**
 * The event a fetched payment is: keyed on the business fact it shows
 * (`<payment id>:<status>:<amountRefunded>:<amountChargedBack>`, Mollie sends no event id), its
 * body the payment as Mollie returned it. A payment that is not what was asked for is an answer
 * the adapter cannot use (503, Mollie retries), never a 400.
 */
export function paymentEvent(paymentId: string, payment: object): ReceivedEvent {
  const body = JSON.stringify(payment);
  const fields = JSON.parse(body) as Record<string, unknown>;
  if (fields.id !== paymentId) throw new Error(`Mollie answered another resource than payment ${paymentId}`);
  const status = text(fields.status);
  if (status === null) throw new Error(`Mollie answered payment ${paymentId} without a status`);
  const fact = factOf(fields);
  return {
    eventId: `${paymentId}:${status}:${amountField(fields, 'amountRefunded')}:${amountField(fields, 'amountChargedBack')}`,
    eventType: fact?.type ?? `payment.${status}`,
    resourceId: paymentId,
    deliveryId: null,
    account: text(fields.profileId),
    apiVersion: null,
    body,
  };
}

/** What one fetch of a payment found: the payment's event, or that Mollie has no such payment for the key. */
type Fetched = { found: true; event: ReceivedEvent } | { found: false };

interface Remembered {
  startedAtMs: number;
  settled: boolean;
  result: Promise<Fetched>;
}

type MollieClient = ReturnType<MollieClientPackage['createMollieClient']>;

/** One endpoint's client and what it fetched lately. */
interface EndpointFetches {
  client: MollieClient;
  apiKey: string;
  /** By payment id, least recently fetched first. */
  recent: Map<string, Remembered>;
  /** Client calls not answered yet, abandoned ones (timed out) included. */
  inFlight: number;
}

class FetchTimeout extends Error {}

/** Mollie's answer to a payment fetch as the receive path needs it: found, absent (404), or an Error (503). */
function classify(err: unknown, paymentId: string, apiKey: string, timeoutMs: number): Fetched {
  if (err instanceof FetchTimeout) throw new Error(`Mollie did not answer for payment ${paymentId} within ${timeoutMs} ms`);
  const statusCode = (err as { statusCode?: unknown } | null)?.statusCode;
  if (statusCode === 404) return { found: false };
  if (typeof statusCode === 'number') throw new Error(`Mollie answered ${statusCode} for payment ${paymentId}`);
  // A network failure: the client's message names the URL and the reason; never the key, and made sure of.
  const message = String((err as Error | null)?.message ?? err).split(apiKey).join('[redacted]').slice(0, 200);
  throw new Error(`Mollie could not be reached for payment ${paymentId}: ${message}`);
}

/**
 * Mollie (docs/webhooks.md#mollie): a delivery is an unsigned hint, `id=tr_…`, that a payment
 * changed. It is authenticated by fetching the payment from Mollie's API with the endpoint's key
 * (through the official `@mollie/api-client`, its refunds and chargebacks embedded) before the
 * answer; what is recorded is the payment Mollie returned. The package is loaded once, when a Mollie
 * endpoint is first checked: a host with no such endpoint needs none.
 */
export function createMollieProvider(options: MollieProviderOptions = {}): ProviderAdapter {
  const settings = { ...DEFAULTS, ...options };
  const load = options.loadClient ?? (() => require(MOLLIE_PACKAGE) as MollieClientPackage);
  let loaded: { pkg: MollieClientPackage } | { missing: true } | undefined;
  const byEndpoint = new WeakMap<ProviderEndpoint, EndpointFetches>();

  /** The client package, loaded once; null when it is not installed. */
  function clientPackage(): MollieClientPackage | null {
    if (loaded === undefined) {
      try {
        loaded = { pkg: load() };
      } catch (err) {
        if ((err as { code?: unknown } | null)?.code !== 'MODULE_NOT_FOUND') throw err;
        loaded = { missing: true };
      }
    }
    return 'pkg' in loaded ? loaded.pkg : null;
  }

  function fetchesOf(endpoint: ProviderEndpoint): EndpointFetches {
    let fetches = byEndpoint.get(endpoint);
    if (fetches) return fetches;
    const pkg = clientPackage();
    if (!pkg) throw new Error(`endpoint "${endpoint.id}" needs the ${MOLLIE_PACKAGE} package: npm install ${MOLLIE_PACKAGE}`);
    const { apiKey, apiBaseUrl } = endpoint;
    if (!apiKey || !apiBaseUrl) throw new Error(`endpoint "${endpoint.id}" has no Mollie API key`);
    const client = pkg.createMollieClient({ apiKey, apiEndpoint: `${apiBaseUrl.replace(/\/+$/, '')}/v2/` });
    fetches = { client, apiKey, recent: new Map(), inFlight: 0 };
    byEndpoint.set(endpoint, fetches);
    return fetches;
  }

  /** Whether a fetch started inside the window around `nowMs` (a clock set back does not make it fresh for long). */
  function within(entry: Remembered, nowMs: number): boolean {
    return Math.abs(nowMs - entry.startedAtMs) < settings.hintWindowMs;
  }

  /** Drops what the window no longer needs, and the least recently fetched past the cap (never a fetch still running). */
  function forget(fetches: EndpointFetches, nowMs: number): void {
    for (const [id, entry] of fetches.recent) {
      const expired = entry.settled && !within(entry, nowMs);
      if (fetches.recent.size <= settings.maxRememberedPayments && !expired) break;
      if (entry.settled) fetches.recent.delete(id);
    }
  }

  /**
   * The payment, fetched at most once per window: a hint while a fetch of the same payment runs
   * shares it, and one inside the window after it shares its result (a 404 and a failure too).
   */
  function fetchPayment(fetches: EndpointFetches, paymentId: string, nowMs: number): Promise<Fetched> {
    const known = fetches.recent.get(paymentId);
    if (known && (!known.settled || within(known, nowMs))) return known.result;
    if (fetches.inFlight >= settings.maxFetchesInFlight) {
      return Promise.reject(new Error(`${fetches.inFlight} fetches from Mollie are unanswered: payment ${paymentId} is not fetched now`));
    }
    const call = fetches.client.payments.get(paymentId, { embed: ['refunds', 'chargebacks'] });
    fetches.inFlight++;
    const answered = () => {
      fetches.inFlight--;
    };
    call.then(answered, answered);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new FetchTimeout()), settings.fetchTimeoutMs);
      timer.unref?.();
    });
    const result = Promise.race([call, timeout])
      .then(
        (payment): Fetched => ({ found: true, event: paymentEvent(paymentId, payment) }),
        (err) => classify(err, paymentId, fetches.apiKey, settings.fetchTimeoutMs),
      )
      .finally(() => {
        clearTimeout(timer);
        entry.settled = true;
      });
    const entry: Remembered = { startedAtMs: nowMs, settled: false, result };
    // Every waiter handles the result; this keeps an unwaited failure from being reported as unhandled.
    result.catch(() => undefined);
    fetches.recent.delete(paymentId);
    fetches.recent.set(paymentId, entry);
    forget(fetches, nowMs);
    return entry.result;
  }

  return {
    name: 'mollie',
    // Nothing in a hint is evidence, so nothing of it is kept but the payment id it names.
    storedHeaders: [],
    signatureHeaders: [],
    // A Mollie API key belongs to one profile: an endpoint serves that one account, which the
    // payment's profileId must equal.
    declaresAccount: false,
    secrets: 'none',
    usesApi: { defaultBaseUrl: 'https://api.mollie.com' },

    checkEndpoint({ apiKey, apiBaseUrl }): string | null {
      if (apiKey === undefined) return '"apiKey" is required: the Mollie API key (test_… or live_…) each payment is fetched with';
      if (!API_KEY.test(apiKey)) return '"apiKey" must be a Mollie API key (test_… or live_…)';
      if (apiBaseUrl !== undefined && !apiBaseUrl.startsWith('https://')) {
        return '"apiBaseUrl" must be an https URL (the Mollie client speaks HTTPS only)';
      }
      if (!clientPackage()) return `needs the ${MOLLIE_PACKAGE} package: npm install ${MOLLIE_PACKAGE}`;
      return null;
    },

    prepareKey(): object {
      throw new Error('mollie endpoints have no secrets');
    },

    async receive(delivery: RawDelivery, context: ReceiveContext): Promise<ReceiveResult> {
      const paymentId = readHint(delivery.body);
      const fetched = await fetchPayment(fetchesOf(context.endpoint), paymentId, context.nowMs);
      if (!fetched.found) throw new MalformedPayloadError(`Mollie has no payment ${paymentId} for this endpoint's API key`);
      return { ok: true, secretIndex: null, events: [fetched.event] };
    },

    normalize(body): ProviderEvent | null {
      const resourceId = text(body.id);
      const fact = factOf(body);
      if (resourceId === null || !PAYMENT_ID.test(resourceId) || fact === null) return null;
      const amount = asObject(body.amount);
      const status = text(body.status);
      const when = status === null ? undefined : STATUS_TIMES[status];
      return {
        kind: fact.kind,
        resourceId,
        orderId: text(asObject(body.metadata)?.order_id),
        // A chargeback may be partial: its amount is never compared with the order's.
        amount: fact.kind === 'dispute_lost' ? null : decimal(amount?.value),
        currency: text(amount?.currency),
        refundedAmount: fact.kind === 'refunded' ? decimal(asObject(body.amountRefunded)?.value) : null,
        declaredAccount: text(body.profileId),
        occurredAt: fact.kind === 'dispute_lost' || fact.kind === 'refunded' || when === undefined ? null : isoDate(body[when]),
      };
    },
  };
}

/** The built-in Mollie provider. */
export const mollieProvider = createMollieProvider();
