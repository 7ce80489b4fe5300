/**
 * Fuzzing what deliveries do, for PayPal, Checkout.com, Square and Paddle: generated sequences of
 * deliveries about one order's payment (paid, pending, failed, canceled, refunds by each provider's
 * rule, disputes, re-deliveries, duplicates at once, out of order, the wrong amount, another account
 * where the provider declares one, forged and tampered signatures), sent signed as each provider
 * signs (`signedHeaders` of the testing kit; PayPal through the kit's certificate server) to the app
 * with its workers on, real PostgreSQL and Redis and a carrier. sequences.ts's model says what each
 * step must do; checked after every step: the answers, the rows the inbox gains, how the recorded
 * delivery's processing ends, the payment's status and refunded amount, the order's status, and the
 * shipments (exactly one once the order is paid, none before); and after the whole sequence, the
 * order's history (test/support/history-check.ts): each change once, in order, ending where the
 * order, its payment and its fulfillment stand.
 *
 * And single deliveries of each provider changed after signing (a body byte, the signature, its
 * header dropped or repeated, the body re-serialised, a stale timestamp, another key), or signed
 * properly but no event, or changed where nothing is signed (header case, `Content-Type`): `401`
 * with the contract's error, `400 malformed_payload`, or `200 accepted`; a row only for a `200`.
 *
 * Replay: `FUZZ_SEED=<n> npx jest test/fuzz/sequences -t <provider>` (the default seed is fixed, so
 * that the non-vacuity checks below hold run after run); `FUZZ_PATH` as fast-check prints it;
 * `FUZZ_SEQUENCES` (default 20 per provider) raises the count; `FUZZ_PLATFORMS=express,fastify`.
 */
import fc from 'fast-check';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { EndpointDefinition } from '../../src/config/options';
import { PaypalCertServer, startPaypalCertServer } from '../../src/testing/paypal';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { AUTH, createTestApp, eventually, Platform, TestApp, truncateAll } from '../support/app';
import { driver } from '../support/domain';
import { orderHistoryProblems } from '../support/history-check';
import { Answer, post } from './client';
import type { HeaderLine } from './model';
import { ACCOUNTS, bodyOf, newEventId, SequenceIds } from './sequence-bodies';
import { Kind, KINDS, SEQUENCE_PROVIDERS, sequenceArb, SequenceModel, SequenceProvider, Step } from './sequences';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 34;
const RUNS = Number(process.env.FUZZ_SEQUENCES || 20);
const PATH = process.env.FUZZ_PATH || undefined;
const FUZZ_PLATFORMS = (process.env.FUZZ_PLATFORMS || 'express').split(',').map((p) => p.trim()) as Platform[];

const PAYPAL_WEBHOOK_ID = '7FZ34SEQUENCE0001';
const KEYS = { checkout: 'cko-fuzz-sequence-key-0001', square: 'sq-fuzz-sequence-signature-key', paddle: 'pdl_ntfset_01fuzzsequence_secret0001' };
const SQUARE_URL = 'https://shop.example/webhooks/square-fz';
const FAST = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 200, sweepIntervalMs: 200, sweepAfterMs: 100, inboxAttempts: 3, inboxBackoffMs: 50 };

/**
 * What each provider's cases must include in a run (the model counts them): a generator that stops
 * producing one fails the test.
 */
const MUST_SEE: Record<SequenceProvider, string[]> = {
  paypal: ['paid and shipped', 'refunds summed', 'refund id again', 'order refunded', 'reversal', 'dispute opened', 'dispute lost', 'stale', 'dispute before capture', 'resend duplicate', 'sent concurrent', 'forged', 'tampered', 'wrong amount', 'another account'],
  checkout: ['paid and shipped', 'refunds summed', 'refund id again', 'order refunded', 'dispute opened', 'dispute won', 'dispute lost', 'stale', 'dispute before capture', 'resend duplicate', 'sent concurrent', 'forged', 'tampered', 'wrong amount', 'ignored'],
  square: ['paid and shipped', 'refunds summed', 'refund behind', 'refund nothing new', 'order refunded', 'dispute opened', 'dispute lost', 'stale', 'dispute before capture', 'resend duplicate', 'sent concurrent', 'forged', 'tampered', 'wrong amount', 'another account'],
  paddle: ['paid and shipped', 'refunds summed', 'refund id again', 'order refunded', 'dispute lost', 'stale', 'dispute before capture', 'resend duplicate', 'sent concurrent', 'forged', 'tampered', 'wrong amount', 'ignored'],
};

describe.each(FUZZ_PLATFORMS)('%s: fuzzing sequences of PayPal, Checkout.com, Square and Paddle deliveries (workers on)', (platform) => {
  const sim = new CarrierSimulator();
  let certs: PaypalCertServer;
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  let port: number;

  beforeAll(async () => {
    await sim.start();
    certs = await startPaypalCertServer();
    const endpoints: EndpointDefinition[] = [
      { id: 'paypal-fz', provider: 'paypal', secrets: [], merchantAccountId: ACCOUNTS.paypal.own, webhookId: PAYPAL_WEBHOOK_ID, caPem: certs.caPem, certHosts: [certs.certHost] },
      { id: 'checkout-fz', provider: 'checkout', secrets: [KEYS.checkout], merchantAccountId: ACCOUNTS.checkout.own },
      { id: 'square-fz', provider: 'square', secrets: [KEYS.square], merchantAccountId: ACCOUNTS.square.own, notificationUrl: SQUARE_URL },
      { id: 'paddle-fz', provider: 'paddle', secrets: [KEYS.paddle], merchantAccountId: ACCOUNTS.paddle.own },
    ];
    t = await createTestApp({ endpoints, runWorkers: true, carriers: [{ name: 'default', url: sim.url, timeoutMs: 1_000 }], tuning: FAST, webhookMaxBodyBytes: 64 * 1024 }, { platform });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    await truncateAll(t.dataSource);
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
    await certs?.close();
    await sim.stop();
  });

  /** The headers the provider sends with `text`: signed with the endpoint's key, or (forged) with one it does not hold. */
  function sign(provider: SequenceProvider, text: string, forged: boolean): HeaderLine[] {
    let headers: Record<string, string>;
    switch (provider) {
      case 'paypal':
        // Another webhook's id is signed: the certificate is PayPal's, the signature not this webhook's.
        headers = signedHeaders('paypal', forged ? 'WRONGWEBHOOK0001' : PAYPAL_WEBHOOK_ID, text, { certUrl: certs.certUrl });
        break;
      case 'square':
        headers = signedHeaders('square', forged ? 'sq-not-the-key' : KEYS.square, text, { notificationUrl: SQUARE_URL });
        break;
      default:
        headers = signedHeaders(provider, forged ? `${KEYS[provider]}-not` : KEYS[provider], text);
    }
    return Object.entries(headers);
  }

  const inboxRows = () => d.count(`SELECT 1 FROM webhook_inbox`);

  async function runSequence(provider: SequenceProvider, steps: Step[], seen: Record<string, number>): Promise<void> {
    const reference = `ORD-${randomUUID().slice(0, 13)}`;
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const hex = randomUUID().replace(/-/g, '');
    const ids: SequenceIds = {
      orderId: order.id,
      reference,
      paymentId: { paypal: `5O${hex.slice(0, 15).toUpperCase()}`, checkout: `pay_${hex.slice(0, 26)}`, square: `sq${hex.slice(0, 20)}`, paddle: `txn_${hex.slice(0, 26)}` }[provider],
      captureId: `3C${hex.slice(15, 30).toUpperCase()}`,
      prefix: hex.slice(0, 6),
    };
    const model = new SequenceModel(provider);
    /** Each step's bytes, for a re-delivery of it. */
    const texts: string[] = [];
    const path = `/webhooks/${provider}-fz`;
    const log: string[] = [];
    const fail = (i: number, problem: string): never => {
      throw new Error(`${provider} step ${i + 1} of ${steps.length}: ${problem}\n  steps: ${JSON.stringify(steps)}\n  so far:\n${log.join('\n')}`);
    };

    for (const [i, step] of steps.entries()) {
      let text: string;
      let forged = false;
      let tampered = false;
      if (step.op === 'resend') {
        text = texts[step.which % texts.length];
      } else {
        text = bodyOf(provider, step, newEventId(provider), ids);
        forged = step.variant === 'forged';
        tampered = step.variant === 'tampered';
      }
      const eventId = step.op === 'resend' ? '' : (JSON.parse(text).id ?? JSON.parse(text).event_id);
      const expected = model.step(step, eventId);
      texts.push(text);
      const previous = step.op === 'resend' ? model.sent[model.sent.length - 1] : null;
      // A re-delivery is signed anew (PayPal: a new transmission) over the same bytes; a refused one is refused again.
      const sendOnce = async (): Promise<Answer> => {
        if (step.op === 'resend' && previous && !previous.recorded) return post(port, path, sign(provider, text, true), Buffer.from(text), false);
        const headers = sign(provider, text, forged);
        // Tampered: a byte of the event id changed after signing.
        const bytes = tampered ? text.replace(eventId, `${eventId.slice(0, -1)}${eventId.endsWith('0') ? '1' : '0'}`) : text;
        return post(port, path, headers, Buffer.from(bytes), false);
      };
      const before = await inboxRows();
      const send = step.op === 'event' ? step.send : 'once';
      let answers: Answer[];
      if (send === 'concurrent') answers = await Promise.all([sendOnce(), sendOnce()]);
      else {
        answers = [await sendOnce()];
        if (send === 'twice') answers.push(await sendOnce());
      }
      const got = answers.map((a) => ({ status: a.status, body: a.body }));
      const order1 = (xs: Array<{ status: number; body: unknown }>) => (send === 'concurrent' ? [...xs].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))) : xs);
      log.push(`  ${i + 1}. ${JSON.stringify(step)} → ${JSON.stringify(got)}`);
      if (JSON.stringify(order1(got)) !== JSON.stringify(order1(expected.answers))) fail(i, `answers ${JSON.stringify(got)}; the model says ${JSON.stringify(expected.answers)}`);
      const added = (await inboxRows()) - before;
      if (added !== expected.rows) fail(i, `the inbox grew by ${added} rows; the model says ${expected.rows}`);
      if (expected.processing) {
        const row = await d.processed(eventId, 15_000);
        const ended = { status: row.status, outcome: row.outcome };
        log[log.length - 1] += ` ${JSON.stringify(ended)}`;
        if (JSON.stringify(ended) !== JSON.stringify(expected.processing)) fail(i, `processing ended ${JSON.stringify(ended)} (${row.lastError ?? ''}); the model says ${JSON.stringify(expected.processing)}`);
      }
      const wants = model.snapshots();
      // Deliveries reopened by this step's move are processed by the workers: wait for them.
      await eventually(async () => (await d.count(`SELECT 1 FROM webhook_inbox WHERE status = 'received'`)) === 0, 15_000, 'the reopened deliveries processed');
      // A paid order is fulfilled by the workers: wait for it, so that the next step finds it shipped.
      if (wants.some((w) => w.order === 'fulfilled')) await eventually(async () => (await d.getOrder(order.id)).status !== 'paid', 15_000, `order ${order.id} fulfilled`);
      const now = await d.getOrder(order.id);
      const payments = now.payments as Array<{ status: string; refundedAmount: string; providerPaymentId: string; merchantAccountId: string }>;
      const seenState = {
        payment: payments.length === 0 ? null : { status: payments[0].status, refunded: Math.round(Number(payments[0].refundedAmount) * 100) },
        payments: payments.length,
        order: now.status,
        shipments: sim.shipments.filter((s) => s.orderId === order.id).length,
      };
      const wantStates = wants.map((want) => ({ payment: want.payment, payments: want.payment ? 1 : 0, order: want.order, shipments: want.shipments }));
      const match = wantStates.findIndex((w) => JSON.stringify(w) === JSON.stringify(seenState));
      if (match < 0) fail(i, `the order stands ${JSON.stringify(seenState)}; the model says ${wantStates.map((w) => JSON.stringify(w)).join(' or ')}`);
      model.adopt(match);
      if (payments[0] && (payments[0].providerPaymentId !== ids.paymentId || payments[0].merchantAccountId !== ACCOUNTS[provider].own)) fail(i, `the payment is ${JSON.stringify(payments[0])}`);
    }
    // After the whole sequence (duplicates, re-deliveries, out of order, refused deliveries): the
    // order's history lists each change once, in order, and ends where everything stands.
    const problems = await orderHistoryProblems(apiGet, order.id);
    if (problems.length > 0) fail(steps.length - 1, `the order's history is not sound:\n    ${problems.join('\n    ')}`);
    for (const [k, n] of Object.entries(model.seen)) seen[k] = (seen[k] ?? 0) + n;
  }

  const apiGet = async (path: string) => {
    const res = await d.http().get(path).set(AUTH);
    return { status: res.status, body: res.body };
  };

  /** Where each provider signs: its signature header, and whether a timestamp is signed. */
  const SIGNATURE_HEADER: Record<SequenceProvider, string> = { paypal: 'paypal-transmission-sig', checkout: 'cko-signature', square: 'x-square-hmacsha256-signature', paddle: 'paddle-signature' };
  const TIMESTAMPED: Record<SequenceProvider, boolean> = { paypal: true, checkout: false, square: false, paddle: true };

  type Mutation =
    | { op: 'none' | 'dropSig' | 'dupSig' | 'recase' | 'textPlain' | 'reserialize' | 'forged' | 'stale' }
    | { op: 'flipBody'; pos: number; mask: number }
    | { op: 'flipSig'; pos: number; pick: number }
    | { op: 'garbage'; text: string };

  const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom<Mutation>({ op: 'none' }, { op: 'recase' }, { op: 'textPlain' }) },
    { weight: 6, arbitrary: fc.constantFrom<Mutation>({ op: 'dropSig' }, { op: 'dupSig' }, { op: 'reserialize' }, { op: 'forged' }, { op: 'stale' }) },
    { weight: 4, arbitrary: fc.record({ op: fc.constant('flipBody' as const), pos: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('flipSig' as const), pos: fc.nat(), pick: fc.nat() }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('garbage' as const), text: fc.oneof(fc.constantFrom('', '[]', '{}', 'null', '{"id":1}', '{"data":{}}', 'not json'), fc.string({ maxLength: 40 })) }) },
  );

  /**
   * One delivery of the provider, changed after signing as the mutation says, and the answers the
   * contract allows for it: a change of a signed byte or of the signature is `401`, a body signed
   * properly that is no event `400`, what changes nothing signed (header case, `Content-Type`) `200`.
   */
  async function checkMutation(provider: SequenceProvider, kind: Kind, m: Mutation, stats: Record<string, number>): Promise<void> {
    const hex = randomUUID().replace(/-/g, '');
    const ids: SequenceIds = { orderId: randomUUID(), reference: `ORD-${hex.slice(0, 8)}`, paymentId: `pm${hex.slice(0, 16)}`, captureId: `3C${hex.slice(16, 30).toUpperCase()}`, prefix: hex.slice(0, 6) };
    const eventId = newEventId(provider);
    let text = m.op === 'garbage' ? m.text : bodyOf(provider, { op: 'event', kind, pick: 0, refundId: 0, refundMinor: 1000, variant: 'ok', send: 'once' }, eventId, ids);
    const nowSeconds = Math.floor(t.clock.now() / 1000);
    const signAt = m.op === 'stale' && TIMESTAMPED[provider] ? nowSeconds - 3_600 : nowSeconds;
    const signed =
      provider === 'paypal'
        ? signedHeaders('paypal', m.op === 'forged' ? 'WRONGWEBHOOK0001' : PAYPAL_WEBHOOK_ID, text, { certUrl: certs.certUrl, timestamp: signAt })
        : provider === 'square'
          ? signedHeaders('square', m.op === 'forged' ? 'sq-not-the-key' : KEYS.square, text, { notificationUrl: SQUARE_URL })
          : signedHeaders(provider, m.op === 'forged' ? `${KEYS[provider]}-not` : KEYS[provider], text, { timestamp: signAt });
    let headers: HeaderLine[] = Object.entries(signed);
    const sigName = SIGNATURE_HEADER[provider];
    let allowed: number[] = [200];
    let errors: string[] | null = null;
    switch (m.op) {
      case 'dropSig':
        headers = headers.filter(([k]) => k !== sigName);
        allowed = [401];
        errors = ['missing_signature'];
        break;
      case 'dupSig':
        // Two lines of the same signature: read joined (`a, a`), which no provider sends; refused or read as one.
        headers = [...headers, ...headers.filter(([k]) => k === sigName)];
        allowed = [200, 401];
        break;
      case 'recase':
        headers = headers.map(([k, v]) => [k.toUpperCase(), v]);
        break;
      case 'textPlain':
        headers = headers.map(([k, v]) => [k, k === 'content-type' ? 'text/plain' : v]);
        break;
      case 'reserialize':
        text = JSON.stringify(JSON.parse(text), null, 2);
        allowed = [401];
        errors = ['invalid_signature'];
        break;
      case 'forged':
        allowed = [401];
        errors = ['invalid_signature'];
        break;
      case 'stale':
        if (TIMESTAMPED[provider]) {
          allowed = [401];
          errors = ['timestamp_out_of_tolerance'];
        }
        break;
      case 'flipBody': {
        const bytes = Buffer.from(text);
        bytes[m.pos % bytes.length] ^= m.mask;
        text = bytes.toString('latin1');
        allowed = [401];
        errors = ['invalid_signature'];
        break;
      }
      case 'flipSig': {
        headers = headers.map(([k, v]) => {
          if (k !== sigName) return [k, v];
          // The signature's own characters (Paddle's after `h1=`), one changed for another of its alphabet.
          const start = provider === 'paddle' ? v.indexOf('h1=') + 3 : 0;
          const length = provider === 'paddle' || provider === 'checkout' ? 64 : provider === 'square' ? 43 : 300;
          const at = start + (m.pos % Math.min(length, v.length - start));
          const alphabet = provider === 'paddle' || provider === 'checkout' ? '0123456789abcdef' : 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
          const others = alphabet.replace(v[at], '');
          return [k, v.slice(0, at) + others[m.pick % others.length] + v.slice(at + 1)];
        });
        allowed = [401];
        errors = ['invalid_signature', 'missing_signature'];
        break;
      }
      case 'garbage':
        allowed = [400];
        errors = ['malformed_payload'];
        break;
    }
    const before = await inboxRows();
    const body = m.op === 'flipBody' ? Buffer.from(text, 'latin1') : Buffer.from(text);
    const answer = await post(port, `/webhooks/${provider}-fz`, headers, body, false);
    const added = (await inboxRows()) - before;
    const got = answer.body as { status?: string; eventId?: string; error?: string } | null;
    const problem = (what: string): never => {
      throw new Error(`${provider} ${kind} ${JSON.stringify(m)}: ${what}\n  answer ${answer.status} ${JSON.stringify(answer.body)}\n  headers ${JSON.stringify(headers)}\n  body ${JSON.stringify(text.slice(0, 300))}`);
    };
    stats[answer.status] = (stats[answer.status] ?? 0) + 1;
    if (got?.error) stats[got.error] = (stats[got.error] ?? 0) + 1;
    if (!allowed.includes(answer.status)) problem(`status ${answer.status}, not ${allowed.join(' or ')}`);
    if (errors && answer.status !== 200 && !errors.includes(got?.error ?? '')) problem(`error ${JSON.stringify(got?.error)}, not ${errors.join(' or ')}`);
    if (answer.status === 200) {
      if (!(got?.status === 'accepted' && got.eventId === eventId)) problem(`a 200 that is not the event ${eventId} accepted`);
      if (added !== 1) problem(`the inbox grew by ${added} rows for one accepted delivery`);
    } else if (added !== 0) problem(`the inbox grew by ${added} rows for a refused delivery`);
  }

  it.each(SEQUENCE_PROVIDERS.map((p) => [p] as [SequenceProvider]))(`%s: deliveries changed after signing (FUZZ_SEQUENCES ${RUNS} × 12), seed ${SEED}`, async (provider) => {
    const stats: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...KINDS[provider].all), mutationArb, (kind, m) => checkMutation(provider, kind, m, stats)),
      { seed: SEED, numRuns: RUNS * 12, path: PATH, endOnFailure: true, interruptAfterTimeLimit: 60_000, markInterruptAsFailure: true },
    );
    // eslint-disable-next-line no-console
    console.log(`fuzz ${platform}/${provider} mutations: answers ${JSON.stringify(stats)}`);
    if (!PATH && RUNS >= 10) {
      const must = ['200', '400', 'malformed_payload', 'missing_signature', 'invalid_signature', ...(TIMESTAMPED[provider] ? ['timestamp_out_of_tolerance'] : [])];
      expect({ provider, missing: must.filter((k) => !(stats[k] > 0)), refused: stats[401] > RUNS }).toEqual({ provider, missing: [], refused: true });
    }
  }, 120_000);

  it.each(SEQUENCE_PROVIDERS.map((p) => [p] as [SequenceProvider]))('%s: a refund and a dispute before the capture are processed again once it comes (out of order)', async (provider) => {
    const event = (kind: Kind, refundMinor = 1000): Step => ({ op: 'event', kind, pick: 0, refundId: 0, refundMinor, variant: 'ok', send: 'once' });
    const seen: Record<string, number> = {};
    const first = provider === 'paddle' ? 'failed' : 'processing';
    const dispute = provider === 'paddle' ? 'dispute_lost' : 'disputed';
    await runSequence(provider, [event(first), event('refund'), event(dispute), event('succeeded')], seen);
    expect({ provider, again: seen['processed again'] ?? 0, early: (seen['refund before capture'] ?? 0) + (seen['dispute before capture'] ?? 0) }).toEqual({ provider, again: 1, early: 2 });
  }, 60_000);

  it.each(SEQUENCE_PROVIDERS.map((p) => [p] as [SequenceProvider]))(`%s: sequences of deliveries (FUZZ_SEQUENCES ${RUNS}), seed ${SEED}`, async (provider) => {
    const seen: Record<string, number> = {};
    const t0 = Date.now();
    await fc.assert(
      fc.asyncProperty(sequenceArb(provider), (steps) => runSequence(provider, steps, seen)),
      { seed: SEED, numRuns: RUNS, path: PATH, endOnFailure: true, interruptAfterTimeLimit: 120_000, markInterruptAsFailure: true },
    );
    // eslint-disable-next-line no-console
    console.log(`fuzz ${platform}/${provider} sequences: ${RUNS} sequences in ${Date.now() - t0} ms, seen ${JSON.stringify(seen)}`);
    // Not vacuous: every case of the provider occurred in the run.
    if (!PATH && RUNS >= 10) {
      const missing = MUST_SEE[provider].filter((k) => !(seen[k] > 0));
      expect({ provider, missing }).toEqual({ provider, missing: [] });
    }
  }, 180_000);
});
