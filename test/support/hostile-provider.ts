import {
  asObject,
  MalformedPayloadError,
  type ProviderAdapter,
  type ProviderEvent,
  type ReceiveResult,
} from '../../src';
import { acmeProvider } from './acme-provider';

/**
 * Providers of a host's own that misbehave on purpose, as a JavaScript host's adapter can (the
 * interface types its members, nothing enforces them at run time): for the receive path,
 * `hostile`, whose `receive` does what the delivery's `x-hostile` header says; for processing,
 * `brittle`, whose `normalize`, `fetchesState.wants` and `fetch` do what the event's `brittle`
 * field says. Both sign and read as acme does (test/support/acme-provider.ts).
 */

/** What `hostile` does with a delivery, by its `x-hostile` header (absent: `honest`). */
export const RECEIVE_BEHAVIOURS = [
  // acme's own checks: 200 for an authentic delivery, its refusal otherwise.
  'honest',
  // acme's checks, answered a little later (well within the deadline).
  'slow',
  // Throws at once, before any promise.
  'throw',
  // Throws null (no message to read).
  'throwNull',
  // A rejected promise.
  'reject',
  // Rejects with an object whose message and toString throw when read.
  'rejectHostile',
  // A promise that never settles.
  'hang',
  // acme's verdict, after the deadline: an authentic delivery would be accepted, too late.
  'lateAccept',
  // Rejects after the deadline.
  'lateReject',
  // Not a result at all.
  'null',
  'number',
  'string',
  // `ok` truthy but not true, with events that would be recorded.
  'okTruthy',
  // `events` not an array.
  'eventsNotArray',
  // An event that is not an object.
  'eventNull',
  // An event without its body text.
  'eventNoBody',
  // A secretIndex of no configured key.
  'badSecretIndex',
  // A result whose `ok` getter throws.
  'getterThrows',
  // A thenable whose `then` throws.
  'thenableThrows',
  // A refusal code the receive path does not know.
  'unknownRefusal',
  // No event: the contract's 400.
  'eventsEmpty',
  // A MalformedPayloadError: the contract's 400, with its detail.
  'malformed',
  // A malformed_payload refusal whose detail is not text: 400, without a detail.
  'malformedDetailObject',
  // An event id that is not printable: the contract's 400.
  'unprintableId',
] as const;
export type ReceiveBehaviour = (typeof RECEIVE_BEHAVIOURS)[number];

/** What the route answers for each behaviour of an authentic delivery (`honest` and `slow`: 200). */
export const RECEIVE_ANSWERS: Record<ReceiveBehaviour, { status: number; error?: string; detail?: string }> = {
  honest: { status: 200 },
  slow: { status: 200 },
  throw: { status: 503, error: 'unavailable' },
  throwNull: { status: 503, error: 'unavailable' },
  reject: { status: 503, error: 'unavailable' },
  rejectHostile: { status: 503, error: 'unavailable' },
  hang: { status: 503, error: 'unavailable' },
  lateAccept: { status: 503, error: 'unavailable' },
  lateReject: { status: 503, error: 'unavailable' },
  null: { status: 503, error: 'unavailable' },
  number: { status: 503, error: 'unavailable' },
  string: { status: 503, error: 'unavailable' },
  okTruthy: { status: 503, error: 'unavailable' },
  eventsNotArray: { status: 503, error: 'unavailable' },
  eventNull: { status: 503, error: 'unavailable' },
  eventNoBody: { status: 503, error: 'unavailable' },
  badSecretIndex: { status: 503, error: 'unavailable' },
  getterThrows: { status: 503, error: 'unavailable' },
  thenableThrows: { status: 503, error: 'unavailable' },
  unknownRefusal: { status: 503, error: 'unavailable' },
  eventsEmpty: { status: 400, error: 'malformed_payload', detail: 'the delivery carries no event' },
  malformed: { status: 400, error: 'malformed_payload', detail: 'hostile says no' },
  malformedDetailObject: { status: 400, error: 'malformed_payload' },
  unprintableId: { status: 400, error: 'malformed_payload', detail: 'the event id is not a printable string of at most 255 characters' },
};

/** Behaviours whose promise settles after the answer (the test waits for `hostileLate` to see them settle). */
export const LATE_BEHAVIOURS: readonly ReceiveBehaviour[] = ['lateAccept', 'lateReject'];

/** A thrown value no message can be read of. */
const unreadable = () =>
  Object.create(null, {
    message: { get: () => { throw new Error('message read'); } },
    toString: { get: () => { throw new Error('toString read'); } },
  });

/** Late settlements made so far, for a test to wait on (each late behaviour counts one once it has settled). */
export const hostileLate = { settled: 0 };

/**
 * `hostile`, with its late behaviours settling `lateMs` after `receive` is called: set it past the
 * app's `receiveTimeoutMs`.
 */
export function hostileProvider(lateMs: number): ProviderAdapter {
  const acme = (delivery: Parameters<ProviderAdapter['receive']>[0], context: Parameters<ProviderAdapter['receive']>[1]) =>
    Promise.resolve(acmeProvider.receive(delivery, context));
  /** An event of the delivery's shape, authentic or not: what a garbage result carries. */
  const someEvent = (body: Buffer) => ({ eventId: `ae_${body.length}`, eventType: 'charge.paid', resourceId: null, deliveryId: null, account: null, apiVersion: null, body: '{}' });
  const later = <T>(settle: () => T | Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) =>
      setTimeout(() => {
        Promise.resolve()
          .then(settle)
          .then(resolve, reject)
          .finally(() => hostileLate.settled++);
      }, lateMs),
    );
  return {
    ...acmeProvider,
    name: 'hostile',
    receive(delivery, context): ReceiveResult | Promise<ReceiveResult> {
      const raw = delivery.headers['x-hostile'];
      const behaviour = (Array.isArray(raw) ? raw[0] : raw ?? 'honest') as ReceiveBehaviour;
      switch (behaviour) {
        case 'honest':
          return acme(delivery, context);
        case 'slow':
          return new Promise((resolve, reject) => setTimeout(() => acme(delivery, context).then(resolve, reject), 20));
        case 'throw':
          throw new Error('hostile: thrown at once');
        case 'throwNull':
          throw null;
        case 'reject':
          return Promise.reject(new Error('hostile: rejected'));
        case 'rejectHostile':
          return Promise.reject(unreadable());
        case 'hang':
          return new Promise<never>(() => undefined);
        case 'lateAccept':
          return later(() => acme(delivery, context));
        case 'lateReject':
          return later(() => Promise.reject(new Error('hostile: rejected late')));
        case 'null':
          return null as never;
        case 'number':
          return 42 as never;
        case 'string':
          return 'x' as never;
        case 'okTruthy':
          return { ok: 'yes', secretIndex: null, events: [someEvent(delivery.body)] } as never;
        case 'eventsNotArray':
          return { ok: true, secretIndex: null, events: 'x' } as never;
        case 'eventNull':
          return { ok: true, secretIndex: null, events: [null] } as never;
        case 'eventNoBody':
          return { ok: true, secretIndex: null, events: [{ ...someEvent(delivery.body), body: 5 }] } as never;
        case 'badSecretIndex':
          return { ok: true, secretIndex: 7, events: [someEvent(delivery.body)] };
        case 'getterThrows':
          return Object.defineProperty({}, 'ok', { get: () => { throw new Error('hostile: ok read'); } }) as never;
        case 'thenableThrows':
          return { then: () => { throw new Error('hostile: then called'); } } as never;
        case 'unknownRefusal':
          return { ok: false, error: 'teapot' as never };
        case 'eventsEmpty':
          return { ok: true, secretIndex: null, events: [] };
        case 'malformed':
          throw new MalformedPayloadError('hostile says no');
        case 'malformedDetailObject':
          return { ok: false, error: 'malformed_payload', detail: { secret: 'x' } as never };
        case 'unprintableId':
          return { ok: true, secretIndex: null, events: [{ ...someEvent(delivery.body), eventId: 'ae_\u0000' }] };
        default:
          throw new Error(`hostile: unknown behaviour ${String(behaviour)}`);
      }
    },
  };
}

/** What `brittle` does while processing, by the event's `brittle` field. */
export interface BrittleBehaviour {
  normalize?: 'reject' | 'hang' | 'string' | 'resolve' | 'throw';
  wants?: 'reject' | 'hang' | 'string' | 'resolveTrue' | 'resolveFalse';
  fetch?: 'reject' | 'hang' | 'garbage' | 'found';
}

/** `brittle`'s wants/fetch answer for an event whose `brittle.wants` is resolveTrue: the event itself, as a paid charge. */
const behaviourOf = (body: Record<string, unknown>): BrittleBehaviour => (asObject(body.brittle) ?? {}) as BrittleBehaviour;

/** `brittle`: acme on the receive path, and what its event's `brittle` field says while processing. */
export const brittleProvider: ProviderAdapter = {
  ...acmeProvider,
  name: 'brittle',
  normalize(body, eventType, endpoint): ProviderEvent | null {
    const event = acmeProvider.normalize(body, eventType, endpoint);
    switch (behaviourOf(body).normalize) {
      case 'reject':
        return Promise.reject(new Error('brittle: normalize rejected')) as never;
      case 'throw':
        throw new Error('brittle: normalize threw');
      case 'hang':
        return new Promise(() => undefined) as never;
      case 'string':
        return 'paid' as never;
      case 'resolve':
        return Promise.resolve(event) as never;
      default:
        return event;
    }
  },
  fetchesState: {
    wants(body): boolean {
      switch (behaviourOf(body).wants) {
        case 'reject':
          return Promise.reject(new Error('brittle: wants rejected')) as never;
        case 'hang':
          return new Promise(() => undefined) as never;
        case 'string':
          return 'yes' as never;
        case 'resolveTrue':
          return Promise.resolve(true) as never;
        case 'resolveFalse':
          return Promise.resolve(false) as never;
        default:
          return false;
      }
    },
    async fetch(body, eventType) {
      switch (behaviourOf(body).fetch) {
        case 'reject':
          throw new Error('brittle: fetch rejected');
        case 'hang':
          return new Promise(() => undefined);
        case 'garbage':
          return { found: 'maybe' } as never;
        default:
          // The state as the provider would answer it: the event itself, read with no `brittle.fetch`.
          return { found: true, body: { ...body, brittle: {} }, eventType };
      }
    },
  },
};
