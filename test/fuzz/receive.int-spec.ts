/**
 * Fuzzing the receive path: per provider, thousands of mutations of authentic
 * deliveries against a real app on the real PostgreSQL and Redis. Checked on every case:
 * - no answer is 5xx (the database is up), and every answer comes within 10 s;
 * - no answer is 2xx unless the delivery is authentic (see model.ts for how each case's allowed
 *   answers are decided: signed by a configured secret over the exact bytes sent, in tolerance);
 *   a change after signing is a 4xx, a weird body signed properly is 200 or 400;
 * - rows appear only for authentic deliveries: the inbox grows by exactly the number of
 *   `accepted` answers, a `duplicate` adds none, an event is accepted once (the dedup model), and
 *   the row holds the id the answer named and the bytes that were sent; the archive reads it back;
 * - the process stays healthy: /health and /health/ready answer 200 at the end.
 *
 * Replay: the seed is in each test's name and printed; `FUZZ_SEED=<n> npx jest test/fuzz` replays
 * the whole run (add `-t <provider>` for one provider; fast-check's printed `path` goes in
 * `FUZZ_PATH`). `FUZZ_RUNS` (default 400 per provider) raises the count; `FUZZ_PLATFORMS=express,fastify`
 * adds Fastify (default: Express).
 */
import fc from 'fast-check';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { AUTH, createTestApp, Platform, TestApp, truncateAll } from '../support/app';
import { testPgConnection } from '../support/env';
import { caseArb } from './arbitraries';
import { Answer, get, post } from './client';
import { build, Built, CaseSpec, FUZZ_ENDPOINTS, FuzzProvider, MAX_BODY, PROVIDER_NAMES } from './model';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 0x7fffffff);
const RUNS = Number(process.env.FUZZ_RUNS || 400);
const PATH = process.env.FUZZ_PATH || undefined;
const FUZZ_PLATFORMS = (process.env.FUZZ_PLATFORMS || 'express').split(',').map((p) => p.trim()) as Platform[];

const SIGNATURE_ERRORS = ['missing_signature', 'invalid_signature', 'timestamp_out_of_tolerance'];

interface Stats {
  cases: number;
  statuses: Record<string, number>;
  accepted: number;
  duplicate: number;
  authenticCases: number;
  ms: { rows: number; send: number; total: number };
}

const preview = (s: string, n = 160) => (s.length > n ? `${JSON.stringify(s.slice(0, n))}… (${s.length} chars)` : JSON.stringify(s));

function explain(b: Built, answers: Answer[], problem: string): string {
  const text = b.body.toString('utf8');
  return [
    problem,
    `  POST ${preview(b.path, 100)}${b.chunked ? ' (chunked)' : ''}`,
    ...b.headers.map(([k, v]) => `  ${k}: ${preview(v, 120)}`),
    `  body (${b.body.length} bytes): ${preview(text, 300)}`,
    `  allowed: [${b.expect.allowed.join(', ')}]${b.expect.ids.length ? `, ids ${b.expect.ids.map((i) => JSON.stringify(i)).join(' | ')}` : ''}`,
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
  /** The dedup model: every (provider, account, event id, key scope) the service answered `accepted` for. */
  const recorded = new Set<string>();

  beforeAll(async () => {
    // Workers off (createTestApp's default): processing is not what is fuzzed, and rows stay put.
    t = await createTestApp({ webhookMaxBodyBytes: MAX_BODY, endpoints: FUZZ_ENDPOINTS }, { platform });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    await truncateAll(t.dataSource);
    pg = new Client(testPgConnection());
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await t?.close();
  });

  const rows = async (): Promise<number> => (await pg.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_inbox`)).rows[0].n;

  const send = (b: Built) => post(port, b.path, b.headers, b.body, b.chunked);

  async function check(spec: CaseSpec, stats: Stats): Promise<void> {
    const b = build(spec, Math.floor(t.clock.now() / 1000));
    const t0 = performance.now();
    const before = known ?? (await rows());
    known = null;
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

    // The dedup model first: a check failing below must not leave it behind the database.
    const keyOf = (a: Answer) => `${spec.provider}\u0000${b.account}\u0000${(a.body as { eventId?: string }).eventId}\u0000${b.scope}`;
    const wasRecorded = new Map<string, boolean>();
    for (const a of answers) {
      if (a.status !== 200) continue;
      const key = keyOf(a);
      if (!wasRecorded.has(key)) wasRecorded.set(key, recorded.has(key));
      if ((a.body as { status?: string }).status === 'accepted') recorded.add(key);
    }

    stats.cases++;
    if (b.expect.allowed.includes(200)) stats.authenticCases++;
    for (const a of answers) {
      stats.statuses[a.status] = (stats.statuses[a.status] ?? 0) + 1;
      if (a.status === -1) fail('no answer within 10 s');
      // The server may close a connection it refuses early (413, 431) while the body is still going out.
      if (a.status === 0 && !b.expect.allowed.some((s) => s === 413 || s === 431)) fail('the connection failed without an answer');
      if (a.status >= 500) fail(`a 5xx answer while the database is up`);
      if (a.status >= 200 && a.status < 300 && !b.expect.authentic) fail('a 2xx for a delivery that is not authentic');
      // Fastify routes by case: `/WebHooks/<id>` is not the webhook route there, and the API's body
      // parsing answers it (400 validation_failed, 415). Outside the webhook contract; never 2xx.
      const fastifyOtherRoute = platform === 'fastify' && spec.endpoint.kind === 'alias' && spec.endpoint.form === 'prefixCase' && [400, 404, 415].includes(a.status);
      if (a.status !== 0 && !fastifyOtherRoute && !b.expect.allowed.includes(a.status)) fail(`status ${a.status} is not one the contract allows here`);
      const body = (typeof a.body === 'object' && a.body !== null ? a.body : {}) as Record<string, unknown>;
      if (a.status === 200) {
        if (body.status !== 'accepted' && body.status !== 'duplicate') fail('a 200 that is neither accepted nor duplicate');
        if (!b.expect.ids.includes(body.eventId as string)) fail(`the answer names event ${JSON.stringify(body.eventId)}`);
        stats[body.status as 'accepted' | 'duplicate']++;
      }
      if (a.status === 401 && !SIGNATURE_ERRORS.includes(body.error as string)) fail('a 401 without a signature error');
      if (a.status === 400 && body.error === 'malformed_payload' && !b.expect.authentic) fail('malformed_payload for a delivery that is not authentic: its body was judged before its signature');
      if (a.status === 413 && body.error !== 'payload_too_large') fail('a 413 without payload_too_large');
      if (a.status === 404 && b.endpointId === null && body.error !== 'unknown_endpoint') fail('a 404 without unknown_endpoint');
    }

    // Rows: exactly one per accepted answer, none for anything else.
    const accepted = answers.filter((a) => a.status === 200 && (a.body as { status?: string }).status === 'accepted');
    if (after - before !== accepted.length) fail(`the inbox grew by ${after - before} rows for ${accepted.length} accepted answers`);

    // The dedup model: an event is accepted once, and only a recorded event is a duplicate.
    const byKey = new Map<string, { accepted: number; answered: number; eventId: string }>();
    for (const a of answers) {
      if (a.status !== 200) continue;
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
  }

  async function healthy(): Promise<void> {
    expect((await get(port, '/health')).status).toBe(200);
    const ready = await get(port, '/health/ready');
    expect({ status: ready.status, body: ready.body }).toMatchObject({ status: 200 });
  }

  it('signs like a provider: an untouched delivery of each provider is accepted (the fuzzer is not vacuous)', async () => {
    for (const provider of PROVIDER_NAMES) {
      const sample = fc.sample(caseArb(provider), { seed: 1, numRuns: 1 })[0];
      const spec: CaseSpec = {
        ...sample,
        endpoint: { kind: 'own', index: 0, query: '' },
        body: { id: `evt_sanity_${provider}_${platform}`, type: 'invoice.paid', resourceId: 'inv_sanity', overrides: [], deep: null, pad: 0, indent: 0, raw: [] },
        webhookId: `msg_sanity_${platform}`,
        signing: { secret: 'own', bogus: [], otherScheme: false, timestamp: { kind: 'now', delta: 0 }, tLast: false },
        idHeaders: sample.idHeaders.map(() => 'equal' as const),
        deliveryId: null,
        userAgent: null,
        mutations: [],
        transport: { chunked: false, sends: 1, concurrent: false },
      };
      const b = build(spec, Math.floor(t.clock.now() / 1000));
      expect(b.expect.allowed).toEqual([200]);
      const answer = await send(b);
      expect({ provider, status: answer.status, body: answer.body }).toEqual({
        provider,
        status: 200,
        body: { status: 'accepted', eventId: provider === 'standard' ? `msg_sanity_${platform}` : `evt_sanity_${provider}_${platform}` },
      });
      recorded.add(`${provider}\u0000${b.account}\u0000${(answer.body as { eventId: string }).eventId}\u0000${b.scope}`);
    }
  });

  it.each(PROVIDER_NAMES.map((p) => [p] as [FuzzProvider]))(`%s: ${RUNS} mutated deliveries, seed ${SEED}`, async (provider) => {
    // eslint-disable-next-line no-console
    console.log(`fuzz ${platform}/${provider}: seed ${SEED}, ${RUNS} runs (replay: FUZZ_SEED=${SEED} npx jest test/fuzz -t ${provider})`);
    const stats: Stats = { cases: 0, statuses: {}, accepted: 0, duplicate: 0, authenticCases: 0, ms: { rows: 0, send: 0, total: 0 } };
    await fc.assert(
      fc.asyncProperty(caseArb(provider), async (spec) => {
        const t0 = performance.now();
        try {
          await check(spec, stats);
        } finally {
          stats.ms.total += performance.now() - t0;
        }
      }),
      { seed: SEED, numRuns: RUNS, path: PATH, interruptAfterTimeLimit: 150_000, markInterruptAsFailure: true },
    );
    // eslint-disable-next-line no-console
    console.log(`fuzz ${platform}/${provider}: ${stats.cases} cases, answers ${JSON.stringify(stats.statuses)}, ${stats.accepted} accepted, ${stats.duplicate} duplicate; ms ${JSON.stringify(stats.ms, (_k, v) => (typeof v === 'number' ? Math.round(v) : v))}`);
    // Not vacuous: the runs reached every stage (accepted, duplicate, malformed, refused).
    if (!PATH && RUNS >= 200) {
      expect(stats.accepted).toBeGreaterThan(RUNS / 20);
      expect(stats.duplicate).toBeGreaterThan(0);
      expect(stats.statuses['400'] ?? 0).toBeGreaterThan(0);
      expect(stats.statuses['401'] ?? 0).toBeGreaterThan(RUNS / 20);
    }
    await healthy();
  }, 300_000);

  it('stays healthy after the fuzzing: /health and /health/ready answer 200', async () => {
    await healthy();
  });
});
