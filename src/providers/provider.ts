import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import { exceedsJsonDepth, TOO_DEEP_DETAIL } from '../common/json-depth';
import { ID_MAX_LENGTH, isPrintableId } from '../common/printable';
import type { ProviderEvent, RawAmount } from '../common/provider-event';

/** What a signature header yields: the content signed besides the body, and the candidates. */
export interface SignatureParts {
  /** Signed unix seconds, checked against the tolerance; null where the scheme signs none. */
  timestamp: number | null;
  /** Signed bytes that precede the raw body (`<t>.`, `<id>.<t>.`). */
  prefix: string;
  /** Decoded `v1` signatures; empty when the header has no `v1` entry (invalid_signature). */
  candidates: Buffer[];
}

/** The identity of an event a delivery carries, stored on its inbox row. */
export interface EnvelopeIdentity {
  eventId: string;
  eventType: string;
  /** The provider's id of the payment the event is about (or of its own resource). */
  resourceId: string | null;
  /** The provider's delivery id, where it sends one; never part of a key. */
  deliveryId: string | null;
  /**
   * The merchant account the event declares (Stripe `account`, Factuarea `account.id`, Standard
   * `data.account_id`…), or null. On an endpoint of many accounts it is the event's account.
   */
  account: string | null;
  /** The envelope's `api_version` (Stripe, Factuarea), else null; kept in the archive. */
  apiVersion: string | null;
}

/** One event of a delivery, ready to be recorded: its identity and the body its row stores. */
export interface ReceivedEvent extends EnvelopeIdentity {
  /**
   * The JSON text stored as the event's body, which processing normalizes later: the delivery's
   * bytes as signed for a one-event delivery, an item of a batch, or an object fetched from the
   * provider.
   */
  body: string;
}

/** Why a delivery is refused, as the receive path answers it (docs/webhooks.md#checks-and-answers). */
export const DELIVERY_REFUSALS = ['missing_signature', 'invalid_signature', 'timestamp_out_of_tolerance', 'malformed_payload', 'unavailable', 'rate_limited'] as const;
export type DeliveryRefusal = (typeof DELIVERY_REFUSALS)[number];

/** What an adapter made of a delivery: its events (one or many, all authentic), or why it is refused. */
export type ReceiveResult =
  | { ok: true; /** the index of the configured secret that verified it, for the rotation metrics; null when none did */ secretIndex: number | null; events: ReceivedEvent[] }
  | { ok: false; error: DeliveryRefusal; detail?: string };

/** A delivery as it arrived: its headers and its bytes, not parsed. */
export interface RawDelivery {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** What an endpoint of this provider is configured with, as an adapter sees it. */
export interface ProviderEndpoint {
  id: string;
  /** The one account of a single-account endpoint; null on an endpoint of many. */
  merchantAccountId: string | null;
  /** The provider's API key and base URL, where the endpoint has them (never logged or shown). */
  apiKey?: string;
  apiBaseUrl?: string;
  /** The provider's own endpoint fields (`capture`, `payloadStyle`…), as validated by `checkEndpoint`. */
  settings: Readonly<Record<string, unknown>>;
}

/** A live configured secret, decoded by the adapter's `prepareKey` once, at start. */
export interface LiveKey {
  /** Its place in the endpoint's `secrets`. */
  index: number;
  key: object;
}

export interface ReceiveContext {
  endpoint: ProviderEndpoint;
  /** The endpoint's secrets that have not expired, decoded, in their configured order. */
  keys: readonly LiveKey[];
  nowMs: number;
  /** The clock skew accepted on a signed timestamp, both directions; 0: not checked. */
  toleranceSeconds: number;
  /**
   * The address of the client that sent the delivery: its connection's, or behind a trusted proxy
   * the client the proxy names. An adapter that calls out for an unsigned delivery keeps its
   * per-sender budgets by it (docs/providers.md#adapters-that-call-out).
   */
  sender: string;
  /**
   * Whether the service knows a payment of this endpoint by the provider's id: registered for an
   * order, or named by an event recorded before. False when it cannot tell (the database away).
   * Questions asked at once share one pair of index lookups, and wait their turn at most a second:
   * ask only when the answer decides something.
   */
  knowsPayment(resourceId: string): Promise<boolean>;
}

/** The 2xx answer of a delivery whose every event is recorded (now or before). */
export interface DeliveryAnswer {
  contentType: string;
  body: string;
}

/** How each event of a delivery was recorded. */
export interface RecordedEvent {
  status: 'accepted' | 'duplicate';
  eventId: string;
}

/**
 * A provider's wire format: how a delivery is authenticated (an HMAC over the raw bytes, an
 * asymmetric signature, fields signed inside the body, or a fetch from the provider's API), which
 * events it carries, how each maps to the payment lifecycle, and how it is answered. The built-in
 * providers are instances of it, and so is a provider a host registers (`providers` option). The
 * receive path around it is the same for every provider: the endpoint, the size limit and the
 * budget of unverified bytes before, the printable ids and the one statement that records a
 * delivery's events after (docs/providers.md).
 */
export interface ProviderAdapter {
  /** The `provider` of an endpoint definition; a host's own may not take a built-in name. */
  readonly name: string;
  /** Lower-case names of the headers kept on the inbox row (signature values are redacted on read). */
  readonly storedHeaders: readonly string[];
  /** Lower-case names of headers whose values are signatures. */
  readonly signatureHeaders: readonly string[];
  /**
   * Dotted paths of fields in an event's stored body whose values are signatures (Adyen's
   * `additionalData.hmacSignature`): shown `[redacted]` by the archive, as signature headers are.
   */
  readonly signatureFields?: readonly string[];
  /** Whether its events declare a merchant account, so that one endpoint may serve many. */
  readonly declaresAccount: boolean;
  /**
   * `required`: an endpoint must have at least one secret, and deliveries are checked against
   * them. `none`: a delivery proves itself another way (the adapter fetches it from the provider),
   * and an endpoint has no secret.
   */
  readonly secrets: 'required' | 'none';
  /** Why a configured secret's form is refused at start (the text follows "secret #n "), or null. */
  checkSecret?(secret: string): string | null;
  /**
   * Why a well-formed secret is too short to be a real one (follows "secret #n "), or null; checked
   * once every endpoint is well-formed. Default: shorter than 8 characters.
   */
  weakSecret?(secret: string): string | null;
  /** The endpoint fields of its own it accepts beside the common ones (`capture`, `payloadStyle`…). */
  readonly endpointFields?: readonly string[];
  /**
   * Why an endpoint's provider-specific fields are refused at start (the text follows
   * `endpoint "<id>": `), or null. `settings` holds the fields named in `endpointFields` that the
   * definition sets; `apiKey` and `apiBaseUrl` are there when the provider uses them (`usesApi`).
   */
  checkEndpoint?(endpoint: { apiKey?: string; apiBaseUrl?: string; settings: Readonly<Record<string, unknown>> }): string | null;
  /** Whether its endpoints may have `apiKey` and `apiBaseUrl`, and the base URL's default. */
  readonly usesApi?: { defaultBaseUrl: string };
  /** Decodes a configured secret into what `receive` checks with (an HMAC key, a public key…), once. */
  prepareKey(secret: string): object;
  /**
   * Checks a delivery and reads its events: the checks of docs/webhooks.md#checks-and-answers in
   * their order (a signature header absent, no candidate matching a live key, the timestamp out of
   * tolerance, then the body). The events it returns are recorded in one transaction; throwing
   * MalformedPayloadError is a `400 malformed_payload`, and any other throw a `503`, as is no answer
   * within `receiveTimeoutMs` (docs/providers.md#what-the-module-does-with-an-adapters-values).
   */
  receive(delivery: RawDelivery, context: ReceiveContext): ReceiveResult | Promise<ReceiveResult>;
  /**
   * Maps a recorded event to the payment domain's vocabulary; null for a type or resource the
   * service does not act on (the delivery ends `ignored`). Synchronous and free of I/O: it runs with
   * the delivery's row locked (a promise is awaited within `adapterTimeoutMs`, a throw fails the attempt).
   */
  normalize(body: Record<string, unknown>, eventType: string, endpoint?: ProviderEndpoint): ProviderEvent | null;
  /** The answer once every event is recorded; default `{"status":…,"eventId":…}` of the first. */
  answer?(events: readonly RecordedEvent[]): DeliveryAnswer;
  /**
   * For events that name a change without carrying it (Stripe's thin notifications): the state to
   * apply, read from the provider's API when the event is processed, outside the processing
   * transaction (never on the receive path).
   */
  readonly fetchesState?: StateFetcher;
  /** Refunds, captures and voids the shop asks for (docs/commands.md), where the provider takes them. */
  readonly commands?: PaymentCommands;
  /**
   * How the provider is asked about a payment whose webhook never came (polling,
   * docs/operations.md#when-webhooks-stop), where it has a status read: without it, an endpoint of
   * the provider cannot be polled (`pollAfterSeconds` is refused at start).
   */
  readonly readPayment?: PaymentReader;
  /**
   * (v4) A provider's notification about its own health rather than a payment (a Stripe thin
   * `v2.core.health.*` alert): what an endpoint's health shows of it (docs/operations.md#endpoint-health),
   * or null for any other event. Synchronous and free of I/O, like `normalize`, and read only for an
   * event `normalize` does not act on.
   */
  healthAlert?(body: Record<string, unknown>, eventType: string, endpoint?: ProviderEndpoint): HealthAlert | null;
}

/** A provider's health alert about an endpoint (`healthAlert`). */
export interface HealthAlert {
  /** What the notification says besides its type and event id, none of it personal data (shown as it is). */
  details: Record<string, string | number | boolean | null | Record<string, string | null>>;
  /** It says events may have been lost: the endpoint's open payments are polled at once. */
  eventsMayBeLost: boolean;
}

/**
 * How an adapter reads the state a recorded event names. `wants` decides from the stored event
 * alone (cheap, no I/O) whether it needs a fetch; `fetch` reads it with the endpoint's API key.
 */
export interface StateFetcher {
  /** `endpoint`: the event's endpoint as configured now (undefined when it is no longer configured). */
  wants(body: Record<string, unknown>, eventType: string, endpoint: ProviderEndpoint | undefined): boolean;
  /**
   * The body and type `normalize` then reads (as if the provider had sent the state itself), or
   * `{ found: false }` when the provider says the object does not exist (the delivery ends
   * `rejected`/`resource_not_found`). Any throw is a processing failure, retried within the
   * delivery's attempts; a ProviderApiError's `retryAfterMs` defers the next attempt. `endpoint`
   * is the event's endpoint as configured now (undefined when it is no longer configured).
   */
  fetch(body: Record<string, unknown>, eventType: string, endpoint: ProviderEndpoint | undefined, context: FetchContext): Promise<FetchedState>;
}

/** The state a recorded event names, as the provider's API answered it. */
export type FetchedState = { found: true; body: Record<string, unknown>; eventType: string } | { found: false };

export interface FetchContext {
  /** The longest wait for one answer of the provider's API. */
  timeoutMs: number;
}

/**
 * The provider's API failed while processing (network, timeout, 429, 5xx, a key refused): the
 * delivery is retried like any processing failure, not before `retryAfterMs` when the provider said
 * when. Its message never holds the API key.
 */
export class ProviderApiError extends Error {
  readonly code: string;
  constructor(
    message: string,
    readonly retryAfterMs: number | null = null,
    code = 'provider_api_unavailable',
  ) {
    super(message);
    this.name = 'ProviderApiError';
    this.code = code;
  }
}

/** The code of a ProviderApiError for a `429`: the provider asks the module to slow down (with or without `retryAfterMs`). */
export const RATE_LIMITED = 'provider_rate_limited';

/** An authentic delivery that cannot be recorded as an event (400 malformed_payload). */
export class MalformedPayloadError extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'MalformedPayloadError';
  }
}

// Any whole number that stays exact as a double: a value in milliseconds is a timestamp, far out of
// tolerance (timestamp_out_of_tolerance), not a missing one.
const UNIX_SECONDS = /^\d{1,15}$/;
/** Paymos, Factuarea and Stripe sign in lower-case hex: an upper-case spelling of the same bytes is not what the provider sent. */
const HEX_SHA256 = /^[0-9a-f]{64}$/;
export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function parseUnixSeconds(value: string | undefined): number | null {
  return value !== undefined && UNIX_SECONDS.test(value) ? Number(value) : null;
}

/** A lower-case hex SHA-256 signature, or null (a malformed or non-canonical candidate can never match). */
export function decodeHexSignature(value: string): Buffer | null {
  return HEX_SHA256.test(value) ? Buffer.from(value, 'hex') : null;
}

/**
 * Parses `k=v,k=v` signature headers (Paymos, Factuarea, Stripe). Returns null when an entry
 * has no `=`; keeps repeated keys in order.
 */
export function parseKeyValueHeader(value: string | undefined): Array<[string, string]> | null {
  if (value === undefined || value.trim() === '') return null;
  const entries: Array<[string, string]> = [];
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return null;
    entries.push([part.slice(0, eq).trim(), part.slice(eq + 1).trim()]);
  }
  return entries;
}

/** The `t=…,v1=…` scheme shared by Factuarea and Stripe. */
export function parseTimestampedHeader(value: string | undefined): SignatureParts | null {
  const entries = parseKeyValueHeader(value);
  if (!entries) return null;
  const stamps = entries.filter(([k]) => k === 't');
  if (stamps.length !== 1) return null;
  const timestamp = parseUnixSeconds(stamps[0][1]);
  if (timestamp === null) return null;
  return { timestamp, prefix: `${stamps[0][1]}.`, candidates: v1Candidates(entries) };
}

export function v1Candidates(entries: Array<[string, string]>): Buffer[] {
  const out: Buffer[] = [];
  for (const [k, v] of entries) {
    if (k !== 'v1') continue;
    const decoded = decodeHexSignature(v);
    if (decoded) out.push(decoded);
  }
  return out;
}

/**
 * A required id string; absent or unusable ids are malformed. Usable is printable text (see
 * common/printable): a control or format character, a line separator or a lone surrogate would make
 * the stored row read as something else, or not be storable at all.
 */
export function requireId(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new MalformedPayloadError(`${what} is missing`);
  if (!isPrintableId(value, ID_MAX_LENGTH)) {
    throw new MalformedPayloadError(`${what} is not a printable string of at most ${ID_MAX_LENGTH} characters`);
  }
  return value;
}

/** An optional id: non-strings and empty strings read as absent; unusable strings are malformed. */
export function optionalId(value: unknown, what: string): string | null {
  if (typeof value !== 'string' || value.length === 0) return null;
  return requireId(value, what);
}

/**
 * A value that is read, never required, and only informative (the API version): a missing or
 * unusable value reads as absent (never malformed), so it is never stored unprintable.
 */
export function lenientId(value: unknown): string | null {
  return isPrintableId(value, ID_MAX_LENGTH) ? value : null;
}

/** An id header, when sent, must name the body's event. */
export function checkIdHeader(headers: IncomingHttpHeaders, name: string, eventId: string): void {
  const value = header(headers, name);
  if (value !== undefined && value !== eventId) {
    throw new MalformedPayloadError(`${name} header does not match the body's event id`);
  }
}

export function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/* Defensive readers for normalize(): a weird body never throws, it reads as absent. */

/** A non-empty string, else null. */
export function text(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

/** Unix seconds (a JSON number) as a Date; anything else, or out of Date's range, is null. */
export function unixDate(value: unknown): Date | null {
  if (typeof value !== 'number' || !Number.isFinite(value)) return null;
  const date = new Date(value * 1000);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** An ISO 8601 date-time with an explicit offset (`Z` or `±hh:mm`). */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i;

/** An ISO 8601 instant (a JSON string with its offset) as a Date; another type, another format or an impossible date is null. */
export function isoDate(value: unknown): Date | null {
  if (typeof value !== 'string' || !ISO_INSTANT.test(value)) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** A decimal-string amount as sent; missing or another JSON type is null (parsed later, against the currency). */
export function decimal(value: unknown): RawAmount | null {
  return typeof value === 'string' ? { form: 'decimal', value } : null;
}

/** A minor-units amount as sent (number, or numeric string); missing or another JSON type is null. */
export function minor(value: unknown): RawAmount | null {
  return typeof value === 'number' || typeof value === 'string' ? { form: 'minor', value } : null;
}


/**
 * A delivery's bytes as one JSON object, or MalformedPayloadError: UTF-8 (bytes that are not would
 * be stored altered, so the archive would no longer hold what was signed), JSON, nested no deeper
 * than the limit every reader of the archive can recurse through, and an object. Returns the text
 * too, which is what a one-event delivery stores.
 */
export function readJsonObject(bytes: Buffer): { text: string; body: Record<string, unknown> } {
  if (!isUtf8(bytes)) throw new MalformedPayloadError('the body is not valid UTF-8');
  const text = bytes.toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new MalformedPayloadError('the body is not JSON');
  }
  if (exceedsJsonDepth(body)) throw new MalformedPayloadError(TOO_DEEP_DETAIL);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new MalformedPayloadError('the body is not a JSON object');
  return { text, body: body as Record<string, unknown> };
}

/** The default answer of a delivery: `{"status":"accepted"|"duplicate","eventId":…}` of its (first) event. */
export function jsonAnswer(events: readonly RecordedEvent[]): DeliveryAnswer {
  const [first] = events;
  return { contentType: 'application/json; charset=utf-8', body: JSON.stringify({ status: first.status, eventId: first.eventId }) };
}

/**
 * A payment command the shop asked for (docs/commands.md): a refund of an amount, a capture of an
 * authorized payment (its whole amount, or part of it), a void of an authorization. Amounts are
 * given in minor units and as the decimal string of the payment's currency, for the client that
 * wants either.
 */
export type PaymentCommand =
  | { type: 'refund'; refundId: string; amount: CommandAmount; reason: string | null }
  | { type: 'capture'; amount: CommandAmount }
  | { type: 'void' };

export interface CommandAmount {
  minor: bigint;
  /** The same amount as a decimal string in the currency's exponent (`"49.90"`, `"4990"` in JPY). */
  decimal: string;
  /** ISO 4217, upper case. */
  currency: string;
}

/** The payment a command is about, as the provider knows it. */
export interface CommandTarget {
  /** The provider's id of the payment (PaymentIntent, pspReference, Mollie payment, PayPal order…). */
  providerPaymentId: string;
  merchantAccountId: string;
  /** The payment's whole amount. */
  amount: CommandAmount;
  /**
   * The provider's ids of the captures recorded for the payment, oldest first (a PayPal refund names
   * the capture, not the order); empty where the provider has none of its own.
   */
  captureIds: readonly string[];
}

export interface CommandContext {
  /** The endpoint whose credentials the command is sent with (one of the payment's provider and account). */
  endpoint: ProviderEndpoint;
  /**
   * The provider's idempotency key: the same on every attempt of one command, so a repeat after a
   * crash answers the first result (the refund's id, `<payment id>:capture`, `<payment id>:void`).
   */
  idempotencyKey: string;
  /** The longest wait for the provider's answer. */
  timeoutMs: number;
}

/**
 * What the provider answered a command. `ok`: accepted (a refund with its id, and `succeeded` when
 * the answer already says the money went back). Otherwise `retryable` (a network error, a timeout,
 * `409` for the same key in flight, `429`, `5xx`: the same key again later, not before
 * `retryAfterMs` when the provider said when) or refused for good (another `4xx`), with the
 * provider's reason. `mayHaveHappened`: no clear answer came back. A reason never holds a credential.
 */
export type CommandAnswer =
  | { ok: true; providerRefundId?: string | null; status?: 'pending' | 'succeeded' }
  | { ok: false; retryable: boolean; reason: string; retryAfterMs?: number; mayHaveHappened?: boolean };

/**
 * How a provider takes payment commands through its official client (an optional member of the
 * adapter: a provider without it, or an endpoint without API credentials, answers
 * `422 not_supported`). `send` answers rather than throws; a throw counts as a retryable failure
 * whose effect may have happened.
 */
export interface PaymentCommands {
  /** The commands this provider takes. */
  readonly types: readonly PaymentCommand['type'][];
  /** Whether this endpoint holds what the commands need (an API key, OAuth client credentials…). */
  ready(endpoint: ProviderEndpoint): boolean;
  send(command: PaymentCommand, target: CommandTarget, context: CommandContext): Promise<CommandAnswer>;
}

/** The payment a poll asks about, as the provider knows it. */
export interface PollTarget {
  /** The provider's id of the payment (PaymentIntent, Mollie payment, PayPal order…): the service's `resourceId` of it. */
  providerPaymentId: string;
  merchantAccountId: string;
  /** The payment's whole amount. */
  amount: CommandAmount;
  /** The provider's ids of the captures recorded for the payment, oldest first (PayPal). */
  captureIds: readonly string[];
}

export interface ReadContext {
  /** The endpoint whose credentials ask (one of the payment's provider that serves its account). */
  endpoint: ProviderEndpoint;
  /** The longest wait for the provider's answer. */
  timeoutMs: number;
}

/**
 * What the provider says of a payment now. `status` is the provider's own word for it (`succeeded`,
 * `paid`, `COMPLETED`…) and `refunded` the amount it says went back (its own spelling, `0` when
 * none): with the payment's id they make the poll's event id
 * `poll:<providerPaymentId>:<status>:<refunded>`, the business fact, so that one fact is recorded
 * once however often it is read. `event`: the body and type the adapter's `normalize` reads (as if
 * the provider had sent the state itself; its `resourceId` the payment's id), or null when the status
 * says nothing the service acts on (nothing is recorded). `found: false`: the provider does not know
 * the payment.
 */
export type PaymentReading =
  | { found: true; status: string; refunded: string; event: { eventType: string; body: Record<string, unknown> } | null }
  | { found: false };

/**
 * How a provider's payment is read through its official client, for polling. `read` throws a
 * ProviderApiError when the provider did not answer usefully (network, timeout, `5xx`, a key
 * refused; a `429` with the code RATE_LIMITED and, where the provider said, `retryAfterMs`); its
 * message never holds a credential.
 */
export interface PaymentReader {
  /** Whether this endpoint holds what the read needs (an API key, OAuth client credentials…). */
  ready(endpoint: ProviderEndpoint): boolean;
  read(target: PollTarget, context: ReadContext): Promise<PaymentReading>;
}
