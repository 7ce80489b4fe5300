import { canMove, defineLifecycle, finalStatuses, isBehind, lifecycleProblems, reachableFrom, statusesMovingTo } from './lifecycle';

type S = 'a' | 'b' | 'c';
const moves = { a: ['b'], b: ['c', 'a'], c: [] } as const;

describe('the lifecycle kit', () => {
  const l = defineLifecycle<S>({ name: 'thing', statuses: ['a', 'b', 'c'], initial: ['a'], moves });

  it('canMove walks the table, nothing else', () => {
    const cells = (['a', 'b', 'c'] as S[]).flatMap((from) => (['a', 'b', 'c'] as S[]).map((to) => `${from}${to}:${canMove(l, from, to)}`));
    expect(cells).toEqual(['aa:false', 'ab:true', 'ac:false', 'ba:true', 'bb:false', 'bc:true', 'ca:false', 'cb:false', 'cc:false']);
  });

  it('finds the final statuses, what is reachable, and what moves to a status', () => {
    expect(finalStatuses(l)).toEqual(['c']);
    expect([...reachableFrom(l, ['a'])].sort()).toEqual(['a', 'b', 'c']);
    expect([...reachableFrom(l, ['c'])]).toEqual(['c']);
    expect(statusesMovingTo(l, 'a')).toEqual(['b']);
  });

  it('a progress ranking says what lies behind', () => {
    const progress = { a: 0, b: 1, c: 2 };
    expect(isBehind(progress, 'b', 'a')).toBe(true);
    expect(isBehind(progress, 'b', 'b')).toBe(true);
    expect(isBehind(progress, 'b', 'c')).toBe(false);
  });

  it.each([
    ['a row missing', { name: 'x', statuses: ['a', 'b'], initial: ['a'], moves: { a: ['b'] } }, 'b has no row'],
    ['a move to an unknown status', { name: 'x', statuses: ['a'], initial: ['a'], moves: { a: ['z'] } }, 'a → unknown status z'],
    ['an unknown initial status', { name: 'x', statuses: ['a'], initial: ['z'], moves: { a: [] } }, 'unknown initial status z'],
    ['no initial status', { name: 'x', statuses: ['a'], initial: [], moves: { a: [] } }, 'no initial status'],
    ['an unreachable status', { name: 'x', statuses: ['a', 'b'], initial: ['a'], moves: { a: [], b: ['a'] } }, 'b cannot be reached from a'],
  ])('refuses a table with %s', (_what, table, problem) => {
    expect(lifecycleProblems(table as never)).toContain(problem);
    expect(() => defineLifecycle(table as never)).toThrow(`the x lifecycle is not well formed: ${problem}`);
  });
});
