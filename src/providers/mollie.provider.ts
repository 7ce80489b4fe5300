import { createHash } from 'node:crypto';
import type { ProviderEvent, ProviderEventKind } from '../common/provider-event';
import {
  asObject,
  decimal,
  MalformedPayloadError,
  PaymentReading,
  PollTarget,
  ProviderAdapter,
  ProviderApiError,
  RATE_LIMITED,
  ReadContext,
  ProviderEndpoint,
  RawDelivery,
  ReceiveContext,
  ReceivedEvent,
  ReceiveResult,
  isoDate,
  text,
} from './provider';
import { Logger } from '@nestjs/common';
import { maskedAddress } from '../common/ip-address';
import { ExpiringSet, SenderBudgets, SenderLimits } from './call-out';
import { optionalPackage } from './optional-package';
import { createMollieCommands, mollieCommands } from './mollie.commands';

import { MOLLIE_PACKAGE, type MollieClientLoader, type MollieClientPackage } from './mollie-client';

export { MOLLIE_PACKAGE, type MollieClientLoader, type MollieClientPackage, type MollieCommandClient } from './mollie-client';

/** How a Mollie endpoint fetches what a hint names, and how much a flood of hints may make it fetch. */
export interface MollieProviderOptions {
  /** Loads `@mollie/api-client`; called at most once, when the first Mollie endpoint is checked. */
  loadClient?: MollieClientLoader;
  /**
   * Longest wait of a hint for Mollie's answer before it answers 503 (default 4000 ms). With the
   * receive path's own bounds after it (3 s to record, 1 s to enqueue) the answer stays under 8 s,
   * inside the 10 s every webhook answer keeps; it is many times Mollie's usual answer time, and
   * leaves room for the client's own retry of a 5xx, 2 s after the first attempt.
   */
  fetchTimeoutMs?: number;
  /** Fetches one endpoint has unanswered at once, abandoned ones included; past it a hint answers 503 unfetched (default 64). */
  maxFetchesInFlight?: number;
  /**
   * Of those, the most that may be for payments the service does not know (never registered, never
   * in an event): what is left is kept for the payments it knows (default 32).
   */
  maxUnknownFetchesInFlight?: number;
  /** What one sender address may make an endpoint fetch, and ask the service. */
  senderLimits?: Partial<SenderLimits>;
  /**
   * A call Mollie has not answered after this long gives its share of the budgets back (default
   * 60000 ms): the client sets no timeout of its own, and calls on a connection gone silent would
   * otherwise hold the endpoint's fetches for good.
   */
  abandonAfterMs?: number;
  /** How long a payment Mollie answered 404 for is not asked for again (default 60000 ms). */
  notFoundMemoryMs?: number;
  /** Payment ids one endpoint remembers as found, and as not found, each (least recently seen dropped first; default 10000). */
  maxRememberedPayments?: number;
}

const DEFAULTS = {
  fetchTimeoutMs: 4_000,
  maxFetchesInFlight: 64,
  maxUnknownFetchesInFlight: 32,
  notFoundMemoryMs: 60_000,
  maxRememberedPayments: 10_000,
  abandonAfterMs: 60_000,
};
/** How long a payment Mollie answered for stays known without a new answer (a day: a payment's life in hints). */
const KNOWN_MEMORY_MS = 86_400_000;
const SENDER_DEFAULTS: SenderLimits = { inFlight: 8, knownInFlight: 16, lookups: 16, notFound: 60, windowMs: 60_000, maxSenders: 10_000 };

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

/** What a refund's status says of it, where it has ended (Refunds API: queued, pending, processing, refunded, failed, canceled). */
const REFUND_ENDS: ReadonlyMap<string, 'succeeded' | 'failed'> = new Map([
  ['refunded', 'succeeded'],
  ['failed', 'failed'],
  ['canceled', 'failed'],
]);

/**
 * The refunds a fetched payment embeds (`_embedded.refunds`, asked for with every fetch) that have
 * ended: what confirms or fails a refund the module asked for, matched by its `re_…` id. A refund
 * still on its way is not listed; absent when none has ended, so a payment without refunds reads as before.
 */
function refundOutcomesOf(payment: Record<string, unknown>): { refundOutcomes?: NonNullable<ProviderEvent['refundOutcomes']> } {
  const refunds = asObject(payment._embedded)?.refunds;
  if (!Array.isArray(refunds)) return {};
  const outcomes: NonNullable<ProviderEvent['refundOutcomes']> = [];
  for (const item of refunds) {
    const refund = asObject(item);
    const id = text(refund?.id);
    const status = REFUND_ENDS.get(text(refund?.status) ?? '');
    if (id === null || status === undefined) continue;
    outcomes.push(status === 'failed' ? { id, status, reason: `Mollie refund ${text(refund?.status)}` } : { id, status });
  }
  return outcomes.length > 0 ? { refundOutcomes: outcomes } : {};
}

/**
 * What the payment's ended refunds add to its event's key: nothing when none has ended (the key is
 * as before), else `:refunds=` and a digest of their ids and statuses. A refund that ends need not
 * move an amount Mollie shows (`amountRefunded` counts a refund from its creation), so without this
 * the hint that reports it could be the same event again, and the refund the module sent would never
 * be confirmed or failed. A digest keeps the key short with many refunds.
 */
function endedRefundsKey(payment: Record<string, unknown>): string {
  const outcomes = refundOutcomesOf(payment).refundOutcomes;
  if (!outcomes) return '';
  const listed = outcomes.map((o) => `${o.id}=${o.status}`).sort().join(',');
  return `:refunds=${createHash('sha256').update(listed).digest('base64url').slice(0, 16)}`;
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
    eventId: `${paymentId}:${status}:${amountField(fields, 'amountRefunded')}:${amountField(fields, 'amountChargedBack')}${endedRefundsKey(fields)}`,
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

const NOT_FOUND: Fetched = { found: false };

/**
 * One fetch of a payment. A hint joins a fetch that has not started yet, never one that has, so
 * what Mollie answers it is at least as new as the hint; a failure answers only the hints that
 * joined the fetch that failed.
 */
interface Fetch {
  /** When it called Mollie, in the adapter's sequence of hints and calls; null while it waits for the one before it. */
  startedAt: number | null;
  /** The answer (a 404 included) or the failure; settles by the fetch timeout at the latest. */
  result: Promise<Fetched>;
}

/**
 * A call's share of the budgets: `known` for a payment the service knows, `unknown` for any other
 * id, which is also charged to the address that named it. Given back when Mollie answers the call,
 * or never will: an abandoned (timed out) call keeps its share until then.
 */
interface Share {
  lane: 'known' | 'unknown';
  sender: string;
}

type MollieClient = ReturnType<MollieClientPackage['createMollieClient']>;

/** One endpoint's client, its fetches, and what Mollie answered it lately. */
interface EndpointFetches {
  client: MollieClient;
  apiKey: string;
  /** By payment id: the fetch running now, and the one that starts when it ends. */
  running: Map<string, Fetch>;
  next: Map<string, Fetch>;
  /** Payments Mollie answered for this endpoint's key, or that the service knows: hints for them take the known lane. */
  known: ExpiringSet;
  /** Payments Mollie answered 404 for lately: not asked for again until forgotten. */
  notFound: ExpiringSet;
  /** Client calls not answered yet, abandoned ones included: in all, and for payments the service does not know. */
  inFlight: number;
  unknownInFlight: number;
  /**
   * What each sender address has in flight, and which ids it named that Mollie answered 404 for
   * (with this endpoint's key: an id unknown to one key may be another's payment).
   */
  senders: SenderBudgets;
}

class FetchTimeout extends Error {}

/** Mollie's answer to a payment fetch as the receive path needs it: found, absent (404), or an Error (503). */
function classify(err: unknown, paymentId: string, apiKey: string, timeoutMs: number): Fetched {
  if (err instanceof FetchTimeout) throw new Error(`Mollie did not answer for payment ${paymentId} within ${timeoutMs} ms`);
  const statusCode = (err as { statusCode?: unknown } | null)?.statusCode;
  if (statusCode === 404) return NOT_FOUND;
  if (typeof statusCode === 'number') throw new Error(`Mollie answered ${statusCode} for payment ${paymentId}`);
  // A network failure: the client's message names the URL and the reason; never the key, and made sure of.
  const message = String((err as Error | null)?.message ?? err).split(apiKey).join('[redacted]').slice(0, 200);
  throw new Error(`Mollie could not be reached for payment ${paymentId}: ${message}`);
}

/** `promise`, or a FetchTimeout after `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FetchTimeout()), ms);
    timer.unref?.();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Mollie (docs/webhooks.md#mollie): a delivery is an unsigned hint, `id=tr_…`, that a payment
 * changed. It is authenticated by fetching the payment from Mollie's API with the endpoint's key
 * (through the official `@mollie/api-client`, its refunds and chargebacks embedded) before the
 * answer; what is recorded is the payment Mollie returned. The package is loaded once, when a Mollie
 * endpoint is first checked: a host with no such endpoint needs none.
 *
 * What hints can make it fetch is bounded (docs/security.md#what-an-unsigned-sender-can-make-the-service-spend):
 * hints for one payment share a fetch that starts after each of them; payments the service knows
 * have a lane that ids it has never seen cannot fill; each address has a share of the other lane; a
 * 404 is remembered for a minute, and an address that names many such ids is refused without a call.
 */
export function createMollieProvider(options: MollieProviderOptions = {}): ProviderAdapter {
  const settings = { ...DEFAULTS, ...options };
  const senderLimits = { ...SENDER_DEFAULTS, ...options.senderLimits };
  const limitedLog = new Logger('MollieHints');
  /** The client package, loaded once; null when it is not installed. */
  const clientPackage = optionalPackage(MOLLIE_PACKAGE, options.loadClient ?? (() => require(MOLLIE_PACKAGE) as MollieClientPackage));
  const byEndpoint = new WeakMap<ProviderEndpoint, EndpointFetches>();
  /** Orders hints and calls: a hint may share a fetch that started after it arrived, never before. */
  let sequence = 0;

  function fetchesOf(endpoint: ProviderEndpoint): EndpointFetches {
    let fetches = byEndpoint.get(endpoint);
    if (fetches) return fetches;
    const pkg = clientPackage();
    if (!pkg) throw new Error(`endpoint "${endpoint.id}" needs the ${MOLLIE_PACKAGE} package: npm install ${MOLLIE_PACKAGE}`);
    const { apiKey, apiBaseUrl } = endpoint;
    if (!apiKey || !apiBaseUrl) throw new Error(`endpoint "${endpoint.id}" has no Mollie API key`);
    const client = pkg.createMollieClient({ apiKey, apiEndpoint: `${apiBaseUrl.replace(/\/+$/, '')}/v2/` });
    fetches = {
      client,
      apiKey,
      running: new Map(),
      next: new Map(),
      known: new ExpiringSet(settings.maxRememberedPayments, KNOWN_MEMORY_MS),
      notFound: new ExpiringSet(settings.maxRememberedPayments, settings.notFoundMemoryMs),
      inFlight: 0,
      unknownInFlight: 0,
      senders: new SenderBudgets(senderLimits),
    };
    byEndpoint.set(endpoint, fetches);
    return fetches;
  }

  /** Whether one more call for an id nobody vouched for fits the endpoint's lane and the sender's share. */
  function unknownRoom(fetches: EndpointFetches, sender: string): boolean {
    return (
      fetches.inFlight < settings.maxFetchesInFlight &&
      fetches.unknownInFlight < settings.maxUnknownFetchesInFlight &&
      fetches.senders.hasRoom(sender, 'unknown')
    );
  }

  /**
   * Whether the service knows the payment (registered, or in an event); false when it cannot tell,
   * and when the sender already has its share of questions unanswered (the service answers the
   * questions of every sender together, a batch at a time: one address cannot fill a batch).
   */
  async function knows(fetches: EndpointFetches, paymentId: string, context: ReceiveContext): Promise<boolean> {
    if (!fetches.senders.takeLookup(context.sender)) return false;
    try {
      const known = await Promise.resolve()
        .then(() => context.knowsPayment(paymentId))
        .then(
          (answer) => answer === true,
          () => false,
        );
      if (known) fetches.known.add(paymentId, context.nowMs);
      return known;
    } finally {
      fetches.senders.giveLookup(context.sender);
    }
  }

  /**
   * The share a new call for `paymentId` takes now, or why there is none: the sender named too many
   * payments Mollie does not have (`rate_limited`), or a lane or the sender's share of it is full
   * (`busy`); `ask` when the service must first say whether it knows the payment (`known`: what it
   * said). An address refused for guessing is not worth a question: only what this process has
   * seen Mollie answer counts as known for it.
   */
  function admit(fetches: EndpointFetches, paymentId: string, context: ReceiveContext, known?: boolean): Share | 'rate_limited' | 'busy' | 'ask' {
    const { sender, nowMs } = context;
    const limited = fetches.senders.limited(sender, nowMs);
    const knownHere = fetches.known.has(paymentId, nowMs) || known === true;
    if (!knownHere && known === undefined && !limited && !unknownRoom(fetches, sender)) return 'ask';
    if (knownHere) {
      if (fetches.inFlight >= settings.maxFetchesInFlight || !fetches.senders.take(sender, 'known')) return 'busy';
      fetches.inFlight++;
      return { lane: 'known', sender };
    }
    if (limited) return 'rate_limited';
    if (!unknownRoom(fetches, sender) || !fetches.senders.take(sender, 'unknown')) return 'busy';
    fetches.inFlight++;
    fetches.unknownInFlight++;
    return { lane: 'unknown', sender };
  }

  function give(fetches: EndpointFetches, share: Share): void {
    fetches.inFlight--;
    fetches.senders.give(share.sender, share.lane);
    if (share.lane === 'unknown') fetches.unknownInFlight--;
  }

  /** Calls Mollie for the payment now; the fetch is the payment's running one until it settles. */
  function start(fetches: EndpointFetches, paymentId: string, share: Share, nowMs: number, fetch: Fetch): Promise<Fetched> {
    fetch.startedAt = ++sequence;
    let call: Promise<object>;
    try {
      call = Promise.resolve(fetches.client.payments.get(paymentId, { embed: ['refunds', 'chargebacks'] }));
    } catch (err) {
      call = Promise.reject(err);
    }
    // The share goes back once: when Mollie answers, or when the call is given up on for good.
    let abandon: NodeJS.Timeout | undefined;
    let given = false;
    const answered = () => {
      if (given) return;
      given = true;
      clearTimeout(abandon);
      give(fetches, share);
    };
    abandon = setTimeout(answered, settings.abandonAfterMs);
    abandon.unref?.();
    call.then(answered, answered);
    const result = within(call, settings.fetchTimeoutMs).then(
      (payment): Fetched => {
        const event = paymentEvent(paymentId, payment);
        fetches.known.add(paymentId, nowMs);
        return { found: true, event };
      },
      (err) => {
        const fetched = classify(err, paymentId, fetches.apiKey, settings.fetchTimeoutMs);
        fetches.notFound.add(paymentId, nowMs);
        return fetched;
      },
    );
    fetches.running.set(paymentId, fetch);
    const ended = () => {
      if (fetches.running.get(paymentId) === fetch) fetches.running.delete(paymentId);
    };
    result.then(ended, ended);
    return result;
  }

  /**
   * A fetch of the payment that starts now, or when the one running ends (one waits at most: hints
   * that come meanwhile join it). Mollie is not asked again when the running one found no payment.
   */
  function launch(fetches: EndpointFetches, paymentId: string, share: Share, nowMs: number): Fetch {
    const fetch: Fetch = { startedAt: null, result: Promise.resolve(NOT_FOUND) };
    const running = fetches.running.get(paymentId);
    if (!running) {
      fetch.result = start(fetches, paymentId, share, nowMs, fetch);
      return fetch;
    }
    fetch.result = running.result
      .then(
        (before) => before,
        () => null,
      )
      .then((before) => {
        if (fetches.next.get(paymentId) === fetch) fetches.next.delete(paymentId);
        if (before !== null && !before.found) {
          give(fetches, share);
          return NOT_FOUND;
        }
        return start(fetches, paymentId, share, nowMs, fetch);
      });
    fetches.next.set(paymentId, fetch);
    return fetch;
  }

  /** A fetch of the payment that began after `arrival`, or has not begun: one a hint of then may share. */
  function joinable(fetches: EndpointFetches, paymentId: string, arrival: number): Fetch | undefined {
    const running = fetches.running.get(paymentId);
    if (running && running.startedAt !== null && running.startedAt > arrival) return running;
    return fetches.next.get(paymentId);
  }

  /** The fetch that answers a hint arriving now, or why the hint is refused unfetched. */
  async function fetchFor(fetches: EndpointFetches, paymentId: string, context: ReceiveContext): Promise<Fetch | 'rate_limited' | 'busy'> {
    const arrival = ++sequence;
    const shared = joinable(fetches, paymentId, arrival);
    if (shared) return shared;
    const limited = fetches.senders.limited(context.sender, context.nowMs);
    if (!limited && fetches.notFound.has(paymentId, context.nowMs)) return { startedAt: null, result: Promise.resolve(NOT_FOUND) };
    let share = admit(fetches, paymentId, context);
    if (share === 'ask') {
      const known = await knows(fetches, paymentId, context);
      // Asking took turns of the event loop: another hint may have set up a fetch this one can share.
      const sharedSince = joinable(fetches, paymentId, arrival);
      if (sharedSince) return sharedSince;
      share = admit(fetches, paymentId, context, known);
    }
    if (share === 'ask') throw new Error('unreachable: the service has answered');
    if (typeof share === 'string') return share;
    return launch(fetches, paymentId, share, context.nowMs);
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
    // The built-in provider's commands load the package on their own; a provider given a loader uses it.
    commands: options.loadClient ? createMollieCommands(clientPackage) : mollieCommands,

    // Polling (docs/operations.md#when-webhooks-stop): the payment fetched as a hint fetches it, but
    // outside the hints' budgets and sharing (a poll is the module's own call, paced by the poller).
    readPayment: {
      ready: (endpoint) => typeof endpoint.apiKey === 'string' && endpoint.apiKey !== '',
      async read(target: PollTarget, context: ReadContext): Promise<PaymentReading> {
        const fetches = fetchesOf(context.endpoint);
        const paymentId = target.providerPaymentId;
        let payment: object;
        try {
          payment = await within(Promise.resolve().then(() => fetches.client.payments.get(paymentId, { embed: ['refunds', 'chargebacks'] })), context.timeoutMs);
        } catch (err) {
          // 404: Mollie has no such payment for this key; anything else is no answer (retried later).
          try {
            classify(err, paymentId, fetches.apiKey, context.timeoutMs);
            return { found: false };
          } catch (failure) {
            const limited = (err as { statusCode?: unknown } | null)?.statusCode === 429;
            throw new ProviderApiError((failure as Error).message, null, limited ? RATE_LIMITED : undefined);
          }
        }
        let event: ReceivedEvent;
        try {
          event = paymentEvent(paymentId, payment);
        } catch (err) {
          throw new ProviderApiError((err as Error).message);
        }
        const body = JSON.parse(event.body) as Record<string, unknown>;
        return {
          found: true,
          status: text(body.status) ?? 'unknown',
          refunded: amountField(body, 'amountRefunded'),
          event: factOf(body) === null ? null : { eventType: event.eventType, body },
        };
      },
    },

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
      const fetches = fetchesOf(context.endpoint);
      const fetch = await fetchFor(fetches, paymentId, context);
      if (fetch === 'rate_limited') return { ok: false, error: 'rate_limited' };
      if (fetch === 'busy') throw new Error(`${fetches.inFlight} fetches from Mollie are unanswered: payment ${paymentId} is not fetched now`);
      // Each hint waits its own bound, whether its fetch started at once or after the one before it.
      const fetched = await within(fetch.result, settings.fetchTimeoutMs).catch((err: unknown) => {
        if (err instanceof FetchTimeout) throw new Error(`Mollie did not answer for payment ${paymentId} within ${settings.fetchTimeoutMs} ms`);
        throw err;
      });
      if (!fetched.found) {
        if (fetches.senders.notFound(context.sender, paymentId, context.nowMs)) {
          limitedLog.warn(
            `endpoint "${context.endpoint.id}": hints from ${maskedAddress(context.sender)} named more than ${senderLimits.notFound} payments Mollie does not have ` +
              `within ${senderLimits.windowMs / 1000} s; its hints for payments not seen before are answered 429 until they age out ` +
              '(behind a proxy not named in TRUSTED_PROXIES every client shares the proxy\'s address)',
          );
        }
        throw new MalformedPayloadError(`Mollie has no payment ${paymentId} for this endpoint's API key`);
      }
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
        ...refundOutcomesOf(body),
      };
    },
  };
}

/** The built-in Mollie provider. */
export const mollieProvider = createMollieProvider();
