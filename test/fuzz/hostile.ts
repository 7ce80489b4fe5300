/**
 * The fuzzer's model of a host adapter that misbehaves (test/support/hostile-provider.ts): acme's
 * deliveries, signed or not, to an endpoint whose adapter does, at random, what the interface does
 * not allow — throws, rejects, never settles, settles after the deadline, returns what is no
 * result — or is honest. The answers the contract allows:
 * - an honest adapter (at once, or a little later): acme's checks, so 200 `accepted`/`duplicate`
 *   only for a delivery signed by the endpoint's secret over the bytes sent, in tolerance; else 401;
 * - any other: what the receive path makes of it whatever the delivery (RECEIVE_ANSWERS): 503
 *   `unavailable`, or the contract's 400 (no event, an unprintable id, a MalformedPayloadError);
 *   never a 2xx, and nothing recorded, even when a late settlement would accept it;
 * - a sender that hangs up while the adapter never answers gets nothing, and its bytes are given
 *   back at once.
 */
import fc from 'fast-check';
import { createHmac } from 'node:crypto';
import { LATE_BEHAVIOURS, RECEIVE_ANSWERS, RECEIVE_BEHAVIOURS, type ReceiveBehaviour } from '../support/hostile-provider';
import { w } from './arbitraries';
import type { HeaderLine } from './model';

export const HOSTILE_ENDPOINT = 'hostile-main';
export const HOSTILE_SECRET = 'acme_sk_fuzz_hostile_0001';
export const HOSTILE_ACCOUNT = 'm_1';

/** How the delivery is signed: by the endpoint's secret, another, none; or changed, or too old, after signing. */
export type HostileSigning = 'own' | 'wrong' | 'none' | 'tampered' | 'stale';

export interface HostileCase {
  provider: 'hostile';
  behaviour: ReceiveBehaviour;
  /** A pooled event id (deliveries meet again: duplicates) or a fresh one. */
  event: { pool: number } | { fresh: string };
  signing: HostileSigning;
  /** The sender hangs up once its body is read, while the adapter never answers (only with `hang`). */
  hangUp: boolean;
  transport: { sends: 1 | 2; concurrent: boolean };
}

export interface HostileBuilt {
  path: string;
  eventId: string;
  headers: HeaderLine[];
  body: Buffer;
  /** Statuses allowed, and the error (and detail) of a refusal. */
  expect: { status: number; error?: string; detail?: string; authentic: boolean; honest: boolean; late: boolean };
}

const POOL = ['ae_hostile_pool_1', 'ae_hostile_pool_2', 'ae_hostile_pool_3'];

/** The request a case sends, and the one answer the contract allows for it. */
export function buildHostile(spec: HostileCase, now: number): HostileBuilt {
  const eventId = 'pool' in spec.event ? POOL[spec.event.pool % POOL.length] : spec.event.fresh;
  const signedText = JSON.stringify({ event: { id: eventId, type: 'charge.paid', created: now }, charge: { id: `ch_${eventId}`, amount: '49.90', currency: 'EUR' } });
  const sentText = spec.signing === 'tampered' ? signedText.replace('49.90', '0.01') : signedText;
  const t = spec.signing === 'stale' ? now - 3_600 : now;
  const key = spec.signing === 'wrong' ? 'acme_sk_not_this_endpoints' : HOSTILE_SECRET;
  const headers: HeaderLine[] = [['Content-Type', 'application/json'], ['x-hostile', spec.behaviour]];
  if (spec.signing !== 'none') headers.push(['Acme-Signature', `t=${t},s=${createHmac('sha256', key).update(`${t}.${signedText}`).digest('hex')}`]);
  const honest = spec.behaviour === 'honest' || spec.behaviour === 'slow';
  const authentic = spec.signing === 'own';
  const late = LATE_BEHAVIOURS.includes(spec.behaviour);
  let expected: { status: number; error?: string; detail?: string };
  if (!honest) expected = RECEIVE_ANSWERS[spec.behaviour];
  else if (spec.signing === 'own') expected = { status: 200 };
  else if (spec.signing === 'none') expected = { status: 401, error: 'missing_signature' };
  else if (spec.signing === 'stale') expected = { status: 401, error: 'timestamp_out_of_tolerance' };
  else expected = { status: 401, error: 'invalid_signature' };
  return { path: `/webhooks/${HOSTILE_ENDPOINT}`, eventId, headers, body: Buffer.from(sentText, 'utf8'), expect: { ...expected, authentic, honest, late } };
}

/** Every way the adapter misbehaves, each as likely. */
const MISBEHAVIOURS = RECEIVE_BEHAVIOURS.filter((b) => b !== 'honest' && b !== 'slow');

export function hostileCaseArb(): fc.Arbitrary<HostileCase> {
  return fc
    .record({
      provider: fc.constant('hostile' as const),
      // Honest half the time (so acceptances and duplicates happen), else any misbehaviour alike.
      behaviour: fc.oneof(w(3, fc.constantFrom<ReceiveBehaviour>('honest', 'slow')), w(4, fc.constantFrom(...MISBEHAVIOURS))),
      event: fc.oneof(w(2, fc.record({ pool: fc.nat() })), w(1, fc.record({ fresh: fc.stringMatching(/^ae_[a-z0-9]{8,16}$/) }))),
      signing: fc.oneof(w(6, fc.constant('own' as const)), w(1, fc.constantFrom<HostileSigning>('wrong', 'none', 'tampered', 'stale'))),
      hangUp: fc.oneof(w(3, fc.constant(false)), w(1, fc.constant(true))),
      transport: fc.record({ sends: fc.oneof(w(3, fc.constant(1 as const)), w(1, fc.constant(2 as const))), concurrent: fc.boolean() }),
    })
    .map((spec) => ({ ...spec, hangUp: spec.hangUp && spec.behaviour === 'hang' }));
}
