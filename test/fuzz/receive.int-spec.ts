/**
 * Fuzzing the receive path: per provider, thousands of mutations of authentic
 * deliveries against a real app on the real PostgreSQL and Redis. Checked on every case:
 * - no answer is 5xx (the database is up; Mollie's API failing is the one 503 a case may expect),
 *   and every answer comes within 10 s;
 * - no answer is 2xx unless the delivery is authentic (see model.ts for how each case's allowed
 *   answers are decided: signed by a configured secret over the exact bytes sent, in tolerance;
 *   adyen.ts for batches signed item by item inside the body; mollie.ts for hints authenticated by
 *   fetching them from a stub of Mollie's API); a change after signing is a 4xx, a weird body
 *   signed properly is 200 or 400;
 * - rows appear only for authentic deliveries: the inbox grows by exactly the number of events
 *   the model says are new (one per `accepted` answer; for an Adyen batch, each of its events not
 *   recorded before, once), a `duplicate` adds none, an event is accepted once (the dedup model),
 *   and the row holds the id the answer named and the bytes that were sent (an Adyen item as
 *   parsed, the payment Mollie returned); the archive reads it back;
 * - Mollie is never asked about a hint the service refuses unasked, and a second send of a hint
 *   asks again (a failure is never reused);
 * - sequences of Mollie hints from several addresses within one minute answer as the model of what
 *   a minute remembers says (mollie.ts `HintSequenceModel`): a payment is always fetched, an id
 *   Mollie does not have is asked once a minute, an address past 60 such ids gets 429 unasked;
 * - the process stays healthy: /health and /health/ready answer 200 at the end.
 *
 * And a host adapter that misbehaves at random (hostile.ts): throws, rejects, never settles,
 * settles after the deadline, or returns what is no result, on deliveries signed or not. Checked on
 * every case: never a 2xx unless the delivery is authentic and the adapter honest, the answer the
 * receive path gives that misbehaviour (503, or the contract's 400), no row for a refused
 * delivery (nor for a late acceptance), the unverified bytes back to 0 once answered (or once the
 * sender hangs up), no rejection left unhandled, and the process healthy at the end.
 *
 * PayPal, Checkout.com, Square and Paddle: sequences.int-spec.ts sends them signed, forged or edited
 * after signing, in sequences whose processing a model of the lifecycle predicts.
 *
 * Replay: the seed is in each test's name and printed; `FUZZ_SEED=<n> npx jest test/fuzz` replays
 * the whole run (add `-t <provider>` for one provider; fast-check's printed `path` goes in
 * `FUZZ_PATH`). `FUZZ_RUNS` (default 400 per provider; Mollie, whose every case asks the stub over
 * HTTPS, a quarter of it) raises the count; `FUZZ_PLATFORMS=express,fastify` adds Fastify
 * (default: Express).
 */
import fc from 'fast-check';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { request } from 'node:http';
import { WebhookSignatureGuard } from '../../src/webhooks/webhook-signature.guard';
import { AUTH, createTestApp, eventually, Platform, TestApp, truncateAll } from '../support/app';
import { hostileLate, hostileProvider } from '../support/hostile-provider';
import { testPgConnection } from '../support/env';
import { MollieStub } from '../support/mollie-stub';
import { AdyenCase, adyenCaseArb, AdyenItemSpec, buildAdyen } from './adyen';
import { caseArb } from './arbitraries';
import { Answer, get, post } from './client';
import { buildMollie, hintSequenceArb, HintSequenceModel, MOLLIE_PAYMENTS, MollieCase, mollieCaseArb, mollieTarget, SEQUENCE_SENDERS, StubPayment } from './mollie';
import { build, Built, CaseSpec, FuzzProvider, fuzzEndpoints, HeaderProvider, MAX_BODY, MOLLIE_API_KEY, MOLLIE_PROFILE, PROVIDER_NAMES } from './model';
import { buildHostile, HOSTILE_ACCOUNT, HOSTILE_ENDPOINT, HOSTILE_SECRET, HostileBuilt, HostileCase, hostileCaseArb } from './hostile';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 0x7fffffff);
const RUNS = Number(process.env.FUZZ_RUNS || 400);
const PATH = process.env.FUZZ_PATH || undefined;
const FUZZ_PLATFORMS = (process.env.FUZZ_PLATFORMS || 'express').split(',').map((p) => p.trim()) as Platform[];

const SIGNATURE_ERRORS = ['missing_signature', 'invalid_signature', 'timestamp_out_of_tolerance'];

type AnyCase = CaseSpec | AdyenCase | MollieCase;

const arbitraryOf = (provider: FuzzProvider): fc.Arbitrary<AnyCase> =>
  provider === 'adyen' ? adyenCaseArb() : provider === 'mollie' ? mollieCaseArb() : caseArb(provider as HeaderProvider);
/** Mollie's cases each ask the stub over HTTPS: a quarter of the runs keeps the suite fast. */
const runsOf = (provider: FuzzProvider) => (provider === 'mollie' ? Math.max(1, Math.round(RUNS / 4)) : RUNS);

interface Stats {
  cases: number;
  statuses: Record<string, number>;
  accepted: number;
  duplicate: number;
  /** Rows the deliveries added (an Adyen batch: one per new event). */
  rows: number;
  authenticCases: number;
  ms: { rows: number; send: number; total: number };
}

const newStats = (): Stats => ({ cases: 0, statuses: {}, accepted: 0, duplicate: 0, rows: 0, authenticCases: 0, ms: { rows: 0, send: 0, total: 0 } });

const preview = (s: string, n = 160) => (s.length > n ? `${JSON.stringify(s.slice(0, n))}… (${s.length} chars)` : JSON.stringify(s));

function explain(b: Built, answers: Answer[], problem: string): string {
  const text = b.body.toString('utf8');
  return [
    problem,
    `  POST ${preview(b.path, 100)}${b.chunked ? ' (chunked)' : ''}`,
    ...b.headers.map(([k, v]) => `  ${k}: ${preview(v, 120)}`),
    `  body (${b.body.length} bytes): ${preview(text, 600)}`,
    `  allowed: [${b.expect.allowed.join(', ')}]${b.expect.ids.length ? `, ids ${b.expect.ids.map((i) => JSON.stringify(i)).join(' | ')}` : ''}`,
    ...(b.expect.errors && Object.keys(b.expect.errors).length ? [`  errors: ${JSON.stringify(b.expect.errors)}`] : []),
    `  why: ${b.expect.why.join('; ') || 'an authentic, well-formed delivery'}`,
    ...answers.map((a, i) => `  answer ${i + 1}: ${a.status} ${preview(JSON.stringify(a.body) ?? String(a.body), 200)}${a.error ? ` (${a.error})` : ''}`),
  ].join('\n');
}

describe.each(FUZZ_PLATFORMS)('%s: fuzzing POST /webhooks/:endpointId', (platform) => {
  let t: TestApp;
  let port: number;
  /** A connection of the test's own for counting rows (the app's pool is the thing under test). */
  let pg: Client;
  /** The inbox's row count after the last case (nothing else writes to this suite's database). */
  let known: number | null = null;
  /** The dedup model: every (provider, account, event id, key scope) the service recorded. */
  const recorded = new Set<string>();
  /** Mollie's API, as the Mollie endpoints see it. */
  const stub = new MollieStub(MOLLIE_API_KEY, MOLLIE_PROFILE);
  const payments = new Map<string, StubPayment>();

  beforeAll(async () => {
    await stub.start();
    for (const p of MOLLIE_PAYMENTS) payments.set(p.id, stub.addPayment({ id: p.id, status: p.status, profileId: p.profileId }) as unknown as StubPayment);
    // Workers off (createTestApp's default): processing is not what is fuzzed, and rows stay put.
    t = await createTestApp({ webhookMaxBodyBytes: MAX_BODY, endpoints: fuzzEndpoints(stub.url) }, { platform });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    await truncateAll(t.dataSource);
    pg = new Client(testPgConnection());
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await t?.close();
    await stub.stop();
  });

  const rows = async (): Promise<number> => (await pg.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_inbox`)).rows[0].n;

  const send = (b: Built) => post(port, b.path, b.headers, b.body, b.chunked);

  const keyString = (provider: FuzzProvider, account: string | null, eventId: unknown, scope: string) => `${provider}\u0000${account}\u0000${eventId}\u0000${scope}`;

  /** What changes at Mollie before a case is sent (its payment's status, a refund, a chargeback; a failure only if the case makes the service ask). Returns whether Mollie will fail. */
  function prepareMollie(spec: MollieCase): boolean {
    const action = spec.stub;
    if (!action) return false;
    if (action.op === 'fail') {
      if (!mollieTarget(spec).fetchesAtMain) return false;
      // A 5xx is tried three times by the client (at once, with Retry-After 0); a 429 once.
      if (action.status === 429) stub.failNext(1, 429);
      else stub.failNext(3, 502, { retryAfter: 0 });
      return true;
    }
    if (spec.hint.kind !== 'payment') return false;
    const payment = MOLLIE_PAYMENTS[spec.hint.index % MOLLIE_PAYMENTS.length];
    const state = payments.get(payment.id)!;
    if (action.op === 'status') stub.setStatus(payment.id, action.status);
    else if (state.status === 'paid' && action.op === 'refund') stub.refund(payment.id, action.value);
    else if (state.status === 'paid' && action.op === 'chargeback') stub.chargeBack(payment.id, action.value);
    return false;
  }

  function buildCase(spec: AnyCase): Built {
    if (spec.provider === 'adyen') return buildAdyen(spec);
    if (spec.provider === 'mollie') {
      // A minute on: what Mollie answered 404 for, and what each address named, is forgotten, so
      // each case stands alone (the sequences below fuzz what a minute remembers).
      t.clock.setSeconds(Math.floor(t.clock.now() / 1000) + 61);
      const failing = prepareMollie(spec);
      return buildMollie(spec, { payment: (id) => payments.get(id) }, failing);
    }
    return build(spec, Math.floor(t.clock.now() / 1000));
  }

  async function check(spec: AnyCase, stats: Stats): Promise<{ b: Built; answers: Answer[]; added: number }> {
    const b = buildCase(spec);
    const t0 = performance.now();
    const before = known ?? (await rows());
    known = null;
    const asked = stub.requests.length;
    const t1 = performance.now();
    let answers: Answer[];
    if (spec.transport.sends === 2 && spec.transport.concurrent) answers = await Promise.all([send(b), send(b)]);
    else {
      answers = [await send(b)];
      if (spec.transport.sends === 2) answers.push(await send(b));
    }
    const t2 = performance.now();
    const after = await rows();
    known = after;
    stats.ms.rows += t1 - t0 + (performance.now() - t2);
    stats.ms.send += t2 - t1;
    const fail = (problem: string): never => {
      throw new Error(explain(b, answers, problem));
    };
    const ok = answers.filter((a) => a.status === 200);

    // The dedup model first: a check failing below must not leave it behind the database.
    const keyOf = (a: Answer) => keyString(spec.provider, b.account, (a.body as { eventId?: string }).eventId, b.scope);
    const wasRecorded = new Map<string, boolean>();
    /** Events of a delivery that names them itself (Adyen, Mollie): their keys, first occurrence first. */
    const eventKeys = new Map<string, NonNullable<Built['events']>[number]>();
    if (b.events) {
      for (const e of b.events) {
        const key = keyString(spec.provider, e.account, e.eventId, e.scope);
        if (!eventKeys.has(key)) eventKeys.set(key, e);
      }
      for (const key of eventKeys.keys()) wasRecorded.set(key, recorded.has(key));
      if (ok.length > 0) for (const key of eventKeys.keys()) recorded.add(key);
    } else {
      for (const a of answers) {
        if (a.status !== 200) continue;
        const key = keyOf(a);
        if (!wasRecorded.has(key)) wasRecorded.set(key, recorded.has(key));
        if ((a.body as { status?: string }).status === 'accepted') recorded.add(key);
      }
    }
    const fresh = [...eventKeys.keys()].filter((k) => wasRecorded.get(k) === false);

    stats.cases++;
    if (b.expect.allowed.includes(200)) stats.authenticCases++;
    for (const a of answers) {
      stats.statuses[a.status] = (stats.statuses[a.status] ?? 0) + 1;
      if (a.status === -1) fail('no answer within 10 s');
      // The server may close a connection it refuses early (413, 431) while the body is still going out.
      if (a.status === 0 && !b.expect.allowed.some((s) => s === 413 || s === 431)) fail('the connection failed without an answer');
      if (a.status >= 500 && !b.expect.allowed.includes(a.status)) fail(`a 5xx answer while the database is up`);
      if (a.status >= 200 && a.status < 300 && !b.expect.authentic) fail('a 2xx for a delivery that is not authentic');
      // Fastify routes by case: `/WebHooks/<id>` is not the webhook route there, and the API's body
      // parsing answers it (400 validation_failed, 415). Outside the webhook contract; never 2xx.
      const fastifyOtherRoute = platform === 'fastify' && spec.endpoint.kind === 'alias' && spec.endpoint.form === 'prefixCase' && [400, 404, 415].includes(a.status);
      if (a.status !== 0 && !fastifyOtherRoute && !b.expect.allowed.includes(a.status)) fail(`status ${a.status} is not one the contract allows here`);
      const body = (typeof a.body === 'object' && a.body !== null ? a.body : {}) as Record<string, unknown>;
      const codes = b.expect.errors?.[a.status];
      if (codes && !fastifyOtherRoute && !codes.includes(body.error as string)) fail(`error ${JSON.stringify(body.error)}, not ${codes.join(' or ')}`);
      if (a.status === 200) {
        if (b.answerText !== undefined) {
          if (a.body !== b.answerText) fail(`a 200 that is not the text ${JSON.stringify(b.answerText)}`);
          if (!/^text\/plain/.test(a.contentType ?? '')) fail(`a 200 of Content-Type ${JSON.stringify(a.contentType)}, not text/plain`);
        } else {
          if (body.status !== 'accepted' && body.status !== 'duplicate') fail('a 200 that is neither accepted nor duplicate');
          if (!b.expect.ids.includes(body.eventId as string)) fail(`the answer names event ${JSON.stringify(body.eventId)}`);
        }
      }
      if (a.status === 401 && !SIGNATURE_ERRORS.includes(body.error as string)) fail('a 401 without a signature error');
      if (a.status === 400 && body.error === 'malformed_payload' && !b.expect.authentic && !b.expect.bodyFirst) fail('malformed_payload for a delivery that is not authentic: its body was judged before its signature');
      if (a.status === 413 && body.error !== 'payload_too_large') fail('a 413 without payload_too_large');
      if (a.status === 404 && b.endpointId === null && body.error !== 'unknown_endpoint') fail('a 404 without unknown_endpoint');
    }
    // Mollie is asked only about what could be a payment.
    if (b.fetches === false && stub.requests.length !== asked) fail(`Mollie was asked ${stub.requests.length - asked} times about a hint refused unasked`);
    if (b.fetches === true && answers.some((a) => a.status !== 0) && stub.requests.length === asked) fail('answered without asking Mollie');

    if (b.events) {
      // Answers of a delivery that names its events: each is recorded once, whatever the answer says.
      const expected = ok.length > 0 ? fresh.length : 0;
      if (after - before !== expected) fail(`the inbox grew by ${after - before} rows; the model says ${expected} (of ${eventKeys.size} events, ${ok.length} answers 200)`);
      stats.rows += after - before;
      if (b.answerText !== undefined) {
        ok.forEach((_, i) => stats[i === 0 && fresh.length > 0 ? 'accepted' : 'duplicate']++);
      } else {
        const accepted = ok.filter((a) => (a.body as { status?: string }).status === 'accepted').length;
        if (accepted !== (ok.length > 0 && fresh.length > 0 ? 1 : 0)) fail(`${accepted} answers accepted; the event was ${fresh.length > 0 ? 'new' : 'recorded before'}`);
        stats.accepted += accepted;
        stats.duplicate += ok.length - accepted;
      }
      if (ok.length > 0) {
        for (const [key, e] of eventKeys) {
          const found: Array<{ id: string; event_id: string; body: string }> = await t.dataSource.query(
            `SELECT id, event_id, body FROM webhook_inbox WHERE provider = $1 AND merchant_account_id = $2 AND event_id = $3 AND key_scope = $4`,
            [spec.provider, e.account, e.eventId, e.scope],
          );
          if (found.length !== 1) fail(`${found.length} rows for the recorded event ${JSON.stringify(e.eventId)} (account ${e.account}, scope ${JSON.stringify(e.scope)})`);
          if (wasRecorded.get(key)) continue;
          if (e.body !== undefined && found[0].body !== e.body) fail(`the row of ${JSON.stringify(e.eventId)} holds ${preview(found[0].body, 300)}, not the item sent`);
          if (e.bodyHas) {
            const stored = JSON.parse(found[0].body) as Record<string, unknown>;
            for (const [k, v] of Object.entries(e.bodyHas)) if (stored[k] !== v) fail(`the row of ${JSON.stringify(e.eventId)} has ${k} ${JSON.stringify(stored[k])}, not ${JSON.stringify(v)}`);
          }
          const detail = await get(port, `/admin/webhook-deliveries/${found[0].id}`, AUTH);
          if (detail.status !== 200) fail(`the archive answers ${detail.status} for the recorded delivery ${found[0].id}: ${preview(JSON.stringify(detail.body) ?? '', 200)}`);
        }
      }
      return { b, answers, added: after - before };
    }

    // Rows: exactly one per accepted answer, none for anything else.
    const accepted = answers.filter((a) => a.status === 200 && (a.body as { status?: string }).status === 'accepted');
    if (after - before !== accepted.length) fail(`the inbox grew by ${after - before} rows for ${accepted.length} accepted answers`);
    stats.rows += after - before;
    for (const a of ok) stats[(a.body as { status: 'accepted' | 'duplicate' }).status]++;

    // The dedup model: an event is accepted once, and only a recorded event is a duplicate.
    const byKey = new Map<string, { accepted: number; answered: number; eventId: string }>();
    for (const a of ok) {
      const eventId = (a.body as { eventId: string }).eventId;
      const key = keyOf(a);
      const entry = byKey.get(key) ?? { accepted: 0, answered: 0, eventId };
      entry.answered++;
      if ((a.body as { status: string }).status === 'accepted') entry.accepted++;
      byKey.set(key, entry);
    }
    for (const [key, entry] of byKey) {
      const before = wasRecorded.get(key) === true;
      if (before && entry.accepted > 0) fail(`event ${JSON.stringify(entry.eventId)} accepted again after it was recorded`);
      if (!before && entry.accepted !== 1) {
        fail(entry.accepted === 0 ? `event ${JSON.stringify(entry.eventId)} answered duplicate, but no delivery of it was ever accepted` : `event ${JSON.stringify(entry.eventId)} accepted ${entry.accepted} times`);
      }
      if (entry.accepted === 0) continue;
      // The row holds what was answered and what was sent; the archive reads it back.
      const found: Array<{ id: string; event_id: string; body: string }> = await t.dataSource.query(
        `SELECT id, event_id, body FROM webhook_inbox WHERE provider = $1 AND merchant_account_id = $2 AND event_id = $3 AND key_scope = $4`,
        [spec.provider, b.account, entry.eventId, b.scope],
      );
      if (found.length !== 1) fail(`${found.length} rows for the accepted event ${JSON.stringify(entry.eventId)}`);
      if (found[0].event_id !== entry.eventId) fail(`the row's event id reads back as ${JSON.stringify(found[0].event_id)}, not the ${JSON.stringify(entry.eventId)} accepted`);
      if (found[0].body !== b.body.toString('utf8')) fail('the row does not hold the bytes that were sent');
      const detail = await get(port, `/admin/webhook-deliveries/${found[0].id}`, AUTH);
      if (detail.status !== 200) fail(`the archive answers ${detail.status} for the accepted delivery ${found[0].id}: ${preview(JSON.stringify(detail.body) ?? '', 200)}`);
    }
    return { b, answers, added: after - before };
  }

  async function healthy(): Promise<void> {
    expect((await get(port, '/health')).status).toBe(200);
    const ready = await get(port, '/health/ready');
    expect({ status: ready.status, body: ready.body }).toMatchObject({ status: 200 });
  }

  /** Untouched deliveries, one per provider and scheme: each must be accepted as new. */
  function sanityCases(): AnyCase[] {
    const transport = { chunked: false, sends: 1 as const, concurrent: false };
    const headerCase = (provider: HeaderProvider, index: number, scheme: CaseSpec['signing']['scheme']): CaseSpec => {
      const sample = fc.sample(caseArb(provider), { seed: 1, numRuns: 1 })[0];
      return {
        ...sample,
        endpoint: { kind: 'own', index, query: '' },
        body: { id: `evt_sanity_${provider}_${platform}`, type: 'invoice.paid', resourceId: 'inv_sanity', overrides: [], deep: null, pad: 0, indent: 0, raw: [] },
        webhookId: `msg_sanity_${scheme.replace(' ', '_')}_${platform}`,
        signing: { secret: 'own', bogus: [], otherScheme: false, timestamp: { kind: 'now', delta: 0 }, tLast: false, scheme, v1aKey: 'own', bogusV1a: 0 },
        idHeaders: sample.idHeaders.map(() => 'equal' as const),
        deliveryId: null,
        userAgent: null,
        mutations: [],
        transport,
      };
    };
    const adyenItem = (pspReference: string, eventCode: string, sign: AdyenItemSpec['sign']): AdyenItemSpec => ({
      pspReference,
      eventCode,
      success: 'true',
      originalReference: '',
      account: 'own',
      merchantReference: 'ORD-sanity',
      amount: { value: 4990, currency: 'EUR' },
      sign,
      after: [],
    });
    const psp = platform === 'express' ? '1000000000000001' : '1000000000000002';
    return [
      headerCase('paymos', 0, 'v1'),
      headerCase('factuarea', 0, 'v1'),
      headerCase('stripe', 0, 'v1'),
      headerCase('standard', 0, 'v1'),
      headerCase('standard', 2, 'v1a'), // standard-v1a: a whpk_ only
      headerCase('standard', 3, 'v1 v1a'), // standard-moving: whsec_ and whpk_
      {
        provider: 'adyen',
        endpoint: { kind: 'own', index: 1, query: '' }, // adyen-rotating: one item by each key
        items: [adyenItem(psp, 'AUTHORISATION', 'own'), adyenItem(psp, 'CAPTURE', 'old')],
        repeats: [],
        live: 'false',
        shape: null,
        deep: null,
        pad: 0,
        indent: 0,
        raw: [],
        contentType: 'application/json',
        userAgent: null,
        transport,
      },
      { provider: 'mollie', endpoint: { kind: 'own', index: 0, query: '' }, badKey: false, hint: { kind: 'payment', index: platform === 'express' ? 1 : 2 }, edit: null, stub: null, contentType: 'application/x-www-form-urlencoded', transport },
    ];
  }

  it('signs like a provider: an untouched delivery of each provider and scheme is accepted (the fuzzer is not vacuous)', async () => {
    for (const spec of sanityCases()) {
      const stats = newStats();
      const { b, answers, added } = await check(spec, stats);
      const label = `${spec.provider} ${b.path}`;
      expect({ label, allowed: b.expect.allowed, why: b.expect.why }).toEqual({ label, allowed: [200], why: [] });
      expect({ label, status: answers[0].status, accepted: stats.accepted, added }).toEqual({ label, status: 200, accepted: 1, added: b.events?.length ?? 1 });
    }
  });

  it.each(PROVIDER_NAMES.map((p) => [p] as [FuzzProvider]))(`%s: mutated deliveries (FUZZ_RUNS ${RUNS}), seed ${SEED}`, async (provider) => {
    const runs = runsOf(provider);
    // eslint-disable-next-line no-console
    console.log(`fuzz ${platform}/${provider}: seed ${SEED}, ${runs} runs (replay: FUZZ_SEED=${SEED} npx jest test/fuzz -t ${provider})`);
    const stats = newStats();
    await fc.assert(
      fc.asyncProperty(arbitraryOf(provider), async (spec) => {
        const t0 = performance.now();
        try {
          await check(spec, stats);
        } finally {
          stats.ms.total += performance.now() - t0;
        }
      }),
      { seed: SEED, numRuns: runs, path: PATH, interruptAfterTimeLimit: 150_000, markInterruptAsFailure: true },
    );
    // eslint-disable-next-line no-console
    console.log(
      `fuzz ${platform}/${provider}: ${stats.cases} cases, answers ${JSON.stringify(stats.statuses)}, ${stats.accepted} accepted, ${stats.duplicate} duplicate, ${stats.rows} rows; ms ${JSON.stringify(stats.ms, (_k, v) => (typeof v === 'number' ? Math.round(v) : v))}`,
    );
    // Not vacuous: the runs reached every stage (accepted, duplicate, malformed, refused).
    if (!PATH && RUNS >= 200) {
      expect(stats.accepted).toBeGreaterThan(runs / 20);
      expect(stats.duplicate).toBeGreaterThan(0);
      expect(stats.statuses['400'] ?? 0).toBeGreaterThan(0);
      if (provider === 'mollie') expect(stats.statuses['503'] ?? 0).toBeGreaterThan(0);
      else expect(stats.statuses['401'] ?? 0).toBeGreaterThan(runs / 20);
    }
    await healthy();
  }, 300_000);

  it(`mollie: sequences of hints from ${SEQUENCE_SENDERS} addresses within a minute, seed ${SEED}`, async () => {
    const runs = Math.max(1, Math.round(RUNS / 40));
    const mainPayments = MOLLIE_PAYMENTS.map((p) => p.id);
    const hint = (id: string, from: string) => post(port, '/webhooks/mollie-main', [['Content-Type', 'application/x-www-form-urlencoded']], Buffer.from(`id=${id}`), false, 10_000, from);
    // Every payment of the pool is one the service knows (fetched, or recorded before).
    for (const id of mainPayments) expect((await hint(id, '127.0.76.1')).status).toBe(200);
    let sequence = 0;
    const answered: Record<number, number> = {};
    await fc.assert(
      fc.asyncProperty(hintSequenceArb(), async (hints) => {
        sequence++;
        // A new minute: nothing of the last sequence is remembered.
        t.clock.setSeconds(Math.floor(t.clock.now() / 1000) + 61);
        const model = new HintSequenceModel();
        for (const [i, h] of hints.entries()) {
          const id = h.hint.kind === 'payment' ? mainPayments[h.hint.index % mainPayments.length] : `tr_seq${sequence}x${h.hint.n}`;
          const expected = model.expect(h, id, h.hint.kind === 'payment');
          const asked = stub.requests.length;
          const answer = await hint(id, `127.0.77.${h.from + 1}`);
          const calls = stub.requests.length - asked;
          answered[answer.status] = (answered[answer.status] ?? 0) + 1;
          const seen = { status: answer.status, calls: calls > 0, error: (answer.body as { error?: string } | null)?.error ?? null };
          const want = { status: expected.status, calls: expected.calls, error: expected.status === 200 ? null : expected.status === 429 ? 'rate_limited' : 'malformed_payload' };
          if (JSON.stringify(seen) !== JSON.stringify(want)) {
            throw new Error(`hint ${i + 1} of ${hints.length} (id=${id} from address #${h.from}): ${JSON.stringify(seen)}, the model says ${JSON.stringify(want)}`);
          }
        }
      }),
      { seed: SEED, numRuns: runs, path: PATH, interruptAfterTimeLimit: 120_000, markInterruptAsFailure: true },
    );
    // eslint-disable-next-line no-console
    console.log(`fuzz ${platform}/mollie sequences: ${sequence} sequences, answers ${JSON.stringify(answered)}`);
    // Not vacuous: some address passed its limit, and payments were answered beside it.
    if (!PATH && RUNS >= 200) expect([(answered[429] ?? 0) > 0, (answered[200] ?? 0) > 0, (answered[400] ?? 0) > 0]).toEqual([true, true, true]);
    await healthy();
  }, 300_000);

  it('stays healthy after the fuzzing: /health and /health/ready answer 200', async () => {
    await healthy();
  });

  describe('a host adapter that throws, rejects, never settles or returns garbage, at random', () => {
    /** Short, so that a case that waits for it costs little; an honest adapter answers within the same tick. */
    const DEADLINE_MS = 100;
    let h: TestApp;
    let hPort: number;
    let guard: WebhookSignatureGuard;
    /** Rejections nobody handled (one would end a process that has no listener). */
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    /** The dedup model of the hostile endpoint: the event ids it recorded. */
    const recordedHostile = new Set<string>();

    beforeAll(async () => {
      process.on('unhandledRejection', onUnhandled);
      h = await createTestApp(
        {
          providers: [hostileProvider(DEADLINE_MS + 50)],
          endpoints: [{ id: HOSTILE_ENDPOINT, provider: 'hostile', secrets: [HOSTILE_SECRET], merchantAccountId: HOSTILE_ACCOUNT }],
          tuning: { receiveTimeoutMs: DEADLINE_MS },
        },
        { platform },
      );
      await h.app.listen(0, '127.0.0.1');
      hPort = (h.app.getHttpServer().address() as AddressInfo).port;
      guard = h.get(WebhookSignatureGuard);
    });
    afterAll(async () => {
      process.off('unhandledRejection', onUnhandled);
      await h?.close();
      // This app shares the suite's database: the other tests count the inbox afresh.
      known = null;
    });

    const hostileRows = async (): Promise<number> => (await pg.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_inbox WHERE provider = 'hostile'`)).rows[0].n;

    /** Sends the body, and hangs up once the service holds it (while the adapter never answers). */
    async function hangUp(b: HostileBuilt): Promise<Answer> {
      const req = request({ host: '127.0.0.1', port: hPort, method: 'POST', path: b.path, agent: false, headers: Object.fromEntries([...b.headers, ['content-length', String(b.body.length)]]) });
      req.on('error', () => undefined);
      req.end(b.body);
      await eventually(async () => guard.unverified.inFlight >= b.body.length, 5_000, 'the body held');
      req.destroy();
      return { status: 0, body: null };
    }

    async function checkHostile(spec: HostileCase, stats: Stats & { late: number }): Promise<void> {
      const b = buildHostile(spec, Math.floor(Date.now() / 1000));
      const before = await hostileRows();
      const lateBefore = hostileLate.settled;
      const send = () => post(hPort, b.path, b.headers, b.body, false);
      let answers: Answer[];
      if (spec.hangUp) answers = [await hangUp(b)];
      else if (spec.transport.sends === 2 && spec.transport.concurrent) answers = await Promise.all([send(), send()]);
      else {
        answers = [await send()];
        if (spec.transport.sends === 2) answers.push(await send());
      }
      const fail = (problem: string): never => {
        throw new Error(
          `${problem}\n  behaviour ${spec.behaviour}, signing ${spec.signing}, event ${b.eventId}${spec.hangUp ? ', the sender hung up' : ''}\n` +
            `  allowed: ${b.expect.status} ${b.expect.error ?? ''}\n` +
            answers.map((a, i) => `  answer ${i + 1}: ${a.status} ${JSON.stringify(a.body)}`).join('\n'),
        );
      };
      stats.cases++;
      // The budget is given back once a delivery is answered, or once its sender is gone.
      if (spec.hangUp) await eventually(async () => guard.unverified.inFlight === 0, DEADLINE_MS + 5_000, 'the bytes of a sender gone given back');
      else if (guard.unverified.inFlight !== 0) fail(`${guard.unverified.inFlight} unverified bytes still held once every delivery is answered`);
      let accepted = 0;
      for (const a of answers) {
        stats.statuses[a.status] = (stats.statuses[a.status] ?? 0) + 1;
        if (spec.hangUp) continue;
        if (a.status >= 200 && a.status < 300 && !(b.expect.authentic && b.expect.honest)) fail('a 2xx for a delivery its adapter did not accept, or that is not authentic');
        const body = (typeof a.body === 'object' && a.body !== null ? a.body : {}) as Record<string, unknown>;
        if (a.status !== b.expect.status) fail(`status ${a.status}, not ${b.expect.status}`);
        if (b.expect.error !== undefined && body.error !== b.expect.error) fail(`error ${JSON.stringify(body.error)}, not ${b.expect.error}`);
        if (a.status >= 400 && body.detail !== b.expect.detail) fail(`detail ${JSON.stringify(body.detail)}, not ${JSON.stringify(b.expect.detail)}`);
        if (a.status === 200) {
          if (body.eventId !== b.eventId) fail(`the answer names ${JSON.stringify(body.eventId)}`);
          if (body.status === 'accepted') accepted++;
          else if (body.status !== 'duplicate') fail('a 200 that is neither accepted nor duplicate');
        }
      }
      // The dedup model: accepted once, and only what was recorded is a duplicate.
      const ok = answers.filter((a) => a.status === 200).length;
      if (ok > 0) {
        const expectedAccepted = recordedHostile.has(b.eventId) ? 0 : 1;
        if (accepted !== expectedAccepted) fail(`${accepted} answers accepted; the event was ${expectedAccepted ? 'new' : 'recorded before'}`);
        recordedHostile.add(b.eventId);
      }
      stats.accepted += accepted;
      stats.duplicate += ok - accepted;
      // A settlement after the deadline records nothing either.
      if (b.expect.late) {
        await eventually(async () => hostileLate.settled >= lateBefore + answers.length, 5_000, 'the late settlements');
        stats.late += answers.length;
      }
      const added = (await hostileRows()) - before;
      if (added !== accepted) fail(`the inbox grew by ${added} rows for ${accepted} accepted answers`);
      stats.rows += added;
      if (unhandled.length > 0) fail(`unhandled rejections: ${unhandled.map((r) => String((r as Error)?.message ?? r)).join('; ')}`);
    }

    it(`hostile: misbehaving adapters (FUZZ_RUNS ${RUNS} / 4), seed ${SEED}`, async () => {
      const runs = Math.max(1, Math.round(RUNS / 4));
      // eslint-disable-next-line no-console
      console.log(`fuzz ${platform}/hostile: seed ${SEED}, ${runs} runs (replay: FUZZ_SEED=${SEED} npx jest test/fuzz -t hostile)`);
      const stats = { ...newStats(), late: 0 };
      await fc.assert(
        fc.asyncProperty(hostileCaseArb(), (spec) => checkHostile(spec, stats)),
        { seed: SEED, numRuns: runs, path: PATH, interruptAfterTimeLimit: 150_000, markInterruptAsFailure: true },
      );
      // eslint-disable-next-line no-console
      console.log(`fuzz ${platform}/hostile: ${stats.cases} cases, answers ${JSON.stringify(stats.statuses)}, ${stats.accepted} accepted, ${stats.duplicate} duplicate, ${stats.rows} rows, ${stats.late} late settlements`);
      if (!PATH && RUNS >= 200) {
        expect(stats.accepted).toBeGreaterThan(0);
        expect(stats.duplicate).toBeGreaterThan(0);
        for (const status of ['400', '401', '503']) expect({ status, answered: (stats.statuses[status] ?? 0) > 0 }).toEqual({ status, answered: true });
      }
      // The process is alive and well: health, and an honest delivery accepted.
      expect((await get(hPort, '/health')).status).toBe(200);
      expect(unhandled).toEqual([]);
    }, 300_000);
  });
});
