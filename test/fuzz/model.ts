/**
 * The fuzzer's model of a delivery signed in headers (paymos, factuarea, stripe, standard; Adyen's
 * batches are modelled in adyen.ts, Mollie's hints in mollie.ts): what a generated case sends, and which answers
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
 *   encoding of the same signature): 401 or what follows. A Standard header may carry `v1` (HMAC,
 *   verified by a `whsec_`) and `v1a` (ed25519, verified by a `whpk_`) entries, or both: it verifies
 *   when a real entry of a kind the endpoint holds the key of is still there, intact; a `v1a` is
 *   64 bytes in canonical base64 or no signature at all (another spelling, length, key or body
 *   never verifies);
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
import { createHash, createHmac, createPrivateKey, createPublicKey, KeyObject, sign as ed25519Sign } from 'node:crypto';
import type { EndpointDefinition } from '../../src/config/options';
import { TEST_ENDPOINTS } from '../support/app';

/** Providers whose deliveries are signed in headers over the raw bytes (this file's model). */
export const HEADER_PROVIDERS = ['paymos', 'factuarea', 'stripe', 'standard'] as const;
export type HeaderProvider = (typeof HEADER_PROVIDERS)[number];
/** Every provider the fuzzer covers: Adyen's signed-by-field batches (adyen.ts) and Mollie's fetched hints (mollie.ts) too. */
export const PROVIDER_NAMES = [...HEADER_PROVIDERS, 'adyen', 'mollie'] as const;
export type FuzzProvider = (typeof PROVIDER_NAMES)[number];

/** The fuzz app's `webhookMaxBodyBytes`: small enough that 413 is cheap to reach. */
export const MAX_BODY = 65_536;
/** Node's default `maxHeaderSize` is 16 KiB; past about this many bytes it may answer 431 itself. */
export const HEADER_BLOCK_431 = 15_000;
/**
 * Nesting deeper than this is refused, 400 (issue 12's depth limit, src/common/json-depth.ts: the
 * top-level value is level 1); up to it, a body is read as any other.
 */
export const MAX_DEPTH = 64;
/** An unpaired UTF-16 surrogate: stored as U+FFFD, two such ids would be one key (refused, 400). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** What makes an id unprintable besides a lone surrogate: Unicode Cc and Cf, U+2028 and U+2029 (refused, 400). */
const CONTROL_OR_FORMAT = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

// ---------------------------------------------------------------------------------------------
// Keys the fuzz endpoints hold

/** PKCS #8 of an ed25519 private key (RFC 8410), up to the 32-byte seed that ends it. */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** A Standard Webhooks `v1a` key pair made from a label (the same every run): the signing key, and the `whpk_` an endpoint holds. */
function v1aPair(label: string): { signingKey: KeyObject; whpk: string } {
  const seed = createHash('sha256').update(label).digest();
  const signingKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const x = createPublicKey(signingKey).export({ format: 'jwk' }).x as string;
  return { signingKey, whpk: `whpk_${Buffer.from(x, 'base64url').toString('base64')}` };
}

/** Keys of `v1a` entries a case adds beside the real ones (no endpoint holds them). */
const BOGUS_V1A = [v1aPair('fuzz bogus v1a key 0').signingKey, v1aPair('fuzz bogus v1a key 1').signingKey];

/** `v1a` keys: one per endpoint that holds a `whpk_`, and one no endpoint holds. */
export const V1A_KEYS = {
  'standard-v1a': v1aPair('fuzz standard-v1a ed25519 key'),
  'standard-moving': v1aPair('fuzz standard-moving ed25519 key'),
  stranger: v1aPair('fuzz ed25519 key no endpoint holds'),
};
/** The `whsec_` of the endpoint in the middle of a move to `v1a`, and one no endpoint holds. */
const MOVING_WHSEC = `whsec_${Buffer.from('fuzz-standard-moving-hmac-key-01').toString('base64')}`;
const UNHELD_WHSEC = `whsec_${Buffer.from('fuzz-whsec-no-endpoint-holds-01').toString('base64')}`;

/** Adyen HMAC keys, hex as Adyen's Customer Area shows them (32 bytes each). */
export const ADYEN_KEYS = {
  main: '7A1C3E5F90B2D4F6081A3C5E7F91B3D5F7092B4D6F81A3C5E7092B4D6F81A3C5',
  rotatingNew: '0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF',
  rotatingOld: 'FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210',
  company: '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056',
  stranger: 'B16B00B5B16B00B5B16B00B5B16B00B5B16B00B5B16B00B5B16B00B5B16B00B5',
};

/** The Mollie stub's profile and key (test/support/mollie-stub.ts defaults); the API base URL is the stub's, set when the app starts. */
export const MOLLIE_PROFILE = 'pfl_StubProf01';
export const MOLLIE_API_KEY = 'test_stubKey9aF3kQ2mW7xR4tY8uJ6nB1c';

/**
 * The fuzz app's endpoints: the suites' own, one of many accounts per provider that declares one,
 * Standard endpoints holding a `whpk_` (alone, and beside a `whsec_`), Adyen endpoints (one key, a
 * rotation of two, and one of many accounts), and Mollie endpoints (the stub's key, and a key the
 * stub refuses).
 */
export const FUZZ_ENDPOINTS: EndpointDefinition[] = [
  ...TEST_ENDPOINTS,
  { id: 'stripe-connect', provider: 'stripe', secrets: ['whsec_fuzz_connect'], merchantAccountIds: ['acct_fz_A', 'acct_fz_B'] },
  { id: 'factuarea-platform', provider: 'factuarea', secrets: ['whsec_fuzz_factuarea_platform'], merchantAccountIds: ['fa_fz_A', 'fa_fz_B'] },
  { id: 'standard-platform', provider: 'standard', secrets: ['whsec_ZnV6ei1zdGFuZGFyZC1wbGF0Zm9ybS1rZXktMDE='], merchantAccountIds: ['acc_fz_A', 'acc_fz_B'] },
  { id: 'standard-v1a', provider: 'standard', secrets: [V1A_KEYS['standard-v1a'].whpk], merchantAccountId: 'acc_1' },
  { id: 'standard-moving', provider: 'standard', secrets: [MOVING_WHSEC, V1A_KEYS['standard-moving'].whpk], merchantAccountId: 'acc_1' },
  { id: 'adyen-main', provider: 'adyen', secrets: [ADYEN_KEYS.main], merchantAccountId: 'ShopEU' },
  { id: 'adyen-rotating', provider: 'adyen', secrets: [ADYEN_KEYS.rotatingNew, ADYEN_KEYS.rotatingOld], merchantAccountId: 'ShopEU' },
  { id: 'adyen-company', provider: 'adyen', secrets: [ADYEN_KEYS.company], merchantAccountIds: ['ShopEU', 'ShopUS'] },
  { id: 'mollie-main', provider: 'mollie', secrets: [], merchantAccountId: MOLLIE_PROFILE, apiKey: MOLLIE_API_KEY, apiBaseUrl: 'https://127.0.0.1:1' },
  { id: 'mollie-badkey', provider: 'mollie', secrets: [], merchantAccountId: MOLLIE_PROFILE, apiKey: 'test_notTheStubsKey0000000000000', apiBaseUrl: 'https://127.0.0.1:1' },
];

/** The endpoints as the app is configured: the Mollie ones fetch from the stub at `mollieBaseUrl`. */
export function fuzzEndpoints(mollieBaseUrl: string): EndpointDefinition[] {
  return FUZZ_ENDPOINTS.map((e) => (e.provider === 'mollie' ? { ...e, apiBaseUrl: mollieBaseUrl } : e));
}

export function endpointOf(endpointId: string): EndpointDefinition {
  const endpoint = FUZZ_ENDPOINTS.find((e) => e.id === endpointId);
  if (!endpoint) throw new Error(`no fuzz endpoint ${endpointId}`);
  return endpoint;
}

export function secretsOf(endpointId: string): string[] {
  return endpointOf(endpointId).secrets.map((s) => (typeof s === 'string' ? s : s.secret));
}

export function secretOf(endpointId: string): string {
  return secretsOf(endpointId)[0];
}

/** The HMAC secret a header provider's endpoint holds (Standard: its `whsec_`, if it has one), else null. */
function hmacSecretOf(endpointId: string): string | null {
  const secrets = secretsOf(endpointId);
  return (endpointOf(endpointId).provider === 'standard' ? secrets.find((s) => s.startsWith('whsec_')) : secrets[0]) ?? null;
}

/** Where a case of `provider` may be sent by mistake: another provider's endpoint (the header-signed ones; Adyen and Mollie read their bodies first). */
export function crossTargets(provider: FuzzProvider): EndpointDefinition[] {
  return FUZZ_ENDPOINTS.filter((e) => e.provider !== provider && (HEADER_PROVIDERS as readonly string[]).includes(e.provider));
}

/** Accounts a case may declare on an endpoint of many: served ones, and one no endpoint serves. */
export const DECLARED_ACCOUNTS: Record<HeaderProvider, string[]> = {
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
  name: HeaderProvider;
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

export const obj = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

export const PROVIDERS: Record<HeaderProvider, ProviderModel> = {
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
    endpoints: ['standard-main', 'standard-platform', 'standard-v1a', 'standard-moving'],
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
 * account (in the endpoint's scope when the event declares another); on an endpoint of many, the
 * declared one (none: no key, 400), in the endpoint's scope when the endpoint does not serve it.
 */
export function keyAccountOf(endpointId: string, declared: string | null): { account: string; scope: string } | null {
  const endpoint = endpointOf(endpointId);
  if (endpoint.merchantAccountIds === undefined) {
    return { account: endpoint.merchantAccountId!, scope: declared === null || declared === endpoint.merchantAccountId ? '' : endpointId };
  }
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
  /**
   * Standard: the real entries the header carries, in order (mutations aim at the last one): `v1`
   * (HMAC with `secret`), `v1a` (ed25519 with `v1aKey`), or both, as during a move between them.
   * Always `v1` for the other providers.
   */
  scheme: 'v1' | 'v1a' | 'v1 v1a' | 'v1a v1';
  /** Standard: the signing key of the real `v1a` entry — the endpoint's, another endpoint's, or one no endpoint holds. */
  v1aKey: 'own' | 'sibling' | 'stranger';
  /** Standard: `v1a` entries by a key no endpoint holds, before the real entries. */
  bogusV1a: number;
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
  /** Standard: the real `v1a` entry replaced by another spelling, length, key or body. */
  | { op: 'v1aEdit'; how: V1aEdit }
  | { op: 'retimestamp'; delta: number }
  | { op: 'contentType'; value: string | null; twice: boolean }
  | { op: 'addHeaders'; count: number; size: number }
  | { op: 'shuffle'; seed: number };

/** What a `v1aEdit` writes in place of the real `v1a` signature: none of them verifies. */
export const V1A_EDITS = ['nonCanonical', 'short', 'long', 'v1Length', 'otherKey', 'otherBody'] as const;
export type V1aEdit = (typeof V1A_EDITS)[number];

export type EndpointSpec =
  | { kind: 'own'; index: number; query: string }
  | { kind: 'unknown'; id: string }
  | { kind: 'cross'; index: number }
  | { kind: 'alias'; index: number; form: 'slash' | 'upper' | 'encoded' | 'prefixCase' };

export interface CaseSpec {
  provider: HeaderProvider;
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

export type Verdict = 'pass' | 'maybe' | 'fail';
export const worst = (a: Verdict, b: Verdict): Verdict => (a === 'fail' || b === 'fail' ? 'fail' : a === 'maybe' || b === 'maybe' ? 'maybe' : 'pass');
/** Either of two ways verifies: the better verdict. */
const best = (a: Verdict, b: Verdict): Verdict => (a === 'pass' || b === 'pass' ? 'pass' : a === 'maybe' || b === 'maybe' ? 'maybe' : 'fail');

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
  /** Signature header: the version of the last real entry (Standard: `v1` or `v1a`; the others `v1`). */
  realKind?: 'v1' | 'v1a';
  /** Signature header (Standard): false when the last real entry cannot verify on this endpoint (a key of the other kind, or one it does not hold). */
  realVerifies?: boolean;
  /**
   * Standard, with two real entries: the first one, which mutations do not aim at, whether it
   * verifies on this endpoint, and whether it is still there, readable, after the mutations.
   */
  backup?: { entry: string; verifies: boolean; state: Verdict };
  /** Standard: the real `v1a` signature as signed, and what each `v1aEdit` writes instead. */
  v1a?: { text: string; edits: Record<V1aEdit, string> };
}

export interface Expectation {
  /** Statuses the contract allows for this delivery. */
  allowed: number[];
  /** When 200: the event ids the answer may name. */
  ids: string[];
  /** Whether the delivery is authentic (a 2xx is possible at all). */
  authentic: boolean;
  why: string[];
  /** Where the model knows it: the `error` codes allowed with a status (e.g. 401: missing_signature). */
  errors?: Partial<Record<number, string[]>>;
  /** A 400 may come before the delivery is authentic: Adyen's body is read before its signatures, a Mollie hint before fetching it. */
  bodyFirst?: boolean;
}

/** One event a 200 records (Adyen: each item of the batch; Mollie: the payment fetched). */
export interface ExpectedEvent {
  eventId: string;
  account: string;
  scope: string;
  /** The stored body exactly, when the model knows it (an Adyen item as parsed, serialised). */
  body?: string;
  /** Fields the stored body holds (Mollie: the payment as the stub returned it). */
  bodyHas?: Record<string, unknown>;
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
  /**
   * Adyen and Mollie: the events a 200 records, in the delivery's order (a batch may name one event
   * twice); each is keyed on its own account. Undefined: the one event of `expect.ids`, under `account`.
   */
  events?: ExpectedEvent[];
  /** The body of a 200 when it is text (Adyen's `[accepted]`), not `{"status","eventId"}`. */
  answerText?: string;
  /** Mollie: whether the delivery makes the service ask Mollie (false: refused, or answered, without a fetch). */
  fetches?: boolean;
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

function keyOf(provider: HeaderProvider, secret: string): Buffer {
  return provider === 'standard' ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
}

const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** The `v1a` signing key a case names on an endpoint: its own (when it holds a `whpk_`), the other such endpoint's, or a stranger's. */
function v1aKeyOf(endpointId: string, which: SigningSpec['v1aKey']): { key: KeyObject; held: boolean } {
  const own = (V1A_KEYS as Record<string, { signingKey: KeyObject }>)[endpointId];
  if (which === 'own' && own) return { key: own.signingKey, held: true };
  if (which === 'sibling') return { key: V1A_KEYS[endpointId === 'standard-v1a' ? 'standard-moving' : 'standard-v1a'].signingKey, held: false };
  return { key: V1A_KEYS.stranger.signingKey, held: false };
}

/** Whether a token list (the header as the server reads it, less the entry that verifies) can be read as `version,signature` entries. */
function readableEntries(rest: string): boolean {
  return rest
    .split(/\s+/)
    .filter((t) => t !== '')
    .every((t) => t.indexOf(',') > 0);
}

/**
 * What the mutations left of a Standard header's first real entry (the one they do not aim at):
 * there, whole, among entries that still read as entries (pass); there among tokens that do not
 * (maybe: the contract calls such a header unparseable, or not); gone or changed (fail).
 */
function backupState(l: Line): Verdict {
  if (!l.backup) return 'fail';
  const value = seen(l.value);
  const at = value.indexOf(l.backup.entry);
  if (at < 0) return 'fail';
  const before = value.slice(0, at);
  const after = value.slice(at + l.backup.entry.length);
  if ((before !== '' && !/\s$/.test(before)) || (after !== '' && !/^\s/.test(after))) return 'fail';
  return readableEntries(`${before} ${after}`) ? 'pass' : 'maybe';
}

/** A signature header line's verdict: its last real entry as the mutations left it, or its first real one, whichever verifies. */
function signatureLineVerdict(l: Line): Verdict {
  const last = l.realVerifies === false ? 'fail' : l.taint;
  const first = l.backup?.verifies ? l.backup.state : 'fail';
  return best(last, first);
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

export const DEEP_MARK = 'DEEP_PLACEHOLDER_7f3a';

export function nested(d: Deep): string {
  return d.kind === '[' ? '['.repeat(d.depth) + ']'.repeat(d.depth) : '{"a":'.repeat(d.depth) + '1' + '}'.repeat(d.depth);
}

/** The body's bytes before signing (authentic whatever they are). */
export function bodyBytes(provider: HeaderProvider, spec: BodySpec, endpoint: string): Buffer {
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

export function rawEdit(bytes: Buffer, edit: RawEdit, idField: string): Buffer {
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
/** Where a case is sent: the path, the endpoint it names (null: none), the case's own endpoint, and statuses the path adds. */
export interface Route {
  path: string;
  endpointId: string | null;
  own: string;
  extra: number[];
  /** Sent to another provider's endpoint (a header-signed one: no signature there verifies). */
  cross: boolean;
}

/** The path a case's endpoint choice makes, among its provider's `endpoints`. */
export function route(provider: FuzzProvider, endpoints: readonly string[], endpoint: EndpointSpec, why: string[]): Route {
  const own = endpoints[(endpoint.kind === 'own' || endpoint.kind === 'alias' ? endpoint.index : 0) % endpoints.length];
  const extra: number[] = [];
  switch (endpoint.kind) {
    case 'own':
      if (endpoint.query !== '') {
        extra.push(400); // a query string is not part of the contract's checks; issue 12 #7 (NUL in the query)
        why.push(`query ${JSON.stringify(endpoint.query)}: 400 allowed`);
      }
      return { path: `/webhooks/${own}${endpoint.query}`, endpointId: own, own, extra, cross: false };
    case 'unknown':
      return { path: `/webhooks/${endpoint.id}`, endpointId: null, own, extra, cross: false };
    case 'cross': {
      const others = crossTargets(provider);
      const endpointId = others[endpoint.index % others.length].id;
      why.push(`sent to ${endpointId}, another provider's endpoint`);
      return { path: `/webhooks/${endpointId}`, endpointId, own, extra, cross: true };
    }
    case 'alias': {
      const form = endpoint.form;
      const path =
        form === 'slash' ? `/webhooks/${own}/` : form === 'upper' ? `/webhooks/${own.toUpperCase()}` : form === 'encoded' ? `/webhooks/${own.replace(/-/g, '%2D')}` : `/WebHooks/${own}`;
      extra.push(404);
      why.push(`path ${path}: 404 allowed`);
      return { path, endpointId: own, own, extra, cross: false };
    }
  }
}

export function build(spec: CaseSpec, now: number): Built {
  const model = PROVIDERS[spec.provider];
  const why: string[] = [];

  // The path and the endpoint it names.
  const { path, endpointId, own, extra, cross } = route(spec.provider, model.endpoints, spec.endpoint, why);
  let signatureVerdict: Verdict = cross ? 'fail' : 'pass';

  // The body, signed as it is.
  const signedBody = bodyBytes(spec.provider, spec.body, own);
  const ts = timestampText(spec.signing.timestamp, now);
  const ownHmac = hmacSecretOf(own);
  const secret =
    spec.signing.secret === 'own'
      ? (ownHmac ?? UNHELD_WHSEC)
      : spec.signing.secret === 'sibling'
        ? hmacSecretOf(model.endpoints.find((e) => e !== own && hmacSecretOf(e) !== null) ?? 'paymos-b')! // a configured secret, of another endpoint
        : spec.signing.secret.wrong;
  // Standard's real entries: `v1` (HMAC), `v1a` (ed25519), or both; the others sign `v1` only.
  const kinds = (spec.provider === 'standard' ? spec.signing.scheme : 'v1').split(' ') as Array<'v1' | 'v1a'>;
  const v1Verifies = spec.signing.secret === 'own' && ownHmac !== null;
  const v1aKey = kinds.includes('v1a') ? v1aKeyOf(own, spec.signing.v1aKey) : null;
  if (spec.provider !== 'standard') {
    if (spec.signing.secret !== 'own') {
      signatureVerdict = 'fail';
      why.push(`signed with ${spec.signing.secret === 'sibling' ? 'another endpoint’s' : 'a wrong'} secret`);
    }
  } else {
    if (kinds.includes('v1') && !v1Verifies) {
      why.push(`v1 entry: ${ownHmac === null ? 'the endpoint holds no whsec_' : `signed with ${spec.signing.secret === 'sibling' ? 'another endpoint’s' : 'a wrong'} secret`}`);
    }
    if (v1aKey && !v1aKey.held) {
      why.push(`v1a entry: ${spec.signing.v1aKey === 'own' ? 'the endpoint holds no whpk_' : `signed with ${spec.signing.v1aKey === 'sibling' ? 'another endpoint’s' : 'a stranger’s'} key`}`);
    }
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
  // The `v1a` entry: ed25519 over the same signed content, and what each `v1aEdit` writes instead.
  const content = Buffer.concat([Buffer.from(prefix, 'utf8'), signedBody]);
  const v1aBytes = v1aKey ? ed25519Sign(null, content, v1aKey.key) : null;
  const v1aSig = v1aBytes?.toString('base64') ?? '';
  const sigOf = (kind: 'v1' | 'v1a') => (kind === 'v1' ? realSig : v1aSig);
  const verifiesOf = (kind: 'v1' | 'v1a') => (kind === 'v1' ? v1Verifies || spec.provider !== 'standard' : v1aKey!.held);
  const lastKind = kinds[kinds.length - 1];
  /** The real signature mutations aim at: the last real entry's. */
  const lastReal = sigOf(lastKind);

  const lines: Line[] = [];
  const signed = (name: string, value: string, realLast?: boolean): Line => ({ name, value, original: value, taint: 'pass', realLast, realText: realLast ? lastReal : undefined });
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
      const strangers = BOGUS_V1A.slice(0, spec.signing.bogusV1a).map((k) => `v1a,${ed25519Sign(null, content, k).toString('base64')}`);
      const entries = [...(spec.signing.otherScheme ? [`v2,${realSig}`] : []), ...bogus.map((b) => `v1,${b}`), ...strangers, ...kinds.map((k) => `${k},${sigOf(k)}`)];
      const line = signed('webhook-signature', entries.join(' '), true);
      line.realKind = lastKind;
      line.realVerifies = verifiesOf(lastKind);
      if (kinds.length === 2) line.backup = { entry: `${kinds[0]},${sigOf(kinds[0])}`, verifies: verifiesOf(kinds[0]), state: 'pass' };
      if (v1aBytes) {
        const i = BASE64_ALPHABET.indexOf(v1aSig[85]);
        line.v1a = {
          text: v1aSig,
          edits: {
            // The same 64 bytes, the last character's 4 unused bits not zero: not canonical.
            nonCanonical: `${v1aSig.slice(0, 85)}${BASE64_ALPHABET[i ^ 1]}==`,
            short: v1aBytes.subarray(0, 63).toString('base64'),
            long: Buffer.concat([v1aBytes, Buffer.from([0])]).toString('base64'),
            v1Length: v1aBytes.subarray(0, 32).toString('base64'),
            otherKey: ed25519Sign(null, content, BOGUS_V1A[0]).toString('base64'),
            otherBody: ed25519Sign(null, Buffer.concat([content, Buffer.from(' ')]), v1aKey!.key).toString('base64'),
          },
        };
      }
      lines.push(signed('webhook-id', webhookId), signed('webhook-timestamp', ts), line);
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
  for (const m of spec.mutations) body = mutate(spec.provider, m, lines, body, lastReal, now);

  // Signed lines: missing, repeated or changed.
  for (const name of [model.signatureHeader, ...model.signedHeaders]) {
    const copies = lines.filter((l) => l.name.toLowerCase() === name);
    // A change undone by a later one (or invisible to the server, such as outer whitespace) is none.
    for (const l of copies) if (l.original !== undefined && seen(l.value) === seen(l.original)) l.taint = 'pass';
    // What is left of a first real entry, read on the value as it is now (a copy has its own).
    for (const l of copies) if (l.backup) l.backup = { ...l.backup, state: backupState(l) };
    const verdictOf = (l: Line): Verdict => (name === model.signatureHeader && l.original !== undefined ? signatureLineVerdict(l) : l.taint);
    let v: Verdict;
    if (copies.length === 0) v = 'fail';
    else if (copies.length === 1) v = verdictOf(copies[0]);
    else v = copies.every((l) => verdictOf(l) === 'fail') ? 'fail' : 'maybe';
    if (v !== 'pass') why.push(`${name}: ${copies.length === 0 ? 'dropped' : copies.length > 1 ? `${copies.length} lines` : 'changed'} (${v})`);
    signatureVerdict = worst(signatureVerdict, v);
  }
  if (!body.equals(signedBody)) {
    signatureVerdict = 'fail';
    why.push('body changed after signing');
  }

  const headers: HeaderLine[] = lines.map((l) => [l.name, l.value]);
  // The request line counts in the header block Node bounds.
  const headerBytes = headers.reduce((n, [k, v]) => n + k.length + Buffer.byteLength(v) + 4, 120 + Buffer.byteLength(path));

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

function pickLine(provider: HeaderProvider, lines: Line[], target: Target, which: number): Line | undefined {
  const model = PROVIDERS[provider];
  const names = target === 'sig' ? [model.signatureHeader] : target === 'signed' ? [model.signatureHeader, ...model.signedHeaders] : null;
  const pool = names ? lines.filter((l) => names.includes(l.name.toLowerCase())) : lines;
  return pool.length === 0 ? undefined : pool[which % pool.length];
}

const isSigned = (provider: HeaderProvider, l: Line) => l.original !== undefined && (l.name.toLowerCase() === PROVIDERS[provider].signatureHeader || PROVIDERS[provider].signedHeaders.includes(l.name.toLowerCase()));

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

function mutate(provider: HeaderProvider, m: Mutation, lines: Line[], body: Buffer, realSig: string, now: number): Buffer {
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
        const alphabet = BASE64_ALPHABET;
        // Chars 0–41 of a v1 (0–84 of a v1a) carry 6 signature bits each: any change is another signature.
        const i = m.pos % (l.realKind === 'v1a' ? 85 : 42);
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
        const alphabet = BASE64_ALPHABET;
        const last = l.realKind === 'v1a' ? 85 : 42;
        const v = alphabet.indexOf(realSig[last]);
        variant = realSig.slice(0, last) + alphabet[v ^ 1] + realSig.slice(last + 1);
      } else {
        variant = realSig.toUpperCase();
      }
      if (variant === realSig) return body;
      l.value = l.value.slice(0, at) + variant + l.value.slice(at + realSig.length);
      l.realText = variant;
      // A v1a is canonical base64 or no signature at all; for v1 the question is left open.
      taint(l, l.realKind === 'v1a' ? 'fail' : 'maybe');
      return body;
    }
    case 'v1aEdit': {
      const l = sigLine();
      if (!l?.v1a) return body;
      const entry = `v1a,${l.v1a.text}`;
      const at = l.value.lastIndexOf(entry);
      if (at < 0) return body;
      l.value = `${l.value.slice(0, at)}v1a,${l.v1a.edits[m.how]}${l.value.slice(at + entry.length)}`;
      if (l.realKind === 'v1a' && l.realText === l.v1a.text) {
        l.realText = undefined;
        taint(l, 'fail');
      }
      l.v1a = undefined;
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
export function requiredId(v: unknown, what: string, why: string[]): Verdict {
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

export function optionalId(v: unknown, what: string, why: string[]): Verdict {
  return typeof v !== 'string' || v === '' ? 'pass' : requiredId(v, what, why);
}

export function note(why: string[], text: string, v: Verdict): Verdict {
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
  provider: HeaderProvider,
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
