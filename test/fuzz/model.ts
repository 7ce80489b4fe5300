/**
 * The fuzzer's model of a delivery (CONTRACT §2): what a generated case sends, and which answers
 * the contract allows for it. A case is plain data (printed by fast-check when it fails); `build`
 * turns it into bytes and header lines at the moment it is sent, signing over the exact bytes.
 *
 * How the expected answer is decided, in the contract's order of checks:
 * - unknown endpoint: 404 only;
 * - body over the limit: 413 only (Node's own 431 is allowed when the header block is too large);
 * - signature: `fail` when the delivery is not authentic — signed with a secret the endpoint does
 *   not hold, out of tolerance, or changed after signing (a signed byte, the signature, its
 *   timestamp or `webhook-id`): 401 only, never 2xx. `maybe` when a change leaves the question
 *   open (a signature header repeated, an entry appended beside the real one, a non-canonical
 *   encoding of the same signature): 401 or what follows;
 * - body (read on the final bytes and headers, as the contract says): `fail` when the contract
 *   refuses it (not UTF-8, not JSON, nested deeper than 64, not an object, no id or type, an id
 *   that is not printable text — a control or format character, a line or paragraph separator, an
 *   unpaired surrogate — or over 255 characters, an id header that differs, a declared account that
 *   is not printable, no declared account on an endpoint of many accounts): 400 only. `maybe` when
 *   the contract leaves room (non-ASCII or unusual ids): 400 or 200;
 * - otherwise 200, `accepted` or `duplicate` as the dedup model says, for the id the case names,
 *   under the key's account: the endpoint's, or on an endpoint of many accounts the declared one —
 *   in the endpoint's own scope when the endpoint does not serve it (it never takes that account's
 *   key).
 */
import { isUtf8 } from 'node:buffer';
import { createHmac } from 'node:crypto';
import type { EndpointDefinition } from '../../src/config/options';
import { TEST_ENDPOINTS } from '../support/app';

export const PROVIDER_NAMES = ['paymos', 'factuarea', 'stripe', 'standard'] as const;
export type FuzzProvider = (typeof PROVIDER_NAMES)[number];

/** The fuzz app's `webhookMaxBodyBytes`: small enough that 413 is cheap to reach. */
export const MAX_BODY = 65_536;
/** Node's default `maxHeaderSize` is 16 KiB; past about this many bytes it may answer 431 itself. */
const HEADER_BLOCK_431 = 15_000;
/**
 * Nesting deeper than this is refused, 400 (issue 12's depth limit, src/common/json-depth.ts: the
 * top-level value is level 1); up to it, a body is read as any other.
 */
const MAX_DEPTH = 64;
/** An unpaired UTF-16 surrogate: stored as U+FFFD, two such ids would be one key (refused, 400). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** What makes an id unprintable besides a lone surrogate: Unicode Cc and Cf, U+2028 and U+2029 (refused, 400). */
const CONTROL_OR_FORMAT = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

/** The fuzz app's endpoints: the suites' own, and one of many accounts per provider that declares one. */
export const FUZZ_ENDPOINTS: EndpointDefinition[] = [
  ...TEST_ENDPOINTS,
  { id: 'stripe-connect', provider: 'stripe', secrets: ['whsec_fuzz_connect'], merchantAccountIds: ['acct_fz_A', 'acct_fz_B'] },
  { id: 'factuarea-platform', provider: 'factuarea', secrets: ['whsec_fuzz_factuarea_platform'], merchantAccountIds: ['fa_fz_A', 'fa_fz_B'] },
  { id: 'standard-platform', provider: 'standard', secrets: ['whsec_ZnV6ei1zdGFuZGFyZC1wbGF0Zm9ybS1rZXktMDE='], merchantAccountIds: ['acc_fz_A', 'acc_fz_B'] },
];

function endpointOf(endpointId: string): EndpointDefinition {
  const endpoint = FUZZ_ENDPOINTS.find((e) => e.id === endpointId);
  if (!endpoint) throw new Error(`no fuzz endpoint ${endpointId}`);
  return endpoint;
}

export function secretOf(endpointId: string): string {
  const first = endpointOf(endpointId).secrets[0];
  return typeof first === 'string' ? first : first.secret;
}

/** Accounts a case may declare on an endpoint of many: served ones, and one no endpoint serves. */
export const DECLARED_ACCOUNTS: Record<FuzzProvider, string[]> = {
  paymos: [],
  factuarea: ['fa_fz_A', 'fa_fz_B', 'fa_fz_Z', 'fa-merchant-1'],
  stripe: ['acct_fz_A', 'acct_fz_B', 'acct_fz_Z', 'acct_1'],
  standard: ['acc_fz_A', 'acc_fz_B', 'acc_fz_Z', 'acc_1'],
};

export type Json = unknown;
export type HeaderLine = [name: string, value: string];

// ---------------------------------------------------------------------------------------------
// Providers

interface ProviderModel {
  name: FuzzProvider;
  endpoints: string[];
  signatureHeader: string;
  /** Headers whose values are signed (besides the signature header). */
  signedHeaders: string[];
  /** The timestamp's own header (Paymos, Standard); else it is the `t=` entry of the signature header. */
  timestampHeader: string | null;
  /** Unsigned id headers that must equal the body's event id when present. */
  idHeaders: string[];
  deliveryIdHeader: string | null;
  /** Where the body names its event id; null: the `webhook-id` header (Standard). */
  idField: string | null;
  types: string[];
  /** Field paths a case may overwrite with any JSON (wrong types). */
  paths: ReadonlyArray<readonly string[]>;
  envelope(id: Json, type: Json, resourceId: Json, endpoint: string): Record<string, unknown>;
  /** The value the provider reads as the resource id (optional id). */
  resource(body: Record<string, unknown>): unknown;
  /** Where the body declares its merchant account (null: the provider never declares one). */
  accountPath: readonly string[] | null;
}

const obj = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

export const PROVIDERS: Record<FuzzProvider, ProviderModel> = {
  paymos: {
    name: 'paymos',
    endpoints: ['paymos-a', 'paymos-b'],
    signatureHeader: 'x-webhook-signature',
    signedHeaders: ['x-webhook-timestamp'],
    timestampHeader: 'x-webhook-timestamp',
    idHeaders: ['x-webhook-id'],
    deliveryIdHeader: null,
    idField: 'event_id',
    types: ['invoice.paid', 'invoice.created', 'invoice.refunded', 'withdrawal.completed', 'something.new'],
    paths: [['created'], ['data'], ['data', 'price_amount'], ['data', 'price_currency'], ['data', 'order_id'], ['data', 'object'], ['data', 'refunded_amount'], ['type'], ['event_id'], ['extra']],
    envelope: (id, type, resourceId) => ({
      event_id: id,
      type,
      created: 1_790_590_561,
      data: { object: 'invoice', id: resourceId, status: 'paid', price_amount: '49.90', price_currency: 'EUR' },
    }),
    resource: (b) => obj(b.data)?.id,
    accountPath: null,
  },
  factuarea: {
    name: 'factuarea',
    endpoints: ['factuarea-company', 'factuarea-account', 'factuarea-platform'],
    signatureHeader: 'factuarea-signature',
    signedHeaders: [],
    timestampHeader: null,
    idHeaders: ['factuarea-event-id', 'idempotency-key'],
    deliveryIdHeader: 'factuarea-delivery-id',
    idField: 'id',
    types: ['invoice.paid', 'invoice.sent', 'invoice.voided', 'account.updated', 'something.new'],
    paths: [['api_version'], ['created'], ['livemode'], ['account'], ['account', 'id'], ['data'], ['data', 'object'], ['data', 'object', 'total'], ['data', 'object', 'metadata'], ['type'], ['id'], ['extra']],
    envelope: (id, type, resourceId, endpoint) => ({
      id,
      type,
      api_version: '2025-01-01',
      created: 1_790_590_561,
      livemode: false,
      correlation_id: 'corr_1',
      data: { object: { id: resourceId, object: 'invoice', number: 'F-1', status: 'paid', total: '49.90', currency: 'EUR', metadata: { order_id: 'ord_1' } } },
      ...(endpoint === 'factuarea-account' ? { account: { id: 'fa-merchant-1' }, account_relationship: 'connected', company_id: 'co_1' } : {}),
      ...(endpoint === 'factuarea-platform' ? { account: { id: 'fa_fz_A' }, account_relationship: 'connected', company_id: 'co_1' } : {}),
    }),
    resource: (b) => obj(obj(b.data)?.object)?.id,
    accountPath: ['account', 'id'],
  },
  stripe: {
    name: 'stripe',
    endpoints: ['stripe-main', 'stripe-connect'],
    signatureHeader: 'stripe-signature',
    signedHeaders: [],
    timestampHeader: null,
    idHeaders: [],
    deliveryIdHeader: null,
    idField: 'id',
    types: ['payment_intent.succeeded', 'charge.refunded', 'charge.dispute.closed', 'customer.created', 'something.new'],
    paths: [['api_version'], ['created'], ['account'], ['livemode'], ['data'], ['data', 'object'], ['data', 'object', 'amount_received'], ['data', 'object', 'payment_intent'], ['data', 'object', 'currency'], ['type'], ['id'], ['extra']],
    envelope: (id, type, resourceId, endpoint) => ({
      id,
      object: 'event',
      api_version: '2025-03-31.basil',
      created: 1_790_590_561,
      type,
      livemode: false,
      ...(endpoint === 'stripe-connect' ? { account: 'acct_fz_A' } : {}),
      data: { object: { id: resourceId, object: 'payment_intent', amount: 4990, amount_received: 4990, currency: 'eur', payment_intent: resourceId, metadata: { order_id: 'ord_1' } } },
    }),
    resource: (b) => {
      const object = obj(obj(b.data)?.object);
      return typeof b.type === 'string' && b.type.startsWith('charge.') && typeof object?.payment_intent === 'string'
        ? object.payment_intent
        : object?.id;
    },
    accountPath: ['account'],
  },
  standard: {
    name: 'standard',
    endpoints: ['standard-main', 'standard-platform'],
    signatureHeader: 'webhook-signature',
    signedHeaders: ['webhook-id', 'webhook-timestamp'],
    timestampHeader: 'webhook-timestamp',
    idHeaders: [],
    deliveryIdHeader: null,
    idField: null,
    types: ['payment.succeeded', 'payment.refunded', 'payment.dispute_won', 'payment.unknown', 'something.new'],
    paths: [['timestamp'], ['data'], ['data', 'amount'], ['data', 'currency'], ['data', 'account_id'], ['data', 'order_id'], ['type'], ['extra']],
    envelope: (_id, type, resourceId, endpoint) => ({
      type,
      timestamp: '2026-11-29T10:00:00Z',
      data: { payment_id: resourceId, order_id: 'ord_1', amount: 4990, currency: 'EUR', account_id: endpoint === 'standard-platform' ? 'acc_fz_A' : 'acc_1' },
    }),
    resource: (b) => obj(b.data)?.payment_id,
    accountPath: ['data', 'account_id'],
  },
};

/**
 * The key an endpoint records an event under, besides provider and event id: the endpoint's own
 * account; on an endpoint of many, the declared one (none: no key, 400), in the endpoint's scope
 * when the endpoint does not serve it.
 */
export function keyAccountOf(endpointId: string, declared: string | null): { account: string; scope: string } | null {
  const endpoint = endpointOf(endpointId);
  if (endpoint.merchantAccountIds === undefined) return { account: endpoint.merchantAccountId!, scope: '' };
  if (declared === null) return null;
  const served = endpoint.merchantAccountIds.includes('*') || endpoint.merchantAccountIds.includes(declared);
  return { account: declared, scope: served ? '' : endpointId };
}

// ---------------------------------------------------------------------------------------------
// Case specification (what fast-check generates)

export type Deep = { kind: '[' | '{'; depth: number; where: 'field' | 'data' | 'whole' };

export type RawEdit =
  | { op: 'flip'; pos: number; mask: number }
  | { op: 'insert'; pos: number; bytes: readonly number[] }
  | { op: 'truncate'; cut: number }
  | { op: 'bom' }
  | { op: 'wrap'; before: string; after: string }
  | { op: 'replace'; text: string }
  | { op: 'dupKey'; value: Json };

export interface BodySpec {
  id: Json;
  type: Json;
  resourceId: Json;
  /** The declared merchant account, written at the provider's account path (undefined: the envelope's own). */
  account?: { value: Json };
  /** Replaces `data` wholesale (undefined: the envelope's own). */
  data?: { value: Json };
  overrides: Array<{ path: readonly string[]; value: Json }>;
  deep: Deep | null;
  /** Length of a padding string field (0: none); near MAX_BODY it probes the limit. */
  pad: number;
  indent: 0 | 2 | '\t';
  /** Byte edits BEFORE signing: the result is signed as it is (authentic, maybe malformed). */
  raw: RawEdit[];
}

export type Timestamp =
  | { kind: 'now'; delta: number }
  | { kind: 'stale'; delta: number }
  | { kind: 'ms' }
  | { kind: 'zeros'; n: number }
  | { kind: 'garbage'; value: string };

export interface SigningSpec {
  secret: 'own' | 'sibling' | { wrong: string };
  /** Secrets the endpoint does not hold, one `v1` entry each, before the real entry. */
  bogus: string[];
  /** A `v0=`/`v2,` entry of another scheme, before the real entry. */
  otherScheme: boolean;
  timestamp: Timestamp;
  /** Factuarea/Stripe: `t=` after the `v1` entries. */
  tLast: boolean;
}

export type IdHeader = 'absent' | 'equal' | { other: string };

export type Target = 'sig' | 'signed' | 'any';
export type Mutation =
  | { op: 'flipBody'; pos: number; mask: number }
  | { op: 'truncateBody'; cut: number }
  | { op: 'appendBody'; text: string }
  | { op: 'growBody'; n: number }
  | { op: 'insertBody'; pos: number; bytes: readonly number[] }
  | { op: 'reserialize'; indent: 0 | 2 }
  | { op: 'replaceBody'; text: string }
  | { op: 'drop'; target: Target; which: number }
  | { op: 'dup'; target: Target; which: number; other: string | null }
  | { op: 'recase'; target: Target; which: number; style: 'upper' | 'lower' | 'title' | 'alternate' }
  | { op: 'truncateValue'; target: Target; which: number; cut: number }
  | { op: 'extendValue'; target: Target; which: number; how: 'glued' | 'entry'; n: number; ch: string }
  | { op: 'replaceValue'; target: Target; which: number; value: string }
  | { op: 'flipSignature'; pos: number; pick: number }
  | { op: 'nonCanonical' }
  | { op: 'retimestamp'; delta: number }
  | { op: 'contentType'; value: string | null; twice: boolean }
  | { op: 'addHeaders'; count: number; size: number }
  | { op: 'shuffle'; seed: number };

export type EndpointSpec =
  | { kind: 'own'; index: number; query: string }
  | { kind: 'unknown'; id: string }
  | { kind: 'cross'; index: number }
  | { kind: 'alias'; index: number; form: 'slash' | 'upper' | 'encoded' | 'prefixCase' };

export interface CaseSpec {
  provider: FuzzProvider;
  endpoint: EndpointSpec;
  body: BodySpec;
  /** Standard: the `webhook-id` header (signed). */
  webhookId: string;
  signing: SigningSpec;
  idHeaders: IdHeader[];
  deliveryId: string | null;
  userAgent: string | null;
  mutations: Mutation[];
  transport: { chunked: boolean; sends: 1 | 2; concurrent: boolean };
}

// ---------------------------------------------------------------------------------------------
// Building a case

type Verdict = 'pass' | 'maybe' | 'fail';
const worst = (a: Verdict, b: Verdict): Verdict => (a === 'fail' || b === 'fail' ? 'fail' : a === 'maybe' || b === 'maybe' ? 'maybe' : 'pass');

interface Line {
  name: string;
  value: string;
  /** The value as signed, for signed lines (the signature header, its timestamp, webhook-id). */
  original?: string;
  /** What mutations did to a signed line. */
  taint: Verdict;
  /** Signature header: its last entry is still the real one (or `t=`), so cutting the end breaks it. */
  realLast?: boolean;
  /** Signature header: the real signature as it is now written in the value (see nonCanonical). */
  realText?: string;
}

export interface Expectation {
  /** Statuses the contract allows for this delivery. */
  allowed: number[];
  /** When 200: the event ids the answer may name. */
  ids: string[];
  /** Whether the delivery is authentic (a 2xx is possible at all). */
  authentic: boolean;
  why: string[];
}

export interface Built {
  path: string;
  endpointId: string | null;
  /** The key's merchant account and scope when the delivery is recorded, else null. */
  account: string | null;
  scope: string;
  headers: HeaderLine[];
  body: Buffer;
  chunked: boolean;
  expect: Expectation;
}

/** What Node's server makes of a header value this client wrote (UTF-8 on the wire, read as latin1, OWS trimmed). */
export function seen(value: string): string {
  return Buffer.from(value, 'utf8').toString('latin1').replace(/^[ \t]+|[ \t]+$/g, '');
}

/** Characters Node's client lets into a header value. */
export const HEADER_SAFE = /^[\t\x20-\x7e\x80-\xff]*$/;

function hmac(key: Buffer, prefix: string, body: Buffer, encoding: 'hex' | 'base64'): string {
  return createHmac('sha256', key).update(Buffer.from(prefix, 'utf8')).update(body).digest(encoding);
}

function keyOf(provider: FuzzProvider, secret: string): Buffer {
  return provider === 'standard' ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
}

function timestampText(t: Timestamp, now: number): string {
  switch (t.kind) {
    case 'now':
      return String(now + t.delta);
    case 'stale':
      return String(Math.max(0, now + t.delta));
    case 'ms':
      return String(now * 1000);
    case 'zeros':
      return '0'.repeat(t.n) + String(now);
    case 'garbage':
      return t.value;
  }
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let at: Record<string, unknown> | undefined = target;
  for (const key of path.slice(0, -1)) {
    at = obj(at?.[key]);
    if (!at) return;
  }
  Object.defineProperty(at, path[path.length - 1], { value, enumerable: true, writable: true, configurable: true });
}

const DEEP_MARK = 'DEEP_PLACEHOLDER_7f3a';

function nested(d: Deep): string {
  return d.kind === '[' ? '['.repeat(d.depth) + ']'.repeat(d.depth) : '{"a":'.repeat(d.depth) + '1' + '}'.repeat(d.depth);
}

/** The body's bytes before signing (authentic whatever they are). */
export function bodyBytes(provider: FuzzProvider, spec: BodySpec, endpoint: string): Buffer {
  const model = PROVIDERS[provider];
  const envelope = model.envelope(spec.id, spec.type, spec.resourceId, endpoint);
  if (spec.data) envelope.data = spec.data.value;
  if (spec.account && model.accountPath) {
    // `account.id` needs its object: a case that declares an account writes one.
    if (model.accountPath.length === 2 && !obj(envelope[model.accountPath[0]])) envelope[model.accountPath[0]] = {};
    setPath(envelope, model.accountPath, spec.account.value);
  }
  for (const o of spec.overrides) setPath(envelope, o.path, o.value);
  if (spec.pad > 0) envelope.pad = 'x'.repeat(spec.pad);
  if (spec.deep && spec.deep.where === 'field') envelope.nested = DEEP_MARK;
  if (spec.deep && spec.deep.where === 'data') {
    const data = obj(envelope.data);
    if (data) data.nested = DEEP_MARK;
    else envelope.nested = DEEP_MARK;
  }
  let text = JSON.stringify(envelope, null, spec.indent === 0 ? undefined : spec.indent);
  if (spec.deep) text = spec.deep.where === 'whole' ? nested(spec.deep) : text.replace(`"${DEEP_MARK}"`, nested(spec.deep));
  let bytes: Buffer = Buffer.from(text, 'utf8');
  for (const edit of spec.raw) bytes = rawEdit(bytes, edit, model.idField ?? 'type');
  return bytes;
}

function rawEdit(bytes: Buffer, edit: RawEdit, idField: string): Buffer {
  switch (edit.op) {
    case 'flip': {
      if (bytes.length === 0) return bytes;
      const copy = Buffer.from(bytes);
      copy[edit.pos % copy.length] ^= edit.mask;
      return copy;
    }
    case 'insert': {
      const at = bytes.length === 0 ? 0 : edit.pos % (bytes.length + 1);
      return Buffer.concat([bytes.subarray(0, at), Buffer.from(edit.bytes), bytes.subarray(at)]);
    }
    case 'truncate':
      return bytes.subarray(0, Math.max(0, bytes.length - edit.cut));
    case 'bom':
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    case 'wrap':
      return Buffer.concat([Buffer.from(edit.before), bytes, Buffer.from(edit.after)]);
    case 'replace':
      return Buffer.from(edit.text, 'utf8');
    case 'dupKey': {
      const at = bytes.indexOf('{');
      if (at < 0) return bytes;
      const inserted = Buffer.from(`${JSON.stringify(idField)}:${JSON.stringify(edit.value) ?? 'null'},`);
      return Buffer.concat([bytes.subarray(0, at + 1), inserted, bytes.subarray(at + 1)]);
    }
  }
}

/** Builds the request a case sends, signed now, and what the contract allows as its answer. */
export function build(spec: CaseSpec, now: number): Built {
  const model = PROVIDERS[spec.provider];
  const why: string[] = [];
  const own = model.endpoints[(spec.endpoint.kind === 'own' || spec.endpoint.kind === 'alias' ? spec.endpoint.index : 0) % model.endpoints.length];

  // The path and the endpoint it names.
  let path: string;
  let endpointId: string | null = own;
  let signatureVerdict: Verdict = 'pass';
  const extra: number[] = [];
  switch (spec.endpoint.kind) {
    case 'own':
      path = `/webhooks/${own}${spec.endpoint.query}`;
      if (spec.endpoint.query !== '') {
        extra.push(400); // a query string is not part of the contract's checks; issue 12 #7 (NUL in the query)
        why.push(`query ${JSON.stringify(spec.endpoint.query)}: 400 allowed`);
      }
      break;
    case 'unknown':
      path = `/webhooks/${spec.endpoint.id}`;
      endpointId = null;
      break;
    case 'cross': {
      const others = FUZZ_ENDPOINTS.filter((e) => e.provider !== spec.provider);
      endpointId = others[spec.endpoint.index % others.length].id;
      path = `/webhooks/${endpointId}`;
      signatureVerdict = 'fail';
      why.push(`sent to ${endpointId}, another provider's endpoint`);
      break;
    }
    case 'alias': {
      const form = spec.endpoint.form;
      path =
        form === 'slash' ? `/webhooks/${own}/` : form === 'upper' ? `/webhooks/${own.toUpperCase()}` : form === 'encoded' ? `/webhooks/${own.replace(/-/g, '%2D')}` : `/WebHooks/${own}`;
      extra.push(404);
      why.push(`path ${path}: 404 allowed`);
      break;
    }
  }

  // The body, signed as it is.
  const signedBody = bodyBytes(spec.provider, spec.body, own);
  const ts = timestampText(spec.signing.timestamp, now);
  const secret =
    spec.signing.secret === 'own'
      ? secretOf(own)
      : spec.signing.secret === 'sibling'
        ? secretOf(model.endpoints.find((e) => e !== own) ?? 'paymos-b') // a configured secret, of another endpoint
        : spec.signing.secret.wrong;
  if (spec.signing.secret !== 'own') {
    signatureVerdict = 'fail';
    why.push(`signed with ${spec.signing.secret === 'sibling' ? 'another endpoint’s' : 'a wrong'} secret`);
  }
  switch (spec.signing.timestamp.kind) {
    case 'now':
      break;
    case 'zeros':
      signatureVerdict = worst(signatureVerdict, 'maybe');
      why.push('timestamp with leading zeros');
      break;
    default:
      signatureVerdict = 'fail';
      why.push(`timestamp ${spec.signing.timestamp.kind} (${ts.slice(0, 20)})`);
  }
  const webhookId = spec.webhookId;
  if (spec.provider === 'standard') {
    if (seen(webhookId) === '') {
      signatureVerdict = 'fail';
      why.push('webhook-id empty');
    } else if (!/^[\x20-\x7e\t]*$/.test(webhookId)) {
      signatureVerdict = worst(signatureVerdict, 'maybe'); // non-ASCII: signed as UTF-8, read as latin1
      why.push('non-ASCII webhook-id');
    }
  }
  const prefix = spec.provider === 'standard' ? `${webhookId}.${ts}.` : `${ts}.`;
  const encoding = spec.provider === 'standard' ? 'base64' : 'hex';
  const realSig = hmac(keyOf(spec.provider, secret), prefix, signedBody, encoding);
  const bogus = spec.signing.bogus.map((s) => hmac(keyOf(spec.provider, s), prefix, signedBody, encoding));

  const lines: Line[] = [];
  const signed = (name: string, value: string, realLast?: boolean): Line => ({ name, value, original: value, taint: 'pass', realLast, realText: realLast ? realSig : undefined });
  lines.push({ name: 'content-type', value: 'application/json', taint: 'pass' });
  switch (spec.provider) {
    case 'paymos': {
      const entries = [...(spec.signing.otherScheme ? [`v0=${bogus[0] ?? realSig.replace(/./, '0')}`] : []), ...bogus.map((b) => `v1=${b}`), `v1=${realSig}`];
      lines.push(signed('x-webhook-timestamp', ts), signed('x-webhook-signature', entries.join(','), true));
      break;
    }
    case 'factuarea':
    case 'stripe': {
      const v1 = [...(spec.signing.otherScheme ? [`v0=${'0'.repeat(64)}`] : []), ...bogus.map((b) => `v1=${b}`), `v1=${realSig}`];
      const entries = spec.signing.tLast ? [...v1, `t=${ts}`] : [`t=${ts}`, ...v1];
      lines.push(signed(model.signatureHeader, entries.join(','), true));
      break;
    }
    case 'standard': {
      const entries = [...(spec.signing.otherScheme ? [`v2,${realSig}`] : []), ...bogus.map((b) => `v1,${b}`), `v1,${realSig}`];
      lines.push(signed('webhook-id', webhookId), signed('webhook-timestamp', ts), signed('webhook-signature', entries.join(' '), true));
      break;
    }
  }
  // Unsigned headers: the id headers, Factuarea's delivery id and event type, a user agent.
  model.idHeaders.forEach((name, i) => {
    const choice = spec.idHeaders[i] ?? 'absent';
    if (choice === 'absent') return;
    const value = choice === 'equal' ? spec.body.id : choice.other;
    if (typeof value === 'string' && HEADER_SAFE.test(value)) lines.push({ name, value, taint: 'pass' });
  });
  if (model.deliveryIdHeader && spec.deliveryId !== null) lines.push({ name: model.deliveryIdHeader, value: spec.deliveryId, taint: 'pass' });
  if (spec.provider === 'factuarea' && typeof spec.body.type === 'string' && HEADER_SAFE.test(spec.body.type)) {
    lines.push({ name: 'factuarea-event-type', value: spec.body.type, taint: 'pass' });
  }
  if (spec.userAgent !== null) lines.push({ name: 'user-agent', value: spec.userAgent, taint: 'pass' });

  // Mutations after signing.
  let body = signedBody;
  let chunked = spec.transport.chunked;
  for (const m of spec.mutations) body = mutate(spec.provider, m, lines, body, realSig, now);

  // Signed lines: missing, repeated or changed.
  for (const name of [model.signatureHeader, ...model.signedHeaders]) {
    const copies = lines.filter((l) => l.name.toLowerCase() === name);
    // A change undone by a later one (or invisible to the server, such as outer whitespace) is none.
    for (const l of copies) if (l.original !== undefined && seen(l.value) === seen(l.original)) l.taint = 'pass';
    let v: Verdict;
    if (copies.length === 0) v = 'fail';
    else if (copies.length === 1) v = copies[0].taint;
    else v = copies.every((l) => l.taint === 'fail') ? 'fail' : 'maybe';
    if (v !== 'pass') why.push(`${name}: ${copies.length === 0 ? 'dropped' : copies.length > 1 ? `${copies.length} lines` : 'changed'} (${v})`);
    signatureVerdict = worst(signatureVerdict, v);
  }
  if (!body.equals(signedBody)) {
    signatureVerdict = 'fail';
    why.push('body changed after signing');
  }

  const headers: HeaderLine[] = lines.map((l) => [l.name, l.value]);
  const headerBytes = headers.reduce((n, [k, v]) => n + k.length + Buffer.byteLength(v) + 4, 120);

  // The walk through the contract's checks.
  const allowed = new Set<number>(extra);
  let key: { account: string; scope: string } | null = null;
  const done = (ids: string[] = [], authentic = false): Built => ({
    path,
    endpointId,
    account: key?.account ?? null,
    scope: key?.scope ?? '',
    headers,
    body,
    chunked,
    expect: { allowed: [...allowed].sort(), ids, authentic, why },
  });
  if (headerBytes > HEADER_BLOCK_431) {
    // Node's HTTP parser answers before the app sees anything.
    allowed.add(431);
    why.push(`header block ~${headerBytes} bytes: 431 allowed`);
  }
  if (endpointId === null) {
    allowed.add(404);
    why.push('unknown endpoint');
    return done();
  }
  if (body.length > MAX_BODY) {
    allowed.add(413);
    why.push(`body ${body.length} bytes > ${MAX_BODY}`);
    return done();
  }
  if (signatureVerdict !== 'pass') {
    allowed.add(401);
    if (signatureVerdict === 'fail') return done();
  }
  const verdict = bodyOracle(spec.provider, body, headers);
  why.push(...verdict.why);
  key = keyAccountOf(own, verdict.account);
  if (key === null) verdict.verdict = worst(verdict.verdict, note(why, 'no declared account on an endpoint of many accounts', 'fail'));
  else if (key.scope !== '') why.push(`account ${JSON.stringify(key.account)} not served by ${own}: keyed in its scope`);
  if (verdict.verdict !== 'pass') {
    allowed.add(400);
    if (verdict.verdict === 'fail') return done([], true);
  }
  allowed.add(200);
  return done(verdict.ids, true);
}

// ---------------------------------------------------------------------------------------------
// Mutations after signing

function pickLine(provider: FuzzProvider, lines: Line[], target: Target, which: number): Line | undefined {
  const model = PROVIDERS[provider];
  const names = target === 'sig' ? [model.signatureHeader] : target === 'signed' ? [model.signatureHeader, ...model.signedHeaders] : null;
  const pool = names ? lines.filter((l) => names.includes(l.name.toLowerCase())) : lines;
  return pool.length === 0 ? undefined : pool[which % pool.length];
}

const isSigned = (provider: FuzzProvider, l: Line) => l.original !== undefined && (l.name.toLowerCase() === PROVIDERS[provider].signatureHeader || PROVIDERS[provider].signedHeaders.includes(l.name.toLowerCase()));

function taint(l: Line, v: Verdict): void {
  l.taint = worst(l.taint, v);
}

function recase(name: string, style: 'upper' | 'lower' | 'title' | 'alternate'): string {
  switch (style) {
    case 'upper':
      return name.toUpperCase();
    case 'lower':
      return name.toLowerCase();
    case 'title':
      return name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
    case 'alternate':
      return [...name].map((c, i) => (i % 2 ? c.toUpperCase() : c.toLowerCase())).join('');
  }
}

function mutate(provider: FuzzProvider, m: Mutation, lines: Line[], body: Buffer, realSig: string, now: number): Buffer {
  const model = PROVIDERS[provider];
  const sigLine = () => lines.find((l) => l.name.toLowerCase() === model.signatureHeader && l.original !== undefined);
  switch (m.op) {
    case 'flipBody': {
      if (body.length === 0) return body;
      const copy = Buffer.from(body);
      copy[m.pos % copy.length] ^= m.mask;
      return copy;
    }
    case 'truncateBody':
      return body.subarray(0, Math.max(0, body.length - m.cut));
    case 'appendBody':
      return Buffer.concat([body, Buffer.from(m.text, 'utf8')]);
    case 'growBody':
      return Buffer.concat([body, Buffer.alloc(m.n, 0x20)]);
    case 'insertBody': {
      const at = m.pos % (body.length + 1);
      return Buffer.concat([body.subarray(0, at), Buffer.from(m.bytes), body.subarray(at)]);
    }
    case 'reserialize': {
      try {
        return Buffer.from(JSON.stringify(JSON.parse(body.toString('utf8')), null, m.indent || undefined) ?? '', 'utf8');
      } catch {
        return body;
      }
    }
    case 'replaceBody':
      return Buffer.from(m.text, 'utf8');
    case 'drop': {
      const l = pickLine(provider, lines, m.target, m.which);
      if (l) lines.splice(lines.indexOf(l), 1);
      return body;
    }
    case 'dup': {
      const l = pickLine(provider, lines, m.target, m.which);
      if (!l) return body;
      const copy: Line = { ...l };
      if (m.other !== null && m.other !== l.value) {
        copy.value = m.other;
        if (copy.original !== undefined) copy.taint = 'fail';
      }
      lines.splice(lines.indexOf(l) + 1, 0, copy);
      return body;
    }
    case 'recase': {
      const l = pickLine(provider, lines, m.target, m.which);
      if (l) l.name = recase(l.name, m.style);
      return body;
    }
    case 'truncateValue': {
      const l = pickLine(provider, lines, m.target, m.which);
      if (!l || l.value.length === 0) return body;
      l.value = l.value.slice(0, Math.max(0, l.value.length - m.cut));
      if (isSigned(provider, l)) taint(l, l.name.toLowerCase() === model.signatureHeader && !l.realLast ? 'maybe' : 'fail');
      return body;
    }
    case 'extendValue': {
      const l = pickLine(provider, lines, m.target, m.which);
      if (!l) return body;
      const sig = l.name.toLowerCase() === model.signatureHeader;
      if (m.how === 'entry' && sig) {
        const sep = provider === 'standard' ? ' ' : ',';
        const entry = provider === 'standard' ? `v1,${m.ch.repeat(m.n)}` : `v9=${m.ch.repeat(m.n)}`;
        l.value = `${l.value}${sep}${entry}`;
        l.realLast = false;
        if (isSigned(provider, l)) taint(l, 'maybe');
      } else {
        l.value += m.ch.repeat(m.n);
        if (isSigned(provider, l)) taint(l, sig && !l.realLast ? 'maybe' : 'fail');
      }
      return body;
    }
    case 'replaceValue': {
      const l = pickLine(provider, lines, m.target, m.which);
      if (!l) return body;
      l.value = m.value;
      if (isSigned(provider, l)) taint(l, 'fail');
      return body;
    }
    case 'flipSignature': {
      const l = sigLine();
      const real = l?.realText;
      if (!l || !real) return body;
      const at = l.value.lastIndexOf(real);
      if (at < 0) return body;
      let flipped: string;
      if (provider === 'standard') {
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
        const i = m.pos % 42; // chars 0–41 carry 6 signature bits each: any change is another signature
        const others = alphabet.replace(real[i], '');
        flipped = real.slice(0, i) + others[m.pick % others.length] + real.slice(i + 1);
      } else {
        const i = m.pos % 64;
        const others = '0123456789abcdef'.replace(real[i].toLowerCase(), '');
        flipped = real.slice(0, i) + others[m.pick % others.length] + real.slice(i + 1);
      }
      l.value = l.value.slice(0, at) + flipped + l.value.slice(at + real.length);
      l.realText = undefined;
      taint(l, 'fail');
      return body;
    }
    case 'nonCanonical': {
      // The same signature bytes, written another way: upper-case hex, or a last base64 character
      // whose unused bits differ. Issue 12 #9 wants them refused; either answer is allowed here.
      const l = sigLine();
      if (!l || l.realText !== realSig) return body;
      const at = l.value.lastIndexOf(realSig);
      if (at < 0) return body;
      let variant: string;
      if (provider === 'standard') {
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
        const v = alphabet.indexOf(realSig[42]);
        variant = realSig.slice(0, 42) + alphabet[v ^ 1] + realSig.slice(43);
      } else {
        variant = realSig.toUpperCase();
      }
      if (variant === realSig) return body;
      l.value = l.value.slice(0, at) + variant + l.value.slice(at + realSig.length);
      l.realText = variant;
      taint(l, 'maybe');
      return body;
    }
    case 'retimestamp': {
      const delta = m.delta === 0 ? 1 : m.delta;
      const fresh = String(now + delta);
      if (model.timestampHeader) {
        const l = lines.find((x) => x.name.toLowerCase() === model.timestampHeader && x.original !== undefined);
        if (!l) return body;
        l.value = fresh;
        taint(l, 'fail');
      } else {
        const l = sigLine();
        if (!l) return body;
        l.value = l.value.replace(/(^|,)t=[^,]*/, `$1t=${fresh}`);
        taint(l, 'fail');
      }
      return body;
    }
    case 'contentType': {
      for (let i = lines.length - 1; i >= 0; i--) if (lines[i].name.toLowerCase() === 'content-type') lines.splice(i, 1);
      if (m.value !== null) {
        lines.unshift({ name: 'Content-Type', value: m.value, taint: 'pass' });
        if (m.twice) lines.push({ name: 'content-type', value: 'application/x-www-form-urlencoded', taint: 'pass' });
      }
      return body;
    }
    case 'addHeaders': {
      for (let i = 0; i < m.count; i++) lines.push({ name: `x-fuzz-${i}`, value: 'a'.repeat(m.size), taint: 'pass' });
      return body;
    }
    case 'shuffle': {
      // A deterministic permutation (the seed is part of the case).
      let s = m.seed | 0 || 1;
      for (let i = lines.length - 1; i > 0; i--) {
        s = (Math.imul(s, 1103515245) + 12345) | 0;
        const j = Math.abs(s) % (i + 1);
        [lines[i], lines[j]] = [lines[j], lines[i]];
      }
      return body;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The body, read as the contract says (check 6)

const NORMAL_ID = /^[A-Za-z0-9_.:-]+$/;

/** An id the provider requires (event id, type). */
function requiredId(v: unknown, what: string, why: string[]): Verdict {
  if (typeof v !== 'string' || v === '') return note(why, `${what} missing or not a string`, 'fail');
  if (CONTROL_OR_FORMAT.test(v)) return note(why, `${what} has a control or format character, or a line separator`, 'fail');
  if (LONE_SURROGATE.test(v)) return note(why, `${what} has an unpaired surrogate`, 'fail');
  if (/^[\x20-\x7e]*$/.test(v)) {
    if (v.length > 255) return note(why, `${what} longer than 255`, 'fail');
    return NORMAL_ID.test(v) ? 'pass' : note(why, `${what} has unusual characters`, 'maybe');
  }
  if ([...v].length > 255) return note(why, `${what} longer than 255 characters`, 'fail');
  return note(why, `${what} is not ASCII`, 'maybe');
}

function optionalId(v: unknown, what: string, why: string[]): Verdict {
  return typeof v !== 'string' || v === '' ? 'pass' : requiredId(v, what, why);
}

function note(why: string[], text: string, v: Verdict): Verdict {
  why.push(`${text} (${v})`);
  return v;
}

/** The value Node hands the app for a header (repeated lines joined with ", "), or undefined. */
function visible(headers: HeaderLine[], name: string): string | undefined {
  const values = headers.filter(([k]) => k.toLowerCase() === name).map(([, v]) => seen(v));
  return values.length === 0 ? undefined : values.join(', ');
}

/** Deepest nesting of arrays and objects in JSON text (a scan; no recursion). */
export function maxDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

export function bodyOracle(
  provider: FuzzProvider,
  body: Buffer,
  headers: HeaderLine[],
): { verdict: Verdict; ids: string[]; why: string[]; /** the declared merchant account, null for none */ account: string | null } {
  const model = PROVIDERS[provider];
  const why: string[] = [];
  const refused = (text: string) => ({ verdict: note(why, text, 'fail'), ids: [], why, account: null });
  if (!isUtf8(body)) return refused('body not UTF-8');
  const text = body.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return refused('body not JSON');
  }
  const depth = maxDepth(text);
  if (depth > MAX_DEPTH) return refused(`nesting depth ${depth}`);
  const b = obj(parsed);
  if (!b) return refused('body not a JSON object');

  let v: Verdict = 'pass';
  let ids: string[] = [];
  if (model.idField === null) {
    const id = visible(headers, 'webhook-id') ?? '';
    const asUtf8 = Buffer.from(id, 'latin1').toString('utf8');
    // Node reads header bytes as latin1; the adapter may read them back as the UTF-8 they were
    // sent as. An id printable in one reading only may go either way.
    const asRead = requiredId(id, 'webhook-id', why);
    v = worst(v, asRead === 'fail' && asUtf8 !== id && requiredId(asUtf8, 'webhook-id (as UTF-8)', why) !== 'fail' ? 'maybe' : asRead);
    ids = [id, asUtf8];
  } else {
    const id = b[model.idField];
    v = worst(v, requiredId(id, model.idField, why));
    if (typeof id === 'string') ids = [id];
    for (const name of model.idHeaders) {
      const h = visible(headers, name);
      if (h === undefined || h === id) continue;
      const asUtf8 = Buffer.from(h, 'latin1').toString('utf8');
      v = worst(v, note(why, `${name} differs from the body's id`, asUtf8 === id ? 'maybe' : 'fail'));
    }
  }
  v = worst(v, requiredId(b.type, 'type', why));
  v = worst(v, optionalId(model.resource(b), 'resource id', why));
  if (model.deliveryIdHeader) {
    const d = visible(headers, model.deliveryIdHeader);
    if (d !== undefined) {
      // Node's client writes a non-ASCII header value as UTF-8 or as latin1, depending on how the
      // request is written: the server reads either the UTF-8 bytes as latin1, or the value itself.
      const asSent = headers.filter(([k]) => k.toLowerCase() === model.deliveryIdHeader).map(([, value]) => value.replace(/^[ \t]+|[ \t]+$/g, '')).join(', ');
      const asRead = optionalId(d, model.deliveryIdHeader, why);
      v = worst(v, asRead === 'fail' && asSent !== d && optionalId(asSent, `${model.deliveryIdHeader} (as written)`, why) !== 'fail' ? 'maybe' : asRead);
    }
  }
  // A declared account is keyed on and compared: printable text, or absent (not a string, or empty).
  let account: string | null = null;
  if (model.accountPath) {
    let at: unknown = b;
    for (const k of model.accountPath) at = obj(at)?.[k];
    if (typeof at === 'string' && at !== '') {
      v = worst(v, requiredId(at, 'declared account', why));
      account = at;
    }
  }
  return { verdict: v, ids, why, account };
}
