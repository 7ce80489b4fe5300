import { AdapterCallError, callAdapter, describeThrown, ignoreLate } from './adapter-calls';
import { MalformedPayloadError } from './provider';

describe('callAdapter: whatever an adapter does, a value or an AdapterCallError within the deadline', () => {
  const what = 'provider "x" normalize';
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeAll(() => process.on('unhandledRejection', onUnhandled));
  afterAll(() => process.off('unhandledRejection', onUnhandled));
  afterEach(async () => {
    // A rejection left unhandled is reported after the microtasks of the turn it happened in.
    await new Promise((r) => setImmediate(r));
    expect(unhandled).toEqual([]);
  });

  it('a value returned at once, as is (no timer: the deadline is never waited for)', async () => {
    const started = Date.now();
    await expect(callAdapter({ what, timeoutMs: 60_000, call: () => ({ kind: 'succeeded' }) })).resolves.toEqual({ kind: 'succeeded' });
    await expect(callAdapter({ what, timeoutMs: 60_000, call: () => null })).resolves.toBeNull();
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('a promise, awaited', async () => {
    await expect(callAdapter({ what, timeoutMs: 1_000, call: () => Promise.resolve(42) })).resolves.toBe(42);
  });

  it.each<[string, () => unknown, string]>([
    ['a throw', () => { throw new Error('boom'); }, 'provider "x" normalize failed: boom'],
    ['a rejection', () => Promise.reject(new Error('later boom')), 'provider "x" normalize failed: later boom'],
    ['a thrown null', () => { throw null; }, 'provider "x" normalize failed: a thrown null'],
    ['a thenable whose then throws', () => ({ then: () => { throw new Error('then'); } }), 'provider "x" normalize failed: then'],
    ['a value whose then cannot be read', () => Object.defineProperty({}, 'then', { get: () => { throw new Error('no then'); } }), 'provider "x" normalize failed: no then'],
  ])('%s: provider_adapter_failed, the original as its cause', async (_what, call, message) => {
    const err = await callAdapter({ what, timeoutMs: 1_000, call }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AdapterCallError);
    expect(err).toMatchObject({ code: 'provider_adapter_failed', message });
  });

  it('what passThrough keeps is thrown as it is', async () => {
    const malformed = new MalformedPayloadError('bad');
    const call = () => Promise.reject(malformed);
    await expect(callAdapter({ what, timeoutMs: 1_000, call, passThrough: (e) => e instanceof MalformedPayloadError })).rejects.toBe(malformed);
  });

  it('a promise that never settles: provider_adapter_timeout at the deadline', async () => {
    const started = Date.now();
    await expect(callAdapter({ what, timeoutMs: 50, call: () => new Promise(() => undefined) })).rejects.toMatchObject({
      code: 'provider_adapter_timeout',
      message: 'provider "x" normalize did not answer within 50 ms',
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it('a rejection after the deadline is handled, never reported unhandled', async () => {
    let rejectLate!: (err: Error) => void;
    const late = new Promise((_, reject) => (rejectLate = reject));
    await expect(callAdapter({ what, timeoutMs: 20, call: () => late })).rejects.toMatchObject({ code: 'provider_adapter_timeout' });
    rejectLate(new Error('too late'));
  });

  it('ignoreLate handles a settlement nobody waits for; a thenable it cannot read is left alone', async () => {
    ignoreLate(Promise.reject(new Error('nobody waits')));
    ignoreLate(Object.defineProperty({}, 'then', { get: () => { throw new Error('x'); } }));
    ignoreLate(42);
  });
});

describe('describeThrown: one line of text, whatever was thrown', () => {
  it.each<[string, unknown, string]>([
    ['an Error of two lines', new Error('first line\nsecond line'), 'first line'],
    ['a string', 'a string', 'a string'],
    ['null', null, 'a thrown null'],
    ['undefined', undefined, 'a thrown undefined'],
    ['a number', 42, 'a thrown number'],
    ['an object whose message throws', Object.create(null, { message: { get: () => { throw new Error('x'); } } }), 'a thrown object'],
    ['a Proxy whose every read throws', new Proxy(new Error('x'), { get: () => { throw new Error('trap'); } }), 'a thrown value that cannot be read'],
  ])('%s', (_what, thrown, text) => {
    expect(describeThrown(thrown)).toBe(text);
  });
});
