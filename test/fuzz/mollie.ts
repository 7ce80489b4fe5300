/**
 * The fuzzer's model of a Mollie delivery: an unsigned form body `id=tr_…` hinting that a payment
 * changed, authenticated by fetching the payment from Mollie (here the local stub,
 * test/support/mollie-stub.ts) — and the answers the contract allows for it:
 * - unknown endpoint: 404; body over the limit: 413;
 * - a body that is not exactly `id=<tr_ and letters and digits>`: 400, and Mollie is not asked;
 * - Mollie asked (with the endpoint's key): no such payment (404) → 400, nothing recorded; Mollie
 *   refusing the key, rate-limiting or failing (401, 429, 5xx) → 503;
 * - otherwise 200 `accepted` or `duplicate` for the business fact the payment shows, event id
 *   `<payment id>:<status>:<amountRefunded>:<amountChargedBack>` (`0` when absent), under the
 *   endpoint's account (in its own scope when the payment's profile is another).
 *
 * The stub's state is part of the world, not of the case: a case says what changes at Mollie
 * before it is sent (a status, a refund, a chargeback, a failure), the test applies it to the stub
 * (`prepareMollie`), and `buildMollie` reads the stub's payments to say what the answer must name.
 */
import fc from 'fast-check';
import { endpointArb, w } from './arbitraries';
import { Built, EndpointSpec, ExpectedEvent, HeaderLine, keyAccountOf, MAX_BODY, note, route } from './model';

export const MOLLIE_ENDPOINTS = ['mollie-main'] as const;
/** The endpoint whose API key the stub refuses (401): every hint it fetches answers 503. */
const BAD_KEY_ENDPOINT = 'mollie-badkey';

export type MollieStatus = 'open' | 'pending' | 'authorized' | 'paid' | 'failed' | 'canceled' | 'expired';

/** The stub's payments the cases hint at: their ids, and the profile each belongs to (one is another profile's). */
export const MOLLIE_PAYMENTS: ReadonlyArray<{ id: string; status: MollieStatus; profileId?: string }> = [
  { id: 'tr_fzOpen0001', status: 'open' },
  { id: 'tr_fzPaid0001', status: 'paid' },
  { id: 'tr_fzPaid0002', status: 'paid' },
  { id: 'tr_fzAuth0001', status: 'authorized' },
  { id: 'tr_fzPend0001', status: 'pending' },
  { id: 'tr_fzOther001', status: 'paid', profileId: 'pfl_SomeoneElse' },
];

/** A payment as the stub holds it (the fields the model reads). */
export interface StubPayment {
  id: string;
  status: string;
  profileId: string;
  amountRefunded?: { value: string };
  amountChargedBack?: { value: string };
}

/** What the model may read of the stub. */
export interface MollieWorld {
  payment(id: string): StubPayment | undefined;
}

/** The hint: of a payment of the pool, of an id of Mollie's shape the stub does not have, or another text altogether. */
export type MollieHint = { kind: 'payment'; index: number } | { kind: 'unknown'; id: string } | { kind: 'text'; text: string } | { kind: 'bytes'; bytes: number[] };

/** What is done to the hint's text before it is sent. */
export type MollieEdit =
  | 'space'
  | 'newline'
  | 'crlf'
  | 'extraField'
  | 'repeated'
  | 'otherKey'
  | 'upperKey'
  | 'quoted'
  | 'json'
  | 'nonUtf8'
  | 'bom'
  | 'nul'
  | 'huge'
  | 'over';

/** What changes at Mollie before the hint is sent. */
export type StubAction =
  | { op: 'status'; status: MollieStatus }
  | { op: 'refund'; value: string }
  | { op: 'chargeback'; value: string }
  | { op: 'fail'; status: 429 | 502 };

export interface MollieCase {
  provider: 'mollie';
  endpoint: EndpointSpec;
  /** Sent to the endpoint whose API key the stub refuses, instead of the case's own. */
  badKey: boolean;
  hint: MollieHint;
  edit: MollieEdit | null;
  stub: StubAction | null;
  contentType: string | null;
  transport: { chunked: boolean; sends: 1 | 2; concurrent: boolean };
}

/** The hint's shape the contract names: `id=` and an id of `tr_` and letters and digits (the adapter bounds it at 64). */
const HINT = /^id=(tr_[A-Za-z0-9]+)$/;
const LONGEST_ID = 64;

/** The bytes a case sends. */
export function hintBytes(spec: MollieCase): Buffer {
  const h = spec.hint;
  if (h.kind === 'bytes') return Buffer.from(h.bytes);
  const base = h.kind === 'text' ? h.text : `id=${h.kind === 'payment' ? MOLLIE_PAYMENTS[h.index % MOLLIE_PAYMENTS.length].id : h.id}`;
  const id = base.startsWith('id=') ? base.slice(3) : base;
  switch (spec.edit) {
    case null:
      return Buffer.from(base, 'latin1');
    case 'space':
      return Buffer.from(` ${base}`);
    case 'newline':
      return Buffer.from(`${base}\n`);
    case 'crlf':
      return Buffer.from(`${base}\r\n`);
    case 'extraField':
      return Buffer.from(`${base}&testByMollie=1`);
    case 'repeated':
      return Buffer.from(`${base}&${base}`);
    case 'otherKey':
      return Buffer.from(`payment_id=${id}`);
    case 'upperKey':
      return Buffer.from(`ID=${id}`);
    case 'quoted':
      return Buffer.from(`id="${id}"`);
    case 'json':
      return Buffer.from(JSON.stringify({ id }));
    case 'nonUtf8':
      return Buffer.concat([Buffer.from(base, 'latin1'), Buffer.from([0xff])]);
    case 'bom':
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(base, 'latin1')]);
    case 'nul':
      return Buffer.concat([Buffer.from(base, 'latin1'), Buffer.from([0])]);
    case 'huge':
      return Buffer.from(`${base}&pad=${'a'.repeat(20_000)}`);
    case 'over':
      return Buffer.from(`${base}&pad=${'a'.repeat(MAX_BODY)}`);
  }
}

/** The payment id a case's bytes name, when they are a hint of the contract's shape; else null. */
function hintedId(bytes: Buffer): string | null {
  const match = HINT.exec(bytes.toString('latin1'));
  return match && /^[\x00-\x7f]*$/.test(bytes.toString('latin1')) ? match[1] : null;
}

/** Where a case goes: its endpoint (or the one whose key the stub refuses), and whether the service will ask Mollie. */
export function mollieTarget(spec: MollieCase): { fetchesAtMain: boolean } {
  const bytes = hintBytes(spec);
  const id = hintedId(bytes);
  const onMain = spec.endpoint.kind === 'own' && spec.endpoint.query === '' && !spec.badKey;
  return { fetchesAtMain: onMain && bytes.length <= MAX_BODY && id !== null && id.length - 3 <= LONGEST_ID };
}

/** Builds the request a Mollie case sends (the stub already changed as the case says) and what the contract allows as its answer. */
export function buildMollie(spec: MollieCase, world: MollieWorld, failing: boolean): Built {
  const why: string[] = [];
  const r = route('mollie', MOLLIE_ENDPOINTS, spec.endpoint, why);
  let { path, endpointId } = r;
  const own = spec.badKey && spec.endpoint.kind === 'own' ? BAD_KEY_ENDPOINT : r.own;
  if (own === BAD_KEY_ENDPOINT) {
    path = `/webhooks/${own}${spec.endpoint.kind === 'own' ? spec.endpoint.query : ''}`;
    endpointId = own;
    why.push('an endpoint whose API key Mollie refuses');
  }
  const body = hintBytes(spec);
  const headers: HeaderLine[] = spec.contentType === null ? [] : [['Content-Type', spec.contentType]];

  const allowed = new Set<number>(r.extra);
  const errors: Partial<Record<number, string[]>> = {};
  let events: ExpectedEvent[] | undefined;
  let fetches: boolean | undefined = false;
  let authentic = false;
  const done = (): Built => ({
    path,
    endpointId,
    account: events?.[0]?.account ?? null,
    scope: events?.[0]?.scope ?? '',
    headers,
    body,
    chunked: spec.transport.chunked,
    expect: { allowed: [...allowed].sort(), ids: events?.map((e) => e.eventId) ?? [], authentic, why, errors, bodyFirst: true },
    events,
    fetches,
  });
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
  if (r.cross) {
    allowed.add(401);
    errors[401] = ['missing_signature'];
    return done();
  }
  const id = hintedId(body);
  if (id === null) {
    note(why, `not a hint: ${JSON.stringify(body.toString('latin1').slice(0, 60))}`, 'fail');
    allowed.add(400);
    errors[400] = ['malformed_payload'];
    return done();
  }
  if (id.length - 3 > LONGEST_ID) {
    // Mollie's ids are far shorter; whether such an id is asked for or refused unasked, it is no payment.
    note(why, `payment id of ${id.length} characters`, 'fail');
    allowed.add(400);
    errors[400] = ['malformed_payload'];
    fetches = undefined;
    return done();
  }
  // A path the contract does not name (an alias, a query) may be refused before anything is read.
  fetches = r.extra.length === 0 ? true : undefined;
  if (own === BAD_KEY_ENDPOINT) {
    why.push('Mollie answers 401 to the key');
    allowed.add(503);
    errors[503] = ['unavailable'];
    return done();
  }
  if (failing) {
    // Mollie fails the next fetch only: a second send fetches again, and a failure is never reused.
    why.push('Mollie fails (429 or 5xx) once');
    allowed.add(503);
    errors[503] = ['unavailable'];
    if (spec.transport.sends === 1) return done();
  }
  const payment = world.payment(id);
  if (!payment) {
    note(why, `Mollie has no payment ${id}`, 'fail');
    allowed.add(400);
    errors[400] = ['malformed_payload'];
    return done();
  }
  authentic = true;
  const eventId = `${payment.id}:${payment.status}:${payment.amountRefunded?.value || '0'}:${payment.amountChargedBack?.value || '0'}`;
  const key = keyAccountOf(own, payment.profileId)!;
  if (key.scope !== '') why.push(`profile ${payment.profileId} not the endpoint's: keyed in its scope`);
  allowed.add(200);
  events = [{ eventId, account: key.account, scope: key.scope, bodyHas: { resource: 'payment', id: payment.id, status: payment.status, profileId: payment.profileId } }];
  return done();
}

// ---------------------------------------------------------------------------------------------
// Arbitraries

const text: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', 'id=', 'id=tr_', 'id=re_4qqhO89gsT', 'id=tr_abc-def', 'id=tr_abc_def', 'id=tr_é1', 'id=tr_abc%20', 'id=TR_abc', 'tr_fzPaid0001', '{"id":"tr_fzPaid0001"}', 'id=tr_' + 'a'.repeat(65), 'id=tr_' + 'A'.repeat(64), 'id[]=tr_fzPaid0001', 'id=tr_fzPaid0001;'),
  fc.string({ unit: 'binary', maxLength: 30 }),
);

export function mollieCaseArb(): fc.Arbitrary<MollieCase> {
  return fc.record({
    provider: fc.constant('mollie' as const),
    endpoint: endpointArb('mollie', MOLLIE_ENDPOINTS),
    badKey: fc.oneof(w(12, fc.constant(false)), w(1, fc.constant(true))),
    hint: fc.oneof(
      w(10, fc.record({ kind: fc.constant('payment' as const), index: fc.nat() })),
      w(2, fc.record({ kind: fc.constant('unknown' as const), id: fc.oneof(fc.stringMatching(/^tr_[A-Za-z0-9]{1,20}$/), fc.constantFrom('tr_unknown0001', 'tr_unknown0002')) })),
      w(2, fc.record({ kind: fc.constant('text' as const), text })),
      w(1, fc.record({ kind: fc.constant('bytes' as const), bytes: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 24 }) })),
    ),
    edit: fc.oneof(
      w(12, fc.constant(null)),
      w(1, fc.constantFrom<MollieEdit>('space', 'newline', 'crlf', 'extraField', 'repeated', 'otherKey', 'upperKey', 'quoted', 'json', 'nonUtf8', 'bom', 'nul', 'huge', 'over')),
    ),
    stub: fc.oneof(
      w(8, fc.constant(null)),
      w(2, fc.record({ op: fc.constant('status' as const), status: fc.constantFrom<MollieStatus>('open', 'pending', 'authorized', 'paid', 'failed', 'canceled', 'expired') })),
      w(2, fc.record({ op: fc.constant('refund' as const), value: fc.constantFrom('1.00', '10.00', '0.50') })),
      w(1, fc.record({ op: fc.constant('chargeback' as const), value: fc.constantFrom('49.90', '5.00') })),
      w(1, fc.record({ op: fc.constant('fail' as const), status: fc.constantFrom(429 as const, 502 as const) })),
    ),
    contentType: fc.oneof(w(8, fc.constant('application/x-www-form-urlencoded')), w(1, fc.constantFrom(null, 'application/json', 'text/plain', 'multipart/form-data; boundary=x'))),
    transport: fc.record({
      chunked: fc.oneof(w(5, fc.constant(false)), w(1, fc.constant(true))),
      sends: fc.oneof(w(5, fc.constant(1 as const)), w(2, fc.constant(2 as const))),
      concurrent: fc.boolean(),
    }),
  });
}

// ---------------------------------------------------------------------------------------------
// Sequences: what a minute remembers of the hints of several addresses

/** One hint of a sequence: from one of a few addresses, of a payment of the pool or of an id Mollie does not have. */
export interface SequencedHint {
  from: number;
  hint: { kind: 'payment'; index: number } | { kind: 'unknown'; n: number };
}

/** Addresses a sequence sends from, and how many distinct ids Mollie does not have it draws on (enough to pass 60 from one address). */
export const SEQUENCE_SENDERS = 3;
const UNKNOWN_POOL = 200;

export function hintSequenceArb(): fc.Arbitrary<SequencedHint[]> {
  const hint = fc.record({
    // Most from the first address, so that it passes its limit in some runs.
    from: fc.oneof(w(6, fc.constant(0)), w(1, fc.integer({ min: 1, max: SEQUENCE_SENDERS - 1 }))),
    hint: fc.oneof(
      w(1, fc.record({ kind: fc.constant('payment' as const), index: fc.nat() })),
      w(5, fc.record({ kind: fc.constant('unknown' as const), n: fc.nat({ max: UNKNOWN_POOL - 1 }) })),
    ),
  });
  return fc.array(hint, { minLength: 60, maxLength: 180, size: 'max' });
}

/**
 * What the contract says of a sequence sent within one minute, one hint at a time, to an endpoint
 * whose payments the service already knows: a payment is fetched and answered 200 whoever sends it;
 * an id Mollie does not have is fetched once a minute (then answered 400 from memory), and an
 * address that named more than 60 such ids is answered 429 without a call (for such an id).
 */
export class HintSequenceModel {
  private readonly notFound = new Set<string>();
  private readonly named = new Map<number, Set<string>>();

  /** The answer's status, and whether Mollie is asked. */
  expect(hint: SequencedHint, id: string, isPayment: boolean): { status: number; calls: boolean } {
    if (isPayment) return { status: 200, calls: true };
    const named = this.named.get(hint.from) ?? new Set<string>();
    this.named.set(hint.from, named);
    if (named.size > 60) return { status: 429, calls: false };
    const calls = !this.notFound.has(id);
    this.notFound.add(id);
    named.add(id);
    return { status: 400, calls };
  }
}
