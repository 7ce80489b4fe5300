import { ExpiringMap, ExpiringSet, SenderBudgets } from './call-out';

describe('ExpiringSet', () => {
  it('forgets a key its time after it was last added, and the least recently added past the cap', () => {
    const set = new ExpiringSet(2, 1_000);
    set.add('a', 0);
    expect(set.has('a', 999)).toBe(true);
    expect(set.has('a', 1_000)).toBe(false);
    set.add('a', 2_000);
    set.add('b', 2_000);
    set.add('a', 2_001);
    set.add('c', 2_002);
    expect([set.has('a', 2_003), set.has('b', 2_003), set.has('c', 2_003)]).toEqual([true, false, true]);
    expect(set.size).toBe(2);
  });

  it('drops the expired keys at its front when a key is added: what it holds is what is live, not the most it ever held', () => {
    const set = new ExpiringSet(100, 1_000);
    for (let n = 0; n < 50; n++) set.add(`early-${n}`, n);
    set.add('late', 1_020);
    // The first 21 (added at 0…20) expired at 1,000…1,020; the other 29 and the new one are live.
    expect(set.size).toBe(30);
    set.add('later', 5_000);
    expect(set.size).toBe(1);
    expect(set.has('later', 5_000)).toBe(true);
  });
});

describe('ExpiringMap', () => {
  it('holds a value per key until its time, the last value set', () => {
    const map = new ExpiringMap<string>(10, 1_000);
    map.set('a', 'one', 0);
    map.set('a', 'two', 500);
    expect(map.get('a', 1_499)).toBe('two');
    expect(map.get('a', 1_500)).toBeUndefined();
    expect(map.size).toBe(0);
  });
});

describe('SenderBudgets', () => {
  const limits = { inFlight: 2, knownInFlight: 1, lookups: 1, notFound: 3, windowMs: 60_000, maxSenders: 3 };

  it('an address holds at most its share of calls in flight in each lane, and of questions, and gets each back once answered', () => {
    const budgets = new SenderBudgets(limits);
    expect([budgets.take('a', 'unknown'), budgets.take('a', 'unknown'), budgets.take('a', 'unknown')]).toEqual([true, true, false]);
    expect([budgets.take('a', 'known'), budgets.take('a', 'known')]).toEqual([true, false]);
    expect(budgets.take('b', 'unknown')).toBe(true);
    budgets.give('a', 'unknown');
    expect(budgets.inFlightOf('a')).toBe(1);
    expect(budgets.take('a', 'unknown')).toBe(true);
    expect([budgets.takeLookup('a'), budgets.takeLookup('a'), budgets.takeLookup('b')]).toEqual([true, false, true]);
    budgets.giveLookup('a');
    expect(budgets.takeLookup('a')).toBe(true);
  });

  it('more than the limit of distinct not-found ids within the window: limited until they age out', () => {
    const budgets = new SenderBudgets(limits);
    for (const id of ['x1', 'x2', 'x3', 'x3', 'x2']) expect(budgets.notFound('a', id, 1_000)).toBe(false);
    expect(budgets.limited('a', 1_000)).toBe(false);
    // The one that takes it past the limit says so, once.
    expect(budgets.notFound('a', 'x4', 2_000)).toBe(true);
    expect(budgets.notFound('a', 'x5', 2_000)).toBe(false);
    expect(budgets.limited('a', 2_000)).toBe(true);
    expect(budgets.limited('b', 2_000)).toBe(false);
    // x5 came back after it passed the limit (a call in flight then): it counts too.
    expect(budgets.limited('a', 60_999)).toBe(true);
    expect(budgets.limited('a', 61_000)).toBe(false);
    budgets.notFound('a', 'x6', 61_000);
    budgets.notFound('a', 'x7', 61_000);
    expect(budgets.limited('a', 61_000)).toBe(true);
  });

  it('tracks a bounded number of addresses, never dropping one with a call in flight', () => {
    const budgets = new SenderBudgets(limits);
    budgets.take('busy', 'unknown');
    for (const id of ['x1', 'x2', 'x3', 'x4']) budgets.notFound('guesser', id, 0);
    budgets.notFound('c', 'y', 0);
    budgets.notFound('d', 'y', 0);
    // 'guesser' was the least recently seen idle address: forgotten; 'busy' kept its call.
    expect(budgets.limited('guesser', 0)).toBe(false);
    expect(budgets.inFlightOf('busy')).toBe(1);
  });
});
